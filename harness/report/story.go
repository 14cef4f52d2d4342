package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/stats"
	"github.com/droprun/droprun/harness/traffic"
)

// ExplainedText says how a rollout's (or a row's) drops split between the
// (pod, node) race windows that explain them and the rest, e.g. "212 of
// 230 drops explained by a (pod, node) race window (92.2%) against 80.1%
// by chance with the routing nodes shuffled among them and 9.6% with their
// send times shifted 0.5–5 s; 18 unexplained: outside every (pod, node)
// race window 18". "" when the run has no route data.
func ExplainedText(e *analysis.Explained) string {
	if e == nil {
		return ""
	}
	total := e.Explained + e.Conntrack + e.Backoff + e.Cut + e.Slow + e.Unexplained
	if total == 0 {
		return "no drops to explain"
	}
	s := fmt.Sprintf("%d of %d drops explained by a (pod, node) race window (%.1f%%)", e.Explained, total, 100*float64(e.Explained)/float64(total))
	if c := e.Chance; c != nil && c.Tried > 0 {
		s += fmt.Sprintf(" against %.1f%% by chance with the routing nodes shuffled among them and %.1f%% with their send times shifted 0.5–5 s",
			100*c.NodesShuffled/float64(total), 100*c.TimesShifted/float64(total))
		if c.Bursts > 0 {
			s += fmt.Sprintf(" (by burst, the unit: %d of %d bursts in a race window, permutation %s with the send times shifted, %s with the nodes shuffled)",
				c.BurstsExplained, c.Bursts, stats.FormatP(c.PShifted), stats.FormatP(c.PShuffled))
		}
	}
	if e.Cut > 0 {
		s += fmt.Sprintf(", %d cut by the close (%.1f%%: resets and EOFs of requests in flight when the pod's listener closed)", e.Cut, 100*float64(e.Cut)/float64(total))
	}
	if e.Slow > 0 {
		s += fmt.Sprintf(", %d because the pod was slow (%.1f%%: timeouts on a new connection the pod had accepted: it was listening, so not routed to after its listener closed)",
			e.Slow, 100*float64(e.Slow)/float64(total))
	}
	if e.Conntrack > 0 {
		s += fmt.Sprintf(", %d by stale conntrack entries on the node that routed them (%.1f%%: sent after it stopped routing to the deleted pods, on a node whose flush after the rollout cleared stale entries)",
			e.Conntrack, 100*float64(e.Conntrack)/float64(total))
	}
	if e.Backoff > 0 {
		s += fmt.Sprintf(", %d by the client's reconnect backoff after a race (%.1f%%: calls failed while their channel waited to reconnect, its recorded states show, after an attempt that overlapped a race window",
			e.Backoff, 100*float64(e.Backoff)/float64(total))
		if c := e.Chance; c != nil && c.Tried > 0 {
			s += fmt.Sprintf("; %.1f by chance with the channels' attempts shifted", c.BackoffShifted)
		}
		s += ")"
	}
	if len(e.FrontErrors) > 0 {
		n := uint64(0)
		for _, k := range e.FrontErrors {
			n += k
		}
		s += fmt.Sprintf("; the front logged why it failed %d of them: %s", n, frontErrorsText(e.FrontErrors))
	}
	if e.Unexplained == 0 {
		return s
	}
	whys := make([]string, 0, len(e.Why))
	for why := range e.Why {
		whys = append(whys, why)
	}
	slices.Sort(whys)
	var parts []string
	for _, why := range whys {
		parts = append(parts, fmt.Sprintf("%s %d", why, e.Why[why]))
	}
	return s + fmt.Sprintf("; %d unexplained: %s", e.Unexplained, strings.Join(parts, ", "))
}

// pairsOf returns the pairs of rollout n, by pod in deletion order (then
// name), then by node.
func pairsOf(v analysis.VariantSummary, n int) []analysis.RouteGap {
	var out []analysis.RouteGap
	for _, g := range v.Routes {
		if g.Rollout == n {
			out = append(out, g)
		}
	}
	slices.SortStableFunc(out, func(a, b analysis.RouteGap) int {
		if c := a.Deleted.Compare(b.Deleted); c != 0 {
			return c
		}
		if c := strings.Compare(a.Pod, b.Pod); c != 0 { // deletions seen in one batch share a stamp
			return c
		}
		return strings.Compare(a.Node, b.Node)
	})
	return out
}

// Story tells rollout n of v as a timeline, one line per pod it
// deleted, from the data: when the pod was asked to go, when its app
// got SIGTERM and closed its listener, when each node stopped routing to
// it, and what the client saw in the gap. Nil without route data.
func Story(v analysis.VariantSummary, n int) []string {
	pairs := pairsOf(v, n)
	var lines []string
	for i := 0; i < len(pairs); {
		j := i
		for j < len(pairs) && pairs[j].Pod == pairs[i].Pod {
			j++
		}
		lines = append(lines, podStory(pairs[i:j]))
		i = j
	}
	return lines
}

// closeText says when the pod's app got SIGTERM and closed its listener,
// or how the close was seen, or that it was not.
func closeText(p analysis.RouteGap) string {
	switch {
	case p.AppTimes && p.SIGTERM >= 0:
		return fmt.Sprintf(" Its app got SIGTERM %s later and closed its listener %s after that.", ms(p.SIGTERM), ms(p.ListenerClosed-p.SIGTERM))
	case p.AppTimes:
		// The kubelet was quicker than droprun's watch.
		return fmt.Sprintf(" Its app got SIGTERM %s before droprun's watch saw the deletion and closed its listener %s after that.", ms(-p.SIGTERM), ms(p.ListenerClosed-p.SIGTERM))
	case p.CloseSource == analysis.CloseFromProbe && p.CloseResolution > 0:
		return fmt.Sprintf(" Its app recorded no SIGTERM or listener close; droprun's prober saw the listener close %s after the deletion (to within %s).", ms(p.ListenerClosed), ms(p.CloseResolution))
	case p.CloseSource == analysis.CloseFromProbe:
		return fmt.Sprintf(" Its app recorded no SIGTERM or listener close; droprun's prober found the listener closed at its first connect, %s after the deletion.", ms(p.ListenerClosed))
	}
	return " Its app did not record its SIGTERM or listener close, and no prober saw it."
}

// splitFront splits a pod's pairs into the front pods' (when there are
// any: they chose its requests' pod) and the nodes'; without a front, all
// pairs are the first and there are no others.
func splitFront(pairs []analysis.RouteGap) (first, nodes []analysis.RouteGap) {
	if !slices.ContainsFunc(pairs, func(g analysis.RouteGap) bool { return g.Source == analysis.RouteSourceFront }) {
		return pairs, nil
	}
	for _, g := range pairs {
		if g.Source == analysis.RouteSourceFront {
			first = append(first, g)
		} else {
			nodes = append(nodes, g)
		}
	}
	return first, nodes
}

// podStory is one deleted pod's line of Story; pairs are its nodes (and,
// through a front, its front pods).
func podStory(pairs []analysis.RouteGap) string {
	p := pairs[0]
	var b strings.Builder
	fmt.Fprintf(&b, "%s", p.Pod)
	if p.IP != "" {
		fmt.Fprintf(&b, " (%s)", p.IP)
	}
	fmt.Fprintf(&b, ": deletion requested at %s.", p.Deleted.Format("15:04:05.000"))
	b.WriteString(closeText(p))
	// Through a front, its pods chose; the nodes' rules are told apart.
	pairs, nodes := splitFront(pairs)
	var open, safe []analysis.RouteGap
	var drops uint64
	classes := map[traffic.Class]uint64{}
	for _, g := range pairs {
		if g.Unrouted < 0 {
			continue
		}
		if g.Known() && g.Window > 0 {
			open = append(open, g)
		} else if g.Known() {
			safe = append(safe, g)
		}
		for c, k := range g.Drops {
			drops += k
			classes[c] += k
		}
	}
	source := "its rules"
	if p.Source == analysis.RouteSourceKubeProxy {
		source = "its kube-proxy synced (poll resolution)"
	}
	every := "node"
	if pairs[0].Source == analysis.RouteSourceFront {
		every = "front pod"
		fmt.Fprintf(&b, " Front pods stopped sending to it (their own list of the pods they send to): %s.", stopsText(pairs))
		if len(nodes) > 0 {
			fmt.Fprintf(&b, " The nodes' rules, which the web Service's other clients take, stopped routing to it: %s.", stopsText(nodes))
		}
	} else {
		fmt.Fprintf(&b, " Nodes stopped routing to it (%s): %s.", source, stopsText(pairs))
	}
	switch {
	case len(open) > 0:
		slices.SortFunc(open, func(a, b analysis.RouteGap) int { return cmp.Compare(b.Window, a.Window) })
		var gaps []string
		for _, g := range open {
			gaps = append(gaps, fmt.Sprintf("%s for %s", g.Node, ms(g.Window)))
		}
		fmt.Fprintf(&b, " After its listener closed, %s still sent it new connections", strings.Join(gaps, ", "))
		if drops > 0 {
			fmt.Fprintf(&b, "; the client saw %d failures in that gap (%s).", drops, classList(classes))
		} else {
			b.WriteString("; the client saw no failure in that gap.")
		}
	case len(safe) == len(pairs) && len(safe) > 0:
		margin := safe[0].Window
		for _, g := range safe {
			margin = max(margin, g.Window)
		}
		fmt.Fprintf(&b, " Every %s had stopped before its listener closed: a margin of at least %s.", every, ms(-margin))
	}
	return b.String()
}

// stopsText lists when each pair's chooser stopped: "n1 after 212 ms, n2
// never seen".
func stopsText(pairs []analysis.RouteGap) string {
	var stops []string
	for _, g := range pairs {
		if g.Unrouted < 0 {
			stops = append(stops, g.Node+" never seen")
			continue
		}
		stops = append(stops, fmt.Sprintf("%s after %s", g.Node, ms(g.Unrouted)))
	}
	return strings.Join(stops, ", ")
}

// ms formats seconds as milliseconds, or seconds from 10 s.
func ms(s float64) string {
	if s >= 10 || s <= -10 {
		return fmt.Sprintf("%.1f s", s)
	}
	return fmt.Sprintf("%.0f ms", s*1000)
}

// frontErrorsText lists a front's logged errors by class, the most first:
// "40 connection refused (the front's connection to the pod was refused:
// nothing listened), 3 closed before a response (…)".
func frontErrorsText(errs map[traffic.Class]uint64) string {
	classes := slices.Collect(maps.Keys(errs))
	slices.SortFunc(classes, func(a, b traffic.Class) int {
		if x := cmp.Compare(errs[b], errs[a]); x != 0 {
			return x
		}
		return strings.Compare(string(a), string(b))
	})
	parts := make([]string, len(classes))
	for i, c := range classes {
		parts[i] = fmt.Sprintf("%d %s", errs[c], traffic.Info(c).Label)
		switch {
		case c == traffic.ClassRefused:
			parts[i] += " (the front's connection to the pod was refused: nothing listened)"
		case analysis.CutClass(c):
			parts[i] += " (a connection the pod had accepted, closed under the request)"
		}
	}
	return strings.Join(parts, ", ")
}
