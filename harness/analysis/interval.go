package analysis

import "github.com/droprun/droprun/harness/stats"

// IntervalMethod names how an interval's bounds are computed.
type IntervalMethod string

// The method of the intervals droprun shows.
const (
	// MethodOverRollouts treats the rollout, not the request, as the
	// independent sample: the quasi-binomial Wilson interval with the
	// dispersion the row's own rollouts measured, and for a row without
	// drops the bound that holds for any burst shape (stats.RateOverRollouts,
	// docs/statistics.md). No row borrows another's bursts.
	MethodOverRollouts IntervalMethod = "over-rollouts"
)

// RateInterval is a rate with the confidence interval the views show for
// it: Method says how its bounds were computed, at Confidence, and Source
// what the bursts' measure rests on (stats.FromNothing: nothing, so the
// interval is per request and must say so; stats.AnyShape: a row without
// drops, bounded for any burst shape).
type RateInterval struct {
	Method     IntervalMethod
	Confidence float64
	stats.Interval
	Source stats.DispersionSource
}

// PerRequest reports that no rollout measured the bursts, so the interval
// treats requests as independent.
func (r RateInterval) PerRequest() bool { return r.Source == stats.FromNothing }

// RowIntervals are a row's rates with their intervals, as every view
// shows them (the report's tables and page, the figures, the sweeps).
type RowIntervals struct {
	// DropRate is Drops per window request (Drops / WindowRequests), over
	// rollouts; Empty without window requests.
	DropRate RateInterval
	// PerRollout is Drops per rollout: DropRate's interval times the mean
	// window requests per rollout. Empty without rollouts.
	PerRollout RateInterval
	// Measurable is the measurable drop rate (Measurable.Failures /
	// Measurable.Requests, the excused timeouts left out), over rollouts:
	// a sweep point's rate.
	Measurable RateInterval
	// Wide is, for a row with drops, the wider interval for the burst
	// shapes DropRate's cannot cover (heavy-tailed per-rollout rates, rare
	// and very bursty drops: docs/statistics.md): the union of the 99 %
	// interval over rollouts and the gate's bounds (never calmer than
	// WideFloor, each side at 97.5 %). Nil without drops.
	Wide *RateInterval
	// ZeroBound is, for a row that dropped nothing in its window
	// requests, the one-sided upper bound over rollouts on its drop rate
	// (Hi; Lo and Point are 0): the rate its zero cannot rule out. Nil for
	// a row with drops or without window requests.
	ZeroBound *RateInterval
}

// Dispersion is how bursty the run's drops are: stats.DispersionOf over
// the rollouts of every row that dropped and is not suspect (a client
// stall is the rig's burst, not the race's). It describes the run; no
// row's interval borrows it (a row without drops may drop in other
// bursts than the rows that did).
func (s *Summary) Dispersion() stats.Dispersion {
	groups := make([][]stats.Rollout, 0, len(s.Variants))
	for _, v := range s.Variants {
		if len(v.Suspect) == 0 {
			groups = append(groups, v.PerRollout())
		}
	}
	return stats.DispersionOf(groups...)
}

// SetIntervals computes every row's intervals (VariantSummary.Intervals).
// Analyze calls it; a summary read from summary.json needs it before a
// view formats its rows.
func SetIntervals(s *Summary) {
	for k := range s.Variants {
		s.Variants[k].Intervals = IntervalsOf(&s.Variants[k])
	}
}

// IntervalsOf computes the intervals row v shows, from its own rollouts'
// tallies alone, at stats.DefaultConfidence. It is the one place they are
// computed: the rows carry them in VariantSummary.Intervals and the views
// only format them.
func IntervalsOf(v *VariantSummary) RowIntervals {
	conf := stats.DefaultConfidence
	none := stats.Dispersion{}
	over := func(rs []stats.Rollout) RateInterval {
		r := stats.RateOverRollouts(rs, conf, none)
		return RateInterval{MethodOverRollouts, conf, r.Interval, r.Source}
	}
	out := RowIntervals{DropRate: over(v.PerRollout()), Measurable: over(v.perRolloutMeasurable())}
	out.PerRollout = out.DropRate
	if n := len(v.Rollouts); n > 0 && !out.DropRate.Empty {
		per := float64(v.WindowRequests) / float64(n)
		out.PerRollout.Point, out.PerRollout.Lo, out.PerRollout.Hi = out.DropRate.Point*per, out.DropRate.Lo*per, out.DropRate.Hi*per
	} else {
		out.PerRollout.Interval = stats.Interval{Empty: true, Hi: 1, Point: out.DropRate.Point}
	}
	if v.Drops > 0 {
		r99 := stats.RateOverRollouts(v.PerRollout(), 0.99, none)
		lo, hi, _ := stats.BoundsOverRollouts(v.PerRollout(), 1-(1-conf)/2, stats.Stated(WideFloor))
		w := RateInterval{MethodOverRollouts, conf, stats.Interval{Point: out.DropRate.Point, Lo: min(r99.Lo, lo), Hi: max(r99.Hi, hi)}, r99.Source}
		out.Wide = &w
	}
	if v.Drops == 0 && v.WindowRequests > 0 {
		_, hi, r := stats.BoundsOverRollouts(v.PerRollout(), conf, none)
		out.ZeroBound = &RateInterval{MethodOverRollouts, conf, stats.Interval{Hi: hi}, r.Source}
	}
	return out
}

// WideFloor is the least burstiness (intraclass correlation) the wide
// interval's gate bounds assume: the gate's own default
// (gate.DefaultBurstiness, which this package cannot import).
const WideFloor = 0.005
