package gate

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/scenario"
)

// The shipped starved-rig example (results/README.md): graceful-drain at
// 1000 req/s, a CPU hog during rollout 2. That rollout is short of CPU and
// its drops are all timeouts excused as the rig's stall; rollouts 1 and
// 3 drop nothing; the row is suspect, and the gate calls it inconclusive
// (not failed, not passed) at 5 drops a rollout, naming the rig.
func TestShippedStarvedRig(t *testing.T) {
	const dir = "../../results/examples/starved-rig/"
	b, err := os.ReadFile(dir + "summary.json")
	if err != nil {
		t.Fatal(err)
	}
	var sum analysis.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	analysis.SetIntervals(&sum)
	sc, err := scenario.Load(dir + "scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Variants) != 1 || len(sum.Variants[0].Rollouts) != 3 {
		t.Fatalf("%d rows; want graceful-drain's, with 3 rollouts", len(sum.Variants))
	}
	v := sum.Variants[0]
	for _, ro := range v.Rollouts {
		starved := ro.Rig != nil && ro.Rig.Saturated
		switch {
		case ro.N == 2 && (!starved || ro.Window.Failures == 0 || ro.Excused != ro.Window.Failures):
			t.Errorf("rollout 2: rig %s, %d dropped, %d excused; want short of CPU, every drop excused", ro.Rig, ro.Window.Failures, ro.Excused)
		case ro.N != 2 && (starved || ro.Window.Failures != 0):
			t.Errorf("rollout %d: rig %s, %d dropped; want a clean rollout", ro.N, ro.Rig, ro.Window.Failures)
		}
	}
	if len(v.Suspect) == 0 {
		t.Error("the row is not suspect")
	}
	five := int64(5)
	r, err := Check(&analysis.Analysis{Summary: &sum, Scenario: sc}, Limits{Confidence: 0.95, MaxDropsPerRollout: &five})
	if err != nil {
		t.Fatal(err)
	}
	res := result(t, r, "graceful-drain", CheckPerRollout)
	if r.Verdict() != Inconclusive || res.Verdict != Inconclusive || !strings.Contains(res.Message, "the rig, not the variant, may have dropped them") {
		t.Errorf("verdict %v; per rollout %+v: want inconclusive, naming the rig", r.Verdict(), res)
	}
}
