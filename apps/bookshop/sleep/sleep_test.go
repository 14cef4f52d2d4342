package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{in: "5", want: 5 * time.Second},
		{in: "2.5", want: 2500 * time.Millisecond},
		{in: "0", want: 0},
		{in: "5s", want: 5 * time.Second},
		{in: "1m30s", want: 90 * time.Second},
		{in: "abc", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "-1s", wantErr: true},
		{in: "NaN", wantErr: true},
		{in: "Inf", wantErr: true},
		{in: "1e300", wantErr: true},
		{in: "", wantErr: true},
	} {
		got, err := parse(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parse(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestProcessSleep builds the program and runs it as the kubelet would.
func TestProcessSleep(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: skipped in -short mode")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("process test: needs the go command to build the binary: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "sleep")
	if out, err := exec.Command(goCmd, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	start := time.Now()
	if out, err := exec.Command(bin, "0.2").CombinedOutput(); err != nil {
		t.Fatalf("sleep 0.2: %v\n%s", err, out)
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("sleep 0.2 returned after %v", took)
	}

	for _, args := range [][]string{{"abc"}, {}, {"1", "2"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("sleep %q: %v, want exit status 2", args, err)
		}
		if !strings.Contains(string(out), "usage: sleep SECONDS") {
			t.Errorf("sleep %q printed %q, want the usage", args, out)
		}
	}
}
