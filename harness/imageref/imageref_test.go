package imageref

import "testing"

func TestCheckNode(t *testing.T) {
	for _, ok := range []string{Auto, DefaultNodeImage, "127.0.0.1:5000/mirror/node:v1.37.2",
		"kindest/node:v1.37.0@sha256:0000000000000000000000000000000000000000000000000000000000000000"} {
		if err := CheckNode(ok); err != nil {
			t.Errorf("CheckNode(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "kindest/node", "kindest/node:latest", "127.0.0.1:5000/mirror/node", "upper/Case:v1"} {
		if err := CheckNode(bad); err == nil {
			t.Errorf("CheckNode(%q): want an error", bad)
		}
	}
}

// TestKnownNode: droprun's and kind's node images (by tag or digest) are
// known; a mirror, a look-alike name or another repository is not.
func TestKnownNode(t *testing.T) {
	for ref, want := range map[string]bool{
		Auto: true, DefaultNodeImage: true, "docker.io/droprun/node:v1.36.0": true, "kindest/node:v1.37.0": true,
		"kindest/node@sha256:0000000000000000000000000000000000000000000000000000000000000000": true,
		"127.0.0.1:5000/mirror/node:v1.37.2":                                                   false, "kindest/node-evil:v1.37.0": false, "evil/kindest/node:v1.37.0": false,
		"ghcr.io/kindest/node:v1.37.0": false, "": false,
	} {
		if got := KnownNode(ref); got != want {
			t.Errorf("KnownNode(%q) = %v, want %v", ref, got, want)
		}
	}
}
