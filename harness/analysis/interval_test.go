package analysis

import (
	"math"
	"reflect"
	"testing"

	"github.com/droprun/droprun/harness/analysis/analysistest"
	"github.com/droprun/droprun/harness/stats"
)

// TestIntervalsOf: each rate's method and bounds, and the zero bound only
// for a row that measured something and dropped nothing.
func TestIntervalsOf(t *testing.T) {
	conf := stats.DefaultConfidence
	v := VariantSummary{Drops: 30, WindowRequests: 15000, Rollouts: make([]RolloutSummary, 3),
		Measurable: Tally{Failures: 20, Requests: 14990}}
	iv := IntervalsOf(&v)
	if want := (RateInterval{MethodWilson, conf, stats.Wilson(30, 15000, conf)}); iv.DropRate != want {
		t.Errorf("drop rate %+v, want %+v", iv.DropRate, want)
	}
	if want := (RateInterval{MethodPoisson, conf, stats.PoissonRate(30, 3, conf)}); iv.PerRollout != want || iv.PerRollout.Point != 10 {
		t.Errorf("per rollout %+v, want %+v", iv.PerRollout, want)
	}
	if want := (RateInterval{MethodWilson, conf, stats.Wilson(20, 14990, conf)}); iv.Measurable != want {
		t.Errorf("measurable %+v, want %+v", iv.Measurable, want)
	}
	if iv.ZeroBound != nil {
		t.Errorf("a row with drops has a zero bound: %+v", iv.ZeroBound)
	}

	clean := VariantSummary{WindowRequests: 45000, Rollouts: make([]RolloutSummary, 3)}
	zb := IntervalsOf(&clean).ZeroBound
	if zb == nil || zb.Method != MethodClopperPearson || zb.Hi != stats.UpperBoundZero(45000, conf) || zb.Lo != 0 || zb.Point != 0 {
		t.Errorf("zero bound %+v", zb)
	}
	if got := stats.FormatZeroBound(45000, zb.Hi, zb.Confidence); got != "0 in 45,000 requests: rate < 6.7e-5 at 95%" {
		t.Errorf("zero bound worded %q", got)
	}

	empty := IntervalsOf(&VariantSummary{})
	if !empty.DropRate.Empty || !empty.PerRollout.Empty || !empty.Measurable.Empty || empty.ZeroBound != nil {
		t.Errorf("a row without requests or rollouts: %+v", empty)
	}
	if !math.IsInf(empty.PerRollout.Hi, 1) {
		t.Errorf("per rollout without rollouts: %+v", empty.PerRollout)
	}
}

// TestRowsCarryIntervals: every row Analyze returns has its intervals,
// computed from its own tallies.
func TestRowsCarryIntervals(t *testing.T) {
	a, err := Analyze(analysistest.Write(t, analysistest.Run{}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range a.Summary.Variants {
		if want := IntervalsOf(&v); !reflect.DeepEqual(v.Intervals, want) || v.Intervals.DropRate.Method != MethodWilson {
			t.Errorf("%s: intervals %+v, want %+v", v.Variant, v.Intervals, want)
		}
	}
}
