package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/droprun/droprun/harness/atomicfile"
)

// DefaultRecord is where engine setup records what it changed on the
// host, before each change, so that engine teardown can undo it.
const DefaultRecord = "/var/lib/droprun/engine-setup.json"

// HostRecord is every change engine setup made to the host, each with
// what was there before. A field is set by the first setup that makes
// the change and kept by later ones, so teardown restores the host as it
// was before droprun.
type HostRecord struct {
	// Packages are the Debian packages setup installed.
	Packages []string `json:"packages,omitempty"`
	// Wrapper is the runc wrapper setup installed.
	Wrapper string `json:"wrapper,omitempty"`
	// DaemonConfig is dockerd's configuration file before setup first
	// changed it.
	DaemonConfig *FileBefore `json:"daemonConfig,omitempty"`
	// RouteLocalnet is net.ipv4.conf.all.route_localnet before setup set
	// it to 1.
	RouteLocalnet string `json:"routeLocalnet,omitempty"`
	// SysctlFile is a boot-time sysctl file of an earlier droprun that
	// setup removed (route_localnet is set at run time only, next to its
	// guard).
	SysctlFile *FileBefore `json:"sysctlFile,omitempty"`
	// LocalnetGuard says setup added the raw-table rule that drops
	// packets to 127.0.0.0/8 arriving on any interface but lo.
	LocalnetGuard bool      `json:"localnetGuard,omitempty"`
	Time          time.Time `json:"time"`
}

// FileBefore is a file as it was before setup changed it.
type FileBefore struct {
	Path    string `json:"path"`
	Existed bool   `json:"existed"`
	Content string `json:"content,omitempty"`
}

// Changes lists the record's changes, for doctor and teardown.
func (r *HostRecord) Changes() []string {
	var c []string
	if len(r.Packages) > 0 {
		c = append(c, "installed "+strings.Join(r.Packages, ", "))
	}
	if r.Wrapper != "" {
		c = append(c, "installed the runc wrapper "+r.Wrapper)
	}
	if d := r.DaemonConfig; d != nil {
		if d.Existed {
			c = append(c, "changed "+d.Path)
		} else {
			c = append(c, "created "+d.Path)
		}
	}
	if r.RouteLocalnet != "" {
		c = append(c, "set net.ipv4.conf.all.route_localnet=1 (was "+r.RouteLocalnet+")")
	}
	if r.LocalnetGuard {
		c = append(c, "added the raw-table drop of packets to 127.0.0.0/8 from any interface but lo")
	}
	if s := r.SysctlFile; s != nil {
		c = append(c, "removed "+s.Path)
	}
	return c
}

// ReadRecord reads the record at path; none is an empty record.
func ReadRecord(path string) (*HostRecord, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &HostRecord{}, nil
	}
	if err != nil {
		return nil, err
	}
	var r HostRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("droprun's host record %s is unreadable (%v): fix or remove it", path, err)
	}
	return &r, nil
}

// write saves the record, whole, before the change it describes is made.
func (r *HostRecord) write(path string) error {
	r.Time = time.Now().UTC()
	return atomicfile.WriteJSON(path, r)
}

// The localnet guard: with route_localnet=1 the kernel routes packets to
// 127.0.0.0/8 that arrive from outside, so a neighbour on the same network
// could reach what listens or is DNATed on 127.0.0.1 (the kind nodes' host
// ports, the API server's): CVE-2020-8558's pattern. The guard drops such
// packets before conntrack and NAT see them, as the kubelet does for its
// own node; loopback traffic (droprun's client) comes in on lo.
var guardRule = []string{"PREROUTING", "!", "-i", "lo", "-d", "127.0.0.0/8", "-m", "comment", "--comment", "droprun: localnet guard", "-j", "DROP"}

// guardPresent reports whether the guard rule is in the raw table.
func guardPresent(ctx context.Context) bool {
	_, err := run(ctx, nil, "iptables", append([]string{"-t", "raw", "-C"}, guardRule...)...)
	return err == nil
}

// addGuard inserts the guard rule at the top of raw PREROUTING.
func addGuard(ctx context.Context) error {
	_, err := run(ctx, nil, "iptables", append([]string{"-t", "raw", "-I"}, guardRule...)...)
	return err
}

// removeGuard deletes the guard rule.
func removeGuard(ctx context.Context) error {
	_, err := run(ctx, nil, "iptables", append([]string{"-t", "raw", "-D"}, guardRule...)...)
	return err
}
