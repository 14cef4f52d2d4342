package report

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/traffic"
)

func rollouts(drops ...uint64) []analysis.RolloutSummary {
	var rs []analysis.RolloutSummary
	for i, d := range drops {
		rs = append(rs, analysis.RolloutSummary{N: i + 1, Window: analysis.Tally{Requests: 15000, Failures: d}})
	}
	return rs
}

// derived fills in what the analysis derives from a hand-built
// summary's tallies: every row's intervals (analysis.SetIntervals).
func derived(sum *analysis.Summary) *analysis.Summary {
	analysis.SetIntervals(sum)
	return sum
}

func summary() *analysis.Summary {
	return derived(&analysis.Summary{Format: analysis.SummaryVersion, Variants: []analysis.VariantSummary{
		{Variant: "no-prestop", Drops: 2100, WindowRequests: 45000, RolloutsWithDrops: 3, Rollouts: rollouts(600, 700, 800),
			Classes: map[traffic.Class]uint64{traffic.ClassRefused: 2000, traffic.ClassTimeout: 100, traffic.Class2xx: 42900},
			Control: analysis.Tally{Requests: 10000}, Client: analysis.ClientSummary{AskedRate: 1000, AchievedRate: 999}},
		{Variant: "graceful-drain", Drops: 0, WindowRequests: 45000, Rollouts: rollouts(0, 0, 0),
			Classes: map[traffic.Class]uint64{traffic.Class2xx: 45000}, Control: analysis.Tally{Requests: 10000}},
	}})
}

func TestRowsStatistics(t *testing.T) {
	rows := Rows(summary())
	bad, good := rows[0], rows[1]
	if bad.DropRate < 0.0466 || bad.DropRate > 0.0467 || bad.DropRateLo >= bad.DropRate || bad.DropRateHi <= bad.DropRate {
		t.Errorf("no-prestop rate %v (%v–%v)", bad.DropRate, bad.DropRateLo, bad.DropRateHi)
	}
	if bad.MaxRolloutDrops != 800 || bad.DropsPerRollout != 700 {
		t.Errorf("max %d per rollout %v", bad.MaxRolloutDrops, bad.DropsPerRollout)
	}
	// No drops in 3 rollouts: no other row's bursts are borrowed, so the
	// bound holds for any shape, 1 − 0.05^(1/3), the per-request one
	// beside it, labelled.
	if good.Bound != "0 in 45,000 requests: at most 64% of rollouts drop at all at 95%, whatever the shape of their bursts (per request, as if requests failed independently, rate < 6.7e-5)" {
		t.Errorf("bound %q", good.Bound)
	}
}

func TestFormats(t *testing.T) {
	for name, f := range Formats {
		var b bytes.Buffer
		if err := f(&b, summary()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(b.String(), "graceful-drain") || !strings.Contains(b.String(), "no-prestop") {
			t.Errorf("%s output lacks a row:\n%s", name, b.String())
		}
	}
	var b bytes.Buffer
	if err := CSV(&b, summary()); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(recs) != 3 || len(recs[0]) != len(CSVHeader()) || recs[1][4] != "2100" {
		t.Errorf("csv %v %v", recs, err)
	}
}

func TestCompareVariants(t *testing.T) {
	v := CompareVariants(summary())
	if len(v) != 1 || !strings.Contains(v[0], "graceful-drain drops less than no-prestop: rate ratio 0 over rollouts (95% CI 0–0.018) (test over 3 rollouts p = 0.005, drops 15x as bursty") {
		t.Errorf("verdicts %v", v)
	}
}

// TestSaturatedAndServer: rollouts that ran short of CPU and the pods' own
// counts show in the table, the Markdown and the CSV.
func TestSaturatedAndServer(t *testing.T) {
	sum := summary()
	v := &sum.Variants[1]
	v.SaturatedRollouts, v.Excused, v.Measurable = 1, 5, analysis.Tally{Requests: 44995}
	v.Server = &analysis.ServerView{ClientSent: 60000, ClientGot2xx: 59990, PodsAnswered2xx: 60001, Pods: 5, PodsFinal: 3}

	var table, md, c bytes.Buffer
	if err := Table(&table, sum); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SATURATED", "1/3",
		"graceful-drain: 5 timeouts excused (in flight while the rig stalled, in 1 of 3 rollouts short of CPU); without them: 0 drops in 44995 requests",
		"graceful-drain: client sent 60000, got 59990 2xx; the pods answered 60001 2xx (5 pods, 3 with exit totals)"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if err := Markdown(&md, sum); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| short of CPU |") || !strings.Contains(md.String(), "| graceful-drain | 3 | 0 | 1/3 |") {
		t.Errorf("markdown:\n%s", md.String())
	}
	if err := CSV(&c, sum); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	n := len(CSVHeader())
	if got := recs[2][n-4:]; got[0] != "1" || got[1] != "5" || got[2] != "0" || got[3] != "44995" {
		t.Errorf("csv saturation columns %v", got)
	}
}

// TestIdleText names both idle timeouts and their order, says which order
// is safe, and counts what an app closing first cost.
func TestIdleText(t *testing.T) {
	for _, tc := range []struct {
		o    analysis.IdleOrder
		want []string
	}{
		{analysis.IdleOrder{Client: "150ms", App: "100ms", AppFirst: true, Failed: 481, ControlFailed: 146, Masked: 1, ControlMasked: 1},
			[]string{"the app closes a connection idle for 100ms, before the client's 150ms", "Keep the app's idle timeout longer", "481 requests failed as 000:idle-closed (146 in the control window", "1 more was retried"}},
		{analysis.IdleOrder{Client: "150ms", App: "1s"}, []string{"the client closes a connection idle for 150ms, before the app's 1s: the safe order", "no request was 000:idle-closed"}},
		{analysis.IdleOrder{Client: "90s", App: "0s", Failed: 2}, []string{"the app keeps idle connections open and the client closes them after 90s: the safe order", "2 requests failed"}},
		{analysis.IdleOrder{Client: "90s", Unknown: "the app is your own"}, []string{"its order with the app's cannot be told: the app is your own"}},
	} {
		got := IdleText(&tc.o)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("IdleText(%+v) = %q, want it to say %q", tc.o, got, w)
			}
		}
	}
}

// TestClocksText: each generator node's clock is said with what was done
// with it: corrected, left alone within its bound, never estimated, or
// shared on kind.
func TestClocksText(t *testing.T) {
	got := ClocksText([]analysis.NodeClock{
		{Node: "a", Estimates: 2, Offset: 0.5, Bound: 0.005, Corrected: true},
		{Node: "b", Estimates: 1, Offset: -0.002, Bound: 0.005},
		{Node: "d"},
	})
	want := "generator clocks: a +500.0 ms ± 5.0 ms (2 estimates), corrected, b -2.0 ms ± 5.0 ms (1 estimate), 0 within its bound: not corrected, d never estimated: its drops are not placed in race windows"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	kind := ClocksText([]analysis.NodeClock{{Node: "a", Estimates: 2, Offset: 0.001, Bound: 0.004, Shared: true}})
	if kind != "generator clocks: a +1.0 ms ± 4.0 ms (2 estimates); the nodes share droprun's clock (kind), so none is corrected" {
		t.Errorf("on kind: %q", kind)
	}
}

// TestExplainedTextSaysSlow: timeouts on connections the pod accepted are
// said apart from the race, as the pod being slow.
func TestExplainedTextSaysSlow(t *testing.T) {
	got := ExplainedText(&analysis.Explained{Explained: 10, Slow: 30, Chance: &analysis.Chance{Tried: 10, TimesShifted: 1, Bursts: 2, BurstsExplained: 2, PShifted: 0.01, PShuffled: 0.4}})
	for _, want := range []string{
		"10 of 40 drops explained by a (pod, node) race window (25.0%)",
		"by burst, the unit: 2 of 2 bursts in a race window, permutation p = 0.01 with the send times shifted, p = 0.4 with the nodes shuffled",
		"30 because the pod was slow (75.0%: timeouts on a new connection the pod had accepted",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}

// TestFrontResentText: what the front's retries hid is said beside the
// drops, with the rollouts they fell in, and what still failed.
func TestFrontResentText(t *testing.T) {
	v := analysis.VariantSummary{Variant: "alpha", FrontResent: 30, FrontMasked: 20,
		Rollouts: []analysis.RolloutSummary{{N: 1, Window: analysis.Tally{FrontResent: 30, FrontMasked: 20}}, {N: 2}}}
	want := "the front resent 30 requests after the pod it picked did not take them, in 1 of 2 rollouts: 20 served on a later try (masked by the front's retries: the client got a 2xx, without the retries they were drops), 10 failed on every try"
	if got := FrontResentText(v); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
