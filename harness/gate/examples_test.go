package gate

import (
	"math"
	"slices"
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
	a := shipped(t, "starved-rig")
	sum := a.Summary
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
	r, err := Check(a, Limits{Confidence: 0.95, MaxDropsPerRollout: &five})
	if err != nil {
		t.Fatal(err)
	}
	res := result(t, r, "graceful-drain", CheckPerRollout)
	if r.Verdict() != Inconclusive || res.Verdict != Inconclusive || !strings.Contains(res.Message, "the rig, not the variant, may have dropped them") {
		t.Errorf("verdict %v; per rollout %+v: want inconclusive, naming the rig", r.Verdict(), res)
	}
}

// shipped reads a shipped example run's summary.json, with its
// intervals, and the scenario it ran.
func shipped(t *testing.T, name string) *analysis.Analysis {
	t.Helper()
	dir := "../../results/examples/" + name + "/"
	sum, err := analysis.ReadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Load(dir + "scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return &analysis.Analysis{Summary: sum, Scenario: sc}
}

// The new pods' shares of results/README.md: with long-lived connections
// (HTTP/1.1 keep-alive, h2c, gRPC without MaxConnectionAge) some rollout
// of every row left a new pod at half an even share or less over the 30 s
// after it, so --min-new-pod-share 0.6 fails every such row; gRPC with a
// 10 s MaxConnectionAge (least 0.74) passes it. Every span is decided, and
// the pods' counters over it add up to the client's rate but for the calls
// that failed in it (within 5%).
func TestShippedNewPodShare(t *testing.T) {
	// README.md: the least-served new pod's share, per rollout, ranges
	// over h2c from 0 to 0.17, over gRPC from 0.17 to 0.85 without
	// MaxConnectionAge and from 0.74 to 0.88 with it.
	type span struct{ lo, hi float64 }
	for _, tc := range []struct {
		run      string
		rate     float64
		balanced []string // rows --min-new-pod-share 0.6 passes
		least    map[bool]span
	}{
		{"h2c", 300, nil, map[bool]span{false: {0, 0.17}}},
		{"keep-alive", 800, nil, map[bool]span{false: {0.12, 0.90}}},
		{"grpc", 300, []string{"grpc-max-connection-age"}, map[bool]span{false: {0.17, 0.85}, true: {0.74, 0.88}}},
	} {
		a := shipped(t, tc.run)
		r, err := Check(a, Limits{Confidence: 0.95, MinNewPodShare: f64(0.6)})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range a.Summary.Variants {
			for _, ro := range v.Rollouts {
				b := ro.Balance
				if b == nil || b.Undecided != "" || b.Seconds < 29 || math.Abs(float64(b.Answered)-tc.rate*b.Seconds) > 0.05*tc.rate*b.Seconds {
					t.Errorf("%s %s rollout %d: balance %+v; want a decided 30 s span adding up to %.0f/s", tc.run, v.Variant, ro.N, b, tc.rate)
					continue
				}
				sp := tc.least[slices.Contains(tc.balanced, v.Variant)]
				if least := math.Round(b.Least*100) / 100; least < sp.lo || least > sp.hi {
					t.Errorf("%s %s rollout %d: least-served new pod %.2f of an even share, want %.2f–%.2f", tc.run, v.Variant, ro.N, least, sp.lo, sp.hi)
				}
			}
			want := Fail
			if slices.Contains(tc.balanced, v.Variant) {
				want = Pass
			}
			if res := result(t, r, v.Variant, CheckBalance); res.Verdict != want {
				t.Errorf("%s %s: %s (%s), want %s", tc.run, v.Variant, res.Outcome, res.Message, want)
			}
		}
	}
}
