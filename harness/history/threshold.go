package history

import (
	"fmt"
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
	// Since is the latest change among the earlier clean runs (nil when
	// none was found), SinceRun the first run after it, and Before the
	// runs before it, left out: they show the service as it was.
	Since    *Change
	SinceRun string
	Before   int
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
// threshold never learns from the run it judges or any later one; suspect
// runs left out; and only the runs since the latest change ChangePoints
// finds among them at conf, so a fix tightens the limit and an old,
// worse behaviour no longer counts as normal.
func (s *Series) Before(t time.Time, dir string, conf float64) Past {
	past := Past{Key: s.Key}
	self, _ := filepath.Abs(dir)
	var clean []Point
	for _, p := range s.Points {
		if abs, _ := filepath.Abs(p.Dir); abs == self || !p.Started.Before(t) {
			continue
		}
		if len(p.Suspect) > 0 {
			past.Left = append(past.Left, fmt.Sprintf("%s (suspect: %s)", p.Dir, p.Suspect[0]))
			continue
		}
		clean = append(clean, p)
	}
	if cs := ChangePoints(clean, conf); len(cs) > 0 {
		last := cs[len(cs)-1]
		past.Since, past.SinceRun, past.Before = &last, clean[last.At].Dir, last.At
		clean = clean[last.At:]
	}
	past.Points = clean
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
	return s
}
