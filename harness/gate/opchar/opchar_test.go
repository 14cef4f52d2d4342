package opchar

import (
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var runs = flag.Int("opchar.runs", DefaultRuns, "simulated runs per cell")

// TestOperatingCharacteristics holds every asserted gate mode to its
// targets against ground truth: in every burst family, at 3, 5 and 10
// rollouts, a breach (the truth 1.5x beyond the limit) passes in at most
// 5 % of simulated runs and a good release (at half the limit) fails in
// at most 5 %. The table in docs/statistics.md is this suite's output
// (make stats-table writes it).
func TestOperatingCharacteristics(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 simulated runs per cell take minutes; make test runs it")
	}
	cells := Run(Modes, *runs, Seed)
	for _, c := range cells {
		if c.Wrong() > 0.05 {
			what := "passed a breach"
			if c.Truth == Good {
				what = "failed a good release"
			}
			t.Errorf("%s, %s, %d rollouts: %s in %.1f %% of %d runs, above 5 %%", c.Mode, c.Family, c.Rollouts, what, 100*c.Wrong(), c.Runs)
		}
	}
	if *runs != DefaultRuns {
		return
	}
	checkDocBlock(t, "asserted", Markdown(cells))
}

// TestSimulatedRatesAreTrue: each family's mean rate is the truth it is
// given (the suite's breach and good release are where it says), and
// the day effect keeps a run's mean.
func TestSimulatedRatesAreTrue(t *testing.T) {
	for _, f := range append(Families[:len(Families):len(Families)], DayEffect) {
		rng := newRand(3)
		var drops, requests float64
		for range 200_000 {
			d, n := rollout(rng, f, f.Limit*f.day(rng))
			drops, requests = drops+float64(d), requests+float64(n)
		}
		if got := drops / requests; got < 0.97*f.Limit || got > 1.03*f.Limit {
			t.Errorf("%s: mean rate %.5f, want %.5f within 3 %%", f.Name, got, f.Limit)
		}
	}
}

// TestIntervalCoverage: the report's 95 % interval over rollouts covers
// the truth 95 ± 2 % of the time for beta-binomial bursts, and the wider
// interval it shows beside it covers 92 % or more in every family (the
// report's note says so); docs/statistics.md's table is this output.
func TestIntervalCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 simulated rows per cell take a few seconds; make test runs it")
	}
	table := CoverageTable(DefaultRuns, Seed)
	rows := 0
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			continue
		}
		if _, err := strconv.Atoi(strings.TrimSpace(cells[2])); err != nil {
			continue // the header
		}
		rows++
		var own, wide float64
		fmt.Sscanf(strings.TrimSpace(cells[3]), "%f %%", &own)
		fmt.Sscanf(strings.TrimSpace(cells[4]), "%f %%", &wide)
		if strings.TrimSpace(cells[1]) == "beta-binomial" && (own < 93 || own > 97) {
			t.Errorf("%s: the 95 %% interval covers %v %%, outside 95 ± 2", line, own)
		}
		if wide < 92 {
			t.Errorf("%s: the wider interval covers %v %%, below 92", line, wide)
		}
	}
	if rows != len(Families)*len(RolloutCounts) {
		t.Fatalf("read %d lines of the table, want %d:\n%s", rows, len(Families)*len(RolloutCounts), table)
	}
	checkDocBlock(t, "coverage", table)
}

// TestChangeSearch: on stable histories the change search finds a change
// in at most 5 % of them, with and without a day effect between runs;
// docs/statistics.md's table of it is this output.
func TestChangeSearch(t *testing.T) {
	if testing.Short() {
		t.Skip("500 simulated histories per case take a minute; make test runs it")
	}
	table := ChangeTable(DefaultRuns/4, Seed)
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| stable") {
			continue
		}
		cells := strings.Split(line, "|")
		var none float64
		if _, err := fmt.Sscanf(strings.TrimSpace(cells[3]), "%f %%", &none); err != nil || none > 5 {
			t.Errorf("%s: a change found where there is none in %v %% (%v), above 5 %%", strings.TrimSpace(cells[1]), none, err)
		}
	}
	checkDocBlock(t, "changes", table)
}

// TestDensityIsRatesLaw: each family's Density gives the likelihood
// ratio Ceiling stands on. Where L(k·mu)/L(mu) is the true ratio of Rate's
// laws, weighting draws at mu by it turns them into draws at k·mu:
// E_mu[ratio·g(x)] = E_{k·mu}[g(x)] for every g. Checked for g = 1 (the
// ratio's mean is 1) and for g = 1{x > q} at the 50th, 90th and 97th
// percentiles of rates at k·mu (zero-inflated's bursts are its top quarter), at k = 0.8 and 1.25, over 200,000 draws: a
// density whose dependence on the mean is wrong (a shape, a scale, an
// atom that moves with it) fails.
func TestDensityIsRatesLaw(t *testing.T) {
	const n = 200_000
	for _, f := range append(Families[:len(Families):len(Families)], DayEffect) {
		rng := newRand(5)
		mu := f.Limit
		at := f.Density(mu)
		for _, k := range []float64{0.8, 1.25} {
			other := f.Density(k * mu)
			there := make([]float64, n) // rates drawn at k·mu
			for i := range there {
				there[i] = f.Rate(rng, k*mu)
			}
			slices.Sort(there)
			qs := []float64{there[n/2], there[9*n/10], there[97*n/100]}
			var mean float64
			above := make([]float64, len(qs))
			for range n {
				x := f.Rate(rng, mu)
				w := math.Exp(other(x) - at(x))
				mean += w / n
				for j, q := range qs {
					if x > q {
						above[j] += w / n
					}
				}
			}
			if math.Abs(mean-1) > 0.01 {
				t.Errorf("%s: E[L(%.2g·mu)/L(mu)] = %.4f under Rate at mu; want 1 ± 0.01: Density is not Rate's law", f.Name, k, mean)
			}
			for j, q := range qs {
				want := float64(n-sort.SearchFloat64s(there, math.Nextafter(q, 2))) / n
				if math.Abs(above[j]-want) > 0.005 {
					t.Errorf("%s: weighted draws at mu put %.3f above %.3g, draws at %.2g·mu %.3f: Density is not Rate's law", f.Name, above[j], q, k, want)
				}
			}
		}
	}
}

// TestCeilingKnownCases holds Ceiling to powers known in closed form.
// Heavy-tailed rates are lognormal (σ 1.2; the cap at 1 is out of reach
// at these means), so the most powerful test is the z-test on the mean
// log rate: Φ(ln 2·√r/σ − 1.645). A day effect of σ 0.35 on the log
// rate hides a 2x from any test that sees the run's rate exactly:
// Φ(ln 2/0.35 − 1.645) = 63.1 %, at any number of rollouts.
func TestCeilingKnownCases(t *testing.T) {
	heavy := Families[1]
	if heavy.Name != "heavy-tailed" {
		t.Fatalf("Families[1] is %s, want heavy-tailed", heavy.Name)
	}
	phi := func(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
	for _, r := range []int{3, 10} {
		want := phi(math.Ln2*math.Sqrt(float64(r))/heavySigma - 1.6449)
		if got := Ceiling(heavy, 2, r, CeilingRuns, 0.05, Seed); math.Abs(got-want) > 0.015 {
			t.Errorf("heavy-tailed, %d rollouts: ceiling %.3f, want %.3f ± 0.015", r, got, want)
		}
	}
	bound := phi(math.Ln2/DayEffect.Day - 1.6449)
	if got := Ceiling(DayEffect, 2, 10, CeilingRuns, 0.05, Seed); got > bound+0.01 {
		t.Errorf("day-effect, 10 rollouts: ceiling %.3f, above the %.3f a day effect of σ %.2f allows", got, bound, DayEffect.Day)
	}
}

// belowTarget are the cells where a test could fail 85 % or more of 2x
// regressions on their first run and --history fails fewer than 80 %,
// each with why. TestRegressionCeiling fails when another opens, and when
// one of these closes (so that the list, and docs/statistics.md, stay
// true).
var belowTarget = map[string]string{
	"beta-binomial/5": "the ceiling knows the family's Beta shape and that runs do not differ by a day; --history measures how much runs differ on its 8 past runs, as it must where they do (the day-effect family), and charges a run its own burstiness where it exceeds the pooled (measured on 5 rollouts); leaving that out fails up to 6.2 % of good releases",
}

// TestRegressionCeiling: --history's power against a 2x regression on
// its first run, measured in every family and at 3, 5 and 10 rollouts,
// never exceeds the ceiling (Ceiling: no gate that fails at most 5 % of
// stable runs can; above it, the ceiling or the gate's level is wrong),
// and reaches 80 % wherever the ceiling is 85 % or more (issue 36's
// target, held where any test can meet it) but in the cells belowTarget
// names. docs/statistics.md's table is this output (make stats-table
// writes it).
func TestRegressionCeiling(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 simulated histories per cell take a while; make test runs it")
	}
	rows := Regressions(*runs, Seed)
	if len(rows) != (len(Families)+1)*len(RolloutCounts) {
		t.Fatalf("%d rows, want one per family (and the day effect) and rollout count", len(rows))
	}
	for _, r := range rows {
		cell := fmt.Sprintf("%s/%d", r.Family, r.Rollouts)
		t.Logf("%s: --history fails %.1f %%, the ceiling %.1f %%", cell, 100*r.Fail, 100*r.Ceiling)
		if r.Fail > r.Ceiling+0.03 {
			t.Errorf("%s: --history fails %.1f %% of 2x regressions, above the ceiling %.1f %%", cell, 100*r.Fail, 100*r.Ceiling)
		}
		why, known := belowTarget[cell]
		switch short := r.Ceiling >= 0.85 && r.Fail < 0.80; {
		case short && !known:
			t.Errorf("%s: --history fails %.1f %% of 2x regressions where a test could fail %.1f %%: want 80 %%", cell, 100*r.Fail, 100*r.Ceiling)
		case !short && known:
			t.Errorf("%s: --history fails %.1f %% of 2x regressions, the ceiling %.1f %%: no longer below the target (%s); take it out of belowTarget and docs/statistics.md", cell, 100*r.Fail, 100*r.Ceiling, why)
		}
	}
	if *runs != DefaultRuns {
		return
	}
	checkDocBlock(t, "regression", RegressionTable(rows))
}

// checkDocBlock holds docs/statistics.md's opchar block name to want,
// the suite's output (make stats-table writes it).
func checkDocBlock(t *testing.T, name, want string) {
	t.Helper()
	doc, err := os.ReadFile("../../../docs/statistics.md")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := Block(string(doc), name); !ok || got != want {
		t.Errorf("docs/statistics.md's %s table is not this suite's output: run make stats-table\nwant:\n%s\ngot:\n%s", name, want, got)
	}
}
