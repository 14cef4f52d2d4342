package run

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// trialCheck runs check on a trial of t, which keeps the faults check
// finds (its Error, Fatal and Fail calls; a Fatal stops check) instead of
// failing t, and returns them. Everything else (Logf, TempDir, Cleanup)
// is t's own.
func trialCheck(t *testing.T, check func(testing.TB)) []string {
	tr := &trial{T: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != errTrialStopped {
				panic(p)
			}
		}()
		check(tr)
	}()
	return tr.faults
}

// trial is a *testing.T whose failures are kept, not reported (trialCheck).
type trial struct {
	*testing.T
	faults []string
}

// errTrialStopped is what a trial's FailNow panics with, for trialCheck.
var errTrialStopped = errors.New("the trial's check called FailNow")

func (tr *trial) Fail()             { tr.faults = append(tr.faults, "failed") }
func (tr *trial) Failed() bool      { return len(tr.faults) > 0 }
func (tr *trial) FailNow()          { panic(errTrialStopped) }
func (tr *trial) Error(args ...any) { tr.faults = append(tr.faults, fmt.Sprint(args...)) }
func (tr *trial) Errorf(format string, args ...any) {
	tr.faults = append(tr.faults, fmt.Sprintf(format, args...))
}
func (tr *trial) Fatal(args ...any)                 { tr.Error(args...); tr.FailNow() }
func (tr *trial) Fatalf(format string, args ...any) { tr.Errorf(format, args...); tr.FailNow() }

// TestTrialKeepsFaults: a trial keeps every fault its check finds in
// order, a Fatal stops the check there, and the test itself is not failed.
func TestTrialKeepsFaults(t *testing.T) {
	reached := false
	faults := trialCheck(t, func(tb testing.TB) {
		tb.Helper()
		tb.Logf("a log line is the test's own")
		tb.Errorf("first %d", 1)
		tb.Error("second")
		if !tb.Failed() {
			t.Error("the trial does not say it failed after two errors")
		}
		tb.Fatalf("third %s", "and last")
		reached = true
	})
	if want := []string{"first 1", "second", "third and last"}; !slices.Equal(faults, want) {
		t.Errorf("faults %q, want %q", faults, want)
	}
	if reached {
		t.Error("the check went on after Fatalf")
	}
	if t.Failed() {
		t.Error("the trial failed the test")
	}
	if faults := trialCheck(t, func(tb testing.TB) { tb.Logf("nothing wrong") }); faults != nil {
		t.Errorf("a passing check: faults %q, want none", faults)
	}
	defer func() {
		if p := recover(); fmt.Sprint(p) != "not the trial's" {
			t.Errorf("recovered %v, want the check's own panic passed on", p)
		}
	}()
	trialCheck(t, func(testing.TB) { panic("not the trial's") })
}
