package scenario

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const sweepScenario = `apiVersion: droprun/v1alpha1
kind: Scenario
metadata: {name: sweep}
variants:
  - variant: no-prestop
  - variant: prestop-sleep-action
    sweep: {field: preStopSeconds, values: [0, 1, 2, 3, 5]}
  - name: drain
    variant: graceful-drain
    sweep: {field: drainDelay, values: [500ms, 2s]}
  - name: probe
    variant: graceful-drain
    sweep: {field: readiness.periodSeconds, values: [1, 3]}
`

// TestSweepExpands checks that a sweep entry becomes one variant per
// value, named NAME@FIELD=VALUE, with the field set and the point kept.
func TestSweepExpands(t *testing.T) {
	s, err := Parse("sweep.yaml", []byte(sweepScenario))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range s.Variants {
		names = append(names, v.Name)
	}
	want := []string{"no-prestop",
		"prestop-sleep-action@preStopSeconds=0", "prestop-sleep-action@preStopSeconds=1", "prestop-sleep-action@preStopSeconds=2",
		"prestop-sleep-action@preStopSeconds=3", "prestop-sleep-action@preStopSeconds=5",
		"drain@drainDelay=500ms", "drain@drainDelay=2s", "probe@readiness.periodSeconds=1", "probe@readiness.periodSeconds=3"}
	if !slices.Equal(names, want) {
		t.Fatalf("names %q\nwant %q", names, want)
	}
	if s.Variants[0].Sweep != nil {
		t.Errorf("unswept variant has a sweep: %+v", s.Variants[0].Sweep)
	}
	i := s.Index("prestop-sleep-action@preStopSeconds=3")
	if got := *s.Effective(i).PreStopSeconds; got != 3 {
		t.Errorf("preStopSeconds = %d, want 3", got)
	}
	if sw := s.Variants[i].Sweep; sw.Field != "preStopSeconds" || sw.Value != "3" || sw.Number != 3 || sw.Group != "prestop-sleep-action" || len(sw.Values) != 0 {
		t.Errorf("sweep point %+v", sw)
	}
	d := s.Variants[s.Index("drain@drainDelay=500ms")]
	if d.Sweep.Number != 0.5 || d.DrainDelay.Seconds() != 0.5 || d.Sweep.Group != "drain" {
		t.Errorf("drain point %+v, delay %v", d.Sweep, d.DrainDelay)
	}
	p := s.Effective(s.Index("probe@readiness.periodSeconds=3"))
	if *p.Readiness.PeriodSeconds != 3 || *p.Readiness.FailureThreshold != 2 {
		t.Errorf("readiness %+v: want period 3 and the default failure threshold 2", *p.Readiness)
	}
}

// TestSweepRecordedRoundTrip checks that a run's scenario.yaml (the
// expanded scenario, marshalled) reads back as the same variants and points.
func TestSweepRecordedRoundTrip(t *testing.T) {
	s, err := Parse("sweep.yaml", []byte(sweepScenario))
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("scenario.yaml", y)
	if err != nil {
		t.Fatalf("recorded scenario does not read back: %v\n%s", err, y)
	}
	if len(back.Variants) != len(s.Variants) {
		t.Fatalf("%d variants, want %d", len(back.Variants), len(s.Variants))
	}
	for i, v := range back.Variants {
		w := s.Variants[i]
		if v.Name != w.Name {
			t.Errorf("variant %d named %q, want %q", i, v.Name, w.Name)
		}
		if (v.Sweep == nil) != (w.Sweep == nil) {
			t.Fatalf("variant %s: sweep %+v, want %+v", v.Name, v.Sweep, w.Sweep)
		}
		if v.Sweep != nil && (v.Sweep.Value != w.Sweep.Value || v.Sweep.Number != w.Sweep.Number || v.Sweep.Group != w.Sweep.Group || v.Sweep.Field != w.Sweep.Field) {
			t.Errorf("variant %s: point %+v, want %+v", v.Name, v.Sweep, w.Sweep)
		}
	}
	// A recorded point renamed by hand no longer matches its sweep.
	bad := strings.Replace(string(y), "name: drain@drainDelay=2s", "name: drain@drainDelay=3s", 1)
	if _, err := Parse("scenario.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), "does not match its sweep") {
		t.Errorf("renamed point: error %v, want one saying it does not match its sweep", err)
	}
}

func TestRowLabel(t *testing.T) {
	for in, want := range map[string]string{
		"no-prestop":                     "no-prestop",
		"x@maxSurge=25%":                 "x_maxSurge_25",
		"d@drainDelay=1.5s":              "d_drainDelay_1.5s",
		strings.Repeat("a", 70):          strings.Repeat("a", 63),
		"a@b=" + strings.Repeat("c", 70): "a_b_" + strings.Repeat("c", 59),
	} {
		if got := RowLabel(in); got != want {
			t.Errorf("RowLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSweepFields(t *testing.T) {
	f := SweepFields()
	for _, want := range []string{"preStopSeconds", "drainDelay", "terminationGracePeriodSeconds", "minReadySeconds", "replicas", "maxSurge", "readiness.periodSeconds"} {
		if !slices.Contains(f, want) {
			t.Errorf("SweepFields() = %v, lacks %s", f, want)
		}
	}
	for _, not := range []string{"flavour", "resources", "readiness"} {
		if slices.Contains(f, not) {
			t.Errorf("SweepFields() = %v, has %s, which is not numeric", f, not)
		}
	}
}
