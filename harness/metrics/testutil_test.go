//go:build promtestutil

// prometheus/testutil imports github.com/kylelemons/godebug, which go.mod
// does not list (go.sum has it), so these tests build only with the
// promtestutil tag, once go.mod requires it:
//
//	require github.com/kylelemons/godebug v1.1.0 // indirect
//	go test -tags promtestutil ./harness/metrics
//
// The other tests check the same with helpers of their own.

package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/droprun/droprun/harness/traffic"
)

func TestTestutilCounters(t *testing.T) {
	m := New(testRun, testScenario, testVersion)
	for i, c := range traffic.Classes() {
		for range i + 1 {
			m.Observe("a", traffic.Record{Class: c})
		}
	}
	for i, c := range traffic.Classes() {
		if got := testutil.ToFloat64(m.requests.WithLabelValues("a", string(c))); got != float64(i+1) {
			t.Errorf("requests{a, %s} = %v, want %d", c, got, i+1)
		}
	}
	if got := testutil.CollectAndCount(m.requests); got != len(traffic.Classes()) {
		t.Errorf("%d series", got)
	}
	problems, err := testutil.GatherAndLint(m.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestTestutilExposition(t *testing.T) {
	m := New(testRun, testScenario, testVersion)
	m.VariantStarted("a")
	m.RolloutStarted("a", 3)
	m.RolloutDone("a", 10*time.Second, 4)
	want := `
# HELP droprun_current_rollout The variant's current (or last) rollout, 1-based; 0 before the first.
# TYPE droprun_current_rollout gauge
droprun_current_rollout{variant="a"} 3
# HELP droprun_phase 1 for the variant's current phase (deploy, control, rollout, settle, between, done), 0 for the others.
# TYPE droprun_phase gauge
droprun_phase{phase="between",variant="a"} 0
droprun_phase{phase="control",variant="a"} 0
droprun_phase{phase="deploy",variant="a"} 0
droprun_phase{phase="done",variant="a"} 0
droprun_phase{phase="rollout",variant="a"} 1
droprun_phase{phase="settle",variant="a"} 0
# HELP droprun_rollout_window_drops_total Failed (non-2xx) requests sent inside closed rollout windows, by variant.
# TYPE droprun_rollout_window_drops_total counter
droprun_rollout_window_drops_total{variant="a"} 4
# HELP droprun_run_info Always 1; its labels say which run, scenario and droprun version the metrics are of.
# TYPE droprun_run_info gauge
droprun_run_info{droprun_version="v0.1.0-test",run_id="20260102-030405-smoke",scenario="smoke"} 1
`
	if err := testutil.GatherAndCompare(m.reg, strings.NewReader(want),
		CurrentRollout, PhaseGauge, RolloutWindowDropsTotal, RunInfo); err != nil {
		t.Error(err)
	}
}
