package analysis

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/droprun/droprun/harness/appmetrics"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

// rows turns one variant's windows into summary rows: one row, or two for
// a variant with From (the rollout that introduced it, then the rest).
// rollouts carry their window tallies' extras (excused, by node) already.
func (in *input) rows(v scenario.Variant, p *plan, tl *Timeline, rollouts []RolloutSummary) []VariantSummary {
	sh := rowShared{builtin: v.Variant, hooks: hookFailures(in.events, p), outside: tl.Outside, gaps: in.gaps(p, rollouts), idle: in.idleTimeouts(v)}
	sh.control, sh.controlRig = in.addWindows(tl, rollouts)
	sh.client = in.clientSummary(p.stats)
	for _, t := range tl.Tallies {
		sh.requests += t.Requests
	}
	sh.requests += tl.Outside.Requests
	if v.From == "" || len(rollouts) == 0 {
		return []VariantSummary{sh.row(v.Name, v.Variant, rollouts)}
	}
	return []VariantSummary{
		sh.row(v.Name+introducingSuffix, v.From, rollouts[:1]),
		sh.row(v.Name, v.Variant, rollouts[1:]),
	}
}

// addWindows adds each window's tally to its rollout (window, tail, rig,
// kube-proxy figures) and returns the control window's tally and rig.
func (in *input) addWindows(tl *Timeline, rollouts []RolloutSummary) (control Tally, controlRig *RigSummary) {
	byN := map[int]*RolloutSummary{}
	for k := range rollouts {
		byN[rollouts[k].N] = &rollouts[k]
	}
	for k, w := range tl.Windows {
		switch w.Phase {
		case PhaseControl:
			control.Merge(tl.Tallies[k])
			controlRig = summarizeRig(in.rig, w.Start, w.End)
		case PhaseRollout:
			rs := byN[w.Rollout]
			rs.Window.Merge(tl.Tallies[k])
			rs.Rig = summarizeRig(in.rig, w.Start, w.End)
			in.rolloutKubeProxy(rs, w)
		case PhaseTail:
			byN[w.Rollout].Tail.Merge(tl.Tallies[k])
		}
	}
	return control, controlRig
}

// clientSummary is the client's account of its attack. With rig samples,
// when the client lagged is known per request: the attack-wide lag reason
// would only repeat it less precisely.
func (in *input) clientSummary(stats traffic.Stats) ClientSummary {
	suspect := stats.Suspect
	if len(in.rig) > 0 {
		suspect = nil
		for _, s := range stats.Suspect {
			if !strings.HasPrefix(s, traffic.LagSuspect) {
				suspect = append(suspect, s)
			}
		}
	}
	return ClientSummary{AskedRate: stats.AskedRate, AchievedRate: stats.AchievedRate, CPU: stats.ClientCPU, WorkersExhausted: stats.WorkersExhausted, Suspect: suspect}
}

// rowShared is what every row of one variant shares.
type rowShared struct {
	builtin    string
	requests   uint64
	control    Tally
	controlRig *RigSummary
	outside    Tally
	client     ClientSummary
	hooks      []string
	gaps       map[int][]Gap
	idle       *IdleOrder // without counts
}

// row sums rollouts rs into the row name, whose pods should be of the
// built-in variant expected.
func (sh rowShared) row(name, expected string, rs []RolloutSummary) VariantSummary {
	vs := VariantSummary{Variant: name, Builtin: sh.builtin, Requests: sh.requests, Control: sh.control, Outside: sh.outside,
		Rollouts: rs, Client: sh.client, HookFailures: sh.hooks, Classes: map[traffic.Class]uint64{}, ControlRig: sh.controlRig}
	var window Tally
	for _, r := range rs {
		window.Merge(r.Window)
		vs.addRollout(r, expected, sh.gaps[r.N])
	}
	vs.Drops, vs.WindowRequests = window.Failures, window.Requests
	for c, n := range window.Classes {
		vs.Classes[c] = n
	}
	vs.Masked, vs.MaskedClasses = window.Masked, maps.Clone(window.MaskedClasses)
	vs.FrontResent, vs.FrontMasked = window.FrontResent, window.FrontMasked
	vs.Measurable = window
	vs.Measurable.remove(traffic.ClassTimeout, vs.Excused)
	control := sh.control
	if control.Requests > 0 {
		vs.ExpectedFloor = float64(control.Failures) / float64(control.Requests) * float64(window.Requests)
	}
	vs.Idle = sh.idle.counted(vs)
	switch {
	case vs.Idle.ExplainsControl(control):
		vs.Suspect = append(vs.Suspect, fmt.Sprintf("the control window was not clean: its %d failures in %d requests are %s, the app closing idle connections before the client does (idle timeouts %s and %s); drops near %.1f are theirs, not the rollouts'",
			control.Failures, control.Requests, traffic.ClassIdleClosed, vs.Idle.App, vs.Idle.Client, vs.ExpectedFloor))
	case control.Failures > 0:
		vs.Suspect = append(vs.Suspect, fmt.Sprintf("the control window was not clean: %d failures in %d requests; drops near %.1f are the rig's own floor", control.Failures, control.Requests, vs.ExpectedFloor))
	}
	if control.Requests == 0 {
		vs.Suspect = append(vs.Suspect, "no control window: nothing to compare the rollout windows with")
	}
	vs.Suspect = append(vs.Suspect, sh.client.Suspect...)
	return vs
}

// addRollout adds rollout r's tail, excuses, gaps, tallies by node and
// the reasons it is suspect to the row.
func (vs *VariantSummary) addRollout(r RolloutSummary, expected string, gaps []Gap) {
	vs.Tail.Merge(r.Tail)
	vs.Excused += r.Excused
	vs.Gaps = append(vs.Gaps, gaps...)
	for node, t := range r.ByNode {
		if vs.ByNode == nil {
			vs.ByNode = map[string]Tally{}
		}
		nt := vs.ByNode[node]
		nt.Merge(t)
		vs.ByNode[node] = nt
	}
	vs.ByHop = addCounts(vs.ByHop, r.ByHop)
	if r.Rig != nil && r.Rig.Saturated {
		vs.SaturatedRollouts++
	}
	if r.Window.Failures > 0 {
		vs.RolloutsWithDrops++
	}
	if r.Excused > 0 {
		vs.Suspect = append(vs.Suspect, fmt.Sprintf("rollout %d: %d of its timeouts were in flight while the rig stalled (%s): they are excused: counted among the drops, but the stalled rig, not the variant, may have caused them (the measurable tally leaves them out)", r.N, r.Excused, r.ExcusedWhy))
	}
	if expected != "" && r.MeasuredVariant != "custom" && r.MeasuredVariant != expected {
		vs.Suspect = append(vs.Suspect, fmt.Sprintf("rollout %d deleted pods of variant %s, not %s (live template: %s)", r.N, r.MeasuredVariant, expected, r.LiveTemplate))
	}
	if !r.BaselineClean {
		vs.Suspect = append(vs.Suspect, fmt.Sprintf("no clean baseline after rollout %d: failures kept coming after its window closed", r.N))
	}
	if r.Incomplete != "" {
		vs.Suspect = append(vs.Suspect, fmt.Sprintf("rollout %d is incomplete: %s; its drops may be more than counted", r.N, r.Incomplete))
	}
}

// suspectExplained makes the row suspect for each rollout with drops
// the front answered 2xx (HopFrontAnswered: its access log; when, against
// the client's failure, is WhyFrontLate or WhyFrontLost) and for each
// with drops the proxy failed itself (WhyProxyOwn): known only once the
// rollouts' drops are explained.
func (vs *VariantSummary) suspectExplained() {
	for _, r := range vs.Rollouts {
		if n := r.ByHop[HopFrontAnswered]; n > 0 {
			vs.Suspect = append(vs.Suspect, fmt.Sprintf("rollout %d: the front answered %d of its drops 2xx (its access log): the pods did not refuse them; %s (a starved rig or front)", r.N, n, frontAnsweredSplit(n, r.Explained)))
		}
	}
	for _, r := range vs.Rollouts {
		if e := r.Explained; e != nil && e.Why[WhyProxyOwn] > 0 {
			vs.Suspect = append(vs.Suspect, fmt.Sprintf("rollout %d: the proxy failed %d of its drops itself (502s sent after its node stopped routing to the deleted pods, with no unanswered dial there): no shutdown refused them (a starved proxy pod or node)", r.N, e.Why[WhyProxyOwn]))
		}
	}
}

// remove takes n requests of class c out of t (they were excused).
func (t *Tally) remove(c traffic.Class, n uint64) {
	if n == 0 {
		return
	}
	n = min(n, t.Classes[c])
	t.Classes[c] -= n
	t.Requests -= n
	if c.Failed() {
		t.Failures -= n
	}
}

// rolloutKubeProxy sets, from the kube-proxy syncs inside window w, the
// highest programming latency any node reported.
func (in *input) rolloutKubeProxy(rs *RolloutSummary, w Window) {
	for _, e := range in.events {
		if e.Time.Before(w.Start) || !e.Time.Before(w.End) {
			continue
		}
		if l, ok := programmingLatency(e); ok {
			rs.ProgrammingLatency = max(rs.ProgrammingLatency, l)
		}
	}
}

// gaps measures, per rollout number, the pods it deleted (a deletion
// requested between its start and the next rollout's), and sets each
// rollout's slowest node.
func (in *input) gaps(p *plan, rollouts []RolloutSummary) map[int][]Gap {
	out := map[int][]Gap{}
	for k := range rollouts {
		rs := &rollouts[k]
		next := p.attackEnd
		if k+1 < len(rollouts) {
			next = rollouts[k+1].Start
		}
		for _, d := range in.deletions {
			if d.t.Before(rs.Start) || !d.t.Before(next) {
				continue
			}
			g := gapOf(in.events, d)
			out[rs.N] = append(out[rs.N], g)
			nodes := make([]string, 0, len(g.KubeProxySynced))
			for n := range g.KubeProxySynced {
				nodes = append(nodes, n)
			}
			slices.Sort(nodes)
			for _, n := range nodes {
				if s := g.KubeProxySynced[n]; s > rs.SlowestSync {
					rs.SlowestNode, rs.SlowestSync = n, s
				}
			}
		}
	}
	return out
}

// hookFailures lists Warning events about failed preStop hooks during the
// variant's traffic.
func hookFailures(events []timeline.Event, p *plan) []string {
	var out []string
	for _, e := range events {
		if e.Time.Before(p.attackStart) || e.Time.After(p.attackEnd) {
			continue
		}
		if e.Kind == timeline.KindPodEvent && e.Detail["reason"] == "FailedPreStopHook" {
			out = append(out, fmt.Sprintf("%s %s: %s", e.Time.Format("15:04:05.000"), e.Pod, e.Detail["message"]))
		}
	}
	return out
}

// serverView sets what the pods say they answered while the variant's
// traffic ran beside what the client got; nil for runs without the pods'
// counters.
func (in *input) serverView(p *plan, tl *Timeline) *ServerView {
	if p.appScraped.IsZero() || len(in.app) == 0 {
		return nil
	}
	// The last scrape can be stamped a hair after the mark written when it
	// returned; a second's margin takes it in (the next variant's pods
	// answer nothing that early).
	to := p.appScraped.Add(time.Second)
	t := appmetrics.Totals(in.app, p.attackStart, to)
	v := &ServerView{PodsAnswered: t.Answered, PodsAnswered2xx: t.Answered2xx, Uncertain: t.Uncertain, ScrapeErrors: t.ScrapeErrors}
	if c := in.custom(); c != nil && c.Metrics != nil {
		v.Counter = CounterOf(c.Metrics).String()
		v.Scrapes, v.CounterMissing, v.ScrapeError = t.Scrapes, t.NoCounter, t.LastError
	}
	v.Unread = t.ScrapeErrors
	for _, pod := range t.Pods {
		v.Unread -= pod.ScrapeErrors // read at least once: its last reading holds all
		if pod.Answered == 0 {
			continue // another variant's pod, idle over this range
		}
		v.Pods++
		switch {
		case pod.Final:
			v.PodsFinal++
		case pod.Last.Before(p.attackEnd):
			// Last read before the traffic stopped, and gone by the
			// final scrape: what it answered after that read is missed.
			v.LowerBound++
		}
	}
	for _, r := range in.app {
		// A sealed count is exact whatever was in flight (it was cut).
		if r.Source == appmetrics.SourceTermination && !r.Sealed && !r.Time.Before(p.attackStart) && !r.Time.After(to) {
			v.InFlightAtExit += max(r.InFlight, r.OpenConns)
		}
	}
	for _, tally := range append(append([]Tally(nil), tl.Tallies...), tl.Outside) {
		v.ClientSent += tally.Requests
		v.ClientGot2xx += tally.Classes[traffic.Class2xx]
	}
	if a := uint64(max(v.PodsAnswered2xx, 0)); a > v.ClientGot2xx {
		v.Lost = a - v.ClientGot2xx
	}
	return v
}

// CounterOf is the request counter app.custom.metrics names, as the pods'
// metrics collector reads it.
func CounterOf(m *scenario.CustomMetrics) appmetrics.Counter {
	return appmetrics.Counter{Name: m.Counter, CodeLabel: m.CodeLabel, Match: m.Match}
}

// NoCustomMetrics is why a custom app without app.custom.metrics has no
// pods' view.
const NoCustomMetrics = "no pods' view: the app exports none droprun was told to read (app.custom.metrics)"

// custom is the scenario's custom app, nil for bookshop.
func (in *input) custom() *scenario.CustomApp {
	if in.sc == nil {
		return nil
	}
	return in.sc.App.Custom
}

// frontAnsweredSplit says when the front's answers to n of a rollout's
// drops ended against the client's failures (WhyFrontLate, WhyFrontLost,
// WhyFrontAnswered); those not explained were excused (sent while the
// rig stalled).
func frontAnsweredSplit(n uint64, e *Explained) string {
	var late, lost, close uint64
	if e != nil {
		late, lost, close = e.Why[WhyFrontLate], e.Why[WhyFrontLost], e.Why[WhyFrontAnswered]
	}
	var parts []string
	if late > 0 {
		parts = append(parts, fmt.Sprintf("%d ended after the client's request had failed (the front read or answered them late)", late))
	}
	if lost > 0 {
		parts = append(parts, fmt.Sprintf("%d ended before it (lost on the way back)", lost))
	}
	if close > 0 {
		parts = append(parts, fmt.Sprintf("%d too close to the failure, or on a clock not droprun's, to tell which", close))
	}
	if rest := n - min(n, late+lost+close); rest > 0 {
		parts = append(parts, fmt.Sprintf("%d excused (sent while the rig stalled)", rest))
	}
	return strings.Join(parts, ", ")
}
