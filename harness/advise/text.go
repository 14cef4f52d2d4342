package advise

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/stats"
)

// maxMissingListed is how many missing pairs the text lists by name.
const maxMissingListed = 10

// WriteText writes the advice as a report for people: what was measured
// and the bound, per hop, the recommendation, the grace period, how to
// tighten the bound and the sweep check.
func (a *Advice) WriteText(w io.Writer) error {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	for _, h := range a.hopsOrSelf() {
		h.writeMeasured(p, a.Runs, len(a.Hops) > 0)
		p("")
		h.writeBound(p, a.Quantile)
		p("")
	}
	a.writePath(p)
	a.writeRecommendation(p)
	p("")
	a.writeTighten(p)
	a.writeSweeps(p)
	a.writeNotes(p)
	_, err := w.Write(b.Bytes())
	return err
}

// linef writes one line of the text report (WriteText's p).
type linef func(format string, args ...any)

// writeMeasured says what was measured in the hop: the pairs, by which
// source, their distributions and the pairs missing. named puts the hop's
// name first, when the advice has more than one.
func (h *Hop) writeMeasured(p linef, runs []string, named bool) {
	head := "Measured"
	if named {
		head = fmt.Sprintf("Measured, hop %s", h.Name)
	}
	what := "when each node stopped routing new connections to a pod being deleted"
	if h.Front() {
		what = fmt.Sprintf("when each %s stopped sending new requests to a pod being deleted (the pods it sends to, from its own API or log)", h.chooser())
	}
	p("%s: %s, in seconds after the deletion request (or the kubelet's start of the preStop hook, where that came first).", head, what)
	p("  %d (pod, %s) pairs from %d rollouts (%s pairs per rollout) in %s", h.Pairs, h.chooser(), h.Rollouts, stats.FormatSig(h.PairsPerRollout, 3), strings.Join(runs, ", "))
	// The known sources first, in this order, then any other by name.
	known := []string{analysis.RouteSourceDataPlane, analysis.RouteSourceKubeProxy, analysis.RouteSourceFront}
	for _, src := range known {
		if n := h.Sources[src]; n > 0 {
			p("  %d seen %s", n, sourceText(src))
		}
	}
	for _, src := range slices.Sorted(maps.Keys(h.Sources)) {
		if !slices.Contains(known, src) {
			p("  %d seen by %q", h.Sources[src], src)
		}
	}
	if r := h.Resolution; r != nil {
		p("  each of %d stops was placed to within %s (median), %s (p90), %s (max) by the front's readings and its access log (its last send to the pod; through Traefik, its picks of the others): each delay is the late end of its bracket",
			r.N, short(r.Median), short(r.P90), short(r.Max))
		if n := h.WidestRequests; n != nil {
			p("  the front pod started %d request(s) inside the widest bracket (%s), those it might have sent to the pod: few means the front paused, and no reading places a stop inside a pause", *n, short(r.Max))
		}
	}
	h.writeDists(p)
	h.writeMissing(p)
}

// writeDists writes the distributions, of all pairs, by kube-proxy mode,
// by node (or front pod) and of the latest one per deletion, in one
// column of labels as wide as the longest (a node's name).
func (h *Hop) writeDists(p linef) {
	type line struct {
		label string
		d     Dist
	}
	lines := []line{{"all pairs", h.All}}
	for _, g := range h.ByMode {
		name := "kube-proxy " + g.Name
		if g.Name == modeNotRecorded {
			name = "kube-proxy mode not recorded"
		}
		lines = append(lines, line{name, g.Dist})
	}
	for _, g := range h.ByNode {
		lines = append(lines, line{h.chooser() + " " + g.Name, g.Dist})
	}
	latest := fmt.Sprintf("latest %s per deletion", h.chooser())
	width := max(len(latest), len("worst pod per rollout"))
	for _, l := range lines {
		width = max(width, len(l.label))
	}
	for _, l := range lines {
		p("  %-*s  %s", width, l.label, distText(l.d))
	}
	p("  %-*s  %s", width, latest, distText(h.Latest))
	p("  %-*s  %s", width, "worst pod per rollout", distText(h.Worst))
}

// writeMissing lists the pairs whose stop was not seen, the first
// maxMissingListed by name.
func (h *Hop) writeMissing(p linef) {
	n := len(h.Missing)
	if n == 0 {
		return
	}
	stop := "stop of routing"
	if h.Front() {
		stop = "stop of sending"
	}
	p("  missing: %d pairs whose %s's %s was not seen; a missing pair could be the slowest, and the bound excludes their %d deletions:", n, h.chooser(), stop, h.Incomplete)
	for i, m := range h.Missing {
		if i == maxMissingListed {
			p("    … and %d more (--json lists them all)", n-i)
			break
		}
		p("    %s: %s rollout %d, pod %s on %s %s", m.Run, m.Row, m.Rollout, m.Pod, h.chooser(), m.Node)
	}
}

// writeBound states the bound on the latest node's delay, or, with too
// few deletions for the quantile asked (asked), the one they support.
func (h *Hop) writeBound(p linef, asked float64) {
	bd := h.Bound
	conf := pct(bd.Confidence)
	every := "every node stops routing"
	if h.Front() {
		every = fmt.Sprintf("every %s stops sending", h.chooser())
	}
	p("Bound, per rollout, on the delay by which every %s had stopped for every pod it deleted (the worst of each of %d rollouts; rollouts are the unit, since a rollout's deletions share its moment):", h.chooser(), h.CleanRollouts)
	if h.IncompleteRollouts > 0 {
		p("  (%d rollout(s) left out: a pair of theirs was not seen)", h.IncompleteRollouts)
	}
	if bd.Supported {
		p("  with %s confidence, in %s of rollouts %s for every deleted pod within %s of its deletion: with that delay, that share of rollouts leaves no pod routed to after it stops", conf, pct(bd.Quantile), every, secs(bd.Seconds))
		p("  (the %s smallest of %d rollouts' worst delays: a distribution-free order-statistic bound on the %s)", ordinal(bd.Rank), h.CleanRollouts, percentile(bd.Quantile))
	} else {
		p("  too few rollouts for the %s at %s confidence: %d rollouts bound only the %s, by their worst delay: %s (with that delay, at %s, at least %s of rollouts leave no pod routed to after it stops)",
			percentile(asked), conf, h.CleanRollouts, percentile(bd.Quantile), secs(bd.Seconds), conf, pct(bd.Quantile))
	}
}

// writePath names the hop whose bound sets the recommendation, when
// there is more than one.
func (a *Advice) writePath(p linef) {
	if len(a.Hops) == 0 {
		return
	}
	var others []string
	for _, h := range a.Hops {
		if h.Name != a.Name {
			others = append(others, fmt.Sprintf("%s's %s", h.Name, secs(h.Bound.Seconds)))
		}
	}
	p("The path: hop %s sets the bound, %s, the largest (beside %s): a pod must outlast every list that still names it.", a.Name, secs(a.Bound.Seconds), strings.Join(others, ", "))
	p("")
}

// writeRecommendation gives the preStop sleep (or drain delay) and the
// grace period, then the margins the recommendation does not count on.
func (a *Advice) writeRecommendation(p linef) {
	r := a.Recommendation
	if len(a.Hops) > 0 {
		p("Recommendation (D = %s, hop %s's bound):", secs(a.Bound.Seconds), a.Name)
	} else {
		p("Recommendation (D = %s):", secs(a.Bound.Seconds))
	}
	p("  preStop.sleep.seconds: %d", r.PreStopSleepSeconds)
	p("    lifecycle: {preStop: {sleep: {seconds: %d}}} (Kubernetes 1.30+; before, exec [sleep, \"%d\"]); ⌈D⌉, as the native sleep takes whole seconds", r.PreStopSleepSeconds, r.PreStopSleepSeconds)
	p("  or, for an app that delays its own listener close after SIGTERM: a drain delay of %ss (D rounded up to 100 ms)", stats.FormatSig(r.DrainDelaySeconds, 3))
	p("  terminationGracePeriodSeconds: at least %d", r.GracePeriodSeconds)
	p("    %s", r.GraceBasis)
	p("  margins the recommendation does not count on (per deleted pod):")
	if m := a.Margins.DeletionToSIGTERM; m.N > 0 {
		p("    deletion → SIGTERM: median %s, max %s (%d pods; includes the measured pods' own preStop)", short(m.Median), short(m.Max), m.N)
	} else {
		p("    deletion → SIGTERM: not reported by the app (bookshop reports it in its termination message)")
	}
	if m := a.Margins.SIGTERMToListenerClosed; m.N > 0 {
		p("    SIGTERM → listener closed (app): median %s, max %s (%d pods)", short(m.Median), short(m.Max), m.N)
	} else {
		p("    SIGTERM → listener closed: not reported by the app")
	}
	if m := a.Margins.SIGTERMToExit; m.N > 0 {
		p("  the app's longest SIGTERM → exit (the grace period's other part): %s (%d pods)", wholeSeconds(m.Max), m.N)
	}
}

// writeTighten says how many more deletions reach the quantile asked, or
// tighten the bound; nothing when no number of them would.
func (a *Advice) writeTighten(p linef) {
	t := a.Tighten
	switch {
	case t.Rollouts == math.MaxInt || t.Rollouts < 0:
	case !a.Bound.Supported:
		p("To reach the %s: %d rollouts, %d more: %s.", percentile(a.Quantile), t.Rollouts, t.MoreRollouts, t.Why)
	default:
		p("To tighten: %d more rollouts: %s.", t.MoreRollouts, t.Why)
	}
}

// writeSweeps gives each sweep's values, clean or not, and its verdict.
func (a *Advice) writeSweeps(p linef) {
	if len(a.Sweeps) == 0 {
		return
	}
	p("")
	p("Sweep check (clean: a swept value's measurable failures in its rollout windows are at most what its control windows' failure rate predicts, the rig's floor):")
	for _, s := range a.Sweeps {
		var vals []string
		for _, v := range s.Values {
			mark := "clean"
			if !v.Clean {
				mark = fmt.Sprintf("%d dropped", v.Failures)
			}
			vals = append(vals, fmt.Sprintf("%s: %s", v.Value, mark))
		}
		p("  %s (%s, %s): %s", s.Group, s.Field, strings.Join(s.Runs, ", "), strings.Join(vals, "; "))
		if s.Verdict == Disagrees {
			p("  !! DISAGREES: %s", s.Message)
		} else {
			p("  %s: %s", strings.ToUpper(s.Verdict), s.Message)
		}
	}
}

// writeNotes lists the advice's notes.
func (a *Advice) writeNotes(p linef) {
	if len(a.Notes) == 0 {
		return
	}
	p("")
	p("Notes:")
	for _, n := range a.Notes {
		p("  - %s", n)
	}
}

// sourceText says how a source saw a node's stop of routing.
func sourceText(src string) string {
	switch src {
	case analysis.RouteSourceDataPlane:
		return "in the node's own rules (data plane, millisecond resolution)"
	case analysis.RouteSourceKubeProxy:
		return "as kube-proxy's first sync after the endpoint change (polled: the poll interval's resolution)"
	case analysis.RouteSourceFront:
		return "in the front pod's own list of the pods it sends to (its API or its log: front.removed events)"
	}
	return src
}

func distText(d Dist) string {
	return fmt.Sprintf("n=%-5d median %-8s p90 %-8s max %s", d.N, short(d.Median), short(d.P90), short(d.Max))
}

// short prints a delay of the distribution: "349 ms", "1.23 s".
func short(s float64) string {
	if ms := math.Round(s * 1000); ms < 1000 {
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.2f s", s)
}

// secs prints a bound to the millisecond: "1.213 s".
func secs(s float64) string { return fmt.Sprintf("%.3f s", s) }

// pct prints a level as a percentage: 0.95 → "95%", 0.9281 → "92.8%".
func pct(x float64) string { return stats.FormatSig(math.Floor(x*1000*(1+1e-12))/10, 3) + "%" }

// WriteJSON writes the advice as indented JSON, for machines.
func (a *Advice) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(a)
}
