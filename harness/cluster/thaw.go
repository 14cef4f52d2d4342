package cluster

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// freezerRoot is where cgroup v1 keeps docker's freezer hierarchy.
const freezerRoot = "/sys/fs/cgroup/freezer/docker"

// thawNodes thaws every frozen freezer cgroup inside the node containers
// of cluster name, and reports how many it thawed.
//
// The container runtime inside a node freezes a pod's cgroup while it
// changes it; a node deleted at that moment leaves that cgroup FROZEN, its
// processes cannot die, and docker cannot remove the node ("tried to kill
// container, but did not receive an exit event"). Seen here once, after a
// test deleted a cluster mid-start. Thawing lets the deletion finish.
func (k *Kind) thawNodes(ctx context.Context, name string) int {
	ids, err := k.NodeContainerIDs(ctx, name)
	if err != nil {
		return 0
	}
	n := 0
	for _, id := range ids {
		n += thawUnder(filepath.Join(freezerRoot, id))
	}
	return n
}

// thawUnder writes THAWED into every freezer.state under dir that reads
// FROZEN (or FREEZING), and returns how many it wrote.
func thawUnder(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "freezer.state" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		if s := string(bytes.TrimSpace(b)); strings.HasPrefix(s, "FR") {
			if os.WriteFile(path, []byte("THAWED"), 0o644) == nil {
				n++
			}
		}
		return nil
	})
	return n
}
