package analysis

import (
	"testing"

	"github.com/droprun/droprun/harness/path"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/traffic"
)

// TestIdleOrder: with kept-alive connections a variant knows the client's
// and the app's idle timeouts and which closes first; a front in between
// leaves the order unknown, a client that keeps nothing idle has none;
// the counts are the idle-closed requests of every window, and a control
// window whose failures are all idle-closed is said to be the app's doing.
func TestIdleOrder(t *testing.T) {
	const head = "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: i}\n" +
		"variants: [{name: short, variant: graceful-drain, idleTimeout: 100ms}, {name: long, variant: graceful-drain, idleTimeout: 1s}, {name: none, variant: graceful-drain}]\n"
	sc, err := scenario.Parse("i.yaml", []byte(head+"traffic: {keepAlive: true, idleTimeout: 150ms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	direct, _ := path.Lookup(path.NodePort.Name)
	in := &input{sc: sc, path: direct}
	for _, tc := range []struct {
		variant  int
		app      string
		appFirst bool
	}{{0, "100ms", true}, {1, "1s", false}, {2, "0s", false}} {
		o := in.idleTimeouts(sc.Variants[tc.variant])
		if o == nil || o.Client != "150ms" || o.App != tc.app || o.AppFirst != tc.appFirst || o.Unknown != "" {
			t.Errorf("%s: %+v, want client 150ms, app %s, app first %v", sc.Variants[tc.variant].Name, o, tc.app, tc.appFirst)
		}
	}
	gw, _ := path.Lookup("gateway")
	if o := (&input{sc: sc, path: gw}).idleTimeouts(sc.Variants[0]); o == nil || o.Unknown == "" || o.AppFirst || o.App != "" {
		t.Errorf("through a front: %+v, want the order unknown", o)
	}
	fresh, err := scenario.Parse("i.yaml", []byte(head))
	if err != nil {
		t.Fatal(err)
	}
	if o := (&input{sc: fresh, path: direct}).idleTimeouts(fresh.Variants[0]); o != nil {
		t.Errorf("a new connection per request: %+v, want no idle order", o)
	}

	idle := traffic.ClassIdleClosed
	vs := VariantSummary{
		Control:       Tally{Requests: 1000, Failures: 7, Classes: map[traffic.Class]uint64{idle: 7, traffic.Class2xx: 993}, MaskedClasses: map[traffic.Class]uint64{idle: 2}},
		Classes:       map[traffic.Class]uint64{idle: 5, traffic.ClassRefused: 3},
		MaskedClasses: map[traffic.Class]uint64{idle: 1},
		Tail:          Tally{Classes: map[traffic.Class]uint64{idle: 1}},
	}
	o := in.idleTimeouts(sc.Variants[0]).counted(vs)
	if o.Failed != 13 || o.Masked != 3 || o.ControlFailed != 7 || o.ControlMasked != 2 {
		t.Errorf("counted %+v: want 13 failed (7 in the control), 3 masked (2 in the control)", o)
	}
	if !o.ExplainsControl(vs.Control) {
		t.Error("a control window failing only idle-closed with the app closing first: want it explained by the idle order")
	}
	mixed := vs.Control
	mixed.Failures++
	if o.ExplainsControl(mixed) || in.idleTimeouts(sc.Variants[1]).counted(vs).ExplainsControl(vs.Control) {
		t.Error("a control failure of another class, or the client closing first: want it not explained by the idle order")
	}
}
