package run

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func twoRollouts() *plan {
	return &plan{
		attackStart: at(0), attackEnd: at(50),
		rollouts: []RolloutSummary{
			{N: 1, Start: at(10), WindowEnd: at(20), MeasuredVariant: "no-prestop", BaselineClean: true},
			{N: 2, Start: at(30), WindowEnd: at(40), MeasuredVariant: "prestop-sleep", BaselineClean: true},
		},
	}
}

func TestWindowsLayout(t *testing.T) {
	got := twoRollouts().windows()
	want := []Window{
		{PhaseControl, 0, at(0), at(10)},
		{PhaseRollout, 1, at(10), at(20)},
		{PhaseTail, 1, at(20), at(30)},
		{PhaseRollout, 2, at(30), at(40)},
		{PhaseTail, 2, at(40), at(50)},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d windows: %+v", len(got), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("window %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestWindowsInterrupted: a run cancelled inside a rollout window keeps the
// window open until traffic stopped, so its failures still count.
func TestWindowsInterrupted(t *testing.T) {
	p := twoRollouts()
	p.rollouts[1].WindowEnd = time.Time{}
	w := p.windows()
	last := w[len(w)-1]
	if last.Phase != PhaseRollout || last.Rollout != 2 || !last.End.Equal(at(50)) {
		t.Errorf("last window %+v", last)
	}
	if w := (&plan{attackStart: at(0), attackEnd: at(30)}).windows(); len(w) != 1 || w[0].Phase != PhaseControl {
		t.Errorf("control run windows %+v", w)
	}
}

func TestTimelineFind(t *testing.T) {
	tl := NewTimeline(twoRollouts().windows())
	for _, tc := range []struct {
		s     float64
		phase Phase
		n     int
	}{{0, PhaseControl, 0}, {9.999, PhaseControl, 0}, {10, PhaseRollout, 1}, {25, PhaseTail, 1}, {39.9, PhaseRollout, 2}, {49, PhaseTail, 2}} {
		i := tl.Find(at(tc.s))
		if i < 0 || tl.Windows[i].Phase != tc.phase || tl.Windows[i].Rollout != tc.n {
			t.Errorf("t=%v: window %d", tc.s, i)
		}
	}
	if tl.Find(at(-1)) != -1 || tl.Find(at(50)) != -1 {
		t.Error("times outside every window were placed")
	}
}

// fill sends n requests of class c evenly over [from, to).
func fill(tl *Timeline, from, to float64, n int, c traffic.Class) {
	for k := range n {
		tl.Add(at(from+(to-from)*float64(k)/float64(n)), c)
	}
}

func TestBuildRows(t *testing.T) {
	p := twoRollouts()
	tl := NewTimeline(p.windows())
	fill(tl, 0, 10, 100, traffic.Class2xx)
	fill(tl, 5, 6, 1, traffic.ClassTimeout) // the rig's floor
	fill(tl, 10, 20, 200, traffic.Class2xx)
	fill(tl, 12, 13, 5, traffic.ClassRefused)
	fill(tl, 14, 15, 2, traffic.ClassTimeout)
	fill(tl, 20, 30, 3, traffic.ClassTimeout) // the conntrack tail
	fill(tl, 30, 40, 200, traffic.Class2xx)
	fill(tl, 40, 50, 100, traffic.Class2xx)
	stats := traffic.Stats{AskedRate: 1000, AchievedRate: 990}

	rows := buildRows("no-prestop", "no-prestop", "", p, tl, stats, nil)
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	r := rows[0]
	if r.Drops != 7 || r.WindowRequests != 407 || r.RolloutsWithDrops != 1 || r.Tail.Failures != 3 || r.Control.Failures != 1 || r.Requests != 611 {
		t.Errorf("drops=%d window=%d withDrops=%d tail=%d control=%d requests=%d", r.Drops, r.WindowRequests, r.RolloutsWithDrops, r.Tail.Failures, r.Control.Failures, r.Requests)
	}
	if r.Classes[traffic.ClassRefused] != 5 || r.Classes[traffic.ClassTimeout] != 2 {
		t.Errorf("classes %v", r.Classes)
	}
	if r.Rollouts[0].Window.Failures != 7 || r.Rollouts[1].Window.Failures != 0 || r.Rollouts[0].Tail.Failures != 3 {
		t.Errorf("per rollout %+v", r.Rollouts)
	}
	if want := 1.0 / 101 * 407; r.ExpectedFloor < want-1e-9 || r.ExpectedFloor > want+1e-9 {
		t.Errorf("floor %v, want %v", r.ExpectedFloor, want)
	}
	joined := strings.Join(r.Suspect, "\n")
	for _, want := range []string{"control window was not clean: 1 failures in 101 requests", "rollout 2 deleted pods of variant prestop-sleep, not no-prestop"} {
		if !strings.Contains(joined, want) {
			t.Errorf("suspect lacks %q:\n%s", want, joined)
		}
	}
}

// TestBuildRowsTrap: a variant with `from` reports the rollout that
// introduced it apart from the later ones.
func TestBuildRowsTrap(t *testing.T) {
	p := twoRollouts()
	tl := NewTimeline(p.windows())
	fill(tl, 0, 10, 100, traffic.Class2xx)
	fill(tl, 10, 20, 200, traffic.ClassRefused)
	fill(tl, 30, 40, 200, traffic.Class2xx)
	rows := buildRows("the-trap", "prestop-sleep", "no-prestop", p, tl, traffic.Stats{}, nil)
	if len(rows) != 2 || rows[0].Variant != "the-trap/introducing" || rows[1].Variant != "the-trap" {
		t.Fatalf("rows %+v", rows)
	}
	if rows[0].Drops != 200 || rows[1].Drops != 0 || len(rows[0].Rollouts) != 1 || len(rows[1].Rollouts) != 1 {
		t.Errorf("intro drops %d, later drops %d", rows[0].Drops, rows[1].Drops)
	}
	// The introducing rollout deletes no-prestop pods, as expected: not suspect.
	for _, s := range append(rows[0].Suspect, rows[1].Suspect...) {
		if strings.Contains(s, "deleted pods of variant") {
			t.Errorf("unexpected suspect: %s", s)
		}
	}
}

// TestPlanFromEvents: the windows are rebuilt from the run's marks alone,
// so `droprun report` gets the same answer as the live run.
func TestPlanFromEvents(t *testing.T) {
	ev := func(s float64, kind timeline.Kind, d map[string]string) timeline.Event {
		return timeline.Event{Time: at(s), Kind: kind, Detail: d}
	}
	events := []timeline.Event{
		ev(0, MarkTrafficStart, map[string]string{"variant": "a"}),
		ev(1, MarkTrafficStart, map[string]string{"variant": "other"}),
		ev(10, MarkWindowClose, map[string]string{"variant": "a", "phase": "control"}),
		ev(10, MarkRolloutStart, map[string]string{"variant": "a", "rollout": "1", "from": "v1", "to": "v2", "measured": "no-prestop", "live": "shutdown=none"}),
		ev(17, MarkRolloutComplete, map[string]string{"variant": "a", "rollout": "1"}),
		ev(20, MarkWindowClose, map[string]string{"variant": "a", "rollout": "1", "phase": "rollout"}),
		ev(20.1, MarkConntrackFlushed, map[string]string{"variant": "a", "rollout": "1", "flushed": `{"n1":3}`}),
		ev(30, MarkBaseline, map[string]string{"variant": "a", "rollout": "1", "clean": "false", "wait": "9.9s"}),
		ev(30, MarkRolloutStart, map[string]string{"variant": "a", "rollout": "2", "from": "v2", "to": "v1"}),
		ev(50, MarkTrafficStop, map[string]string{"variant": "a", "stats": `{"AskedRate":1000,"AchievedRate":990}`}),
	}
	p, err := planFromEvents(events, "a")
	if err != nil {
		t.Fatal(err)
	}
	if !p.attackStart.Equal(at(0)) || !p.attackEnd.Equal(at(50)) || len(p.rollouts) != 2 || p.stats.AchievedRate != 990 {
		t.Fatalf("plan %+v", p)
	}
	r1, r2 := p.rollouts[0], p.rollouts[1]
	if r1.Duration != "7s" || !r1.WindowEnd.Equal(at(20)) || r1.ConntrackFlushed["n1"] != 3 || r1.BaselineClean || r1.MeasuredVariant != "no-prestop" {
		t.Errorf("rollout 1 %+v", r1)
	}
	// Interrupted: no completion, no window close; the window runs to the end.
	if !r2.WindowEnd.IsZero() || !r2.BaselineClean {
		t.Errorf("rollout 2 %+v", r2)
	}
	w := p.windows()
	if last := w[len(w)-1]; last.Phase != PhaseRollout || !last.End.Equal(at(50)) {
		t.Errorf("last window %+v", last)
	}
	if _, err := planFromEvents(events, "never-ran"); err == nil {
		t.Error("a variant without traffic got a plan")
	}
}

// TestBuildRowsRig: a rollout during which the client fell behind schedule
// is flagged as saturated, its drops are kept out of Measurable, and the
// attack-wide lag reason gives way to the per-rollout one.
func TestBuildRowsRig(t *testing.T) {
	p := twoRollouts()
	tl := NewTimeline(p.windows())
	fill(tl, 0, 10, 100, traffic.Class2xx)
	fill(tl, 10, 20, 200, traffic.Class2xx)
	fill(tl, 12, 13, 4, traffic.ClassTimeout) // rollout 1, rig saturated
	fill(tl, 30, 40, 200, traffic.Class2xx)
	fill(tl, 31, 32, 1, traffic.ClassRefused) // rollout 2, rig fine
	sample := func(s float64, lag, pressure string) timeline.Event {
		return timeline.Event{Time: at(s), Kind: MarkRigSample, Detail: map[string]string{
			"host_busy": "0.900", "cpu_pressure": pressure, "lag_ms": lag, "sched_max_ms": "12.0"}}
	}
	events := []timeline.Event{
		sample(5, "1.0", "0.200"),
		sample(12, "2400.0", "0.950"), sample(13, "10.0", "0.850"),
		sample(31, "40.0", "0.300"), sample(32, "20.0", "0.100"),
	}
	stats := traffic.Stats{AskedRate: 1000, AchievedRate: 990, Suspect: []string{traffic.LagSuspect + " 2.4s behind schedule (tolerance 250ms)"}}
	r := buildRows("prestop-sleep", "prestop-sleep", "", p, tl, stats, events)[0]

	r1, r2 := r.Rollouts[0].Rig, r.Rollouts[1].Rig
	if r1 == nil || !r1.Saturated || r1.Samples != 2 || r1.ClientLagMax != 2.4 || r1.CPUPressureMax != 0.95 || math.Abs(r1.CPUPressureMean-0.9) > 1e-9 {
		t.Errorf("rollout 1 rig %+v", r1)
	}
	if r2 == nil || r2.Saturated || r2.ClientLagMax != 0.04 {
		t.Errorf("rollout 2 rig %+v", r2)
	}
	if r.ControlRig == nil || r.ControlRig.Samples != 1 || r.ControlRig.Saturated {
		t.Errorf("control rig %+v", r.ControlRig)
	}
	if r.SaturatedRollouts != 1 || r.Drops != 5 || r.Measurable.Failures != 1 || r.Measurable.Requests != 201 {
		t.Errorf("saturated=%d drops=%d measurable=%+v", r.SaturatedRollouts, r.Drops, r.Measurable)
	}
	joined := strings.Join(r.Suspect, "\n")
	if !strings.Contains(joined, "rollout 1: the rig was short of CPU (client up to 2.40s behind schedule, its goroutines up to 0.01s waiting") {
		t.Errorf("no per-rollout rig reason:\n%s", joined)
	}
	if strings.Contains(joined, traffic.LagSuspect) || len(r.Client.Suspect) != 0 {
		t.Errorf("the attack-wide lag reason stayed:\n%s\nclient: %v", joined, r.Client.Suspect)
	}

	// A client whose goroutines waited over a second for a core is
	// saturated too, even when it kept its schedule.
	if rs := rigSummary([]timeline.Event{{Time: at(1), Kind: MarkRigSample, Detail: map[string]string{"lag_ms": "10.0", "sched_max_ms": "1342.2"}}}, at(0), at(2)); rs == nil || !rs.Saturated {
		t.Errorf("a 1.3 s scheduler stall: %+v", rs)
	}

	// Without rig samples (older runs) nothing is flagged and the
	// attack-wide reason stays.
	r = buildRows("prestop-sleep", "prestop-sleep", "", p, tl, stats, nil)[0]
	if r.SaturatedRollouts != 0 || r.Rollouts[0].Rig != nil || !strings.Contains(strings.Join(r.Suspect, "\n"), traffic.LagSuspect) {
		t.Errorf("without samples: saturated=%d rig=%v suspect=%v", r.SaturatedRollouts, r.Rollouts[0].Rig, r.Suspect)
	}
}
