package analysis

import "github.com/droprun/droprun/harness/stats"

// IntervalMethod names how an interval's bounds are computed.
type IntervalMethod string

// The methods of the intervals droprun shows.
const (
	// MethodWilson is the Wilson score interval of a proportion
	// (stats.Wilson).
	MethodWilson IntervalMethod = "wilson"
	// MethodPoisson is the exact (Garwood) interval of a Poisson rate
	// (stats.PoissonRate).
	MethodPoisson IntervalMethod = "poisson"
	// MethodClopperPearson is the exact (Clopper–Pearson) one-sided upper
	// bound on a proportion after no events (stats.UpperBoundZero).
	MethodClopperPearson IntervalMethod = "clopper-pearson"
)

// RateInterval is a rate with the confidence interval the views show for
// it: Method says how its bounds were computed, at Confidence.
type RateInterval struct {
	Method     IntervalMethod
	Confidence float64
	stats.Interval
}

// RowIntervals are a row's rates with their intervals, as every view
// shows them (the report's tables and page, the figures, the sweeps).
type RowIntervals struct {
	// DropRate is Drops per window request (Drops / WindowRequests),
	// Wilson; Empty without window requests.
	DropRate RateInterval
	// PerRollout is Drops per rollout, exact Poisson; Empty without
	// rollouts.
	PerRollout RateInterval
	// Measurable is the measurable drop rate (Measurable.Failures /
	// Measurable.Requests, the excused timeouts left out), Wilson: a
	// sweep point's rate.
	Measurable RateInterval
	// ZeroBound is, for a row that dropped nothing in its window
	// requests, the exact one-sided upper bound on its drop rate (Hi; Lo
	// and Point are 0): the rate its zero cannot rule out. Nil for a row
	// with drops or without window requests.
	ZeroBound *RateInterval
}

// IntervalsOf computes the intervals row v shows, from its tallies, at
// stats.DefaultConfidence. It is the one place they are computed: the
// rows carry them in VariantSummary.Intervals and the views only format
// them.
func IntervalsOf(v *VariantSummary) RowIntervals {
	conf := stats.DefaultConfidence
	out := RowIntervals{
		DropRate:   RateInterval{MethodWilson, conf, stats.Wilson(v.Drops, v.WindowRequests, conf)},
		PerRollout: RateInterval{MethodPoisson, conf, stats.PoissonRate(v.Drops, float64(len(v.Rollouts)), conf)},
		Measurable: RateInterval{MethodWilson, conf, stats.Wilson(v.Measurable.Failures, v.Measurable.Requests, conf)},
	}
	if v.Drops == 0 && v.WindowRequests > 0 {
		out.ZeroBound = &RateInterval{MethodClopperPearson, conf, stats.Interval{Hi: stats.UpperBoundZero(v.WindowRequests, conf)}}
	}
	return out
}
