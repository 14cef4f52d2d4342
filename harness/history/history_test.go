package history

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/stats"
	"github.com/droprun/droprun/harness/variant"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// fakeRun is a synthetic run: its rows' per-rollout drops, in windows of
// perRollout requests each.
type fakeRun struct {
	started    time.Time
	image      string
	droprun    string
	rows       map[string][]uint64
	perRollout uint64
	suspect    []string
	unfinished bool
}

// write writes r's summary.json (and run.json) into dir.
func (r fakeRun) write(t *testing.T, dir string) {
	t.Helper()
	sum := analysis.Summary{Format: analysis.SummaryVersion}
	sum.Scenario = "demo"
	sum.Started = r.started
	if !r.unfinished {
		sum.Finished = r.started.Add(7 * time.Minute)
	}
	sum.Cluster = analysis.ClusterInfo{Kind: true, KubeProxyMode: "iptables", Kubernetes: "v1.37.2", DroprunVer: r.droprun}
	sum.Traffic = analysis.TrafficInfo{Rate: 500, Protocol: "http1-new", Rollouts: 4}
	sum.Suspect = r.suspect
	per := r.perRollout
	if per == 0 {
		per = 5000
	}
	for name, drops := range r.rows {
		v := analysis.VariantSummary{Variant: name}
		for k, d := range drops {
			v.Rollouts = append(v.Rollouts, analysis.RolloutSummary{N: k + 1, Window: analysis.Tally{Requests: per, Failures: d},
				LivePods: &variant.PodFacts{Image: r.image, ImageID: "docker.io/library/x@sha256:0123456789abcdef0123"}})
			v.Drops += d
			v.WindowRequests += per
		}
		sum.Variants = append(sum.Variants, v)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, runfile.SummaryFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadKeysOrdersAndSkips(t *testing.T) {
	root := t.TempDir()
	fakeRun{started: t0.Add(2 * time.Hour), image: "bookshop:v1", rows: map[string][]uint64{"no-prestop": {30, 40}, "graceful-drain": {0, 0}}}.write(t, filepath.Join(root, "b"))
	fakeRun{started: t0, image: "bookshop:v1", rows: map[string][]uint64{"no-prestop": {10, 20}}}.write(t, filepath.Join(root, "nested", "a"))
	fakeRun{started: t0.Add(time.Hour), image: "bookshop:v1", rows: map[string][]uint64{"no-prestop": {1}}, unfinished: true}.write(t, filepath.Join(root, "killed"))
	if err := os.MkdirAll(filepath.Join(root, "raw"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "raw", runfile.RunFile), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}

	h, err := Read([]string{root}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Runs != 2 || len(h.Series) != 2 {
		t.Fatalf("runs %d, series %d; want 2 runs (a, b) in 2 series (graceful-drain, no-prestop)", h.Runs, len(h.Series))
	}
	s := h.Find(Key{Scenario: "demo", Variant: "no-prestop", Path: "nodeport", Protocol: "http1-new", Load: "500 req/s, timeout ?", KubeProxy: "iptables", Kubernetes: "v1.37.2", App: "bookshop"})
	if s == nil {
		t.Fatalf("no series for demo/no-prestop; keys %v, %v", h.Series[0].Key, h.Series[1].Key)
	}
	if len(s.Points) != 2 || filepath.Base(s.Points[0].Dir) != "a" || s.Points[1].Drops() != 70 {
		t.Errorf("points %+v; want a (older) then b with 70 drops", s.Points)
	}
	if got := s.Points[0].Image(); got != "bookshop:v1@0123456789ab" {
		t.Errorf("image %q", got)
	}
	why := map[string]string{}
	for _, sk := range h.Skipped {
		why[filepath.Base(sk.Dir)] = sk.Why
	}
	if !strings.Contains(why["killed"], "never finished") || !strings.Contains(why["raw"], "without summary.json") || len(why) != 2 {
		t.Errorf("skipped %v; want killed (never finished) and raw (no summary.json), and nothing else", why)
	}

	// A copy of a run directory is the same run: read once, the copy
	// skipped and named, the counts unchanged.
	fakeRun{started: t0.Add(2 * time.Hour), image: "bookshop:v1", rows: map[string][]uint64{"no-prestop": {30, 40}, "graceful-drain": {0, 0}}}.write(t, filepath.Join(root, "c-copy-of-b"))
	again, err := Read([]string{root}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var copied string
	for _, sk := range again.Skipped {
		if filepath.Base(sk.Dir) == "c-copy-of-b" {
			copied = sk.Why
		}
	}
	if again.Runs != 2 || !strings.Contains(copied, "the same run as "+filepath.Join(root, "b")) || len(again.Find(s.Key).Points) != 2 {
		t.Errorf("with a copy of b: %d runs, copy skipped for %q; want 2 runs and the copy named as b's", again.Runs, copied)
	}
	if err := os.RemoveAll(filepath.Join(root, "c-copy-of-b")); err != nil {
		t.Fatal(err)
	}

	// A path that is a link to the runs reads them.
	link := filepath.Join(t.TempDir(), "runs")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	if viaLink, err := Read([]string{link}, Options{}); err != nil || viaLink.Runs != 2 {
		t.Errorf("through a link: %v, %+v", err, viaLink)
	}
	if _, err := Read([]string{filepath.Join(root, "absent")}, Options{}); err == nil {
		t.Error("a path that does not exist read without error")
	}
	if _, err := Read([]string{root}, Options{MaxRuns: 1}); err == nil || !strings.Contains(err.Error(), "--max-runs") {
		t.Errorf("more runs than MaxRuns: %v, want an error naming --max-runs", err)
	}
}

// series builds points from per-run rollout drops.
func series(runs ...[]uint64) []Point {
	var out []Point
	for i, drops := range runs {
		p := Point{Dir: "run-" + string(rune('a'+i)), Started: t0.Add(time.Duration(i) * time.Hour), Droprun: "v1", Images: []string{"app:1"}}
		for _, d := range drops {
			p.Rollouts = append(p.Rollouts, stats.Rollout{Drops: d, Requests: 5000})
		}
		p.Rate = stats.RateOverRollouts(p.Rollouts, stats.DefaultConfidence, stats.Dispersion{})
		out = append(out, p)
	}
	return out
}

func TestChangePoints(t *testing.T) {
	// Six runs dropping about 50 a rollout (bursty), then six dropping
	// next to nothing: one change, at the seventh run.
	before := [][]uint64{{40, 70, 55, 30}, {60, 20, 80, 45}, {50, 50, 35, 65}, {75, 40, 25, 55}, {30, 60, 50, 70}, {45, 55, 65, 20}}
	after := [][]uint64{{0, 2, 0, 1}, {1, 0, 0, 0}, {0, 0, 3, 0}, {0, 1, 0, 0}, {2, 0, 0, 1}, {0, 0, 0, 0}}
	pts := series(append(before, after...)...)
	cs := ChangePoints(pts, 0.95)
	if len(cs) != 1 || cs[0].At != 6 {
		t.Fatalf("changes %+v; want one, at run 6", cs)
	}
	c := cs[0]
	if c.P >= 0.05 || c.Before < 40 || c.After > 1 {
		t.Errorf("change %+v: want p < 0.05, from about 50 to under 1 per rollout", c)
	}
	if say := c.Say(pts); !strings.Contains(say, "changed at run run-g") || !strings.Contains(say, "app:1") {
		t.Errorf("Say = %q", say)
	}

	// The same bursty rate throughout: no change.
	same := series(append(before, [][]uint64{{55, 45, 60, 30}, {35, 65, 50, 50}, {70, 30, 45, 55}}...)...)
	if cs := ChangePoints(same, 0.95); len(cs) != 0 {
		t.Errorf("changes %+v in a series with none", cs)
	}
	// Six runs cannot show a change at 95%, however clear: undecided, and
	// it says how many runs would do.
	six := series(before[0], before[1], before[2], after[0], after[1], after[2])
	if cs := ChangePoints(six, 0.95); len(cs) != 0 || !strings.Contains(NoChange(six, 0.95), "measure at least 8 runs") {
		t.Errorf("6 runs: changes %+v, %q", cs, NoChange(six, 0.95))
	}
	// A confidence the shuffles cannot reach is said, not "no change".
	if nc := NoChange(pts, 0.9999); !strings.Contains(nc, "use a lower --confidence") {
		t.Errorf("NoChange at 99.99%% = %q", nc)
	}
	// Suspect runs are shown but not tested: a suspect run among the
	// first six moves no change, and the change keeps its place.
	withSuspect := series(append(before, after...)...)
	withSuspect[2].Suspect = []string{"control window had failures"}
	v := ViewOf(&History{Series: []Series{{Points: withSuspect}}}, 0.95)
	if cs := v.Series[0].Changes; len(cs) != 1 || cs[0].At != 6 {
		t.Errorf("changes with a suspect run %+v; want one, at run 6 of the whole series", cs)
	}
	// Nothing dropped, ever: no change, and no division by zero.
	if cs := ChangePoints(series([]uint64{0}, []uint64{0}, []uint64{0}, []uint64{0}, []uint64{0}), 0.95); len(cs) != 0 {
		t.Errorf("changes %+v in an all-zero series", cs)
	}
	// Three runs cannot have two on each side.
	if cs := ChangePoints(series(before[0], after[0], after[1]), 0.95); len(cs) != 0 || !strings.Contains(NoChange(series(before[0]), 0.95), "needs 2 on each side") {
		t.Errorf("changes %+v in 3 runs", cs)
	}
}

func TestPastBefore(t *testing.T) {
	pts := series([]uint64{1, 2}, []uint64{3}, []uint64{9, 9}, []uint64{100})
	pts[1].Suspect = []string{"control window had failures"}
	s := Series{Points: pts}
	past := s.Before(pts[3].Started, "elsewhere", 0.95)
	if past.Runs() != 2 || len(past.Rollouts()) != 4 || len(past.Left) != 1 || past.Since != nil {
		t.Fatalf("past %+v: want runs a and c (4 rollouts), b left out as suspect, d not before, no change", past)
	}
	if got := past.Percentile(99, false); got != 9 {
		t.Errorf("P99 of 1 2 9 9 = %v, want 9 (nearest rank)", got)
	}
	if got := past.Percentile(50, false); got != 2 {
		t.Errorf("P50 of 1 2 9 9 = %v, want 2", got)
	}
	// The run judged is never its own past, even when it is in the history.
	if self := s.Before(pts[3].Started.Add(time.Hour), pts[2].Dir, 0.95); self.Runs() != 2 || len(self.Rollouts()) != 3 {
		t.Errorf("past of run c = %+v; want a and d, without c itself", self)
	}
}

// TestPastSinceChange: after a fix, the limit learns from the runs since
// the change only: the old bursts no longer count as normal.
func TestPastSinceChange(t *testing.T) {
	var runs [][]uint64
	for i := range 16 {
		if i < 8 {
			runs = append(runs, []uint64{40 + uint64(i%3)*10, 60, 50, 45})
		} else {
			runs = append(runs, []uint64{uint64(i % 2), 0, 1, 0})
		}
	}
	pts := series(runs...)
	s := Series{Points: pts}
	past := s.Before(pts[15].Started.Add(time.Hour), "elsewhere", 0.95)
	if past.Since == nil || past.SinceRun != pts[8].Dir || past.Before != 8 || past.Runs() != 8 {
		t.Fatalf("past %+v: want the 8 runs since the change at run 8", past)
	}
	if got := past.Percentile(99, false); got != 1 {
		t.Errorf("P99 since the change = %v, want 1", got)
	}
	if d := past.Describe(); !strings.Contains(d, "since it changed at run "+pts[8].Dir) || !strings.Contains(d, "the 8 run(s) before left out") {
		t.Errorf("Describe = %q", d)
	}
}

func TestWriteFormats(t *testing.T) {
	pts := series([]uint64{40, 70}, []uint64{60, 20}, []uint64{0, 1}, []uint64{0, 0})
	h := &History{Runs: 4, Series: []Series{{Key: Key{Scenario: "demo", Variant: "no-prestop", Path: "nodeport", Protocol: "http1-new"}, Points: pts}},
		Skipped: []Skip{{Dir: "x", Why: "unreadable"}}}
	v := ViewOf(h, 0.95)
	for _, f := range Formats {
		var b bytes.Buffer
		if err := Write(&b, v, f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out := b.String()
		switch f {
		case "csv":
			rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
			if err != nil || len(rows) != 5 || rows[1][1] != "no-prestop" || rows[1][19] != "40 70" {
				t.Errorf("csv: %v rows %v", err, rows)
			}
		case "json":
			var back View
			if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back.Series) != 1 || back.Series[0].Points[0].Drops != 110 {
				t.Errorf("json: %v %+v", err, back)
			}
		default:
			if !strings.Contains(out, "demo · no-prestop") || !strings.Contains(out, "55 [") && !strings.Contains(out, "1.1% [") {
				t.Errorf("%s:\n%s", f, out)
			}
			if f == "markdown" && !strings.Contains(out, "unreadable") || !strings.Contains(out, "undecided: 4 runs") {
				t.Errorf("%s lacks the skipped run or the change verdict:\n%s", f, out)
			}
		}
	}
	if err := Write(&bytes.Buffer{}, v, "yaml"); err == nil {
		t.Error("an unknown format written")
	}
}

// docs/history.md quotes the smallest p-value over n runs.
func TestMinP(t *testing.T) {
	for n, want := range map[int]string{4: "0.33", 6: "0.1", 7: "0.057", 8: "0.029"} {
		if got := stats.FormatSig(minP(n), 2); got != want {
			t.Errorf("minP(%d) = %s, want %s", n, got, want)
		}
	}
}

// TestKeyHoldsTheLoad: runs at another request rate, client timeout or
// node count are another series: a drop rate depends on each, so halving
// the rate must not let a regression hide among the old runs.
func TestKeyHoldsTheLoad(t *testing.T) {
	sum := func(rate int, timeout string, nodes int) *analysis.Summary {
		s := &analysis.Summary{}
		s.Scenario, s.Traffic.Rate, s.Traffic.Timeout, s.Cluster.Nodes = "demo", rate, timeout, nodes
		return s
	}
	v := analysis.VariantSummary{Variant: "no-prestop"}
	base := KeyOf(sum(500, "2s", 3), v)
	for _, other := range []*analysis.Summary{sum(250, "2s", 3), sum(500, "5s", 3), sum(500, "2s", 5)} {
		if k := KeyOf(other, v); k == base {
			t.Errorf("rate %d, timeout %s, %d nodes: the same key as 500 req/s, 2s, 3 nodes: %s", other.Traffic.Rate, other.Traffic.Timeout, other.Cluster.Nodes, k)
		}
	}
	if k := KeyOf(sum(500, "2s", 3), v); k != base || !strings.Contains(k.String(), "500 req/s, timeout 2s") || !strings.Contains(k.String(), "3 nodes") {
		t.Errorf("key %s", k)
	}
	// The replicas the rollouts found are the key's too.
	withReplicas := func(n int32) analysis.VariantSummary {
		return analysis.VariantSummary{Variant: "no-prestop", Rollouts: []analysis.RolloutSummary{{N: 1, LivePods: &variant.PodFacts{Replicas: n}}}}
	}
	three, five := KeyOf(sum(500, "2s", 3), withReplicas(3)), KeyOf(sum(500, "2s", 3), withReplicas(5))
	if three == five || three == base || !strings.Contains(three.String(), "3 replicas") || strings.Contains(base.String(), "replicas") {
		t.Errorf("3 replicas %s, 5 replicas %s, unsaid %s: want three keys, the replicas said where known", three, five, base)
	}
}

// TestDoubtStreak: three runs in a row that a gate would leave undecided
// (suspect, or in the rig's doubt) are said in the past's description;
// a clean run ends the streak.
func TestDoubtStreak(t *testing.T) {
	pt := func(i int, suspect bool, doubt string) Point {
		p := Point{Dir: fmt.Sprintf("run-%d", i), Started: time.Unix(int64(i)*3600, 0), Doubt: doubt,
			Rollouts: []stats.Rollout{{Drops: 10, Requests: 5000}, {Drops: 12, Requests: 5000}}}
		if suspect {
			p.Suspect = []string{"the client held 300 of 500 req/s"}
		}
		return p
	}
	s := &Series{Points: []Point{pt(0, false, ""), pt(1, false, ""), pt(2, true, ""), pt(3, false, "the pods answered 40 2xx the client never received"), pt(4, true, "")}}
	past := s.Before(time.Unix(5*3600, 0), "", 0.95)
	if past.DoubtStreak != 3 || !strings.Contains(past.Describe(), "the latest 3 runs of this key in a row were suspect or in the rig's doubt") {
		t.Errorf("streak %d: %s", past.DoubtStreak, past.Describe())
	}
	s.Points = append(s.Points, pt(5, false, ""))
	if past := s.Before(time.Unix(6*3600, 0), "", 0.95); past.DoubtStreak != 0 || strings.Contains(past.Describe(), "in a row") {
		t.Errorf("after a clean run: streak %d: %s", past.DoubtStreak, past.Describe())
	}
}

// TestReadRefusesPlantedSummaries: a summary.json that is a link to
// /dev/zero or a FIFO is skipped with its reason, at once: history neither
// reads without end nor waits for a writer.
func TestReadRefusesPlantedSummaries(t *testing.T) {
	root := t.TempDir()
	fakeRun{started: t0, image: "bookshop:v1", rows: map[string][]uint64{"no-prestop": {10, 20}}}.write(t, filepath.Join(root, "good"))
	for _, d := range []string{"zero", "fifo"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/dev/zero", filepath.Join(root, "zero", runfile.SummaryFile)); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo", runfile.SummaryFile), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := Read([]string{root}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	why := map[string]string{}
	for _, sk := range h.Skipped {
		why[filepath.Base(sk.Dir)] = sk.Why
	}
	if h.Runs != 1 || !strings.Contains(why["zero"], "leads out of") || !strings.Contains(why["fifo"], "not a regular file (a FIFO)") {
		t.Errorf("%d runs, skipped %v; want the good run, and zero and fifo skipped for what they are", h.Runs, why)
	}
}
