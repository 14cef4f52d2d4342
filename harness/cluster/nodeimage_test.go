package cluster

import (
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestContainerdOOMPatch: a node image that is not droprun's gets
// restrict_oom_score_adj through kind's containerdConfigPatches, and the
// patch is part of the hash, so a cluster made without it is not reused.
func TestContainerdOOMPatch(t *testing.T) {
	if p := KindConfig(testConfig).ContainerdConfigPatches; len(p) != 0 {
		t.Errorf("droprun's image (built in): patches %v, want none", p)
	}
	c := testConfig
	c.RestrictOOMScoreAdj = true
	k := KindConfig(c)
	if len(k.ContainerdConfigPatches) != 1 || !strings.Contains(k.ContainerdConfigPatches[0], `[plugins."io.containerd.grpc.v1.cri"]`) ||
		!strings.Contains(k.ContainerdConfigPatches[0], "restrict_oom_score_adj = true") {
		t.Errorf("patches %v", k.ContainerdConfigPatches)
	}
	// kind reads the patch as TOML inside YAML: it must survive the trip.
	b, err := yaml.Marshal(k)
	if err != nil || !strings.Contains(string(b), "restrict_oom_score_adj = true") {
		t.Errorf("YAML %s, %v", b, err)
	}
	if c.Hash() == testConfig.Hash() {
		t.Error("the containerd patch does not change the hash")
	}
}

func TestOOMPatchFollowsImageAndHost(t *testing.T) {
	for _, tc := range []struct {
		droprun, lacks, want bool
	}{
		{droprun: true, lacks: true, want: false}, // built into droprun's image
		{droprun: false, lacks: true, want: true}, // kind's published image on a host without CAP_SYS_RESOURCE
		{droprun: false, lacks: false, want: false},
	} {
		k := &Kind{host: Host{LacksSysResource: func() (bool, error) { return tc.lacks, nil }}}
		got, err := k.oomPatch(tc.droprun)
		if err != nil || got != tc.want {
			t.Errorf("droprun image %v, host lacks CAP_SYS_RESOURCE %v: patch %v, %v; want %v", tc.droprun, tc.lacks, got, err, tc.want)
		}
	}
	k := &Kind{host: Host{LacksSysResource: func() (bool, error) { return false, errors.New("no /proc") }}}
	if _, err := k.oomPatch(false); err == nil || !strings.Contains(err.Error(), "no /proc") {
		t.Errorf("capability check error: %v", err)
	}
}
