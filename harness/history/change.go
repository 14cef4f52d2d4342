package history

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/droprun/droprun/harness/stats"
)

// Change is a point in a series where the drop rate changed.
type Change struct {
	// At is the index of the first point after the change.
	At int `json:"at"`
	// Before and After are the mean drops per rollout on either side
	// (within the segment the change was found in), and BeforeRate and
	// AfterRate the drop rates (drops over window requests).
	Before     float64 `json:"before"`
	After      float64 `json:"after"`
	BeforeRate float64 `json:"beforeRate"`
	AfterRate  float64 `json:"afterRate"`
	// P is the permutation test's p-value for a change anywhere in the
	// segment, the split found being the most extreme one.
	P float64 `json:"p"`
}

// Change-point test settings: each side of a change holds at least
// MinSide runs (one odd run is an outlier, which the gate catches, not a
// change), and the p-value is from Permutations orders of the runs.
const (
	MinSide      = 2
	Permutations = 1999
)

// ChangePoints finds where the drop rate of points changed, by binary
// segmentation: in a segment, the split between two runs that maximises
// the standardised difference of the two sides' drop rates is a change
// when a permutation test, moving whole runs (a run's rollouts share a
// cluster and a day, so runs, not rollouts, are exchangeable when nothing
// changed), gives it a p-value below 1 − conf; the test then repeats on
// either side. The maximum over splits is taken in every permutation too,
// so the p-value accounts for the split having been chosen. The random
// orders are seeded: the same history gives the same answer.
func ChangePoints(points []Point, conf float64) []Change {
	runs := make([]seg, len(points))
	for i, p := range points {
		d, n := p.totals()
		runs[i] = seg{drops: float64(d), requests: float64(n), rollouts: float64(len(p.Rollouts))}
	}
	var out []Change
	var find func(lo, hi int)
	find = func(lo, hi int) {
		c, ok := splitTest(runs[lo:hi], 1-conf)
		if !ok {
			return
		}
		c.At += lo
		out = append(out, c)
		find(lo, c.At)
		find(c.At, hi)
	}
	find(0, len(runs))
	slices.SortFunc(out, func(a, b Change) int { return a.At - b.At })
	return out
}

// seg is one run's totals.
type seg struct{ drops, requests, rollouts float64 }

// splitTest tests runs for one change; ok when its p-value is below alpha.
func splitTest(runs []seg, alpha float64) (Change, bool) {
	if len(runs) < 2*MinSide {
		return Change{}, false
	}
	at, obs := bestSplit(runs)
	if obs <= 0 {
		return Change{}, false
	}
	rng := rand.New(rand.NewPCG(1, uint64(len(runs))))
	perm := slices.Clone(runs)
	above := 0
	for range Permutations {
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		if _, t := bestSplit(perm); t >= obs*(1-1e-12) {
			above++
		}
	}
	p := float64(above+1) / float64(Permutations+1)
	if p >= alpha {
		return Change{}, false
	}
	b, a := sum(runs[:at]), sum(runs[at:])
	return Change{At: at, Before: b.drops / b.rollouts, After: a.drops / a.rollouts,
		BeforeRate: b.drops / b.requests, AfterRate: a.drops / a.requests, P: p}, true
}

// bestSplit returns the split (index of the first run after it) with the
// largest statistic, and that statistic: the difference of the two sides'
// pooled drop rates over its standard error, the rollouts of each side
// weighing as the samples (the rates' spread across runs, pooled, is the
// error's scale).
func bestSplit(runs []seg) (at int, best float64) {
	total := sum(runs)
	if total.requests == 0 {
		return 0, 0
	}
	// The spread of the runs' rates about the pooled rate, per rollout.
	pooled := total.drops / total.requests
	var ss float64
	for _, r := range runs {
		if r.requests > 0 {
			d := r.drops/r.requests - pooled
			ss += r.rollouts * d * d
		}
	}
	scale := math.Sqrt(ss / math.Max(1, total.rollouts-1))
	if scale == 0 {
		return 0, 0 // every run at one rate: nothing changed
	}
	var left seg
	for k := 1; k < len(runs); k++ {
		left = add(left, runs[k-1])
		if k < MinSide || len(runs)-k < MinSide || left.requests == 0 || total.requests == left.requests {
			continue
		}
		right := seg{total.drops - left.drops, total.requests - left.requests, total.rollouts - left.rollouts}
		diff := math.Abs(left.drops/left.requests - right.drops/right.requests)
		t := diff / (scale * math.Sqrt(1/left.rollouts+1/right.rollouts))
		if t > best {
			at, best = k, t
		}
	}
	return at, best
}

func sum(runs []seg) seg {
	var s seg
	for _, r := range runs {
		s = add(s, r)
	}
	return s
}

func add(a, b seg) seg {
	return seg{a.drops + b.drops, a.requests + b.requests, a.rollouts + b.rollouts}
}

// Say is the change in a sentence: "changed at run R (date, droprun
// version, image): from X to Y per rollout".
func (c Change) Say(points []Point) string {
	p := points[c.At]
	return fmt.Sprintf("changed at run %s (%s, droprun %s, %s): from %s to %s drops per rollout (drop rate %s → %s; permutation test over runs, %s)",
		p.Dir, p.Started.UTC().Format("2006-01-02 15:04"), or(p.Droprun, "?"), p.Image(),
		stats.FormatSig(c.Before, 3), stats.FormatSig(c.After, 3), pct(c.BeforeRate), pct(c.AfterRate), stats.FormatP(c.P))
}

// NoChange says why no change was reported in points at conf: too few
// runs on a side, too few runs for the test ever to reach 1 − conf, or
// none found.
func NoChange(points []Point, conf float64) string {
	n := len(points)
	if n < 2*MinSide {
		return fmt.Sprintf("no change looked for: %d run(s), and a change needs %d on each side", n, MinSide)
	}
	if floor := 1 / float64(Permutations+1); floor >= 1-conf {
		return fmt.Sprintf("undecided: at %s no change can be shown (the permutation test's %d shuffles give p ≥ %s); use a lower --confidence",
			pct(conf), Permutations, stats.FormatSig(floor, 2))
	}
	if best := minP(n); best >= 1-conf {
		need := n
		for minP(need) >= 1-conf {
			need++
		}
		return fmt.Sprintf("undecided: %d runs cannot show a change at %s (the permutation test over %d runs gives %s at best); measure at least %d runs",
			n, pct(conf), n, stats.FormatP(best), need)
	}
	return fmt.Sprintf("no change found in %d runs (permutation test over runs, at %s)", n, pct(conf))
}

// minP is about the smallest p-value the test can give n runs: the two
// most extreme orders (all high runs first, or last) among the
// C(n, n/2) ways to split them evenly.
func minP(n int) float64 {
	c := 1.0
	for i := 1; i <= n/2; i++ {
		c = c * float64(n-n/2+i) / float64(i)
	}
	return 2 / c
}

func pct(r float64) string { return stats.FormatPercent(r, 2) }
