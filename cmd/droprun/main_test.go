package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runCLI executes droprun with args and returns stdout, stderr and the exit
// code main would use.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := newRootCmd(streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	cmd.SetArgs(args)
	code := exitCode(&errb, cmd.ExecuteContext(context.Background()))
	return out.String(), errb.String(), code
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{name: "shipped scenario", args: []string{"validate", "../../scenarios/compare-all.yaml"}, code: 0, out: "ok  ../../scenarios/compare-all.yaml: 7 variant(s)"},
		{name: "invalid scenario", args: []string{"validate", "../../harness/scenario/testdata/invalid-prestop-ge-grace.yaml"}, code: 1, err: "variants[0].preStopSeconds: 30 is not less than terminationGracePeriodSeconds (30)"},
		{name: "one bad among good", args: []string{"validate", "../../scenarios/control.yaml", "../../harness/scenario/testdata/invalid-rate-zero.yaml"}, code: 1, out: "ok  ../../scenarios/control.yaml", err: "1 of 2 scenario files are invalid"},
		{name: "missing file", args: []string{"validate", "nope.yaml"}, code: 1, err: "nope.yaml: no such file"},
		{name: "no args", args: []string{"validate"}, code: 2, err: "validate needs at least one scenario file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := runCLI(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, errs)
			}
			if !strings.Contains(out, tc.out) {
				t.Errorf("stdout %q does not contain %q", out, tc.out)
			}
			if !strings.Contains(errs, tc.err) {
				t.Errorf("stderr %q does not contain %q", errs, tc.err)
			}
		})
	}
}

func TestRender(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		code    int
		want    []string
		notWant []string
	}{
		{name: "builtin default", args: []string{"render", "--variant", "prestop-sleep-action"}, want: []string{"kind: Deployment", "kind: Service", "nodePort: 30080", "sleep:\n              seconds: 5", "image: bookshop:v1\n"}},
		{name: "v2", args: []string{"render", "--variant", "graceful-drain", "--app-version", "v2"}, want: []string{"image: bookshop:v2\n", "--drain-delay=5s"}},
		{name: "trap initial has no hook", args: []string{"render", "--variant", "the-trap", "--initial", "../../scenarios/the-trap.yaml"}, want: []string{"droprun.dev/variant: no-prestop", "droprun.dev/row: the-trap"}, notWant: []string{"preStop"}},
		{name: "trap after first rollout has the hook", args: []string{"render", "--variant", "the-trap", "../../scenarios/the-trap.yaml"}, want: []string{"preStop", "droprun.dev/variant: prestop-sleep"}},
		{name: "gateway scenario adds the gateway", args: []string{"render", "--variant", "no-prestop", "../../scenarios/gateway.yaml"}, want: []string{"name: gateway", "--mode=gateway", "nodePort: 30081"}},
		{name: "traefik scenario adds Traefik, namespaced", args: []string{"render", "--variant", "no-prestop", "../../scenarios/traefik.yaml"},
			want: []string{"kind: ServiceAccount", "kind: Role\n", "kind: RoleBinding", "image: droprun/traefik:v3.6.12", "--providers.kubernetesIngress.disableClusterScopeResources=true", "nodePort: 30081", "kind: Ingress"}},
		{name: "custom app", args: []string{"render", "../../scenarios/custom-app.yaml"}, want: []string{"name: my-service", "image: my-service:1.0.0", "namespace: droprun", "droprun.dev/row: current"}},
		{name: "generator pods add their Job", args: []string{"render", "--variant", "no-prestop", "../../scenarios/east-west.yaml"},
			want: []string{"kind: Deployment", "---\n# The generators' Job", "kind: Job", "completionMode: Indexed", "- --target=http://web.droprun.svc.cluster.local.:80/version\n", "- --name=no-prestop\n",
				"value: RUN_TOKEN", "image: droprun-generator:SOURCE_HASH", "runAsNonRoot: true"}},
		{name: "no generator pods, no Job", args: []string{"render", "--variant", "no-prestop", "../../scenarios/traefik.yaml"}, notWant: []string{"kind: Job", "generators"}},
		{name: "unknown variant", args: []string{"render", "--variant", "nap"}, code: 2},
		{name: "no variant", args: []string{"render"}, code: 2},
		{name: "bad version", args: []string{"render", "--variant", "no-prestop", "--app-version", "v3"}, code: 2},
		{name: "bad flag", args: []string{"render", "--nope"}, code: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := runCLI(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tc.code, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestVariantsListsEveryVariant(t *testing.T) {
	out, _, code := runCLI(t, "variants")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, v := range []string{"no-prestop", "prestop-sleep", "prestop-sleep-action", "graceful-drain", "naive-shutdown", "prestop-exec-distroless"} {
		if !strings.Contains(out, v+" ") {
			t.Errorf("variants output lacks %s", v)
		}
	}
}

func TestHelpTeaches(t *testing.T) {
	out, _, code := runCLI(t, "render", "--help")
	if code != 0 || !strings.Contains(out, "prestop-exec-distroless") || !strings.Contains(out, "Examples:") {
		t.Errorf("render --help (exit %d):\n%s", code, out)
	}
}

// TestVersionOf: a binary reports the version make stamped, else its
// module version, else its VCS revision; a bare "dev" never, since every
// run records it.
func TestVersionOf(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "0abe847d1e2f3a4b5c6d"}, {Key: "vcs.modified", Value: "true"}}
	for _, tc := range []struct {
		stamped string
		bi      *debug.BuildInfo
		ok      bool
		want    string
	}{
		{"v1.2.0-3-g0abe847", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "v1.2.0-3-g0abe847"},
		{"dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261206061900-0abe847d1e2f"}}, true, "v0.0.0-20261206061900-0abe847d1e2f"},
		{"dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev}, true, "devel-0abe847d1e2f-dirty"},
		{"dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "dev (built without version or VCS information)"},
		{"dev", nil, false, "dev (built without version or VCS information)"},
	} {
		if got := versionOf(tc.stamped, tc.bi, tc.ok); got != tc.want {
			t.Errorf("versionOf(%q, %+v) = %q, want %q", tc.stamped, tc.bi, got, tc.want)
		}
	}
}

func TestInterruptedRunExits130(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	runErr := fmt.Errorf("variant no-prestop: %w", context.Canceled)
	// Not cancelled: the error passes as it is.
	if err := interrupted(ctx, runErr, "/tmp/r"); err != runErr {
		t.Errorf("before cancellation: %v", err)
	}
	cancel()
	var out strings.Builder
	if code := exitCode(&out, interrupted(ctx, runErr, "/tmp/r")); code != 130 {
		t.Errorf("exit code %d, want 130", code)
	}
	if !strings.Contains(out.String(), "interrupted") || !strings.Contains(out.String(), "/tmp/r") {
		t.Errorf("message %q should say it was interrupted and where the results are", out.String())
	}
	// A real error after the interruption stays an error.
	other := errors.New("writing summary.json: disk full")
	if err := interrupted(ctx, other, "/tmp/r"); err != other {
		t.Errorf("another error became %v", err)
	}
	if err := interrupted(ctx, nil, "/tmp/r"); err != nil {
		t.Errorf("a run that completed became %v", err)
	}
}

// signalledChild starts TestStopSignals's child in mode, waits until it
// is ready and sends it sig; it returns the child and its stdout's rest.
func signalledChild(t *testing.T, mode string, sig syscall.Signal) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStopSignals$")
	cmd.Env = append(os.Environ(), "DROPRUN_SIGNAL_CHILD="+mode)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	if line, err := r.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("child said %q (%v)", line, err)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	return cmd, r
}

// TestStopSignals: SIGHUP (the terminal closed), SIGTERM and SIGINT each
// cancel the command's context, as Ctrl-C does, in a child process that
// waits on it; nothing kills it outright. A second signal to a child that
// does not return after the first (blocked) ends it at once.
func TestStopSignals(t *testing.T) {
	switch os.Getenv("DROPRUN_SIGNAL_CHILD") {
	case "1":
		ctx, stop := stopContext()
		defer stop()
		fmt.Println("ready")
		<-ctx.Done()
		fmt.Println("stopped")
		os.Exit(exitInterrupted)
	case "blocked":
		ctx, _ := stopContext()
		fmt.Println("ready")
		<-ctx.Done()
		fmt.Println("stopped")
		time.Sleep(time.Hour) // a command that never looks at its context again
		os.Exit(0)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd, r := signalledChild(t, "blocked", sig)
		if line, err := r.ReadString('\n'); err != nil || line != "stopped\n" {
			t.Fatalf("after the first %v the child said %q (%v)", sig, line, err)
		}
		killed := time.AfterFunc(10*time.Second, func() { _ = cmd.Process.Kill() })
		// The child resets the handlers just after it sees the context
		// cancelled; a signal sent in between is caught again, so send
		// until it ends.
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var werr error
	wait:
		for {
			if err := cmd.Process.Signal(sig); err != nil {
				werr = <-done
				break
			}
			select {
			case werr = <-done:
				break wait
			case <-time.After(50 * time.Millisecond):
			}
		}
		killed.Stop()
		var ee *exec.ExitError
		if !errors.As(werr, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != sig {
			t.Errorf("a second %v to a blocked child: it ended with %v; want it ended by the signal at once", sig, werr)
		}
	}
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT} {
		cmd, r := signalledChild(t, "1", sig)
		rest, _ := io.ReadAll(r)
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted || string(rest) != "stopped\n" {
			t.Errorf("%v: child ended with %v, said %q; want it to stop through its context, exit %d", sig, err, rest, exitInterrupted)
		}
	}
}
