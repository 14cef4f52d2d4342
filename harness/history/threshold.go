package history

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/droprun/droprun/harness/stats"
)

// Past is what one key's history holds before a run: the runs a
// threshold may learn from.
type Past struct {
	Key Key
	// Points are the earlier clean runs since the series last changed,
	// oldest first.
	Points []Point
	// Left are the earlier runs left out as suspect, each with why.
	Left []string
	// Since is the latest improvement among the earlier clean runs (nil
	// when none was found), SinceRun the first run after it, and Before
	// the runs before it, left out: they show the service as it was.
	Since    *Change
	SinceRun string
	Before   int
	// Until is the first regression after Since (nil when none), UntilRun
	// the first run after it, and After the runs from it on, left out: a
	// regression never becomes the service's normal, so until an
	// improvement is found the past stays the last good stretch.
	Until    *Change
	UntilRun string
	After    int
	// DoubtStreak is how many of the latest earlier runs in a row were
	// suspect or in the rig's doubt (Point.Doubt): runs a gate leaves
	// undecided. More than two in a row say the rig needs looking at.
	DoubtStreak int
}

// Find returns the series of key, or nil.
func (h *History) Find(k Key) *Series {
	for i := range h.Series {
		if h.Series[i].Key == k {
			return &h.Series[i]
		}
	}
	return nil
}

// Before returns the past of s before a run started at t (the run in dir
// itself excluded, were it in the history): only earlier runs, so a
// check never learns from the run it judges or any later one; suspect
// runs left out; and of the changes ChangePoints finds among them at
// conf, re-based only on an improvement: the past starts at the latest
// improvement (a fix tightens what counts as normal, and the worse
// behaviour before it no longer does) and ends before the first
// regression after it (a regression never becomes normal: until an
// improvement is found, later runs are held to the last good stretch).
func (s *Series) Before(t time.Time, dir string, conf float64) Past {
	past := Past{Key: s.Key}
	self, _ := filepath.Abs(dir)
	var clean []Point
	for _, p := range s.Points {
		if abs, _ := filepath.Abs(p.Dir); abs == self || !p.Started.Before(t) {
			continue
		}
		if len(p.Suspect) > 0 || p.Doubt != "" {
			past.DoubtStreak++
		} else {
			past.DoubtStreak = 0
		}
		if len(p.Suspect) > 0 {
			past.Left = append(past.Left, fmt.Sprintf("%s (suspect: %s)", p.Dir, p.Suspect[0]))
			continue
		}
		clean = append(clean, p)
	}
	cs := ChangePoints(clean, conf)
	from, to := 0, len(clean)
	for k := len(cs) - 1; k >= 0; k-- {
		if c := cs[k]; c.AfterRate < c.BeforeRate {
			past.Since, past.SinceRun, past.Before, from = &cs[k], clean[c.At].Dir, c.At, c.At
			break
		}
	}
	for k := range cs {
		if c := cs[k]; c.At > from && c.AfterRate > c.BeforeRate {
			past.Until, past.UntilRun, past.After, to = &cs[k], clean[c.At].Dir, len(clean)-c.At, c.At
			break
		}
	}
	past.Points = clean[from:to]
	return past
}

// Runs is how many runs the past holds.
func (p Past) Runs() int { return len(p.Points) }

// Rollouts are the past runs' rollouts, oldest run first.
func (p Past) Rollouts() []stats.Rollout {
	var out []stats.Rollout
	for _, pt := range p.Points {
		out = append(out, pt.Rollouts...)
	}
	return out
}

// Values are the past rollouts as the threshold measures them: drops, or
// drop rates (rollouts without requests left out), sorted.
func (p Past) Values(byRate bool) []float64 {
	var out []float64
	for _, r := range p.Rollouts() {
		switch {
		case !byRate:
			out = append(out, float64(r.Drops))
		case r.Requests > 0:
			out = append(out, r.Rate())
		}
	}
	slices.Sort(out)
	return out
}

// Percentile is the nearest-rank percentile pct (in (0, 100]) of the past
// rollouts' values: one of the values, never an interpolation beyond them.
func (p Past) Percentile(pct float64, byRate bool) float64 {
	return stats.SampleQuantile(p.Values(byRate), pct/100)
}

// Describe says where the past comes from, for a check's message: the
// runs and rollouts, the suspect runs left out, and the change it starts
// at.
func (p Past) Describe() string {
	s := fmt.Sprintf("%d past rollouts in %d run(s) of %s", len(p.Rollouts()), p.Runs(), p.Key)
	if len(p.Left) > 0 {
		s += fmt.Sprintf(", %d suspect run(s) left out", len(p.Left))
	}
	if p.Since != nil {
		s += fmt.Sprintf(", since it changed at run %s (from %s to %s drops per rollout, %s; the %d run(s) before left out)",
			p.SinceRun, stats.FormatSig(p.Since.Before, 3), stats.FormatSig(p.Since.After, 3), stats.FormatP(p.Since.P), p.Before)
	}
	if p.DoubtStreak > 2 {
		s += fmt.Sprintf("; the latest %d runs of this key in a row were suspect or in the rig's doubt, which leaves each undecided: the rig, not the service, needs looking at (a quieter machine, a lower rate)", p.DoubtStreak)
	}
	if p.Until != nil {
		s += fmt.Sprintf(", until it regressed at run %s (from %s to %s drops per rollout, %s; the %d run(s) from it on left out until an improvement is found)",
			p.UntilRun, stats.FormatSig(p.Until.Before, 3), stats.FormatSig(p.Until.After, 3), stats.FormatP(p.Until.P), p.After)
	}
	return s
}

// BetweenRuns estimates how much the past's runs differ beyond what their
// rollouts show: the standard deviation of a run's log drop rate between
// runs, by the method of moments (DerSimonian and Laird 1986, unweighted):
// the variance of the runs' log rates less the mean of their variances
// within (φ/K, φ each run's own dispersion, never below floor), at least
// 0. It needs 3 runs that dropped (ok false with fewer), and says how
// many it used. Runs without drops are left out: their log rate is not
// defined.
func (p Past) BetweenRuns(floor stats.Dispersion) (sd float64, runs int, ok bool) {
	var ys, ws []float64
	for _, pt := range p.Points {
		k, n := pt.totals()
		if k == 0 || n == 0 {
			continue
		}
		phi := stats.DispersionOf(pt.Rollouts).Phi
		if floor.Measured() {
			phi = max(phi, floor.At(float64(n)/float64(len(pt.Rollouts))))
		}
		ys = append(ys, math.Log(float64(k)/float64(n)))
		ws = append(ws, phi/float64(k))
	}
	m := len(ys)
	if m < 3 {
		return 0, m, false
	}
	var mean, w float64
	for k := range ys {
		mean, w = mean+ys[k]/float64(m), w+ws[k]/float64(m)
	}
	var ss float64
	for _, y := range ys {
		ss += (y - mean) * (y - mean)
	}
	return math.Sqrt(max(0, ss/float64(m-1)-w)), m, true
}
