package analysis

import (
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
		tl.AddRecord(traffic.Record{Time: at(from + (to-from)*float64(k)/float64(n)), Class: c})
	}
}

// TestPlanFromEvents: the windows are rebuilt from the run's marks alone,
// so `droprun report` gets the same answer as the live run.
func TestPlanFromEvents(t *testing.T) {
	ev := func(s float64, kind timeline.Kind, d map[string]string) timeline.Event {
		return timeline.Event{Time: at(s), Kind: kind, Detail: d}
	}
	events := []timeline.Event{
		ev(0, timeline.KindTrafficStart, map[string]string{"variant": "a"}),
		ev(1, timeline.KindTrafficStart, map[string]string{"variant": "other"}),
		ev(10, timeline.KindWindowClose, map[string]string{"variant": "a", "phase": "control"}),
		ev(10, timeline.KindRolloutStart, map[string]string{"variant": "a", "rollout": "1", "from": "v1", "to": "v2", "measured": "no-prestop", "live": "shutdown=none"}),
		ev(17, timeline.KindRolloutComplete, map[string]string{"variant": "a", "rollout": "1"}),
		ev(20, timeline.KindWindowClose, map[string]string{"variant": "a", "rollout": "1", "phase": "rollout"}),
		ev(20.1, timeline.KindConntrackFlushed, map[string]string{"variant": "a", "rollout": "1", "flushed": `{"n1":3}`}),
		ev(30, timeline.KindBaseline, map[string]string{"variant": "a", "rollout": "1", "clean": "false", "wait": "9.9s"}),
		ev(30, timeline.KindRolloutStart, map[string]string{"variant": "a", "rollout": "2", "from": "v2", "to": "v1"}),
		ev(50, timeline.KindTrafficStop, map[string]string{"variant": "a", "stats": `{"AskedRate":1000,"AchievedRate":990}`}),
	}
	p, err := planOf(events, "a", 0)
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
	if _, err := planOf(events, "never-ran", 0); err == nil {
		t.Error("a variant without traffic got a plan")
	}
}
