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
