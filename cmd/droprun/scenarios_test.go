package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestLoadScenarioResolution: a file on disk wins; otherwise a shipped
// scenario's name (NAME, NAME.yaml, scenarios/NAME.yaml) loads it; anything
// else is a usage error listing the shipped names.
func TestLoadScenarioResolution(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	// A file called "demo" in the working directory shadows the shipped demo.
	mine := "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: mine}\nvariants: [{variant: no-prestop}]\n"
	if err := os.WriteFile("demo", []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		arg, wantName string
	}{
		{"demo", "mine"},
		{filepath.Join(dir, "demo"), "mine"},
		{"demo.yaml", "demo"},
		{"scenarios/demo.yaml", "demo"},
		{"the-trap", "the-trap"},
		{"custom-app", "custom-app"}, // its manifest comes from the embedded examples/
	}
	for _, tt := range tests {
		sc, err := loadScenario(tt.arg)
		if err != nil {
			t.Errorf("loadScenario(%q): %v", tt.arg, err)
			continue
		}
		if sc.Metadata.Name != tt.wantName {
			t.Errorf("loadScenario(%q) loaded %q, want %q", tt.arg, sc.Metadata.Name, tt.wantName)
		}
	}
	for _, arg := range []string{"nope", "scenarios/nope.yaml", "scenarios/demo", "other/demo.yaml", "README"} {
		_, err := loadScenario(arg)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), "no shipped scenario of that name (shipped: caddy, compare-all, control, custom-app, demo,") {
			t.Errorf("loadScenario(%q) = %v, want a usage error listing the shipped scenarios", arg, err)
		}
	}
	// A file that exists but is broken is that file's error, not a lookup.
	if err := os.WriteFile("broken.yaml", []byte("nope: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadScenario("broken.yaml"); err == nil || !strings.Contains(err.Error(), "broken.yaml") || strings.Contains(err.Error(), "shipped") {
		t.Errorf("a broken file on disk: %v", err)
	}
}

func TestScenariosCommand(t *testing.T) {
	out, _, code := runCLI(t, "scenarios")
	if code != 0 {
		t.Fatalf("droprun scenarios exited %d", code)
	}
	// One line each, name then description.
	if !regexp.MustCompile(`\ndemo +no-prestop against graceful-drain, four rollouts each at 500 requests/s\.\n`).MatchString(out) {
		t.Errorf("droprun scenarios lacks demo's line:\n%s", out)
	}
	for _, n := range shippedNames() {
		if !strings.Contains(out, "\n"+n+" ") {
			t.Errorf("droprun scenarios does not list %s:\n%s", n, out)
		}
	}
	out, _, code = runCLI(t, "scenarios", "the-trap")
	want, err := os.ReadFile("../../scenarios/the-trap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || out != string(want) {
		t.Errorf("droprun scenarios the-trap (exit %d) does not print scenarios/the-trap.yaml:\n%s", code, out)
	}
}

// TestShippedNameFromAnywhere runs validate, render and run with a shipped
// scenario's name from an empty working directory.
func TestShippedNameFromAnywhere(t *testing.T) {
	t.Chdir(t.TempDir())
	out, errOut, code := runCLI(t, "validate", "demo", "compare-all")
	if code != 0 || !strings.Contains(out, "ok  demo: 2 variant(s) [no-prestop graceful-drain]") || !strings.Contains(out, "ok  compare-all: 7 variant(s)") {
		t.Errorf("validate demo compare-all (exit %d):\n%s%s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, "render", "--variant", "the-trap", "--initial", "the-trap")
	if code != 0 || !strings.Contains(out, "droprun.dev/variant: no-prestop") {
		t.Errorf("render the-trap (exit %d):\n%s%s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, "render", "custom-app")
	if code != 0 || !strings.Contains(out, "name: my-service") {
		t.Errorf("render custom-app (exit %d):\n%s%s", code, out, errOut)
	}
	_, errOut, code = runCLI(t, "render", "--variant", "no-prestop", "nope")
	if code != 2 || !strings.Contains(errOut, "no shipped scenario of that name") {
		t.Errorf("render nope: exit %d, want 2:\n%s", code, errOut)
	}
	// validate keeps its contract: a file it cannot read is invalid (1).
	_, errOut, code = runCLI(t, "validate", "nope")
	if code != 1 || !strings.Contains(errOut, "nope: no such file, and no shipped scenario of that name") {
		t.Errorf("validate nope: exit %d, want 1:\n%s", code, errOut)
	}
}

// TestInstalledBinary builds droprun as `go install` would and runs it from
// an empty directory: nothing it does may need the source tree.
func TestInstalledBinary(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go toolchain: ", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "droprun")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	empty := t.TempDir()
	droprun := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = empty
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return out.String(), errb.String(), 0
		case errors.As(err, &ee):
			return out.String(), errb.String(), ee.ExitCode()
		}
		t.Fatalf("droprun %v: %v", args, err)
		return "", "", -1
	}

	// The user's own Deployment, for init.
	deploy := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop
spec:
  selector:
    matchLabels: {app: shop}
  template:
    metadata:
      labels: {app: shop}
    spec:
      containers:
      - name: web
        image: shop:1.0
        ports: [{containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /ready, port: 8080}
`
	if err := os.WriteFile(filepath.Join(empty, "deploy.yaml"), []byte(deploy), 0o644); err != nil {
		t.Fatal(err)
	}

	checks := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"scenarios"}, 0, "demo "},
		{[]string{"init", "deploy.yaml", "--image", "shop:1.0", "--image", "shop:1.1"}, 0, "droprun run droprun.yaml"},
		{[]string{"validate", "droprun.yaml"}, 0, "ok  droprun.yaml"},
		{[]string{"render", "--variant", "prestop-sleep", "droprun.yaml"}, 0, "seconds: 5"},
		{[]string{"validate", "demo"}, 0, "ok  demo: 2 variant(s)"},
		{[]string{"render", "--variant", "graceful-drain", "demo"}, 0, "--drain-delay=5s"},
		{[]string{"run", "nope"}, 2, ""},
	}
	for _, c := range checks {
		out, errOut, code := droprun(c.args...)
		if code != c.code || !strings.Contains(out, c.out) {
			t.Errorf("droprun %s: exit %d (want %d), stdout lacks %q:\n%s%s", strings.Join(c.args, " "), code, c.code, c.out, out, errOut)
		}
	}

	t.Run("image build", func(t *testing.T) {
		if testing.Short() {
			t.Skip("compiles bookshop; skipped with -short")
		}
		out, errOut, code := droprun("image", "build", "--out", "images")
		archive := filepath.Join(empty, "images", "bookshop-linux-"+runtime.GOARCH+".tar")
		if code != 0 || !strings.Contains(out, "bookshop:v2-distroless") || !strings.Contains(errOut, "embedded") {
			t.Fatalf("droprun image build: exit %d:\n%s%s", code, out, errOut)
		}
		if fi, err := os.Stat(archive); err != nil || fi.Size() < 1<<20 {
			t.Errorf("archive %s: %v (size %v)", archive, err, fi)
		}
	})
}
