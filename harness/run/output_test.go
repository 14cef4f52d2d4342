package run

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/rig"
	"github.com/droprun/droprun/harness/scenario"
)

// TestCreateOutputIsExclusive: of runs started at once into one directory
// (the same default name, started in the same second), exactly one gets
// it; a directory holding anything, or a link in its place, is refused.
func TestCreateOutputIsExclusive(t *testing.T) {
	sc, err := scenario.Parse("out", []byte("apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: out}\nvariants: [{variant: no-prestop}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for trial := range 50 {
		dir := filepath.Join(t.TempDir(), "runs", "20261202-080000-out")
		var wg sync.WaitGroup
		var mu sync.Mutex
		var won int
		var refusals []string
		for range 4 {
			wg.Go(func() {
				o, err := CreateOutput(dir, sc)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					refusals = append(refusals, err.Error())
					return
				}
				won++
				o.Close()
			})
		}
		wg.Wait()
		if won != 1 {
			t.Fatalf("trial %d: %d runs got %s, want exactly 1 (refusals %q)", trial, won, dir, refusals)
		}
		for _, r := range refusals {
			if !strings.Contains(r, "claimed by another run") && !strings.Contains(r, "is not empty") {
				t.Errorf("trial %d: refusal %q does not say the directory is taken", trial, r)
			}
		}
	}
	elsewhere := t.TempDir()
	link := filepath.Join(t.TempDir(), "run")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateOutput(link, sc); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("a link in the run directory's place: %v, want refused", err)
	}
	if got, _ := os.ReadDir(elsewhere); len(got) != 0 {
		t.Errorf("CreateOutput wrote %d file(s) through a link", len(got))
	}
}

// TestSecondRunRefused: while one run holds the host, another is refused
// with the first's PID and directory, before it makes a run directory or
// touches a cluster.
func TestSecondRunRefused(t *testing.T) {
	sc, err := scenario.Parse("second", []byte("apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: second}\nvariants: [{variant: no-prestop}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	lockPath := filepath.Join(t.TempDir(), "run.lock")
	first, err := rig.LockHost(lockPath, rig.Holder{PID: 4242, Scenario: "demo", Dir: "runs/first", Time: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Unlock()
	dir := filepath.Join(t.TempDir(), "run")
	a, err := Run(context.Background(), sc, Options{Dir: dir, HostLock: lockPath})
	if a != nil || !errors.Is(err, rig.ErrHostBusy) || !strings.Contains(err.Error(), "pid 4242, running demo") || !strings.Contains(err.Error(), "runs/first") {
		t.Fatalf("a second run: %v, want refused naming pid 4242, demo and runs/first", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the refused run made its directory (%v)", err)
	}
}
