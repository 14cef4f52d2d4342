package engine

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// requireEngine skips the test when no docker engine answers.
func requireEngine(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := DockerInfo(ctx); err != nil {
		t.Skipf("skipping: %v", err)
	}
}

// TestIntegrationSetup runs Setup for real (installs packages, writes
// /etc/docker/daemon.json, starts dockerd): only with
// DROPRUN_ENGINE_SETUP=1, as root, on Debian.
func TestIntegrationSetup(t *testing.T) {
	if os.Getenv("DROPRUN_ENGINE_SETUP") != "1" {
		t.Skip("set DROPRUN_ENGINE_SETUP=1 to install and start the docker engine on this machine (root, Debian)")
	}
	var out bytes.Buffer
	start := time.Now()
	if err := Setup(context.Background(), SetupOptions{Out: &out}); err != nil {
		t.Fatalf("Setup: %v\n%s", err, out.String())
	}
	t.Logf("first Setup in %s:\n%s", time.Since(start), out.String())
	out.Reset()
	start = time.Now()
	if err := Setup(context.Background(), SetupOptions{Out: &out}); err != nil {
		t.Fatalf("second Setup: %v\n%s", err, out.String())
	}
	t.Logf("second Setup in %s:\n%s", time.Since(start), out.String())
	if !strings.HasPrefix(out.String(), "engine ready") {
		t.Errorf("second Setup was not a no-op:\n%s", out.String())
	}
}

// TestIntegrationPrivilegedRun builds a static Go binary into a FROM
// scratch image (no pull) and runs it with --privileged: on a host without
// CAP_SYS_RESOURCE this works only through the runc wrapper.
func TestIntegrationPrivilegedRun(t *testing.T) {
	requireEngine(t)
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no Go toolchain to build the test binary")
	}
	dir := t.TempDir()
	main := "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello from a privileged scratch container\") }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", "hello", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\nCOPY hello /hello\nENTRYPOINT [\"/hello\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const ref = "droprun-engine-test/hello:v1"
	dockerBuild := exec.Command("docker", "build", "-t", ref, dir)
	dockerBuild.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	if out, err := dockerBuild.CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "image", "rm", "-f", ref).Run() })
	out, err := exec.Command("docker", "run", "--rm", "--privileged", ref).CombinedOutput()
	if err != nil {
		t.Fatalf("docker run --privileged: %v\n%s\n(on a host without CAP_SYS_RESOURCE, run droprun engine setup for the runc wrapper)", err, out)
	}
	if !strings.Contains(string(out), "hello from a privileged scratch container") {
		t.Fatalf("unexpected output: %s", out)
	}
}

// TestIntegrationDoctor prints the report of this machine.
func TestIntegrationDoctor(t *testing.T) {
	requireEngine(t)
	r := Doctor(context.Background(), DoctorOptions{})
	var buf bytes.Buffer
	if err := r.Print(&buf); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", buf.String())
	for _, c := range r.Checks {
		if (c.Name == "docker CLI" || c.Name == "engine running") && !c.OK {
			t.Errorf("%s: %s", c.Name, c.Detail)
		}
	}
}

// TestIntegrationTeardown: setup, then teardown puts every setting it
// recorded back as it was before droprun (route_localnet, the localnet
// guard, dockerd's configuration, the runc wrapper), and setup again
// leaves the engine ready: only with DROPRUN_ENGINE_SETUP=1, as root, on
// Debian, with no kind cluster running.
func TestIntegrationTeardown(t *testing.T) {
	if os.Getenv("DROPRUN_ENGINE_SETUP") != "1" {
		t.Skip("set DROPRUN_ENGINE_SETUP=1 to set up, tear down and set up again the docker engine on this machine (root, Debian)")
	}
	ctx := context.Background()
	var out bytes.Buffer
	if err := Setup(ctx, SetupOptions{Out: &out}); err != nil {
		t.Fatalf("Setup: %v\n%s", err, out.String())
	}
	if v, _ := os.ReadFile(routeLocalnetProc); strings.TrimSpace(string(v)) != "1" || !guardPresent(ctx) {
		t.Fatalf("after setup: route_localnet %q, guard %v; want 1 with the guard", v, guardPresent(ctx))
	}
	rec, err := ReadRecord(DefaultRecord)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded: %s", strings.Join(rec.Changes(), "; "))
	out.Reset()
	if err := Teardown(ctx, TeardownOptions{Out: &out}); err != nil {
		t.Fatalf("Teardown: %v\n%s", err, out.String())
	}
	t.Logf("teardown:\n%s", out.String())
	if rec.RouteLocalnet != "" {
		if v, _ := os.ReadFile(routeLocalnetProc); strings.TrimSpace(string(v)) != rec.RouteLocalnet {
			t.Errorf("route_localnet %q after teardown, was %q", v, rec.RouteLocalnet)
		}
	}
	if rec.LocalnetGuard && guardPresent(ctx) {
		t.Error("the localnet guard is still there after teardown")
	}
	if d := rec.DaemonConfig; d != nil {
		b, err := os.ReadFile(d.Path)
		if d.Existed && string(b) != d.Content || !d.Existed && err == nil {
			t.Errorf("%s after teardown: %q (%v); before setup it existed %v with %q", d.Path, b, err, d.Existed, d.Content)
		}
	}
	if rec.Wrapper != "" {
		if _, err := os.Stat(rec.Wrapper); err == nil {
			t.Errorf("%s is still there after teardown", rec.Wrapper)
		}
	}
	out.Reset()
	if err := Setup(ctx, SetupOptions{Out: &out}); err != nil {
		t.Fatalf("Setup after teardown: %v\n%s", err, out.String())
	}
	if v, _ := os.ReadFile(routeLocalnetProc); strings.TrimSpace(string(v)) != "1" || !guardPresent(ctx) {
		t.Errorf("after setup again: route_localnet %q, guard %v", v, guardPresent(ctx))
	}
}
