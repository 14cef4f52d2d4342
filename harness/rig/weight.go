package rig

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"github.com/droprun/droprun/harness/atomicfile"
)

// DefaultClusterShares is the CPU weight droprun gives docker's containers
// (the kind nodes) during a run, in cgroup v1 cpu.shares units, where a
// nice-0 thread weighs 1024 and so does docker's cgroup by default.
//
// Why: the client runs beside the cluster on the same cores. When a
// rollout starts a pod, its node takes a whole core for 1–3 s (kubelet,
// containerd, runc, the API server, kube-proxy's rule syncs). At equal
// weight the client's thread then got as little as 0.1–0.3 cores, its
// answered requests waited seconds to be read, and they counted as
// timeouts the pods never caused. Measured on a 2-core machine with
// compare-all at 1000 req/s: 1–2 of 3 rollouts of a good variant short of
// CPU at 1024; none at 256. The weight only matters when both want the
// CPU: an idle client leaves the cluster every core.
const DefaultClusterShares = 256

// DockerCPU is the CPU weight of the cgroup docker puts its containers in.
// Its siblings are the host's own processes, the client among them.
type DockerCPU struct {
	// File is the weight file: cpu.shares (cgroup v1) or cpu.weight (v2).
	File string
	// Old is the file's value when found, in its own units.
	Old int
}

// FindDockerCPU finds the weight file of docker's parent cgroup under root
// (normally /sys/fs/cgroup), for docker's cgroupfs driver. Under the
// systemd driver the parent is system.slice, shared with every service:
// FindDockerCPU does not touch that and returns an error saying so.
func FindDockerCPU(root string) (DockerCPU, error) {
	for _, f := range []string{
		root + "/cpu/docker/cpu.shares",
		root + "/cpu,cpuacct/docker/cpu.shares",
		root + "/docker/cpu.weight",
	} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		v, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return DockerCPU{}, fmt.Errorf("reading %s: %w", f, err)
		}
		return DockerCPU{File: f, Old: v}, nil
	}
	return DockerCPU{}, errors.New("no docker cgroup with a CPU weight under " + root +
		" (docker's systemd cgroup driver puts containers in system.slice, which droprun leaves alone)")
}

// Units converts shares, in cgroup v1 units, to the file's: as is for
// cpu.shares, scaled for cpu.weight (whose default 100 matches 1024).
func (d DockerCPU) Units(shares int) int {
	if strings.HasSuffix(d.File, "cpu.weight") {
		return max(1, min(10000, shares*100/1024))
	}
	return shares
}

// Set writes shares, in cgroup v1 units, to the file (see Units). It
// returns the value written.
func (d DockerCPU) Set(shares int) (int, error) {
	v := d.Units(shares)
	if err := os.WriteFile(d.File, []byte(strconv.Itoa(v)), 0o644); err != nil {
		return 0, fmt.Errorf("setting the docker containers' CPU weight: %w", err)
	}
	return v, nil
}

// Default is docker's own value for the file: 1024 for cpu.shares, 100 for
// cpu.weight.
func (d DockerCPU) Default() int {
	if strings.HasSuffix(d.File, "cpu.weight") {
		return 100
	}
	return 1024
}

// Restore writes the value found back.
func (d DockerCPU) Restore() error {
	if err := os.WriteFile(d.File, []byte(strconv.Itoa(d.Old)), 0o644); err != nil {
		return fmt.Errorf("restoring the docker containers' CPU weight %d in %s: %w", d.Old, d.File, err)
	}
	return nil
}

// DefaultMarker is where a run records the weight it lowered, so that the
// next run (or droprun doctor) can put it back after a run killed before
// its own restore. /run is a tmpfs cleared at boot, like the cgroup
// filesystem: a marker never outlives the value it describes. Writing the
// weight needs root, and so does /run.
const DefaultMarker = "/run/droprun/cpu-weight.json"

// Marker is what the marker file holds: the weight file, its value before
// droprun lowered it, and who lowered it.
type Marker struct {
	File     string    `json:"file"`     // the weight file
	Original int       `json:"original"` // its value before, in its own units
	Set      int       `json:"set"`      // the value the run wrote
	PID      int       `json:"pid"`      // the run's process
	Time     time.Time `json:"time"`     // when it wrote it, UTC
}

// Running reports whether the run that wrote the marker is still alive: a
// process with its PID exists and started before the marker was written
// (so a PID reused since does not count). Its weight is then in use, not
// left over.
func (m Marker) Running() bool {
	p, err := procfs.NewProc(m.PID)
	if err != nil {
		return false
	}
	st, err := p.Stat()
	if err != nil {
		return false
	}
	start, err := st.StartTime()
	if err != nil {
		return false
	}
	// StartTime has clock-tick resolution; allow a second for rounding.
	return start <= float64(m.Time.Unix())+1
}

// ErrRunInProgress is returned by RestoreLeftover when the marker's run is
// still measuring: two runs at once would each load the other's cluster.
var ErrRunInProgress = errors.New("another droprun run is in progress")

// MarkerError is a marker file that cannot be read or trusted. Its message
// names the file and says how to fix it by hand.
type MarkerError struct {
	Path string // the marker file
	Err  error  // what is wrong with it
}

// Error says what is wrong with the marker and how to fix it.
func (e *MarkerError) Error() string {
	return fmt.Sprintf("droprun's CPU weight marker %s is unusable (%v): %s", e.Path, e.Err, e.Fix())
}

// Unwrap returns the underlying error.
func (e *MarkerError) Unwrap() error { return e.Err }

// Fix is the manual fix: check the weight, put docker's default back if
// it is still lowered, remove the marker.
func (e *MarkerError) Fix() string {
	return "cat /sys/fs/cgroup/cpu/docker/cpu.shares (cgroup v2: /sys/fs/cgroup/docker/cpu.weight); " +
		"if droprun left it lowered, write docker's default back (echo 1024 > /sys/fs/cgroup/cpu/docker/cpu.shares, or echo 100 > /sys/fs/cgroup/docker/cpu.weight), " +
		"then rm " + e.Path
}

// ReadMarker reads the marker at path. It returns nil, nil when there is
// none, and a *MarkerError when it is corrupt or names a file that is not
// a cgroup CPU weight (it is root who writes it back).
func ReadMarker(path string) (*Marker, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &MarkerError{Path: path, Err: err}
	}
	var m Marker
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, &MarkerError{Path: path, Err: err}
	}
	base := filepath.Base(m.File)
	if !filepath.IsAbs(m.File) || (base != "cpu.shares" && base != "cpu.weight") {
		return nil, &MarkerError{Path: path, Err: fmt.Errorf("file %q is not a cgroup cpu.shares or cpu.weight", m.File)}
	}
	if lo, hi := weightRange(m.File); m.Original < lo || m.Original > hi {
		return nil, &MarkerError{Path: path, Err: fmt.Errorf("original value %d is outside %s's range %d..%d", m.Original, base, lo, hi)}
	}
	return &m, nil
}

// weightRange is the kernel's range for the weight file.
func weightRange(file string) (lo, hi int) {
	if strings.HasSuffix(file, "cpu.weight") {
		return 1, 10000
	}
	return 2, 262144
}

// writeMarker writes m to path atomically (a temporary file renamed over
// it), so a run killed mid-write leaves no half marker. The marker is
// private to the user who wrote it (0600).
func writeMarker(path string, m Marker) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	return atomicfile.WriteFunc(path, 0o600, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// SetMarked is Set, after recording in the marker at path the file and
// its value found (d.Old), so that RestoreLeftover can put it back if the
// run dies before RestoreMarked. The weight is left alone when the marker
// cannot be written.
func (d DockerCPU) SetMarked(shares int, path string) (int, error) {
	m := Marker{File: d.File, Original: d.Old, Set: d.Units(shares), PID: os.Getpid(), Time: time.Now().UTC()}
	if err := writeMarker(path, m); err != nil {
		return 0, fmt.Errorf("recording the docker containers' CPU weight in %s before lowering it: %w", path, err)
	}
	v, err := d.Set(shares)
	if err != nil {
		_ = os.Remove(path)
		return 0, err
	}
	return v, nil
}

// ErrWeightChanged says the weight file no longer holds the value droprun
// set: someone else (another tool, a user) changed it since, and droprun
// leaves their value alone rather than write its recorded original over
// it.
var ErrWeightChanged = errors.New("the CPU weight was changed since droprun set it")

// RestoreMarked is Restore, when the file still holds set (the value
// SetMarked wrote), then removes the marker at path. A file that holds
// anything else is left alone, with an error wrapping ErrWeightChanged.
func (d DockerCPU) RestoreMarked(path string, set int) error {
	cur, err := readWeight(d.File)
	switch {
	case errors.Is(err, os.ErrNotExist):
		// docker's cgroup was recreated: nothing to put back.
	case err != nil:
		return err
	case cur != set:
		err = fmt.Errorf("%w: %s is %d, not the %d droprun set; left alone (it was %d before droprun)", ErrWeightChanged, d.File, cur, set, d.Old)
	default:
		err = d.Restore()
	}
	if err != nil && !errors.Is(err, ErrWeightChanged) {
		return err
	}
	if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		return fmt.Errorf("removing the CPU weight marker: %w", rerr)
	}
	return err
}

// Leftover is a weight a killed run left lowered, as RestoreLeftover found
// and restored it.
type Leftover struct {
	Marker
	// Found is false when there was no marker: nothing to restore.
	Found bool
	// Current is the file's value before the restore; Gone is true when the
	// file no longer exists (docker's cgroup was recreated), so there was
	// nothing to write back; Changed is true when it held another value
	// than the run set (someone changed it since), which is left alone.
	Current int
	Gone    bool
	Changed bool
}

// String says what was restored, for the run's log.
func (l Leftover) String() string {
	if !l.Found {
		return "no CPU weight left by an interrupted run"
	}
	who := fmt.Sprintf("by droprun pid %d at %s", l.PID, l.Time.Format(time.RFC3339))
	if l.Gone {
		return fmt.Sprintf("%s, lowered to %d %s, no longer exists: nothing to restore", l.File, l.Set, who)
	}
	if l.Changed {
		return fmt.Sprintf("%s was lowered to %d %s, which ended before restoring it, and is %d now: changed since, so left alone (its original was %d)",
			l.File, l.Set, who, l.Current, l.Original)
	}
	return fmt.Sprintf("%s was lowered to %d %s, which ended before restoring it; restored its original %d (it was %d)",
		l.File, l.Set, who, l.Original, l.Current)
}

// RestoreLeftover puts back the weight recorded in the marker at path when
// the file still holds the value the run set (another value is someone
// else's since, left alone: Changed), and removes the marker. Without a marker it
// does nothing and returns Found false. A marker whose run is still alive
// is left alone with ErrRunInProgress. A corrupt marker is a *MarkerError
// and is left in place.
func RestoreLeftover(path string) (Leftover, error) {
	m, err := ReadMarker(path)
	if err != nil || m == nil {
		return Leftover{}, err
	}
	if m.Running() {
		return Leftover{}, fmt.Errorf("%w: pid %d lowered the docker containers' CPU weight at %s and is still running; two runs at once would measure each other: wait for it to end (or stop it)",
			ErrRunInProgress, m.PID, m.Time.Format(time.RFC3339))
	}
	l := Leftover{Marker: *m, Found: true}
	cur, err := readWeight(m.File)
	switch {
	case errors.Is(err, os.ErrNotExist):
		l.Gone = true
	case err != nil:
		return l, fmt.Errorf("restoring the CPU weight recorded in %s: %w", path, err)
	case cur != m.Set:
		l.Current, l.Changed = cur, true
	default:
		l.Current = cur
		d := DockerCPU{File: m.File, Old: m.Original}
		if err := d.Restore(); err != nil {
			return l, fmt.Errorf("restoring the CPU weight recorded in %s: %w", path, err)
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return l, fmt.Errorf("removing the CPU weight marker %s: %w", path, err)
	}
	return l, nil
}

// readWeight reads a weight file's integer value.
func readWeight(file string) (int, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", file, err)
	}
	return v, nil
}
