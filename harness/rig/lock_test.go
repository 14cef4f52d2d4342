package rig

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostLockOneRunAtATime: a second run is refused while a first holds
// the lock, with the first's PID, scenario and directory; once the first
// is killed with SIGKILL (no chance to clean up) the lock is free again.
func TestHostLockOneRunAtATime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "droprun", "run.lock")
	if os.Getenv("DROPRUN_LOCK_CHILD") != "" {
		l, err := LockHost(os.Getenv("DROPRUN_LOCK_CHILD"), Holder{PID: os.Getpid(), Scenario: "demo", Dir: "runs/first", Time: time.Now().UTC()})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		defer l.Unlock()
		fmt.Println("locked")
		select {} // until killed
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostLockOneRunAtATime$")
	cmd.Env = append(os.Environ(), "DROPRUN_LOCK_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("the first run said %q (%v)", line, err)
	}
	second := Holder{PID: os.Getpid(), Scenario: "compare-all", Dir: "runs/second", Time: time.Now().UTC()}
	_, err = LockHost(path, second)
	if !errors.Is(err, ErrHostBusy) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d, running demo", cmd.Process.Pid)) || !strings.Contains(err.Error(), "runs/first") {
		t.Fatalf("a second run while the first holds the lock: %v, want ErrHostBusy naming pid %d, demo and runs/first", err, cmd.Process.Pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	l, err := LockHost(path, second)
	if err != nil {
		t.Fatalf("after SIGKILL of the first run: %v, want the lock", err)
	}
	defer l.Unlock()
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `"scenario":"compare-all"`) || strings.Contains(string(b), "demo") {
		t.Errorf("the lock file holds %q, want the second run alone", b)
	}
	// A link planted in the lock's place is not followed.
	link := filepath.Join(t.TempDir(), "run.lock")
	if err := os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), link); err != nil {
		t.Fatal(err)
	}
	if _, err := LockHost(link, second); err == nil {
		t.Error("LockHost through a link: want an error")
	}
}
