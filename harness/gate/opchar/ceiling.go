package opchar

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
)

// Ceiling is the power of the most powerful level-alpha test of "this
// run's mean drop rate is ratio times the family's limit" against "it is
// the limit", for a run of r rollouts from family f (with its day effect),
// estimated over runs simulated runs a hypothesis.
//
// The test knows what no gate does: the family, the limit rate itself and
// each rollout's true drop rate, not only its drops. By the
// Neyman–Pearson lemma the likelihood-ratio test on those rates is the
// most powerful test on them; a rollout's drops are drawn from its rate
// alone (binomially, whatever the mean), and a history's runs are drawn
// apart from this run, so a randomised test on the rates can do whatever
// a test on the drops and a history can. So no gate whose false-fail rate
// on a stable run is at most alpha fails such a run more often than this:
// it is the ceiling on --history's power against a regression.
func Ceiling(f Family, ratio float64, r, runs int, alpha float64, seed uint64) float64 {
	h := fnv.New64a()
	h.Write([]byte(f.Name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()+uint64(r)))
	mu := f.Limit
	logLR := func(m float64) float64 {
		d := f.day(rng)
		rates := make([]float64, r)
		for i := range rates {
			rates[i] = f.Rate(rng, m*d)
		}
		return f.logLikelihood(rates, ratio*mu) - f.logLikelihood(rates, mu)
	}
	null, alt := make([]float64, runs), make([]float64, runs)
	for i := range runs {
		null[i] = logLR(mu)
	}
	for i := range runs {
		alt[i] = logLR(ratio * mu)
	}
	return npPower(null, alt, alpha)
}

// logLikelihood is the log likelihood (up to a constant) of rollouts'
// rates under f at mean mu: with a day effect, the rates share one
// factor D = exp(σz − σ²/2), z standard normal, integrated out by the
// trapezoid rule over z in [−8, 8].
func (f Family) logLikelihood(rates []float64, mu float64) float64 {
	if f.Day == 0 {
		pdf, s := f.Density(mu), 0.0
		for _, x := range rates {
			s += pdf(x)
		}
		return s
	}
	const step, width = 0.05, 8.0
	var terms []float64
	for z := -width; z <= width+step/2; z += step {
		pdf := f.Density(mu * math.Exp(f.Day*z-f.Day*f.Day/2))
		s := -z * z / 2
		for _, x := range rates {
			s += pdf(x)
		}
		terms = append(terms, s)
	}
	top := slices.Max(terms)
	if math.IsInf(top, -1) {
		return top
	}
	sum := 0.0
	for _, s := range terms {
		sum += math.Exp(s - top)
	}
	return top + math.Log(sum)
}

// npPower is the power, on the alternative's sample alt, of the test that
// rejects where the statistic lies above the null sample's 1 − alpha
// quantile, randomised at that quantile so that its level is alpha.
func npPower(null, alt []float64, alpha float64) float64 {
	null = slices.Sorted(slices.Values(null))
	n := float64(len(null))
	c := null[min(int(n*(1-alpha)), len(null)-1)]
	above, at := tally(null, c)
	gamma := 0.0
	if at > 0 {
		gamma = math.Min(1, math.Max(0, (alpha*n-float64(above))/float64(at)))
	}
	altAbove, altAt := tally(alt, c)
	return (float64(altAbove) + gamma*float64(altAt)) / float64(len(alt))
}

// tally counts the xs above c and equal to it.
func tally(xs []float64, c float64) (above, at int) {
	for _, x := range xs {
		switch {
		case x > c:
			above++
		case x == c:
			at++
		}
	}
	return above, at
}

// CeilingRuns is how many runs a hypothesis Ceiling simulates for the
// table: its power to within about ±0.6 points (two standard errors).
const CeilingRuns = 20_000

// RegressionRow is one line of the regression table: --history's
// verdicts on a run at twice its history's rate, and the ceiling.
type RegressionRow struct {
	Family   string
	Rollouts int
	// Fail, Inconclusive and Pass are the shares of --history's verdicts
	// (Regression's cells); Ceiling the most any valid gate can fail.
	Fail, Inconclusive, Pass, Ceiling float64
}

// Regressions measures --history against a 2x regression on its first
// run (the Regression mode, runs times a cell) and the ceiling on any
// gate's power there, in every family and at every rollout count.
func Regressions(runs int, seed uint64) []RegressionRow {
	var rows []RegressionRow
	for _, c := range Run([]Mode{Regression}, runs, seed) {
		if c.Truth != Breach {
			continue
		}
		n := float64(c.decided())
		rows = append(rows, RegressionRow{Family: c.Family, Rollouts: c.Rollouts,
			Fail: float64(c.Fail) / n, Inconclusive: float64(c.Inconclusive) / n, Pass: float64(c.Pass) / n})
	}
	fams := map[string]Family{DayEffect.Name: DayEffect}
	for _, f := range Families {
		fams[f.Name] = f
	}
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range rows {
		row := &rows[i]
		g.Go(func() error {
			row.Ceiling = Ceiling(fams[row.Family], 2, row.Rollouts, CeilingRuns, 0.05, seed)
			return nil
		})
	}
	_ = g.Wait()
	return rows
}

// RegressionTable is Regressions as docs/statistics.md shows it.
func RegressionTable(rows []RegressionRow) string {
	var b strings.Builder
	b.WriteString("| family | rollouts | P(fail) | P(inconclusive) | P(pass) | ceiling: the most any gate can fail |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s |\n", r.Family, r.Rollouts, pct(r.Fail), pct(r.Inconclusive), pct(r.Pass), pct(r.Ceiling))
	}
	return b.String()
}
