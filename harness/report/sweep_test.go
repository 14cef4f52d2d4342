package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/plot"
)

// sweepSummary is a synthetic run: an unswept row, then a sweep of g
// over preStopSeconds whose drops stop at 2 (listed out of order).
func sweepSummary() *analysis.Summary {
	row := func(value string, n float64, drops, requests uint64, floor float64) analysis.VariantSummary {
		return analysis.VariantSummary{Variant: "g@preStopSeconds=" + value,
			Sweep: &analysis.SweepPoint{Field: "preStopSeconds", Value: value, Number: n, Group: "g"},
			Drops: drops, WindowRequests: requests, ExpectedFloor: floor, Rollouts: split(drops, requests),
			Measurable: analysis.Tally{Failures: drops, Requests: requests},
			Control:    analysis.Tally{Requests: 10000}}
	}
	return derived(&analysis.Summary{Variants: []analysis.VariantSummary{
		{Variant: "no-prestop", Drops: 90, WindowRequests: 30000},
		row("3", 3, 0, 30000, 0), row("0", 0, 150, 30000, 0), row("1", 1, 12, 30000, 0), row("2", 2, 1, 30000, 1.5),
	}})
}

// split spreads drops and requests over three rollouts, the first taking
// what does not divide.
func split(drops, requests uint64) []analysis.RolloutSummary {
	var rs []analysis.RolloutSummary
	for k := range 3 {
		w := analysis.Tally{Failures: drops / 3, Requests: requests / 3}
		if k == 0 {
			w.Failures += drops % 3
			w.Requests += requests % 3
		}
		rs = append(rs, analysis.RolloutSummary{N: k + 1, Window: w})
	}
	return rs
}

func TestSweepTable(t *testing.T) {
	var b bytes.Buffer
	if err := Table(&b, sweepSummary()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	i := strings.Index(out, "sweep g over preStopSeconds:")
	if i < 0 {
		t.Fatalf("no sweep table in\n%s", out)
	}
	lines := strings.Split(out[i:], "\n")
	fields := func(s string) []string { return strings.Fields(s) }
	if h := fields(lines[1]); len(h) == 0 || h[0] != "preStopSeconds" || !strings.Contains(lines[1], "DROPS/REQUESTS") || !strings.Contains(lines[1], "AT FLOOR") {
		t.Errorf("header %q", lines[1])
	}
	want := [][]string{
		{"0", "150/30,000", "no"},
		{"1", "12/30,000", "no"},
		{"2", "1/30,000", "yes"},
		{"3", "0/30,000", "yes"},
	}
	for k, w := range want {
		f := fields(lines[2+k])
		if len(f) < 3 || f[0] != w[0] || f[1] != w[1] || !strings.Contains(lines[2+k], "[") {
			t.Errorf("row %d: %q, want value %s and drops %s with an interval", k, lines[2+k], w[0], w[1])
		}
		if !strings.Contains(lines[2+k][strings.Index(lines[2+k], "]"):], w[2]) {
			t.Errorf("row %d: %q, want at floor %s", k, lines[2+k], w[2])
		}
	}
	if !strings.Contains(lines[2], "0.005 [") {
		t.Errorf("row 0 %q: want the rate 0.005 with its interval", lines[2])
	}
	if !strings.Contains(lines[4], "(≤ 1.5 expected)") {
		t.Errorf("row 2 %q: want the expected floor named", lines[4])
	}
	if !strings.Contains(lines[6], "floor: From preStopSeconds=2 on") {
		t.Errorf("floor line %q", lines[6])
	}

	// Without a sweep, no sweep table.
	b.Reset()
	if err := Table(&b, derived(&analysis.Summary{Variants: []analysis.VariantSummary{{Variant: "a"}}})); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "sweep ") {
		t.Errorf("sweep table without a sweep:\n%s", b.String())
	}
}

func TestSweepHTML(t *testing.T) {
	sum := sweepSummary()
	a := &analysis.Analysis{Summary: sum}
	for _, v := range sum.Variants {
		a.Rows = append(a.Rows, &analysis.RowSeries{Row: v.Variant})
	}
	figs, err := plot.Figures(a)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := HTML(&b, sum, HTMLInput{Figures: figs}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	i := strings.Index(page, `<section id="sv0-g" class="sweep">`)
	if i < 0 {
		t.Fatalf("no sweep section in the page")
	}
	sec := page[i : i+strings.Index(page[i:], "</section>")]
	for _, want := range []string{"Sweep: g over preStopSeconds", "<td class=\"num\">1</td><td class=\"num dropped\">12/30,000</td>", "From preStopSeconds=2 on", "<img src=\"data:image/png;base64,", "Drop rate against preStopSeconds"} {
		if !strings.Contains(sec, want) {
			t.Errorf("sweep section lacks %q", want)
		}
	}
	if !strings.Contains(page, `<a href="#sv0-g">Sweep g</a>`) {
		t.Error("no link to the sweep section")
	}
	if strings.Count(page, `alt="Drop rate against preStopSeconds`) != 1 {
		t.Error("the sweep figure is shown more than once (also among the run's figures?)")
	}
}
