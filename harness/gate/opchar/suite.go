package opchar

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/gate"
	"github.com/droprun/droprun/harness/history"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/stats"
)

// Truth is where a simulated variant truly is against the limit.
type Truth string

const (
	// Breach: the truth breaks the limit by 1.5x (a gate must not pass it).
	Breach Truth = "breach"
	// Good: the truth is at half the limit (a gate must not fail it).
	Good Truth = "good"
)

// A Mode is one way `droprun check` gates, with how its truths are set.
type Mode struct {
	Name string
	// Truths says what breach and good mean for this mode.
	Truths string
	// Check simulates one run of r rollouts from family f at truth t and
	// returns the mode's verdict on it.
	Check func(rng *rand.Rand, f Family, t Truth, r int) gate.Verdict
	// CrossRun modes compare runs, so a day effect between runs matters
	// to them; a single run measures its own day.
	CrossRun bool
}

// NoSuchTruth is what a Mode's Check returns when the family cannot have
// the truth asked for (a breach of a share of rollouts more than the
// family's rollouts that drop at all): the cell is shown as n/a.
const NoSuchTruth gate.Verdict = -1

// Cell is one mode, family, rollout count and truth, over Runs runs.
type Cell struct {
	Mode, Family string
	Rollouts     int
	Truth        Truth
	Runs         int
	Pass, Fail   int
	Inconclusive int
	// None counts the runs whose truth the family cannot have.
	None int
}

// Wrong is the share of runs given the wrong verdict: a pass of a breach,
// a failure of a good release; NaN when the family cannot have the truth.
func (c Cell) Wrong() float64 {
	if c.Truth == Breach {
		return float64(c.Pass) / float64(c.decided())
	}
	return float64(c.Fail) / float64(c.decided())
}

// Undecided is the share of runs found inconclusive.
func (c Cell) Undecided() float64 { return float64(c.Inconclusive) / float64(c.decided()) }

// decided is the runs whose truth the family could have, NaN-making 0
// when none.
func (c Cell) decided() int { return c.Runs - c.None }

// RolloutCounts are the rollouts per run every cell is measured at.
var RolloutCounts = []int{3, 5, 10}

// Run measures every mode under every family (and the day effect for
// cross-run modes) at every rollout count and both truths, runs times
// each, from seed. Cells are independent streams, so a cell's numbers do
// not depend on which others ran.
func Run(modes []Mode, runs int, seed uint64) []Cell {
	var out []*Cell
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for mi, m := range modes {
		fams := Families
		if m.CrossRun {
			fams = append(fams[:len(fams):len(fams)], DayEffect)
		}
		for fi, f := range fams {
			for _, r := range RolloutCounts {
				for ti, t := range []Truth{Breach, Good} {
					c := &Cell{Mode: m.Name, Family: f.Name, Rollouts: r, Truth: t, Runs: runs}
					out = append(out, c)
					rng := rand.New(rand.NewPCG(seed, uint64(mi<<24|fi<<16|r<<8|ti)))
					g.Go(func() error {
						for range runs {
							switch m.Check(rng, f, t, r) {
							case NoSuchTruth:
								c.None++
							case gate.Pass:
								c.Pass++
							case gate.Fail:
								c.Fail++
							default:
								c.Inconclusive++
							}
						}
						return nil
					})
				}
			}
		}
	}
	_ = g.Wait()
	cells := make([]Cell, len(out))
	for i, c := range out {
		cells[i] = *c
	}
	return cells
}

// Markdown is the suite's table: one line per mode, family and rollout
// count, with both truths' error and inconclusive rates.
func Markdown(cells []Cell) string {
	var b strings.Builder
	b.WriteString("| mode | family | rollouts | P(pass \\| breach) | P(fail \\| good) | P(inconclusive \\| breach) | P(inconclusive \\| good) |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|\n")
	for i := 0; i+1 < len(cells); i += 2 {
		br, gd := cells[i], cells[i+1]
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s |\n", br.Mode, br.Family, br.Rollouts,
			pct(br.Wrong()), pct(gd.Wrong()), pct(br.Undecided()), pct(gd.Undecided()))
	}
	return b.String()
}

func pct(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	return strconv.FormatFloat(100*x, 'f', 1, 64) + " %"
}

// mean is the truth's mean drop rate for a limit on the rate.
func mean(f Family, t Truth) float64 {
	if t == Breach {
		return 1.5 * f.Limit
	}
	return 0.5 * f.Limit
}

// row draws r rollouts of f at mean rate mu, the day's factor day.
func row(rng *rand.Rand, f Family, mu float64, r int) analysis.VariantSummary {
	v := analysis.VariantSummary{Variant: Variant}
	for i := range r {
		d, n := rollout(rng, f, mu)
		v.Rollouts = append(v.Rollouts, analysis.RolloutSummary{N: i + 1, Window: analysis.Tally{Requests: n, Failures: d}})
		v.Drops += d
		v.WindowRequests += n
	}
	return v
}

// Variant is the simulated row's name.
const Variant = "no-prestop"

// scenarios caches the parsed one-variant scenario per rollout count.
var (
	scenariosMu sync.Mutex
	scenarios   = map[int]*analysis.Analysis{}
)

// analysisOf is a whole, clean run of row v.
func analysisOf(v analysis.VariantSummary) *analysis.Analysis {
	r := len(v.Rollouts)
	scenariosMu.Lock()
	defer scenariosMu.Unlock()
	tmpl, ok := scenarios[r]
	if !ok {
		yaml := fmt.Sprintf("apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata:\n  name: opchar\nvariants:\n  - variant: %s\nrollouts: %d\ntraffic:\n  rate: 500\n", Variant, r)
		sc, err := scenario.Parse(runfile.ScenarioFile, []byte(yaml))
		if err != nil {
			panic(err)
		}
		tmpl = &analysis.Analysis{ScenarioYAML: []byte(yaml), Scenario: sc}
		scenarios[r] = tmpl
	}
	sum := &analysis.Summary{Variants: []analysis.VariantSummary{v}}
	sum.Finished = time.Unix(1, 0)
	sum.Traffic.Rollouts = r
	return &analysis.Analysis{Summary: sum, ScenarioYAML: tmpl.ScenarioYAML, Scenario: tmpl.Scenario}
}

// verdict runs the gate and returns the row's verdict on check.
func verdict(a *analysis.Analysis, l gate.Limits, check string) gate.Verdict {
	l.Confidence = Conf
	rep, err := gate.Check(a, l)
	if err != nil {
		panic(err)
	}
	for _, res := range rep.Results {
		if res.Row == Variant && res.Check == check {
			return res.Verdict
		}
	}
	panic("no " + check + " result")
}

// series is a key's history: runs past runs of r rollouts each, a day
// apart, at mean rate mu with the day effect of f.
func series(rng *rand.Rand, f Family, mu float64, runs, r int) *history.Series {
	s := &history.Series{Key: history.Key{Scenario: "opchar", Variant: Variant}}
	for i := range runs {
		v := row(rng, f, mu*f.day(rng), r)
		s.Points = append(s.Points, history.Point{Dir: fmt.Sprintf("run-%02d", i), Started: time.Unix(int64(i)*86400, 0), Rollouts: v.Counted()})
	}
	return s
}

var Conf = stats.DefaultConfidence

// Seed and DefaultRuns are the suite's as docs/statistics.md shows it.
const (
	Seed        = 1
	DefaultRuns = 2000
)

// Block returns the text between doc's markers for block name
// (<!-- opchar:NAME --> and <!-- /opchar:NAME -->), and Replace puts
// text there: the tables in docs/statistics.md are written by `make
// stats-table`, never typed.
func Block(doc, name string) (string, bool) {
	_, rest, ok := strings.Cut(doc, begin(name))
	if !ok {
		return "", false
	}
	body, _, ok := strings.Cut(rest, end(name))
	return strings.TrimPrefix(body, "\n"), ok
}

// Replace returns doc with block name's text replaced by text.
func Replace(doc, name, text string) (string, error) {
	head, rest, ok := strings.Cut(doc, begin(name))
	_, tail, ok2 := strings.Cut(rest, end(name))
	if !ok || !ok2 {
		return "", fmt.Errorf("no %s ... %s markers", begin(name), end(name))
	}
	return head + begin(name) + "\n" + text + end(name) + tail, nil
}

func begin(name string) string { return "<!-- opchar:" + name + " -->" }
func end(name string) string   { return "<!-- /opchar:" + name + " -->" }

// Truths is the suite's families and modes, as a list for the document.
func Truths() string {
	var b strings.Builder
	b.WriteString("Families (how one rollout's drop rate is drawn around the truth's mean; requests per rollout 4,500-5,500):\n\n")
	for _, f := range append(Families[:len(Families):len(Families)], DayEffect) {
		fmt.Fprintf(&b, "- **%s** (limit %s): %s\n", f.Name, strconv.FormatFloat(f.Limit, 'g', -1, 64), f.Shape)
	}
	b.WriteString("\nModes (what breach and good mean; the day-effect family for the modes that compare runs):\n\n")
	for _, m := range append(Modes[:len(Modes):len(Modes)], Regression) {
		fmt.Fprintf(&b, "- **%s**: %s\n", m.Name, m.Truths)
	}
	return b.String()
}

// ChangeCase is a history whose changes are known, and how often
// history.ChangePoints finds exactly them.
type ChangeCase struct {
	Name string
	// Rates are each run's mean rate, as factors of the family's limit.
	Rates []float64
	// Want are the runs at which the rate changed.
	Want []int
}

// ChangeCases are the histories the change search is measured on, 4
// rollouts a run, beta-binomial drops.
var ChangeCases = []ChangeCase{
	{"stable, 12 runs", repeat(1, 12), nil},
	{"stable, 24 runs", repeat(1, 24), nil},
	{"stable, 12 runs, day effect σ 0.35", repeat(1, 12), nil},
	{"a fix: 6 runs, then 6 at a tenth", append(repeat(1, 6), repeat(0.1, 6)...), []int{6}},
	{"a fix and a regression: 6, 6 at a tenth, 4 again", append(append(repeat(1, 6), repeat(0.1, 6)...), repeat(1, 4)...), []int{6, 12}},
	{"a 2x step: 8 runs, then 8 at twice", append(repeat(1, 8), repeat(2, 8)...), []int{8}},
}

func repeat(x float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = x
	}
	return out
}

// ChangeTable measures ChangeCases over runs histories each: the share in
// which the changes found are exactly the true ones (each at its run or
// next to it), a change is found where there is none, and a true change
// is missed.
func ChangeTable(runs int, seed uint64) string {
	var b strings.Builder
	b.WriteString("| history | P(exactly the true changes, ±1 run) | P(a change where there is none) | P(a true change missed) |\n|---|---:|---:|---:|\n")
	for ci, c := range ChangeCases {
		f := Families[0]
		if strings.Contains(c.Name, "day effect") {
			f = DayEffect
		}
		rng := rand.New(rand.NewPCG(seed, uint64(1000+ci)))
		var exact, extra, missed int
		for range runs {
			var pts []history.Point
			for i, x := range c.Rates {
				v := row(rng, f, x*f.Limit*f.day(rng), 4)
				pts = append(pts, history.Point{Dir: fmt.Sprint(i), Rollouts: v.Counted()})
			}
			var got []int
			for _, ch := range history.ChangePoints(pts, stats.DefaultConfidence) {
				got = append(got, ch.At)
			}
			// A change found at the true run or next to it finds it; each
			// true change is found at most once.
			used := map[int]bool{}
			hit, wrong := 0, false
			for _, g := range got {
				found := false
				for _, w := range c.Want {
					if !used[w] && g >= w-1 && g <= w+1 {
						used[w], found = true, true
						hit++
						break
					}
				}
				wrong = wrong || !found
			}
			if !wrong && hit == len(c.Want) {
				exact++
			}
			if wrong {
				extra++
			}
			if hit < len(c.Want) {
				missed++
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", c.Name, pct(float64(exact)/float64(runs)), pct(float64(extra)/float64(runs)), pct(float64(missed)/float64(runs)))
	}
	return b.String()
}

// CoverageTable measures how often a drop rate's intervals over rollouts
// cover the truth's mean rate, per family and rollout count, over runs
// rows each at the family's limit rate: the 95 % interval the report
// shows (the row's own dispersion) and the wider one it shows beside it
// (analysis.RowIntervals.Wide) for the shapes the first cannot cover.
func CoverageTable(runs int, seed uint64) string {
	var b strings.Builder
	b.WriteString("| family | rollouts | the 95 % interval | the wider interval |\n|---|---:|---:|---:|\n")
	for fi, f := range Families {
		for _, r := range RolloutCounts {
			rng := rand.New(rand.NewPCG(seed, uint64(5000+fi<<8+r)))
			var own, wide int
			for range runs {
				v := row(rng, f, f.Limit, r)
				iv := analysis.IntervalsOf(&v)
				if iv.DropRate.Lo <= f.Limit && f.Limit <= iv.DropRate.Hi {
					own++
				}
				w := iv.DropRate
				switch {
				case iv.Wide != nil:
					w = *iv.Wide
				case iv.ZeroBound != nil:
					w = *iv.ZeroBound
				}
				if w.Lo <= f.Limit && f.Limit <= w.Hi {
					wide++
				}
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", f.Name, r, pct(float64(own)/float64(runs)), pct(float64(wide)/float64(runs)))
		}
	}
	return b.String()
}

// totalsOf sums rollouts' drops and requests.
func totalsOf(rs []stats.Rollout) (drops, requests uint64) {
	for _, r := range rs {
		drops, requests = drops+r.Drops, requests+r.Requests
	}
	return drops, requests
}
