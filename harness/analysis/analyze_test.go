package analysis_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/analysis/analysistest"
	"github.com/droprun/droprun/harness/rig"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

var update = flag.Bool("update", false, "rewrite the golden summaries in testdata/")

// golden compares sum, as summary.json, with testdata/NAME.summary.json.
func golden(t *testing.T, name string, sum *analysis.Summary) {
	t.Helper()
	got, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", name+".summary.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update once to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("summary differs from %s (go test -update rewrites it after review):\n%s", path, firstDiff(string(got), string(want)))
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return "line " + itoa(i+1) + ":\n got: " + a + "\nwant: " + b
		}
	}
	return ""
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func analyze(t *testing.T, dir string, o analysis.Options) *analysis.Analysis {
	t.Helper()
	a, err := analysis.Analyze(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func rows(a *analysis.Analysis) map[string]analysis.VariantSummary {
	m := map[string]analysis.VariantSummary{}
	for _, r := range a.Summary.Variants {
		m[r.Variant] = r
	}
	return m
}

const runJSON = `{"format":"droprun.run/v1","scenario":"synthetic","started":"2026-01-02T03:04:00Z","finished":"2026-01-02T03:05:00Z",
"cluster":{"name":"droprun","kind":true,"nodes":3,"droprun":"test"},
"traffic":{"url":"http://127.0.0.1:30080/version","rate":100,"keepAlive":false,"method":"GET","timeout":"2s","target":"nodeport","rollouts":2,"settle":"2s","control":"2s","between":"1s"}}`

// TestSynthetic: windows, classes, attribution, tails and the trap's two
// rows, against a golden summary.
func TestSynthetic(t *testing.T) {
	var failures []analysis.Failure
	dir := analysistest.Write(t, analysistest.Run{RunJSON: runJSON})
	a := analyze(t, dir, analysis.Options{Failure: func(f analysis.Failure) error { failures = append(failures, f); return nil }})
	golden(t, "synthetic", a.Summary)

	r := rows(a)
	alpha, intro, beta := r["alpha"], r["beta/introducing"], r["beta"]
	if alpha.Drops != 60 || alpha.Tail.Failures != 5 || alpha.RolloutsWithDrops != 2 || alpha.Classes[traffic.ClassRefused] != 30 || alpha.Classes[traffic.ClassTimeout] != 20 {
		t.Errorf("alpha: drops %d tail %d with drops %d classes %v", alpha.Drops, alpha.Tail.Failures, alpha.RolloutsWithDrops, alpha.Classes)
	}
	if intro.Drops != 30 || len(intro.Rollouts) != 1 || beta.Drops != 0 || len(beta.Rollouts) != 1 {
		t.Errorf("the trap's rows: introducing %d drops in %d rollouts, later %d in %d", intro.Drops, len(intro.Rollouts), beta.Drops, len(beta.Rollouts))
	}
	if len(intro.Gaps) != 1 || intro.Gaps[0].Pod != "old-b1" || len(beta.Gaps) != 1 || beta.Gaps[0].EndpointRemoved != -1 {
		t.Errorf("gaps split by rollout: introducing %+v, later %+v", intro.Gaps, beta.Gaps)
	}
	// The later beta rollout deleted prestop-sleep pods as expected; the
	// introducing one deleted no-prestop pods, as expected too.
	for _, s := range append(intro.Suspect, beta.Suspect...) {
		if strings.Contains(s, "deleted pods of variant") {
			t.Errorf("unexpected suspect: %s", s)
		}
	}
	if len(failures) != 95 {
		t.Errorf("%d failures attributed, want 95", len(failures))
	}
	// The series: alpha's since-deletion failures, less the 10 sent
	// before rollout 2 deleted anything.
	if rs := a.Rows[0]; rs.Row != "alpha" || rs.NoDeletion != 10 || len(rs.Rollouts) != 2 {
		t.Errorf("alpha series: row %s, %d without deletion, %d rollouts", rs.Row, rs.NoDeletion, len(rs.Rollouts))
	}
	if a.Summary.Cluster.Name != "droprun" || a.Summary.Traffic.Rate != 100 || len(a.Summary.Warnings) != 0 {
		t.Errorf("run facts %+v %+v, warnings %v", a.Summary.Cluster, a.Summary.Traffic, a.Summary.Warnings)
	}
}

// TestAccounting: every request is in exactly one window or outside, its
// classes sum to it, and the count equals what vegeta's own report reads
// from the raw file.
func TestAccounting(t *testing.T) {
	dir := analysistest.Write(t, analysistest.Run{RunJSON: runJSON})
	a := analyze(t, dir, analysis.Options{})
	for _, v := range []string{"alpha", "beta"} {
		f, err := os.Open(filepath.Join(dir, runfile.ResultsFile(v)))
		if err != nil {
			t.Fatal(err)
		}
		var m vegeta.Metrics
		dec := vegeta.NewDecoder(f)
		for {
			var res vegeta.Result
			if dec.Decode(&res) != nil {
				break
			}
			m.Add(&res)
		}
		f.Close()
		m.Close()
		for _, row := range a.Summary.Variants {
			if analysis.RowVariant(row.Variant) != v {
				continue
			}
			sum, classes := a.Summary.Accounted(v)
			if row.Requests != m.Requests || sum != m.Requests || classes != m.Requests {
				t.Errorf("%s: requests %d, windows %d, classes %d; vegeta counts %d", row.Variant, row.Requests, sum, classes, m.Requests)
			}
		}
	}
}

// TestMaskedCountedApart: requests net/http served only by a hidden retry
// are 2xx, not drops, and every window counts them apart by the class of
// the failure hidden; the row says how many drops connection reuse masked.
func TestMaskedCountedApart(t *testing.T) {
	failures := append([]analysistest.Failure(nil), analysistest.Failures...)
	failures = append(failures,
		analysistest.Failure{From: 1.0, To: 1.02, Hidden: "EOF"},              // alpha control: 2
		analysistest.Failure{From: 5.0, To: 5.1, Hidden: analysistest.Reset},  // alpha r1: 10
		analysistest.Failure{From: 10.5, To: 10.55, Hidden: "EOF"},            // alpha r1's tail: 5
		analysistest.Failure{From: 15.5, To: 15.53, Hidden: "unexpected EOF"}, // alpha r2: 3
	)
	var attributed int
	a := analyze(t, analysistest.Write(t, analysistest.Run{RunJSON: runJSON, Failures: failures}),
		analysis.Options{Failure: func(analysis.Failure) error { attributed++; return nil }})
	plain := rows(analyze(t, analysistest.Write(t, analysistest.Run{RunJSON: runJSON}), analysis.Options{}))["alpha"]
	alpha := rows(a)["alpha"]

	eof, reset := traffic.ClassEOF, traffic.ClassReset
	if alpha.Drops != plain.Drops || alpha.WindowRequests != plain.WindowRequests || alpha.Classes[traffic.Class2xx] != plain.Classes[traffic.Class2xx] || attributed != 95 {
		t.Errorf("masked requests changed the drops: %d drops in %d, %d 2xx, %d failures; want %d, %d, %d, 95",
			alpha.Drops, alpha.WindowRequests, alpha.Classes[traffic.Class2xx], attributed, plain.Drops, plain.WindowRequests, plain.Classes[traffic.Class2xx])
	}
	if alpha.Masked != 13 || alpha.MaskedClasses[reset] != 10 || alpha.MaskedClasses[eof] != 3 || len(alpha.MaskedClasses) != 2 {
		t.Errorf("row: masked %d %v, want 13: 10 reset, 3 eof", alpha.Masked, alpha.MaskedClasses)
	}
	r1, r2 := alpha.Rollouts[0], alpha.Rollouts[1]
	for _, c := range []struct {
		what  string
		got   analysis.Tally
		n     uint64
		class traffic.Class
	}{
		{"control", alpha.Control, 2, eof},
		{"rollout 1", r1.Window, 10, reset},
		{"rollout 1's tail", r1.Tail, 5, eof},
		{"rollout 2", r2.Window, 3, eof},
		{"rollout 2's tail", r2.Tail, 0, ""},
		{"tails", alpha.Tail, 5, eof},
	} {
		if c.got.Masked != c.n || c.got.MaskedClasses[c.class] != c.n {
			t.Errorf("%s: masked %d %v, want %d %s", c.what, c.got.Masked, c.got.MaskedClasses, c.n, c.class)
		}
	}
	if sum, classes := a.Summary.Accounted("alpha"); sum != alpha.Requests || classes != alpha.Requests {
		t.Errorf("accounted %d in windows, %d by class, of %d", sum, classes, alpha.Requests)
	}
}

// nodeStarvedSamples are rig samples every 250 ms over alpha's traffic in
// which the client keeps its schedule and node w2 goes without CPU for
// share of each sample from..to (seconds), and never otherwise.
func nodeStarvedSamples(share float64, stretches ...[2]float64) []analysistest.Event {
	var out []analysistest.Event
	for k := 1; k <= 76; k++ {
		t := float64(k) * 0.25
		s := &rig.Sample{Time: analysistest.At(t), Interval: 250 * time.Millisecond, HostBusy: 0.7, CPUPressure: 0.5,
			NodesStarved: map[string]float64{"w1": 0.3, "w2": 0.3}}
		for _, st := range stretches {
			if t > st[0] && t <= st[1] {
				s.NodesStarved["w2"] = share
			}
		}
		out = append(out, analysistest.Event{T: t, Event: timeline.Event{Kind: timeline.KindRigSample, Rig: s}})
	}
	return out
}

// TestNodeStallExcuses: a node that goes without CPU for a second or
// more (a hog beside the cluster, the client keeping its schedule) makes
// the rollout saturated and excuses the timeouts in flight then, naming
// the node; a shorter stretch, or a node short of CPU less than
// NodeStarvedShare of the time, excuses nothing.
func TestNodeStallExcuses(t *testing.T) {
	failures := append([]analysistest.Failure(nil), analysistest.Failures...)
	// A timeout in rollout 1 beside a 0.75 s stretch: too short.
	failures = append(failures, analysistest.Failure{From: 6.0, To: 6.1, Err: analysistest.Timeout, Latency: 2 * time.Second})
	for _, c := range []struct {
		name    string
		share   float64
		excused uint64
	}{
		{"starved", 0.97, 20},
		{"short of CPU, not starved", analysis.NodeStarvedShare - 0.05, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			events := append(analysistest.Events(), nodeStarvedSamples(c.share, [2]float64{6.25, 7.0}, [2]float64{12.5, 14.5})...)
			a := analyze(t, analysistest.Write(t, analysistest.Run{RunJSON: runJSON, Events: events, Failures: failures}), analysis.Options{})
			alpha := rows(a)["alpha"]
			r1, r2 := alpha.Rollouts[0], alpha.Rollouts[1]
			if r1.Rig == nil || r1.Rig.Saturated || r1.Excused != 0 || r1.Rig.NodeStallMax != 0 {
				t.Errorf("rollout 1, node starved for 0.75 s: rig %+v, excused %d", r1.Rig, r1.Excused)
			}
			if r2.Excused != c.excused || r2.Rig == nil || r2.Rig.Saturated != (c.excused > 0) {
				t.Fatalf("rollout 2: rig %+v, excused %d (%s), want %d", r2.Rig, r2.Excused, r2.ExcusedWhy, c.excused)
			}
			if c.excused == 0 {
				return
			}
			if r2.Rig.NodeStallMax != 2 || r2.Rig.StalledNode != "w2" || !strings.Contains(r2.Rig.String(), "node w2 without CPU for 2.00s") {
				t.Errorf("rollout 2: rig %s", r2.Rig)
			}
			// A caption names only what stalled: the node, not the client.
			if got, want := r2.Rig.Stalls("; "), "node w2 went without CPU for 2.0 s"; got != want {
				t.Errorf("rollout 2 stalls: %q, want %q", got, want)
			}
			if want := "a kind node went without CPU for up to 2.0 s while they were in flight"; r2.ExcusedWhy != want {
				t.Errorf("rollout 2 excused: %q, want %q", r2.ExcusedWhy, want)
			}
			if !strings.Contains(strings.Join(alpha.Suspect, "\n"), "rollout 2: 20 of its timeouts were in flight while the rig stalled") {
				t.Errorf("no suspect line for the excused timeouts: %v", alpha.Suspect)
			}
		})
	}
}

// TestRigExcusesOnlyTimeouts: in alpha's rollout 2 the client stalled
// (1.6 s behind schedule) while its 20 timeouts were in flight: they are
// excused, with the evidence, and the row is suspect; the refused
// requests of rollout 1 never are.
func TestRigExcusesOnlyTimeouts(t *testing.T) {
	events := append(analysistest.Events(), analysistest.RigSamples()...)
	failures := append([]analysistest.Failure(nil), analysistest.Failures...)
	// Refused requests in the stall too: the race's signature, never excused.
	failures = append(failures, analysistest.Failure{From: 13.5, To: 13.6, Err: analysistest.Refused})
	dir := analysistest.Write(t, analysistest.Run{RunJSON: runJSON, Events: events, Failures: failures})
	a := analyze(t, dir, analysis.Options{})
	golden(t, "rig", a.Summary)
	alpha := rows(a)["alpha"]
	r1, r2 := alpha.Rollouts[0], alpha.Rollouts[1]
	if r1.Rig == nil || r1.Rig.Saturated || r1.Excused != 0 {
		t.Errorf("rollout 1: rig %+v, excused %d", r1.Rig, r1.Excused)
	}
	if r2.Rig == nil || !r2.Rig.Saturated || r2.Excused != 20 || !strings.Contains(r2.ExcusedWhy, "1.6 s") {
		t.Errorf("rollout 2: rig %+v, excused %d (%s)", r2.Rig, r2.Excused, r2.ExcusedWhy)
	}
	if alpha.Drops != 70 || alpha.Excused != 20 || alpha.Measurable.Failures != 50 || alpha.Measurable.Classes[traffic.ClassRefused] != 40 || alpha.SaturatedRollouts != 1 {
		t.Errorf("alpha: drops %d excused %d measurable %+v saturated %d", alpha.Drops, alpha.Excused, alpha.Measurable, alpha.SaturatedRollouts)
	}
	if !strings.Contains(strings.Join(alpha.Suspect, "\n"), "rollout 2: 20 of its timeouts were in flight while the rig stalled") {
		t.Errorf("no suspect line for the excused timeouts: %v", alpha.Suspect)
	}
	// One decode of the samples serves the saturation flag and the rig
	// panels: the series' samples are the analysis's.
	if len(a.Rig) != 76 || len(a.Rows[0].Rollouts[1].Rig) == 0 {
		t.Errorf("%d rig samples, %d in alpha r2's series", len(a.Rig), len(a.Rows[0].Rollouts[1].Rig))
	}
}

// TestEntryNodes: requests spread round robin over three entry nodes are
// tallied per node; the drops of one slow node show on it alone.
func TestEntryNodes(t *testing.T) {
	targets := []string{"http://127.0.0.1:30080/version", "http://127.0.0.1:30082/version", "http://127.0.0.1:30084/version"}
	rj := strings.Replace(runJSON, `"rate":100`, `"rate":100,"targets":[{"node":"cp","url":"http://127.0.0.1:30080/version"},{"node":"w1","url":"http://127.0.0.1:30082/version"},{"node":"w2","url":"http://127.0.0.1:30084/version"}]`, 1)
	failures := []analysistest.Failure{{From: 4.5, To: 4.8, Err: analysistest.Refused, URL: targets[2]}}
	dir := analysistest.Write(t, analysistest.Run{RunJSON: rj, Failures: failures, Targets: targets})
	a := analyze(t, dir, analysis.Options{})
	alpha := rows(a)["alpha"]
	r1 := alpha.Rollouts[0]
	if len(r1.ByNode) != 3 || r1.ByNode["w2"].Failures != 10 || r1.ByNode["cp"].Failures != 0 || r1.ByNode["w1"].Requests == 0 {
		t.Errorf("rollout 1 by node: %+v", r1.ByNode)
	}
	var sum uint64
	for _, tl := range r1.ByNode {
		sum += tl.Requests
	}
	if sum != r1.Window.Requests {
		t.Errorf("by node %d requests, window %d", sum, r1.Window.Requests)
	}
	if alpha.ByNode["w2"].Failures != 10 {
		t.Errorf("row by node: %+v", alpha.ByNode)
	}
}

// TestTruncated: a results file cut mid-record and an events file whose
// last line was cut off are read up to their last whole record, with a
// warning each.
func TestTruncated(t *testing.T) {
	dir := analysistest.Write(t, analysistest.Run{RunJSON: runJSON, Extra: func(dir string) {
		p := filepath.Join(dir, runfile.ResultsFile("beta"))
		b, _ := os.ReadFile(p)
		os.WriteFile(p, b[:len(b)-7], 0o644)
		f, _ := os.OpenFile(filepath.Join(dir, runfile.EventsFile), os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(`{"t":"2026-01-02T03:05:00Z","kind":"pod.rea`)
		f.Close()
	}})
	a := analyze(t, dir, analysis.Options{})
	w := strings.Join(a.Summary.Warnings, "\n")
	if !strings.Contains(w, "results-beta.bin was cut off") || !strings.Contains(w, "events.jsonl: line") {
		t.Errorf("warnings: %s", w)
	}
	var beta uint64
	for _, r := range a.Summary.Variants {
		if analysis.RowVariant(r.Variant) == "beta" {
			beta = r.Requests
		}
	}
	if beta != 1799 {
		t.Errorf("beta: %d requests read, want the 1799 whole ones", beta)
	}
}

// TestWindowClosesOnPods: a run that closed a window while an old pod
// still existed (Deployment status said done) has the window extended to
// that pod's removal plus settle, so its drops stay drops.
func TestWindowClosesOnPods(t *testing.T) {
	var events []analysistest.Event
	for _, e := range analysistest.Events() {
		if e.Event.Kind == timeline.KindPodGone && e.Event.Pod == "old-a1" {
			e.T = 8.5 // after the rollout was complete (7 s): the window runs to 8.5 + 2 s settle
		}
		events = append(events, e)
	}
	dir := analysistest.Write(t, analysistest.Run{RunJSON: runJSON, Events: events})
	a := analyze(t, dir, analysis.Options{})
	r1 := rows(a)["alpha"].Rollouts[0]
	if !r1.WindowExtended || !r1.WindowEnd.Equal(analysistest.At(10.5)) || !r1.OldPodsGone.Equal(analysistest.At(8.5)) {
		t.Fatalf("rollout 1: extended %v, end %v, old pods gone %v", r1.WindowExtended, r1.WindowEnd, r1.OldPodsGone)
	}
	// The 5 EOFs at 10.00–10.05 s were the tail; now they are drops.
	if r1.Window.Failures != 35 || r1.Tail.Failures != 0 {
		t.Errorf("rollout 1: %d window failures, %d tail", r1.Window.Failures, r1.Tail.Failures)
	}
	if !strings.Contains(strings.Join(a.Summary.Warnings, "\n"), "judged the rollout complete 1.5s before its last old pod was gone") {
		t.Errorf("no warning: %v", a.Summary.Warnings)
	}
}

// TestNotARun: a directory without a scenario is not a run.
func TestNotARun(t *testing.T) {
	if _, err := analysis.Analyze(t.TempDir(), analysis.Options{}); !os.IsNotExist(err) {
		t.Errorf("err = %v, want not-exist", err)
	}
}

// TestWithoutRunJSON: a run without run.json still analyses, and says
// what is unknown.
func TestWithoutRunJSON(t *testing.T) {
	a := analyze(t, analysistest.Write(t, analysistest.Run{}), analysis.Options{})
	if !strings.Contains(strings.Join(a.Summary.Warnings, "\n"), "run.json is missing") {
		t.Errorf("warnings %v", a.Summary.Warnings)
	}
	_ = time.Second
}

// TestGeneratorsSeeEveryHop: generator pods sending from inside to every
// node's NodePort (a node's InternalIP, not 127.0.0.1) went through no
// hop droprun did not deploy, and their requests are put down to the
// nodes they entered; the same URLs sent from outside, by the host, are a
// front droprun cannot see.
func TestGeneratorsSeeEveryHop(t *testing.T) {
	targets := []string{"http://172.18.0.2:30080/version", "http://172.18.0.3:30080/version", "http://172.18.0.4:30080/version"}
	listed := `"targets":[{"node":"cp","url":"http://172.18.0.2:30080/version"},{"node":"w1","url":"http://172.18.0.3:30080/version"},{"node":"w2","url":"http://172.18.0.4:30080/version"}]`
	failures := []analysistest.Failure{{From: 4.5, To: 4.8, Err: analysistest.Refused, URL: targets[1]}}
	for _, generators := range []int{3, 0} {
		rj := strings.Replace(runJSON, `"url":"http://127.0.0.1:30080/version","rate":100`, `"url":"`+targets[0]+`","rate":100,`+listed+`,"generators":`+itoa(generators), 1)
		dir := analysistest.Write(t, analysistest.Run{RunJSON: rj, Failures: failures, Targets: targets})
		a := analyze(t, dir, analysis.Options{})
		switch unseen := a.Summary.Unseen; {
		case generators > 0 && unseen != "":
			t.Errorf("from %d generator pods: %q; want every hop seen", generators, unseen)
		case generators == 0 && !strings.Contains(unseen, "172.18.0.2:30080"):
			t.Errorf("from the host: %q; want the unseen front named", unseen)
		}
		if w1 := rows(a)["alpha"].ByNode["w1"]; w1.Failures != 10 {
			t.Errorf("%d generators: w1 %+v; want its 10 drops", generators, w1)
		}
	}
}
