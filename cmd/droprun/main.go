// Command droprun reproduces, measures and compares the requests a
// Kubernetes rolling update drops. See README.md, or run `droprun --help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newRootCmd(streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}).ExecuteContext(ctx)
	os.Exit(exitCode(os.Stderr, err))
}

// exitCode prints err, if any, and returns the process exit code: 0 for
// success, the code an exitError carries, 1 for any other failure.
func exitCode(w interface{ Write([]byte) (int, error) }, err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(w, "droprun:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(w, "droprun:", err)
	return 1
}

// exitError carries a specific exit code; err may be nil when the command
// has already said everything it had to.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError is a bad flag or argument: exit code 2.
func usageError(format string, a ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, a...)}
}
