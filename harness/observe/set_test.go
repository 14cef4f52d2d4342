package observe

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestStartAll: observers start in order and stop in reverse, their stop
// errors joined; one that fails to start stops those already started.
func TestStartAll(t *testing.T) {
	var order []string
	obs := func(name string, startErr, stopErr error) Observer {
		return Observer{Name: name, Start: func(context.Context) (func() error, error) {
			if startErr != nil {
				return nil, startErr
			}
			order = append(order, "start "+name)
			return func() error { order = append(order, "stop "+name); return stopErr }, nil
		}}
	}
	boom := errors.New("boom")
	stop, err := StartAll(t.Context(), []Observer{obs("a", nil, nil), obs("b", nil, boom)})
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); !errors.Is(err, boom) {
		t.Errorf("stop = %v, want b's error", err)
	}
	if want := []string{"start a", "start b", "stop b", "stop a"}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}

	order = nil
	if _, err := StartAll(t.Context(), []Observer{obs("a", nil, nil), obs("c", boom, nil)}); !errors.Is(err, boom) || err.Error() != "starting c: boom" {
		t.Errorf("a failed start: %v", err)
	}
	if want := []string{"start a", "stop a"}; !slices.Equal(order, want) {
		t.Errorf("after a failed start: %v, want %v", order, want)
	}
}
