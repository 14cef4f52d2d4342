package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/stats"
	"github.com/droprun/droprun/harness/traffic"
)

// Row is one variant row with its statistics.
type Row struct {
	Variant           string `json:"variant"`
	Rollouts          int    `json:"rollouts"`
	RolloutsWithDrops int    `json:"rolloutsWithDrops"`
	// SaturatedRollouts ran on a machine short of CPU at some point (see
	// analysis.RigSummary). Excused are the window timeouts in flight while
	// the rig stalled (the client, or a node without CPU); MeasurableDrops
	// and MeasurableRequests tally the windows without them.
	SaturatedRollouts  int     `json:"saturatedRollouts"`
	Excused            uint64  `json:"excused"`
	MeasurableDrops    uint64  `json:"measurableDrops"`
	MeasurableRequests uint64  `json:"measurableRequests"`
	WindowRequests     uint64  `json:"windowRequests"`
	Drops              uint64  `json:"drops"`
	DropRate           float64 `json:"dropRate"`
	// DropRateLo and DropRateHi are the 95% interval of DropRate over
	// rollouts (analysis.MethodOverRollouts); PerRequest says no rollout
	// of the run measured the bursts, so it is per request.
	DropRateLo float64 `json:"dropRateLo"`
	DropRateHi float64 `json:"dropRateHi"`
	// DropRateWideLo and DropRateWideHi are the wider interval for the
	// burst shapes the 95% one does not cover (analysis.RowIntervals.Wide);
	// 0 without drops.
	DropRateWideLo float64 `json:"dropRateWideLo,omitempty"`
	DropRateWideHi float64 `json:"dropRateWideHi,omitempty"`
	PerRequest     bool    `json:"perRequest,omitempty"`
	// DropsPerRollout with its 95% interval over rollouts.
	DropsPerRollout   float64 `json:"dropsPerRollout"`
	DropsPerRolloutHi float64 `json:"dropsPerRolloutHi"`
	// MaxRolloutDrops is the most any single rollout dropped.
	MaxRolloutDrops uint64                   `json:"maxRolloutDrops"`
	ControlFailures uint64                   `json:"controlFailures"`
	ControlRequests uint64                   `json:"controlRequests"`
	ExpectedFloor   float64                  `json:"expectedFloor"`
	TailFailures    uint64                   `json:"tailFailures"`
	AchievedRate    float64                  `json:"achievedRate"`
	AskedRate       float64                  `json:"askedRate"`
	Classes         map[traffic.Class]uint64 `json:"classes"`
	// Bound is said instead of a bare zero: "0 in 18,800 requests: rate <
	// 1.6e-4 at 95%".
	Bound   string   `json:"bound,omitempty"`
	Suspect []string `json:"suspect,omitempty"`
}

// Rows computes the statistics of every row of sum.
func Rows(sum *analysis.Summary) []Row {
	rows := make([]Row, 0, len(sum.Variants))
	for _, v := range sum.Variants {
		r := Row{Variant: v.Variant, Rollouts: len(v.Rollouts), RolloutsWithDrops: v.RolloutsWithDrops,
			WindowRequests: v.WindowRequests, Drops: v.Drops, ControlFailures: v.Control.Failures, ControlRequests: v.Control.Requests,
			ExpectedFloor: v.ExpectedFloor, TailFailures: v.Tail.Failures, AchievedRate: v.Client.AchievedRate, AskedRate: v.Client.AskedRate,
			Classes: v.Classes, Suspect: v.Suspect,
			SaturatedRollouts: v.SaturatedRollouts, Excused: v.Excused, MeasurableDrops: v.Measurable.Failures, MeasurableRequests: v.Measurable.Requests}
		w, p := v.Intervals.DropRate, v.Intervals.PerRollout
		r.DropRate, r.DropRateLo, r.DropRateHi = finite(w.Point), finite(w.Lo), finite(w.Hi)
		r.PerRequest = !w.Empty && w.PerRequest()
		if wide := v.Intervals.Wide; wide != nil {
			r.DropRateWideLo, r.DropRateWideHi = finite(wide.Lo), finite(wide.Hi)
		}
		r.DropsPerRollout, r.DropsPerRolloutHi = finite(p.Point), finite(p.Hi)
		for _, ro := range v.Rollouts {
			r.MaxRolloutDrops = max(r.MaxRolloutDrops, ro.Window.Failures)
		}
		if zb := v.Intervals.ZeroBound; zb != nil {
			r.Bound = zeroBound(v.WindowRequests, zb)
		}
		rows = append(rows, r)
	}
	return rows
}

// zeroBound words a clean row's bound and what it rests on: a row that
// dropped nothing is bounded for any burst shape (its own rollouts cannot
// say how bursty a drop would be, and no other row's bursts are
// borrowed), with the per-request bound beside it, labelled.
func zeroBound(requests uint64, zb *analysis.RateInterval) string {
	if zb.Source == stats.AnyShape {
		perRequest := stats.UpperBoundZero(requests, zb.Confidence)
		return fmt.Sprintf("0 in %s requests: at most %s of rollouts drop at all at %s, whatever the shape of their bursts (per request, as if requests failed independently, rate < %s)",
			stats.FormatCount(requests), stats.FormatSigUp(zb.Hi*100, 2)+"%", stats.FormatPercent(zb.Confidence, 3), stats.FormatSigUp(perRequest, 2))
	}
	s := stats.FormatZeroBound(requests, zb.Hi, zb.Confidence)
	if zb.PerRequest() {
		return s + " per request (no rollout measured how bursty drops are)"
	}
	return s + " over rollouts"
}

// IntervalNote says, under a table, what its intervals are; with a row
// marked "*", that those are per request.
func IntervalNote(rows []Row) string {
	s := "drop rate: 95% interval over rollouts (drops come in bursts, one per rollout; docs/statistics.md). It covers 95 ± 2% of runs for drops as bursty as measured on kind, but 85-89% for heavy-tailed per-rollout rates or rare, very bursty drops: for those, the wider interval (dropRateWideLo-Hi in --format json, and in report.html) covers 92% or more"
	for _, r := range rows {
		if r.PerRequest {
			return s + "; * per request, as if requests failed independently: no rollout of this run measured how bursty its drops are"
		}
	}
	return s
}

func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

// Table writes the terminal table, the drop classes, the bounds of clean
// variants and every suspect flag.
func Table(w io.Writer, sum *analysis.Summary) error {
	rows := Rows(sum)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "VARIANT\tROLLOUTS\tWITH DROPS\tSATURATED\tWINDOW REQ\tDROPS\tDROP RATE (95% CI)\tCONTROL\tFLOOR\tTAIL\tRATE\t")
	for _, r := range rows {
		c := r.cells()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c.Variant, c.Rollouts, c.WithDrops, c.Saturated,
			c.WindowRequests, c.Drops, c.RateCI, c.Control, c.Floor, c.Tail, c.Rate)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, IntervalNote(rows))
	if err := SweepTables(w, sum); err != nil {
		return err
	}
	for _, r := range rows {
		if c := r.cells(); r.Drops > 0 || c.Outcome != "" {
			fmt.Fprintf(w, "%s: %s\n", r.Variant, c.Outcome)
		}
		if r.Excused > 0 {
			fmt.Fprintf(w, "%s: %d timeouts excused (in flight while the rig stalled, in %d of %d rollouts short of CPU); without them: %d drops in %d requests\n",
				r.Variant, r.Excused, r.SaturatedRollouts, r.Rollouts, r.MeasurableDrops, r.MeasurableRequests)
		}
	}
	for _, v := range sum.Variants {
		variantLines(w, v)
	}
	if sum.Unseen != "" {
		fmt.Fprintln(w, "note:", sum.Unseen)
	}
	for _, s := range sum.Warnings {
		fmt.Fprintln(w, "warning:", s)
	}
	for _, s := range sum.Suspect {
		fmt.Fprintln(w, "SUSPECT:", s)
	}
	if sum.Error != "" {
		fmt.Fprintln(w, "the run ended early:", sum.Error)
	}
	return nil
}

// variantLines writes what Table says of one row beyond its cells: masked
// and resent requests, the pods' view, each rollout's live pods, hops,
// race windows, slowest kube-proxy and balance.
func variantLines(w io.Writer, v analysis.VariantSummary) {
	if v.Masked > 0 {
		fmt.Fprintf(w, "%s: %s\n", v.Variant, MaskedText(v))
	}
	if v.FrontResent > 0 {
		fmt.Fprintf(w, "%s: %s\n", v.Variant, FrontResentText(v))
	}
	if v.Idle != nil {
		fmt.Fprintf(w, "%s: %s\n", v.Variant, IdleText(v.Idle))
	}
	if sv := v.Server; sv != nil {
		fmt.Fprintf(w, "%s: client sent %d, got %d 2xx; %s\n", v.Variant, sv.ClientSent, sv.ClientGot2xx, ServerText(sv))
	} else if v.NoServerView != "" {
		fmt.Fprintf(w, "%s: %s\n", v.Variant, v.NoServerView)
	}
	for _, ro := range v.Rollouts {
		if ro.LivePods != nil {
			fmt.Fprintf(w, "%s rollout %d: live pods: %s\n", v.Variant, ro.N, ro.LivePods)
		}
	}
	if len(v.ByNode) > 0 {
		fmt.Fprintf(w, "%s: by entry node: %s\n", v.Variant, NodesText(v.ByNode))
	}
	if len(v.Clocks) > 0 {
		fmt.Fprintf(w, "%s: %s\n", v.Variant, ClocksText(v.Clocks))
	}
	for _, ro := range v.Rollouts {
		if len(ro.ByHop) > 0 {
			fmt.Fprintf(w, "%s rollout %d: drops by the hop that failed them: %s\n", v.Variant, ro.N, HopsText(ro.ByHop))
		}
	}
	if t := ExplainedText(v.Explained); t != "" {
		fmt.Fprintf(w, "%s: %s\n", v.Variant, t)
	}
	for _, ro := range v.Rollouts {
		for _, g := range pairsOf(v, ro.N) {
			if len(g.Drops) > 0 {
				fmt.Fprintf(w, "%s rollout %d: %s\n", v.Variant, ro.N, g.RaceText())
			}
		}
		if ro.SlowestNode != "" {
			fmt.Fprintf(w, "%s rollout %d: slowest kube-proxy %s, synced %.2f s after the deletion request; programming latency up to %.2f s\n",
				v.Variant, ro.N, ro.SlowestNode, ro.SlowestSync, ro.ProgrammingLatency)
		}
		if ro.Balance != nil {
			fmt.Fprintf(w, "%s rollout %d: %s\n", v.Variant, ro.N, BalanceText(ro.Balance))
		}
	}
}

// BalanceText says how the pods' answers spread over the new pods in the
// span after a rollout completed, each as a fraction of an even share.
func BalanceText(b *analysis.Balance) string {
	parts := make([]string, len(b.Pods))
	for k, p := range b.Pods {
		parts[k] = fmt.Sprintf("%s %.2f", p.Pod, p.OfEven)
	}
	s := fmt.Sprintf("new pods' share of the %s requests they answered in the %.0f s after it completed, as a fraction of an even share: %s",
		stats.FormatCount(uint64(b.Answered)), b.Seconds, strings.Join(parts, ", "))
	if b.Undecided != "" {
		return s + " (undecided: " + b.Undecided + ")"
	}
	return s + fmt.Sprintf("; least %.2f", b.Least)
}

// IdleText names the client's and the app's idle timeouts for kept-alive
// connections, their order, and the idle-closed requests the variant saw.
func IdleText(o *analysis.IdleOrder) string {
	var s string
	switch {
	case o.Unknown != "":
		s = fmt.Sprintf("idle timeouts: the client closes a connection idle for %s; its order with the app's cannot be told: %s", o.Client, o.Unknown)
	case o.AppFirst:
		s = fmt.Sprintf("idle timeouts: the app closes a connection idle for %s, before the client's %s: a request the client sends as the app closes the connection fails (%s) or is retried behind its back. "+
			"Keep the app's idle timeout longer than the client's and than every proxy's in front of it", o.App, o.Client, traffic.ClassIdleClosed)
	case o.App == "0s":
		s = fmt.Sprintf("idle timeouts: the app keeps idle connections open and the client closes them after %s: the safe order (the side that sends closes first)", o.Client)
	default:
		s = fmt.Sprintf("idle timeouts: the client closes a connection idle for %s, before the app's %s: the safe order (the side that sends closes first)", o.Client, o.App)
	}
	if o.Failed+o.Masked == 0 {
		return s + fmt.Sprintf("; no request was %s", traffic.ClassIdleClosed)
	}
	return s + fmt.Sprintf("; %s failed as %s (%d in the control window, before any rollout) and %s retried after one and served (%d in the control window)",
		plural64(o.Failed, "request", "requests"), traffic.ClassIdleClosed, o.ControlFailed, plural64(o.Masked, "more was", "more were"), o.ControlMasked)
}

// MaskedText says how many drops connection reuse masked in v's rollout
// windows, by the class of failure net/http hid, and in how many rollouts.
func MaskedText(v analysis.VariantSummary) string {
	n := rolloutsWith(v, func(t analysis.Tally) uint64 { return t.Masked })
	return fmt.Sprintf("%d more masked by connection reuse in %d of %d rollouts (%s): net/http retried them on a new connection, so the client got a 2xx; without the retry they were drops",
		v.Masked, n, len(v.Rollouts), classList(v.MaskedClasses))
}

// rolloutsWith is how many of v's rollout windows count some of what
// count reads from their tally.
func rolloutsWith(v analysis.VariantSummary, count func(analysis.Tally) uint64) int {
	n := 0
	for _, ro := range v.Rollouts {
		if count(ro.Window) > 0 {
			n++
		}
	}
	return n
}

// FrontResentText says how many of v's rollout-window requests the front
// resent after the pod it picked did not answer (traffic.frontRetries),
// in how many rollouts, and how many of those the client was served: the
// front's retries hid them. They are not drops, and no gate counts them.
func FrontResentText(v analysis.VariantSummary) string {
	n := rolloutsWith(v, func(t analysis.Tally) uint64 { return t.FrontResent })
	return fmt.Sprintf("the front resent %s after the pod it picked did not take them, in %d of %d rollouts: %s served on a later try (masked by the front's retries: the client got a 2xx, without the retries they were drops), %s failed on every try",
		plural64(v.FrontResent, "request", "requests"), n, len(v.Rollouts), stats.FormatCount(v.FrontMasked), stats.FormatCount(v.FrontResent-v.FrontMasked))
}

// ServerView says what the pods counted, or plainly that there is no count
// to compare with.
func ServerText(sv *analysis.ServerView) string {
	if sv.Counter != "" {
		return CounterText(sv)
	}
	if sv.Pods == 0 {
		return "the pods' own counts are not known (the app exposes no counters droprun reads)"
	}
	s := fmt.Sprintf("the pods answered %d 2xx (%d pods, %d with exit totals)", sv.PodsAnswered2xx, sv.Pods, sv.PodsFinal)
	switch {
	case !sv.Exact():
		s += fmt.Sprintf("; not exact: %d pods uncertain, %d failed scrapes of pods never read, %d read last before the traffic stopped, %d requests in flight when pods exited unsealed", sv.Uncertain, sv.Unread, sv.LowerBound, sv.InFlightAtExit)
	case sv.Lost > 0:
		s += fmt.Sprintf("; %d answered by the pods, never received by the client", sv.Lost)
		if sv.Unhidden > 0 {
			s += fmt.Sprintf(" (%d with no failed request of the client's to hide behind: not drops, but requests a pod answered twice, as when a proxy re-sends one on a reused connection that closed)", sv.Unhidden)
		}
	case uint64(max(sv.PodsAnswered2xx, 0)) == sv.ClientGot2xx:
		s += ": exactly what the client received"
	}
	return s
}

// CounterText is ServerText for a custom app, counted by scraping the
// counter the scenario names: at best a lower bound, since a pod's last
// scrape before it exits misses what it answered after it.
func CounterText(sv *analysis.ServerView) string {
	if sv.Pods == 0 {
		return NoCountText(sv)
	}
	s := fmt.Sprintf("the pods counted %d 2xx by %s (%d pods, scraped every few seconds; no exit totals)", sv.PodsAnswered2xx, sv.Counter, sv.Pods)
	if sv.LowerBound > 0 {
		s += fmt.Sprintf("; a lower bound: %d of them exited after their last scrape, and what they answered after it is not counted", sv.LowerBound)
	}
	if sv.Uncertain > 0 || sv.ScrapeErrors > 0 {
		s += fmt.Sprintf("; %d pods uncertain, %d failed scrapes", sv.Uncertain, sv.ScrapeErrors)
	}
	if sv.Exact() && uint64(max(sv.PodsAnswered2xx, 0)) == sv.ClientGot2xx {
		s += ": exactly what the client received"
	}
	return s
}

// NoCountText says why a custom app's pods counted nothing by the counter
// named: never in their metrics (a wrong name), every scrape failed (a
// wrong codeLabel, say), or no series matched. Never a measured 0.
func NoCountText(sv *analysis.ServerView) string {
	switch {
	case sv.Scrapes > 0 && sv.CounterMissing == sv.Scrapes:
		return fmt.Sprintf("no pods' count: counter %s was never seen in any scrape (%d scrapes); check app.custom.metrics.counter against the app's metrics", sv.Counter, sv.Scrapes)
	case sv.Scrapes == 0 && sv.ScrapeErrors > 0:
		return fmt.Sprintf("no pods' count by %s: all %d scrapes failed, the last with: %s", sv.Counter, sv.ScrapeErrors, sv.ScrapeError)
	case sv.Scrapes == 0:
		return fmt.Sprintf("no pods' count by %s: the pods were never scraped while the traffic ran", sv.Counter)
	}
	s := fmt.Sprintf("no pods' count: no pod counted a request by %s in %d scrapes; check app.custom.metrics.match against the app's series", sv.Counter, sv.Scrapes)
	if sv.ScrapeErrors > 0 {
		s += fmt.Sprintf(" (%d failed scrapes, the last with: %s)", sv.ScrapeErrors, sv.ScrapeError)
	}
	return s
}

// NodesText lists requests and failures per entry node, in name order.
func NodesText(by map[string]analysis.Tally) string {
	names := make([]string, 0, len(by))
	for n := range by {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d failed of %d", n, by[n].Failures, by[n].Requests)
	}
	return strings.Join(parts, ", ")
}

// ClocksText says what the run knows of the generator nodes' clocks and
// what it did with it, e.g. "generator clocks: droprun-worker +0.2 ms ±
// 4.4 ms (2 estimates), ...; shared with droprun's (kind), not corrected".
func ClocksText(cs []analysis.NodeClock) string {
	parts := make([]string, len(cs))
	shared := len(cs) > 0
	for i, c := range cs {
		shared = shared && c.Shared
		if c.Estimates == 0 {
			parts[i] = c.Node + " never estimated: its drops are not placed in race windows"
			continue
		}
		parts[i] = fmt.Sprintf("%s %+.1f ms ± %.1f ms (%s)", c.Node, c.Offset*1000, c.Bound*1000, plural(c.Estimates, "estimate", "estimates"))
		switch {
		case c.Shared:
		case c.Corrected:
			parts[i] += ", corrected"
		default:
			parts[i] += ", 0 within its bound: not corrected"
		}
	}
	text := "generator clocks: " + strings.Join(parts, ", ")
	if shared {
		text += "; the nodes share droprun's clock (kind), so none is corrected"
	}
	return text
}

// HopsText lists drops by the hop that failed them, most first, e.g.
// "front pod traefik-7dc6-x 212, before the front (no failed line in its
// log) 3".
func HopsText(by map[string]uint64) string {
	hops := make([]string, 0, len(by))
	for h := range by {
		hops = append(hops, h)
	}
	sort.Slice(hops, func(i, j int) bool {
		if by[hops[i]] != by[hops[j]] {
			return by[hops[i]] > by[hops[j]]
		}
		return hops[i] < hops[j]
	})
	parts := make([]string, len(hops))
	for i, h := range hops {
		parts[i] = fmt.Sprintf("%s %d", h, by[h])
	}
	return strings.Join(parts, ", ")
}

// cells is a Row as the human-readable outputs print it. Table, Markdown
// and HTML all format their rows through it, so they never disagree.
type cells struct {
	Variant, Rollouts, WithDrops, WindowRequests, Drops string
	// Saturated is "saturated/rollouts" when any rollout ran short of CPU,
	// else "-".
	Saturated string
	// RateCI is the drop rate with its 95% interval, "-" without requests.
	RateCI string
	// Outcome is the failed classes with their counts, or for a row that
	// dropped nothing the bound its data supports.
	Outcome                    string
	Control, Floor, Tail, Rate string
}

func (r Row) cells() cells {
	u := func(x uint64) string { return strconv.FormatUint(x, 10) }
	sat := "-"
	if r.SaturatedRollouts > 0 {
		sat = fmt.Sprintf("%d/%d", r.SaturatedRollouts, r.Rollouts)
	}
	return cells{Variant: r.Variant, Rollouts: strconv.Itoa(r.Rollouts), WithDrops: strconv.Itoa(r.RolloutsWithDrops), Saturated: sat,
		WindowRequests: u(r.WindowRequests), Drops: u(r.Drops), RateCI: rateCI(r), Outcome: outcome(r),
		Control: fmt.Sprintf("%d/%d", r.ControlFailures, r.ControlRequests), Floor: fmt.Sprintf("%.1f", r.ExpectedFloor),
		Tail: u(r.TailFailures), Rate: fmt.Sprintf("%.0f/%.0f", r.AchievedRate, r.AskedRate)}
}

// outcome is what a row's drops were, or the bound of a row without any.
func outcome(r Row) string {
	if r.Drops == 0 {
		return r.Bound
	}
	return classList(r.Classes)
}

func rateCI(r Row) string {
	if r.WindowRequests == 0 {
		return "-"
	}
	mark := ""
	if r.PerRequest {
		mark = "*"
	}
	return fmt.Sprintf("%s (%s–%s)%s", stats.FormatSig(r.DropRate, 2), stats.FormatSig(r.DropRateLo, 2), stats.FormatSig(r.DropRateHi, 2), mark)
}

// classList lists the failed classes with counts, in the stable order.
func classList(m map[traffic.Class]uint64) string {
	var parts []string
	for _, c := range traffic.Classes() {
		if n := m[c]; c.Failed() && n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", c, n))
		}
	}
	return strings.Join(parts, " ")
}

// Markdown writes the table as GitHub-flavoured Markdown.
func Markdown(w io.Writer, sum *analysis.Summary) error {
	fmt.Fprintf(w, "| variant | rollouts | with drops | short of CPU | window requests | drops | drop rate (95%% CI) | failed classes | control | floor | tail | rate |\n")
	fmt.Fprintf(w, "|---|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|\n")
	rows := Rows(sum)
	for _, r := range rows {
		c := r.cells()
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.Variant, c.Rollouts, c.WithDrops, c.Saturated,
			c.WindowRequests, c.Drops, c.RateCI, c.Outcome, c.Control, c.Floor, c.Tail, c.Rate)
	}
	fmt.Fprintf(w, "\n%s\n", IntervalNote(rows))
	if sum.Unseen != "" {
		fmt.Fprintf(w, "\n- **note:** %s\n", sum.Unseen)
	}
	for _, v := range sum.Variants {
		if v.Idle != nil {
			fmt.Fprintf(w, "\n- **%s:** %s\n", v.Variant, IdleText(v.Idle))
		}
		if len(v.Clocks) > 0 {
			fmt.Fprintf(w, "\n- **%s:** %s\n", v.Variant, ClocksText(v.Clocks))
		}
	}
	for _, s := range sum.Suspect {
		fmt.Fprintf(w, "\n- **suspect:** %s", s)
	}
	if len(sum.Suspect) > 0 {
		fmt.Fprintln(w)
	}
	return nil
}

// CSVHeader is the stable column list of CSV; one column per outcome class
// follows the fixed ones, then the saturation columns (added later, so
// appended).
func CSVHeader() []string {
	h := []string{"variant", "rollouts", "rollouts_with_drops", "window_requests", "drops", "drop_rate", "drop_rate_lo95", "drop_rate_hi95",
		"drops_per_rollout", "max_rollout_drops", "control_failures", "control_requests", "expected_floor", "tail_failures", "achieved_rate", "asked_rate"}
	for _, c := range traffic.Classes() {
		h = append(h, string(c))
	}
	return append(h, "saturated_rollouts", "excused", "measurable_drops", "measurable_requests")
}

// CSV writes one line per row under CSVHeader.
func CSV(w io.Writer, sum *analysis.Summary) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader()); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	u := func(x uint64) string { return strconv.FormatUint(x, 10) }
	for _, r := range Rows(sum) {
		rec := []string{r.Variant, strconv.Itoa(r.Rollouts), strconv.Itoa(r.RolloutsWithDrops), u(r.WindowRequests), u(r.Drops),
			f(r.DropRate), f(r.DropRateLo), f(r.DropRateHi), f(r.DropsPerRollout), u(r.MaxRolloutDrops), u(r.ControlFailures), u(r.ControlRequests),
			f(r.ExpectedFloor), u(r.TailFailures), f(r.AchievedRate), f(r.AskedRate)}
		for _, c := range traffic.Classes() {
			rec = append(rec, u(r.Classes[c]))
		}
		rec = append(rec, strconv.Itoa(r.SaturatedRollouts), u(r.Excused), u(r.MeasurableDrops), u(r.MeasurableRequests))
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Document is the JSON output: the summary and the computed rows.
type Document struct {
	Summary *analysis.Summary `json:"summary"`
	Rows    []Row             `json:"rows"`
}

// JSON writes the Document, indented.
func JSON(w io.Writer, sum *analysis.Summary) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(Document{Summary: sum, Rows: Rows(sum)})
}

// Formats maps the --format names to their writers.
var Formats = map[string]func(io.Writer, *analysis.Summary) error{
	"table": Table, "markdown": Markdown, "csv": CSV, "json": JSON,
}

// SweepRow is one point of a sweep as the outputs print it.
type SweepRow struct {
	Value, Drops, RateCI, AtFloor string
	// Floor is true when the point is at the rig's floor.
	Floor bool
}

// SweepTable is one sweep, formatted: its title, a row per value in
// order, and the sentence that names its floor.
type SweepTable struct {
	Group, Field, Title string
	Rows                []SweepRow
	FloorText           string
}

// SweepTablesOf formats every sweep of sum (analysis.Sweeps). The rates
// are over the rollout windows' measurable requests (rig stalls
// excused); a point is at the floor when it dropped no more than the
// control window's failure rate predicts (analysis.SweepResult.AtFloor).
func SweepTablesOf(sum *analysis.Summary) []SweepTable {
	var out []SweepTable
	for _, sw := range analysis.Sweeps(sum.Variants) {
		t := SweepTable{Group: sw.Group, Field: sw.Field, Title: fmt.Sprintf("sweep %s over %s", sw.Group, sw.Field)}
		for _, p := range sw.Points {
			r := SweepRow{Value: p.Point.Value, Drops: fmt.Sprintf("%s/%s", stats.FormatCount(p.Drops), stats.FormatCount(p.Requests)),
				RateCI: "-", AtFloor: "no", Floor: p.AtFloor}
			if !p.Rate.Empty {
				r.RateCI = fmt.Sprintf("%s [%s, %s]", stats.FormatSig(p.Rate.Point, 2), stats.FormatSig(p.Rate.Lo, 2), stats.FormatSig(p.Rate.Hi, 2))
			}
			if p.AtFloor {
				r.AtFloor = "yes"
				if p.ExpectedFloor > 0 {
					r.AtFloor = fmt.Sprintf("yes (≤ %s expected)", stats.FormatSig(p.ExpectedFloor, 2))
				}
			} else if p.Requests == 0 {
				r.AtFloor = "no requests"
			}
			t.Rows = append(t.Rows, r)
		}
		if v, ok := sw.Floor(); ok {
			t.FloorText = fmt.Sprintf("From %s=%s on, every value dropped no more than the control window predicts (the rig's floor)", sw.Field, v)
		} else {
			t.FloorText = fmt.Sprintf("The floor is not reached: the largest %s still dropped more than the control window predicts", sw.Field)
		}
		out = append(out, t)
	}
	return out
}

// SweepTables writes, per sweep, the table value | drops/requests | rate
// [95% interval] | at floor, and the floor's value.
func SweepTables(w io.Writer, sum *analysis.Summary) error {
	for _, t := range SweepTablesOf(sum) {
		fmt.Fprintf(w, "\n%s:\n", t.Title)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "  %s\tDROPS/REQUESTS\tDROP RATE [95%% CI]\tAT FLOOR\n", t.Field)
		for _, r := range t.Rows {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.Value, r.Drops, r.RateCI, r.AtFloor)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w, "floor:", t.FloorText)
	}
	return nil
}
