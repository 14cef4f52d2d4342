package analysis

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

// plan is what happened during one variant, rebuilt from the run's marks.
type plan struct {
	attackStart, attackEnd time.Time
	appScraped             time.Time // the pods' counters read after traffic stopped
	rollouts               []RolloutSummary
	balance                map[int]balanceEdges // by rollout number
	stats                  traffic.Stats
	warnings               []string
}

// planOf rebuilds variant's plan from the run's marks (events in time
// order). settle is the scenario's settle time, for windows closed early.
func planOf(events []timeline.Event, variant string, settle time.Duration) (*plan, error) {
	p := &plan{balance: map[int]balanceEdges{}}
	var cur *RolloutSummary
	for _, e := range events {
		if e.Detail["variant"] != variant {
			continue
		}
		n, _ := strconv.Atoi(e.Detail["rollout"])
		switch e.Kind {
		case timeline.KindTrafficStart:
			p.attackStart = e.Time
		case timeline.KindTrafficStop:
			// One load source per variant: the host client or the
			// generator pods, whose account is theirs together.
			p.attackEnd = e.Time
			switch {
			case e.Stats != nil:
				p.stats = *e.Stats
			case e.Detail["stats"] != "": // recorded before marks had typed payloads
				if err := json.Unmarshal([]byte(e.Detail["stats"]), &p.stats); err != nil {
					return nil, fmt.Errorf("traffic stats of %s: %w", variant, err)
				}
			}
		case timeline.KindAppScraped:
			p.appScraped = e.Time
		case timeline.KindRolloutStart:
			p.rollouts = append(p.rollouts, RolloutSummary{N: n, From: e.Detail["from"], To: e.Detail["to"],
				MeasuredVariant: e.Detail["measured"], LiveTemplate: e.Detail["live"], LivePods: e.Live, Start: e.Time, BaselineClean: true})
			cur = &p.rollouts[len(p.rollouts)-1]
		case timeline.KindRolloutComplete:
			if cur != nil && cur.N == n {
				cur.Complete = e.Time
				cur.Duration = e.Time.Sub(cur.Start).Round(100 * time.Millisecond).String()
			}
		case timeline.KindWindowClose:
			if Phase(e.Detail["phase"]) != PhaseControl && cur != nil && cur.N == n {
				cur.WindowEnd = e.Time
			}
		case timeline.KindConntrackFlushed:
			if cur != nil && cur.N == n {
				cur.ConntrackFlushed = e.Flushed
				if cur.ConntrackFlushed == nil && e.Detail["flushed"] != "" {
					_ = json.Unmarshal([]byte(e.Detail["flushed"]), &cur.ConntrackFlushed)
				}
			}
		case timeline.KindBalance:
			edges := p.balance[n]
			if e.Detail["edge"] == "start" {
				edges.start = e.Time
			} else {
				edges.end = e.Time
			}
			p.balance[n] = edges
		case timeline.KindBaseline:
			if cur != nil && cur.N == n {
				cur.BaselineClean = e.Detail["clean"] == "true"
				cur.BaselineWait = e.Detail["wait"]
			}
		}
	}
	if p.attackStart.IsZero() {
		return nil, fmt.Errorf("variant %s: no %s mark: its traffic never started", variant, timeline.KindTrafficStart)
	}
	if p.attackEnd.IsZero() && len(events) > 0 {
		// The run died without stopping traffic: the last event bounds it.
		p.attackEnd = events[len(events)-1].Time
		p.warnings = append(p.warnings, fmt.Sprintf("variant %s: no %s mark (the run was killed?): its traffic is taken to end at the last event, %s",
			variant, timeline.KindTrafficStop, p.attackEnd.Format(time.RFC3339)))
	}
	p.closeOnPods(events, variant, settle)
	return p, nil
}

// closeOnPods makes each rollout's window last until the pods it deleted
// are gone as the pod informer saw them, plus settle, whatever the run's
// own window.close mark says: a run that judged the rollout complete from
// Deployment status fields a cluster leaves unset would otherwise push the
// drops of old pods still in preStop into the tail.
func (p *plan) closeOnPods(events []timeline.Event, variant string, settle time.Duration) {
	for k := range p.rollouts {
		rs := &p.rollouts[k]
		next := p.attackEnd
		if k+1 < len(p.rollouts) {
			next = p.rollouts[k+1].Start
		}
		until := rs.Complete
		if until.IsZero() {
			until = next
		}
		deleted := map[string]bool{}
		for _, e := range events {
			if e.Time.Before(rs.Start) || !e.Time.Before(next) {
				continue
			}
			switch {
			case e.Kind == timeline.KindPodDeletionRequested && !e.Time.After(until):
				deleted[e.Pod] = true
			case e.Kind == timeline.KindPodGone && deleted[e.Pod]:
				rs.OldPodsGone = later(rs.OldPodsGone, e.Time)
			}
		}
		// Only a run that judged the rollout complete while an old pod
		// still existed closed the window too early.
		if rs.WindowEnd.IsZero() || rs.Complete.IsZero() || !rs.OldPodsGone.After(rs.Complete) {
			continue
		}
		if want := rs.OldPodsGone.Add(settle); want.After(rs.WindowEnd) {
			if want.After(next) {
				want = next
			}
			p.warnings = append(p.warnings, fmt.Sprintf("%s rollout %d: the run judged the rollout complete %s before its last old pod was gone; its window runs until %s after that pod instead",
				variant, rs.N, rs.OldPodsGone.Sub(rs.Complete).Round(time.Millisecond), settle))
			rs.WindowEnd, rs.WindowExtended = want, true
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

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
