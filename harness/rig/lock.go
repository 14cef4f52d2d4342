package rig

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// DefaultLock is the host lock a run holds from before it touches the
// cluster or the host until it has put both back: two runs at once would
// load each other's cluster, measure each other's load and fight over the
// CPU weight. The kernel drops the lock when its process ends, however it
// ends (SIGKILL included), so a killed run never leaves it held.
const DefaultLock = "/run/droprun/run.lock"

// Holder is who holds the host lock, as the lock file says.
type Holder struct {
	PID      int       `json:"pid"`
	Scenario string    `json:"scenario"`
	Dir      string    `json:"dir"` // the run directory
	Time     time.Time `json:"time"`
}

// ErrHostBusy says another run holds the host lock.
var ErrHostBusy = errors.New("another droprun run holds this host")

// HostLock is a held host lock.
type HostLock struct{ f *os.File }

// LockHost takes the lock at path for h (flock, never waiting) and writes
// h into it. When another process holds it, the error wraps ErrHostBusy
// and names that run.
func LockHost(path string, h Holder) (*HostLock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("the host lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, fmt.Errorf("the host lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("the host lock %s: %w", path, err)
		}
		var other Holder
		b, _ := os.ReadFile(path)
		if json.Unmarshal(b, &other) != nil || other.PID == 0 {
			return nil, fmt.Errorf("%w (its lock %s names no run yet): wait for it to end", ErrHostBusy, path)
		}
		return nil, fmt.Errorf("%w: pid %d, running %s since %s, results in %s; two runs at once would measure each other: wait for it to end (or stop it: kill %d)",
			ErrHostBusy, other.PID, other.Scenario, other.Time.Format(time.RFC3339), other.Dir, other.PID)
	}
	b, err := json.Marshal(h)
	if err == nil {
		if err = f.Truncate(0); err == nil {
			_, err = f.WriteAt(append(b, '\n'), 0)
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("the host lock %s: %w", path, err)
	}
	return &HostLock{f: f}, nil
}

// Unlock releases the lock. The file stays: removing it would let a run
// that opened it just before lock a file no one else sees.
func (l *HostLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
