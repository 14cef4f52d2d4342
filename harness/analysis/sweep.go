package analysis

import (
	"cmp"
	"slices"

	"github.com/droprun/droprun/harness/scenario"
)

// sweepPoint is the value of the swept field variant v measured, or nil
// when v is not one of a sweep's variants.
func sweepPoint(v scenario.Variant) *SweepPoint {
	if v.Sweep == nil || v.Sweep.Value == "" {
		return nil
	}
	return &SweepPoint{Field: v.Sweep.Field, Value: v.Sweep.Value, Number: v.Sweep.Number, Group: v.Sweep.Group}
}

// Sweep is one swept scenario entry: its rows, one per value, in the
// order of the value's number: the dose-response of the field.
type Sweep struct {
	// Group is the name of the swept entry, and Field the workload field.
	Group  string
	Field  string
	Points []SweepResult
}

// SweepResult is one row of a sweep: what its value dropped.
type SweepResult struct {
	// Row is the row's name (GROUP@FIELD=VALUE), Point its value.
	Row   string
	Point SweepPoint
	// Drops and Requests are the rollout windows' measurable tally
	// (VariantSummary.Measurable): the timeouts sent while the client
	// itself stalled are left out, as excused.
	Drops, Requests uint64
	// Rate is Drops/Requests with its interval: the row's
	// RowIntervals.Measurable.
	Rate RateInterval
	// ExpectedFloor is the drops the control window's failure rate
	// predicts for the row's windows (VariantSummary.ExpectedFloor).
	ExpectedFloor float64
	// AtFloor reports that the row dropped no more than ExpectedFloor:
	// nothing beyond the rig's own failures. With a clean control window
	// that means no drops at all. A row without window requests measured
	// nothing and is not at the floor.
	AtFloor bool
}

// AtFloor reports that failures in rollout windows are nothing beyond the
// rig's own: no more than expectedFloor, what the control windows'
// failure rate predicts for those windows (VariantSummary.ExpectedFloor).
// With clean control windows that means none. The report's sweep tables
// and advise's sweep check both decide with it.
func AtFloor(failures uint64, expectedFloor float64) bool {
	return float64(failures) <= expectedFloor
}

// Sweeps groups the rows that measured a sweep (VariantSummary.Sweep set)
// by their entry, in the order the entries first appear, each sweep's
// points sorted by their value's number.
func Sweeps(rows []VariantSummary) []Sweep {
	var out []Sweep
	index := map[string]int{}
	for _, r := range rows {
		if r.Sweep == nil {
			continue
		}
		i, ok := index[r.Sweep.Group]
		if !ok {
			i = len(out)
			index[r.Sweep.Group] = i
			out = append(out, Sweep{Group: r.Sweep.Group, Field: r.Sweep.Field})
		}
		m := r.Measurable
		out[i].Points = append(out[i].Points, SweepResult{
			Row: r.Variant, Point: *r.Sweep, Drops: m.Failures, Requests: m.Requests,
			Rate:          r.Intervals.Measurable,
			ExpectedFloor: r.ExpectedFloor,
			AtFloor:       m.Requests > 0 && AtFloor(m.Failures, r.ExpectedFloor),
		})
	}
	for i := range out {
		slices.SortStableFunc(out[i].Points, func(a, b SweepResult) int { return cmp.Compare(a.Point.Number, b.Point.Number) })
	}
	return out
}

// Floor returns the smallest value (as written) from which the sweep's
// every point, that one and all larger, is at the floor: where more of the
// field stops buying anything measurable. ok is false when the largest
// value is not at the floor (the drops never stopped within the sweep).
func (s Sweep) Floor() (value string, ok bool) {
	for i := len(s.Points) - 1; i >= 0 && s.Points[i].AtFloor; i-- {
		value, ok = s.Points[i].Point.Value, true
	}
	return value, ok
}

// Seconds reports whether the sweep's field is a wait after the pod's
// deletion (the preStop sleep, the app's drain delay), so its values share
// an axis with the measured propagation delays (PropagationDelays).
func (s Sweep) Seconds() bool {
	switch s.Field {
	case "preStopSeconds", "drainDelay":
		return true
	}
	return false
}

// PropagationDelays are the seconds after a pod's deletion at which the
// hop that chose the pods stopped routing to it, across rows: every seen
// RouteGap.Unrouted of a front's pods when any row has such (the run went
// through a front), else from the nodes' data plane when any has such,
// else from any source. They say how long a sleep must last for every
// chooser to have stopped routing before the pod stops serving. Sorted
// ascending.
func PropagationDelays(rows []VariantSummary) []float64 {
	var front, dataPlane, any []float64
	for _, r := range rows {
		for _, g := range r.Routes {
			if g.Unrouted < 0 {
				continue
			}
			any = append(any, g.Unrouted)
			switch g.Source {
			case RouteSourceFront:
				front = append(front, g.Unrouted)
			case RouteSourceDataPlane:
				dataPlane = append(dataPlane, g.Unrouted)
			}
		}
	}
	out := any
	switch {
	case len(front) > 0:
		out = front
	case len(dataPlane) > 0:
		out = dataPlane
	}
	slices.Sort(out)
	return out
}
