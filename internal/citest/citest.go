// Package citest holds what tests share about where they run: in CI (the
// CI environment variable set, as .ci/run's machine and every common CI
// system set it) a missing prerequisite fails a test instead of skipping
// it, so a CI run cannot pass by checking nothing.
package citest

import (
	"os"
	"testing"
)

// InCI reports whether the tests run in CI.
func InCI() bool { return os.Getenv("CI") != "" }

// Missing skips t for a missing prerequisite (an engine, the node image, a
// binary), saying how to get it; in CI it fails t instead.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if InCI() {
		t.Fatalf("CI is set, so this cannot be skipped: "+format, args...)
		return
	}
	t.Skipf(format, args...)
}
