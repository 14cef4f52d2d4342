package citest

import (
	"testing"
)

// fakeTB records what Missing asks of its test.
type fakeTB struct {
	testing.TB
	failed, skipped string
}

func (f *fakeTB) Helper()                           {}
func (f *fakeTB) Fatalf(format string, args ...any) { f.failed = format }
func (f *fakeTB) Skipf(format string, args ...any)  { f.skipped = format }

// In CI a missing prerequisite fails the test; elsewhere it skips it.
func TestMissing(t *testing.T) {
	t.Setenv("CI", "true")
	ci := &fakeTB{}
	Missing(ci, "no engine")
	if ci.failed == "" || ci.skipped != "" {
		t.Errorf("with CI set: failed %q, skipped %q; want a failure", ci.failed, ci.skipped)
	}
	t.Setenv("CI", "")
	local := &fakeTB{}
	Missing(local, "no engine")
	if local.skipped != "no engine" || local.failed != "" {
		t.Errorf("without CI: failed %q, skipped %q; want a skip", local.failed, local.skipped)
	}
}
