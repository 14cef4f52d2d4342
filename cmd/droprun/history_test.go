package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/analysis/analysistest"
	"github.com/droprun/droprun/harness/history"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/stats"
)

// writeHistory writes n earlier copies of run's summary under a new
// directory, one run an hour before it, every rollout of every row with
// drops drops (in its own window's requests), and returns the directory.
func writeHistory(t *testing.T, run string, n int, drops func(i int) uint64) string {
	t.Helper()
	a, err := analysis.Analyze(run, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i := range n {
		sum := *a.Summary
		sum.Started = a.Summary.Started.Add(-time.Duration(n-i) * time.Hour)
		sum.Finished = sum.Started.Add(time.Minute)
		sum.Variants = nil
		for _, v := range a.Summary.Variants {
			v.Rollouts = append([]analysis.RolloutSummary(nil), v.Rollouts...)
			for k := range v.Rollouts {
				v.Rollouts[k].Window.Failures = drops(i)
				v.Rollouts[k].Window.Masked = 0
			}
			sum.Variants = append(sum.Variants, v)
		}
		b, err := json.Marshal(sum)
		if err != nil {
			t.Fatal(err)
		}
		d := filepath.Join(dir, "run-"+string(rune('a'+i)))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, runfile.SummaryFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCheckHistory: a run is held to its own key's past: it passes a
// history that dropped as much (its rate within --margin of the past's),
// fails one that dropped nothing (Fisher's exact test over rollouts), and
// a history shorter than --history-min-rollouts is inconclusive.
func TestCheckHistory(t *testing.T) {
	run := analysistest.Write(t, analysistest.Run{RunJSON: syntheticRunJSON})
	_, _, code := runCLI(t, "check", "--max-drops-per-rollout", "0", "--rollout-tolerance", "0.1", run)
	if code != 1 {
		t.Fatalf("the synthetic run must drop something for this test: check exit %d", code)
	}
	loud := writeHistory(t, run, 5, func(i int) uint64 { return []uint64{28, 31, 30, 29, 32}[i] })
	quiet := writeHistory(t, run, 5, func(int) uint64 { return 0 })

	out, errs, code := runCLI(t, "check", "--variant", "alpha", "--history", loud, "--history-min-rollouts", "10", "--verbose", run)
	if code != 0 || !strings.Contains(out, "within the margin 2x") || !strings.Contains(out, "10 past rollouts in 5 run(s)") {
		t.Errorf("against a history of about 30 a rollout: exit %d\n%s%s", code, out, errs)
	}
	out, errs, code = runCLI(t, "check", "--variant", "alpha", "--history", quiet, "--history-min-rollouts", "10", run)
	if code != 1 || !strings.Contains(out, "FAIL") || !strings.Contains(out, "history") {
		t.Errorf("against a history of none: exit %d\n%s%s", code, out, errs)
	}
	out, _, code = runCLI(t, "check", "--variant", "alpha", "--history", quiet, "--history-min-rollouts", "10", "--min-allowance", "1000", run)
	if code != 0 {
		t.Errorf("against a history of none with an allowance of 1,000: exit %d\n%s", code, out)
	}
	// By default a limit needs 20 past rollouts (README, docs/history.md).
	out, _, code = runCLI(t, "check", "--variant", "alpha", "--history", loud, run)
	if code != 3 || !strings.Contains(out, "a comparison needs 20 (--history-min-rollouts)") {
		t.Errorf("10 past rollouts against the default minimum: exit %d\n%s", code, out)
	}
	out, _, code = runCLI(t, "check", "--variant", "alpha", "--history", quiet, "--history-min-rollouts", "11", run)
	if code != 3 || !strings.Contains(out, "measure 1 more rollout(s)") {
		t.Errorf("10 past rollouts where 11 are needed: exit %d\n%s", code, out)
	}
}

// TestHistoryFindsTheChange: eight runs dropping 1,000 a rollout, then
// eight dropping none: history names the ninth run, in every format and in
// the HTML page.
func TestHistoryFindsTheChange(t *testing.T) {
	run := analysistest.Write(t, analysistest.Run{RunJSON: syntheticRunJSON})
	dir := writeHistory(t, run, 16, func(i int) uint64 {
		if i < 8 {
			return 1000 + uint64(i%3)*100
		}
		return uint64(i % 2)
	})
	out, errs, code := runCLI(t, "history", dir)
	if code != 0 || !strings.Contains(out, "changed at run "+filepath.Join(dir, "run-i")) {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	html := filepath.Join(t.TempDir(), "history.html")
	for _, f := range []string{"markdown", "csv", "json"} {
		out, errs, code := runCLI(t, "history", "--format", f, "--html", html, dir)
		if code != 0 || !strings.Contains(out, "run-i") {
			t.Errorf("--format %s: exit %d\n%s%s", f, code, out, errs)
		}
		if f == "csv" && (!strings.Contains(out, ",p = 0.") || strings.Contains(out, "p=p")) {
			t.Errorf("the csv's change column does not hold the change's p-value once:\n%s", out)
		}
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if p := string(page); !strings.Contains(p, "<svg") || !strings.Contains(p, `class="change"`) || !strings.Contains(p, "changed at run") {
		t.Errorf("the HTML page lacks its plot or the change:\n%.2000s", p)
	}
}

// shippedHistory is the history shipped with the repository
// (results/examples/history): my-service 1.0, which exits at SIGTERM,
// then 1.1, which drains, then one more 1.0 run, a regression.
const shippedHistory = "../../results/examples/history/runs"

// TestShippedHistory: what results/examples/history/README.md says of the
// shipped runs. The change is found at the first 1.1 run; the last 1.1
// run passes its gate; the regression fails it, against the runs since
// the change only.
func TestShippedHistory(t *testing.T) {
	h, err := history.Read([]string{shippedHistory}, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Runs < 13 || len(h.Series) != 1 || len(h.Skipped) != 0 {
		t.Fatalf("%d runs in %d series (skipped %v); want at least 13 runs of one key", h.Runs, len(h.Series), h.Skipped)
	}
	s := h.Series[0]
	// docs/history.md and the README: 29-37 KB a summary.
	for _, p := range s.Points {
		fi, err := os.Stat(filepath.Join(p.Dir, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() < 29000 || fi.Size() > 37000 {
			t.Errorf("%s/summary.json: %d bytes; the docs say 29-37 KB", p.Dir, fi.Size())
		}
	}
	if s.Key.App != "my-service" || s.Key.Scenario != "my-service" {
		t.Errorf("key %+v", s.Key)
	}
	first11, last11, regression := -1, -1, -1
	for i, p := range s.Points {
		switch v := p.Image(); {
		case strings.Contains(v, "my-service:1.1-a") && first11 < 0:
			first11 = i
		case strings.Contains(v, "my-service:1.1-a"):
			last11 = i
		case strings.Contains(v, "my-service:1.0-a") && first11 >= 0:
			regression = i
		}
	}
	if first11 < 6 || last11 <= first11 || regression != len(s.Points)-1 {
		t.Fatalf("runs out of the order the README gives: first 1.1 %d, last 1.1 %d, regression %d of %d", first11, last11, regression, len(s.Points))
	}
	v := history.ViewOf(h, 0.95)
	cs := v.Series[0].Changes
	// One change: the regression is one run, and a change needs two on
	// each side; its 1.0 drops are in the mean after the change.
	if len(cs) != 1 || cs[0].At != first11 || cs[0].P >= 0.05 || cs[0].After*5 > cs[0].Before {
		t.Fatalf("changes %+v; want one, at the first 1.1 run (%d), p < 0.05, to a fifth or less", cs, first11)
	}
	for i, p := range s.Points {
		if i >= first11 && i <= last11 && p.Drops() != 0 {
			t.Errorf("1.1 run %s dropped %d; the README says none", p.Dir, p.Drops())
		}
		if (i < first11 || i == regression) && (p.PerRollout() < 245 || p.PerRollout() > 339) {
			t.Errorf("1.0 run %s dropped %.0f per rollout; the README says 246-338", p.Dir, p.PerRollout())
		}
		for _, r := range p.Rollouts {
			if (i < first11 || i == regression) && (r.Drops < 130 || r.Drops > 406) {
				t.Errorf("1.0 run %s: a rollout dropped %d; the README says 130-406", p.Dir, r.Drops)
			}
		}
	}
	out, errs, code := runCLI(t, "history", shippedHistory)
	if code != 0 || !strings.Contains(out, "changed at run "+s.Points[first11].Dir) || !strings.Contains(out, "from 288 to 38 drops per rollout (drop rate 5.4% → 0.49%; permutation test over runs, p = 0.011)") {
		t.Errorf("history: exit %d\n%s%s", code, out, errs)
	}
	out, errs, code = runCLI(t, "check", s.Points[last11].Dir, "--history", shippedHistory, "--min-allowance", "2")
	if code != 0 || !strings.Contains(out, "3 passed, 0 failed, 0 inconclusive") {
		t.Errorf("the last 1.1 run against its history: exit %d\n%s%s", code, out, errs)
	}
	out, errs, code = runCLI(t, "check", s.Points[regression].Dir, "--history", shippedHistory, "--min-allowance", "2")
	if code != 1 || !strings.Contains(out, "since it changed at run "+s.Points[first11].Dir) || !strings.Contains(out, "(4 of 4 rollouts)") {
		t.Errorf("the regression against its history: exit %d\n%s%s", code, out, errs)
	}
	// docs/history.md: the fix is found once four runs after it are in
	// the history (six before it), not with three: a change may be
	// anywhere, so a stretch of three among nine is no surprise.
	if past := s.Before(s.Points[first11+4].Started, "", 0.95); past.Since == nil || past.Runs() != 4 {
		t.Errorf("past of the fifth 1.1 run: %+v; want the change found, 4 runs since", past)
	}
	if past := s.Before(s.Points[first11+3].Started, "", 0.95); past.Since != nil {
		t.Errorf("past of the fourth 1.1 run: change found with three runs after it: %+v", past.Since)
	}
	// The history extended by a second re-run of 1.0 after 1.1 (the
	// regression run again, an hour later): both changes are found, and
	// a later run is held to the 1.1 stretch, never to the regression.
	again := s.Points[regression]
	again.Dir, again.Started = again.Dir+"-again", again.Started.Add(time.Hour)
	ext := history.Series{Key: s.Key, Points: append(slices.Clone(s.Points), again)}
	if cs := history.ChangePoints(ext.Points, 0.95); len(cs) != 2 || cs[0].At != first11 || cs[1].At != regression {
		t.Errorf("1.0 → 1.1 → 1.0 twice: changes %+v; want at %d and %d", cs, first11, regression)
	}
	past := ext.Before(again.Started.Add(time.Hour), "", 0.95)
	if past.Since == nil || past.Until == nil || past.Runs() != regression-first11 || drops(past.Rollouts()) != 0 {
		t.Errorf("past of a run after the regression: %d runs, since %+v, until %+v; want the %d runs of 1.1", past.Runs(), past.Since, past.Until, regression-first11)
	}
}

// drops sums rollouts' drops.
func drops(rs []stats.Rollout) uint64 {
	var n uint64
	for _, r := range rs {
		n += r.Drops
	}
	return n
}
