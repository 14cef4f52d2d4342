package analysis

import (
	"math"
	"reflect"
	"testing"

	"github.com/droprun/droprun/harness/analysis/analysistest"
	"github.com/droprun/droprun/harness/stats"
)

// TestIntervalsOf: each rate is over rollouts, on the row's own rollouts
// alone, and the zero bound comes only for a row that measured something
// and dropped nothing: for any burst shape, 1 − 0.05^(1/R).
func TestIntervalsOf(t *testing.T) {
	conf := stats.DefaultConfidence
	v := VariantSummary{Drops: 1500, WindowRequests: 30000, Measurable: Tally{Failures: 1490, Requests: 29990}}
	for k, d := range []uint64{300, 500, 700} {
		ro := RolloutSummary{N: k + 1}
		ro.Window.Failures, ro.Window.Requests = d, 10000
		if k == 0 {
			ro.Excused = 10
		}
		v.Rollouts = append(v.Rollouts, ro)
	}
	iv := IntervalsOf(&v)
	if want := stats.RateOverRollouts(v.PerRollout(), conf, stats.Dispersion{}); iv.DropRate.Interval != want.Interval || iv.DropRate.Source != stats.FromRow || iv.DropRate.Method != MethodOverRollouts {
		t.Errorf("drop rate %+v, want %+v", iv.DropRate, want)
	}
	if w := stats.Wilson(1500, 30000, conf); iv.DropRate.Hi-iv.DropRate.Lo < 5*(w.Hi-w.Lo) {
		t.Errorf("bursty drops, interval %+v no wider than per-request Wilson %+v", iv.DropRate, w)
	}
	if iv.PerRollout.Point != 500 || !nearRel(iv.PerRollout.Hi, iv.DropRate.Hi*10000) {
		t.Errorf("per rollout %+v", iv.PerRollout)
	}
	m := stats.RateOverRollouts([]stats.Rollout{{Drops: 290, Requests: 9990}, {Drops: 500, Requests: 10000}, {Drops: 700, Requests: 10000}}, conf, stats.Dispersion{})
	if iv.Measurable.Interval != m.Interval {
		t.Errorf("measurable %+v, want %+v", iv.Measurable, m)
	}
	if iv.ZeroBound != nil {
		t.Errorf("a row with drops has a zero bound: %+v", iv.ZeroBound)
	}

	clean := VariantSummary{WindowRequests: 45000}
	for k := range 3 {
		ro := RolloutSummary{N: k + 1}
		ro.Window.Requests = 15000
		clean.Rollouts = append(clean.Rollouts, ro)
	}
	zb := IntervalsOf(&clean).ZeroBound
	if zb == nil || zb.Source != stats.AnyShape || !nearRel(zb.Hi, 1-math.Pow(0.05, 1.0/3)) || zb.Lo != 0 || zb.Point != 0 {
		t.Errorf("zero bound: %+v, want for any burst shape, %.4f", zb, 1-math.Pow(0.05, 1.0/3))
	}

	empty := IntervalsOf(&VariantSummary{})
	if !empty.DropRate.Empty || !empty.PerRollout.Empty || !empty.Measurable.Empty || empty.ZeroBound != nil {
		t.Errorf("a row without requests or rollouts: %+v", empty)
	}
}

func nearRel(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }

// TestRowsCarryIntervals: every row Analyze returns has its intervals,
// computed from its own tallies.
func TestRowsCarryIntervals(t *testing.T) {
	a, err := Analyze(analysistest.Write(t, analysistest.Run{}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range a.Summary.Variants {
		if want := IntervalsOf(&v); !reflect.DeepEqual(v.Intervals, want) || v.Intervals.DropRate.Method != MethodOverRollouts {
			t.Errorf("%s: intervals %+v, want %+v", v.Variant, v.Intervals, want)
		}
	}
}
