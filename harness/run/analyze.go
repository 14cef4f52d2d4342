package run

import (
	"fmt"
	"os"
	"time"

	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

// windows lays out a variant's traffic time: control until the first
// rollout, then each rollout's window and its tail. A request still in
// flight when traffic stopped was sent before attackEnd, so the last window
// ends there.
func (p *plan) windows() []Window {
	end := p.attackEnd
	if len(p.rollouts) == 0 {
		return []Window{{Phase: PhaseControl, Start: p.attackStart, End: end}}
	}
	w := []Window{{Phase: PhaseControl, Start: p.attackStart, End: p.rollouts[0].Start}}
	for k, rs := range p.rollouts {
		next := end
		if k+1 < len(p.rollouts) {
			next = p.rollouts[k+1].Start
		}
		wend := rs.WindowEnd
		if wend.IsZero() || wend.After(next) { // interrupted inside the window
			wend = next
		}
		w = append(w, Window{Phase: PhaseRollout, Rollout: rs.N, Start: rs.Start, End: wend})
		if wend.Before(next) {
			w = append(w, Window{Phase: PhaseTail, Rollout: rs.N, Start: wend, End: next})
		}
	}
	return w
}

// analyze reads variant i's results back from disk, assigns every request
// to its window, writes the failures, and builds the variant's rows.
func (r *runner) analyze(i int, p *plan, stats traffic.Stats) ([]VariantSummary, error) {
	v := r.sc.Variants[i]
	events := r.rec.Events()
	tl := NewTimeline(p.windows())
	f, err := os.Open(r.out.ResultsPath(v.Name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	err = traffic.ReadResults(f, func(rec traffic.Record) error {
		w := tl.Add(rec.Time, rec.Class)
		if !rec.Class.Failed() {
			return nil
		}
		fl := Failure{Time: rec.Time, Variant: v.Name, Phase: "outside", Class: rec.Class, Code: rec.Code, Error: rec.Error, Latency: rec.Latency.Seconds()}
		if w >= 0 {
			fl.Phase, fl.Rollout = tl.Windows[w].Phase, tl.Windows[w].Rollout
		}
		if d, ok := timeline.NearestDeletion(events, rec.Time); ok {
			fl.NearestDeletion, fl.SinceDeletion = d.Pod, rec.Time.Sub(d.Time).Seconds()
		}
		return r.out.WriteFailure(fl)
	})
	if err != nil {
		return nil, fmt.Errorf("reading results of %s back: %w", v.Name, err)
	}
	return buildRows(r.sc.Variants[i].Name, r.sc.Variants[i].Variant, r.sc.Variants[i].From, p, tl, stats, between(events, p.attackStart, p.attackEnd)), nil
}

// between returns the events in [from, to].
func between(events []timeline.Event, from, to time.Time) []timeline.Event {
	var out []timeline.Event
	for _, e := range events {
		if !e.Time.Before(from) && !e.Time.After(to) {
			out = append(out, e)
		}
	}
	return out
}

// buildRows turns one variant's windows into summary rows: one row, or two
// for a variant with From (the rollout that introduced it, then the rest).
func buildRows(name, builtin, from string, p *plan, tl *Timeline, stats traffic.Stats, events []timeline.Event) []VariantSummary {
	var control, outside Tally
	perRollout := map[int]*RolloutSummary{}
	rollouts := append([]RolloutSummary(nil), p.rollouts...)
	for k := range rollouts {
		perRollout[rollouts[k].N] = &rollouts[k]
	}
	for k, w := range tl.Windows {
		switch w.Phase {
		case PhaseControl:
			control.Merge(tl.Tallies[k])
		case PhaseRollout:
			perRollout[w.Rollout].Window.Merge(tl.Tallies[k])
		case PhaseTail:
			perRollout[w.Rollout].Tail.Merge(tl.Tallies[k])
		}
	}
	outside.Merge(tl.Outside)

	var requests uint64
	for _, t := range tl.Tallies {
		requests += t.Requests
	}
	requests += tl.Outside.Requests

	client := ClientSummary{AskedRate: stats.AskedRate, AchievedRate: stats.AchievedRate, CPU: stats.ClientCPU, WorkersExhausted: stats.WorkersExhausted, Suspect: stats.Suspect}
	gaps := gapsOf(events)
	hooks := hookFailures(events)

	row := func(rowName, expected string, rs []RolloutSummary) VariantSummary {
		vs := VariantSummary{Variant: rowName, Builtin: builtin, Requests: requests, Control: control, Outside: outside,
			Rollouts: rs, Client: client, Gaps: gaps, HookFailures: hooks, Classes: map[traffic.Class]uint64{}}
		var window Tally
		for _, r := range rs {
			window.Merge(r.Window)
			vs.Tail.Merge(r.Tail)
			if r.Window.Failures > 0 {
				vs.RolloutsWithDrops++
			}
			if expected != "" && r.MeasuredVariant != "custom" && r.MeasuredVariant != expected {
				vs.Suspect = append(vs.Suspect, fmt.Sprintf("rollout %d deleted pods of variant %s, not %s (live template: %s)", r.N, r.MeasuredVariant, expected, r.LiveTemplate))
			}
			if !r.BaselineClean {
				vs.Suspect = append(vs.Suspect, fmt.Sprintf("no clean baseline after rollout %d: failures kept coming before the next rollout", r.N))
			}
		}
		vs.Drops, vs.WindowRequests = window.Failures, window.Requests
		for c, n := range window.Classes {
			vs.Classes[c] = n
		}
		if control.Requests > 0 {
			vs.ExpectedFloor = float64(control.Failures) / float64(control.Requests) * float64(window.Requests)
		}
		if control.Failures > 0 {
			vs.Suspect = append(vs.Suspect, fmt.Sprintf("the control window was not clean: %d failures in %d requests; drops near %.1f are the rig's own floor", control.Failures, control.Requests, vs.ExpectedFloor))
		}
		if control.Requests == 0 {
			vs.Suspect = append(vs.Suspect, "no control window: nothing to compare the rollout windows with")
		}
		vs.Suspect = append(vs.Suspect, stats.Suspect...)
		return vs
	}
	if from == "" || len(rollouts) == 0 {
		return []VariantSummary{row(name, builtin, rollouts)}
	}
	return []VariantSummary{
		row(name+"/introducing", from, rollouts[:1]),
		row(name, builtin, rollouts[1:]),
	}
}

// gapsOf measures, per deleted pod, deletion → endpoint changes.
func gapsOf(events []timeline.Event) []Gap {
	var gaps []Gap
	for _, g := range timeline.DeletionToRemoval(events) {
		gaps = append(gaps, Gap{Pod: g.Pod, EndpointUnready: seconds(g.EndpointUnready), EndpointRemoved: seconds(g.EndpointRemoved)})
	}
	return gaps
}

func seconds(d time.Duration) float64 {
	if d < 0 {
		return -1
	}
	return d.Seconds()
}

// hookFailures lists Warning events about failed preStop hooks.
func hookFailures(events []timeline.Event) []string {
	var out []string
	for _, e := range events {
		if e.Kind == timeline.KindPodEvent && e.Detail["reason"] == "FailedPreStopHook" {
			out = append(out, fmt.Sprintf("%s %s: %s", e.Time.Format("15:04:05.000"), e.Pod, e.Detail["message"]))
		}
	}
	return out
}
