package scenario_test

import (
	"io/fs"
	"testing"
	"testing/fstest"
	"time"

	"github.com/droprun/droprun"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed/render"
)

// TestLoadFSRenders: a scenario read from an fs.FS renders its custom
// manifest from the same FS, not from the working directory.
func TestLoadFSRenders(t *testing.T) {
	fsys := fstest.MapFS{
		"sub/s.yaml":     {Data: []byte(scenario.CustomScenario("m/dep.yaml", "images.tar"))},
		"sub/m/dep.yaml": {Data: []byte(scenario.FsManifest)},
	}
	t.Chdir(t.TempDir())
	s, err := scenario.LoadFS(fsys, "sub/s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render.Render(s, 0, 1, false, "")
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	if img := objs.Deployment.Spec.Template.Spec.Containers[0].Image; img == nil || *img != "m:2" {
		t.Errorf("rendered image %v, want m:2", img)
	}
}

// TestShippedScenariosRender: every variant of every scenario embedded in
// droprun renders, whatever the working directory.
func TestShippedScenariosRender(t *testing.T) {
	t.Chdir(t.TempDir())
	names, err := fs.Glob(droprun.Scenarios(), "*.yaml")
	if err != nil || len(names) < 7 {
		t.Fatalf("embedded scenarios %v (%v), want at least 7", names, err)
	}
	for _, n := range names {
		s, err := scenario.LoadFS(droprun.Scenarios(), n)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		for i := range s.Variants {
			if _, err := render.Render(s, i, 0, true, ""); err != nil {
				t.Errorf("%s: Render %s: %v", n, s.Variants[i].Name, err)
			}
		}
	}
}

// TestTunedParams: a tuned workload's defaults reach what the renderer is
// given.
func TestTunedParams(t *testing.T) {
	s, err := scenario.Load("testdata/valid-tuned.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := render.Of(s, 1).Params(s.Variants[1].Variant, "v2")
	if err != nil {
		t.Fatal(err)
	}
	if p.Image != "bookshop:v2-distroless" || p.Name != "drain-2s" || p.Requests["cpu"] != "50m" || p.DrainDelay != 2*time.Second {
		t.Errorf("params image=%q name=%q requests=%v drain=%s", p.Image, p.Name, p.Requests, p.DrainDelay)
	}
}

// TestSweepRendersZeroSleep checks that preStopSeconds 0 keeps the native
// sleep hook with seconds 0, and that a row's pod label is a valid label
// value although the row's name holds '@' and '='.
func TestSweepRendersZeroSleep(t *testing.T) {
	s, err := scenario.Parse("sweep.yaml", []byte(scenario.SweepScenario))
	if err != nil {
		t.Fatal(err)
	}
	o, err := render.Render(s, s.Index("prestop-sleep-action@preStopSeconds=0"), 0, false, "")
	if err != nil {
		t.Fatal(err)
	}
	c := o.Deployment.Spec.Template.Spec.Containers[0]
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds == nil || *c.Lifecycle.PreStop.Sleep.Seconds != 0 {
		t.Fatalf("preStop at 0: %+v, want sleep with seconds 0", c.Lifecycle)
	}
	if got, want := o.Deployment.Spec.Template.Labels["droprun.dev/row"], "prestop-sleep-action_preStopSeconds_0"; got != want {
		t.Errorf("row label %q, want %q", got, want)
	}
}
