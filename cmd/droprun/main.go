// Command droprun reproduces, measures and compares the requests a
// Kubernetes rolling update drops. See README.md, or run `droprun --help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// version is stamped at build time with -ldflags "-X main.version=..."
// (make build: git describe); a binary built otherwise says what its build
// info knows (versionOf), never a bare "dev", since every run records it.
var version = "dev"

// stopSignals end a command the way Ctrl-C does: a run stops its traffic,
// keeps what it recorded, restores the host and cleans up its cluster.
// SIGHUP is among them: closing the terminal of a run must not skip that.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

func main() {
	bi, ok := debug.ReadBuildInfo()
	version = versionOf(version, bi, ok)
	ctx, stop := stopContext()
	defer stop()
	err := newRootCmd(streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}).ExecuteContext(ctx)
	os.Exit(exitCode(os.Stderr, err))
}

// versionOf is the version a binary reports: the one stamped with
// -ldflags; else its module version (go install MODULE@VERSION, or the
// VCS pseudo-version go build stamps in a checkout); else its VCS
// revision; else "dev" with why.
func versionOf(stamped string, bi *debug.BuildInfo, ok bool) string {
	if stamped != "dev" || !ok {
		if stamped == "dev" {
			return "dev (built without version or VCS information)"
		}
		return stamped
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if rev != "" {
		return "devel-" + rev[:min(12, len(rev))] + dirty
	}
	return "dev (built without version or VCS information)"
}

// stopContext is cancelled by the first stop signal, which a command
// answers as Ctrl-C; the signals then take their default action again, so
// a second one ends at once a command that does not return (one blocked
// reading a pipe, or a cleanup the user gave up on).
func stopContext() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

// exitCode prints err, if any, and returns the process exit code: 0 for
// success, the code an exitError carries, 1 for any other failure. A usage
// error is followed by the usage of the command it came from, or at least
// where to read it.
func exitCode(w interface{ Write([]byte) (int, error) }, err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(w, "droprun:", ee.err)
		}
		switch {
		case ee.hint != "":
			fmt.Fprintln(w, ee.hint)
		case ee.usage:
			fmt.Fprintln(w, "run 'droprun --help' for usage")
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
	// usage marks a usage error (a bad flag, argument or command), as
	// opposed to bad input such as a directory that is not a run; hint is
	// what to print after it (set by newRootCmd, which knows the command).
	usage bool
	hint  string
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitUsage is the exit status of bad usage (and of bad input).
const exitUsage = 2

// usageError is a bad flag or argument: exit code 2.
func usageError(format string, a ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, a...), usage: true}
}
