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

// ChangePoints finds where the drop rate of points changed, by circular
// binary segmentation (Olshen, Venkatraman, Lai and Wigler 2004): in a
// segment, the stretch of runs [i, j) whose drop rate differs most from
// the rest's (a stretch reaching either end is one change, one in the
// middle is two: a change and its return, as 1.0 → 1.1 → 1.0) is tested
// by permutation, moving whole runs (a run's rollouts share a cluster and
// a day, so runs, not rollouts, are exchangeable when nothing changed);
// the maximum over stretches is taken in every permutation too, so the
// p-value accounts for the stretch having been chosen. Below 1 − conf it
// is a change (or two), and the pieces it leaves are searched in turn,
// each level's pieces at (1 − conf) over their number (Bonferroni), so
// that more pieces do not mean more false changes. The statistic is the
// difference of the two sides' drop rates over its standard error, the
// runs' rates scattered about their own side's rate (so a shift does not
// inflate its own yardstick). The random orders are seeded: the same
// history gives the same answer.
func ChangePoints(points []Point, conf float64) []Change {
	runs := make([]seg, len(points))
	for i, p := range points {
		d, n := p.totals()
		runs[i] = seg{drops: float64(d), requests: float64(n), rollouts: float64(len(p.Rollouts))}
	}
	var out []Change
	level := [][2]int{{0, len(runs)}}
	for len(level) > 0 {
		alpha := (1 - conf) / float64(len(level))
		var next [][2]int
		for _, sg := range level {
			lo, hi := sg[0], sg[1]
			cs, ok := splitTest(runs[lo:hi], alpha)
			if !ok {
				continue
			}
			cut := []int{lo}
			for _, c := range cs {
				c.At += lo
				out = append(out, c)
				cut = append(cut, c.At)
			}
			cut = append(cut, hi)
			for k := 1; k < len(cut); k++ {
				next = append(next, [2]int{cut[k-1], cut[k]})
			}
		}
		level = next
	}
	slices.SortFunc(out, func(a, b Change) int { return a.At - b.At })
	return out
}

// seg is one run's totals.
type seg struct{ drops, requests, rollouts float64 }

// splitTest tests runs for a change; ok when its p-value is below alpha,
// with the one or two changes of the stretch found, in order.
func splitTest(runs []seg, alpha float64) ([]Change, bool) {
	if len(runs) < 2*MinSide {
		return nil, false
	}
	i, j, obs := bestStretch(runs)
	if obs <= 0 {
		return nil, false
	}
	rng := rand.New(rand.NewPCG(1, uint64(len(runs))))
	perm := slices.Clone(runs)
	above := 0
	for range Permutations {
		rng.Shuffle(len(perm), func(a, b int) { perm[a], perm[b] = perm[b], perm[a] })
		if _, _, t := bestStretch(perm); t >= obs*(1-1e-12) {
			above++
		}
	}
	p := float64(above+1) / float64(Permutations+1)
	if p >= alpha {
		return nil, false
	}
	var out []Change
	for _, at := range []int{i, j} {
		if at > 0 && at < len(runs) {
			b, a := sum(runs[max(0, prevCut(i, j, at)):at]), sum(runs[at:nextCut(i, j, at, len(runs))])
			out = append(out, Change{At: at, Before: b.drops / b.rollouts, After: a.drops / a.rollouts,
				BeforeRate: b.drops / b.requests, AfterRate: a.drops / a.requests, P: p})
		}
	}
	return out, true
}

// prevCut and nextCut bound the runs on either side of change at, among
// the stretch [i, j)'s edges: the side before it starts at the previous
// edge (or 0), the side after ends at the next (or n).
func prevCut(i, j, at int) int {
	if at == j && i > 0 {
		return i
	}
	return 0
}

func nextCut(i, j, at, n int) int {
	if at == i && j < n {
		return j
	}
	return n
}

// bestStretch returns the stretch [i, j) of runs (at least MinSide runs
// in it, and before and after it unless it reaches that end) whose drop
// rate differs most from the rest's,
// and its statistic: the difference of the two rates over its standard
// error, with the rollouts of each side as the samples and the runs'
// rates scattered about their own side's rate as the scale.
func bestStretch(runs []seg) (bi, bj int, best float64) {
	n := len(runs)
	// Prefix sums of rollouts r, drops, requests, and r·x, r·x² of each
	// run's rate x.
	type acc struct{ r, d, q, rx, rxx float64 }
	pre := make([]acc, n+1)
	for k, s := range runs {
		x := 0.0
		if s.requests > 0 {
			x = s.drops / s.requests
		}
		p := pre[k]
		pre[k+1] = acc{p.r + s.rollouts, p.d + s.drops, p.q + s.requests, p.rx + s.rollouts*x, p.rxx + s.rollouts*x*x}
	}
	tot := pre[n]
	if tot.q == 0 {
		return 0, 0, 0
	}
	for i := 0; i < n; i++ {
		for j := i + MinSide; j <= n; j++ {
			// Every side of a change holds MinSide runs or more: the runs
			// before the stretch, in it, and after it (an end may be empty).
			if (i > 0 && i < MinSide) || (j < n && n-j < MinSide) || (i == 0 && j == n) {
				continue
			}
			in := acc{pre[j].r - pre[i].r, pre[j].d - pre[i].d, pre[j].q - pre[i].q, pre[j].rx - pre[i].rx, pre[j].rxx - pre[i].rxx}
			out := acc{tot.r - in.r, tot.d - in.d, tot.q - in.q, tot.rx - in.rx, tot.rxx - in.rxx}
			if in.q == 0 || out.q == 0 {
				continue
			}
			diff := math.Abs(in.d/in.q - out.d/out.q)
			if diff == 0 {
				continue
			}
			// Within-side scatter of the runs' rates, per rollout.
			ss := in.rxx - in.rx*in.rx/in.r + out.rxx - out.rx*out.rx/out.r
			scale := math.Sqrt(math.Max(0, ss) / math.Max(1, tot.r-2))
			t := math.Inf(1)
			if scale > 0 {
				t = diff / (scale * math.Sqrt(1/in.r+1/out.r))
			}
			if t > best {
				bi, bj, best = i, j, t
			}
		}
	}
	return bi, bj, best
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
