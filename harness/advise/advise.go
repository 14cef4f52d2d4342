package advise

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/path"
	"github.com/droprun/droprun/harness/stats"
)

// Defaults of Options, and the settings the recommendation is built from.
const (
	DefaultQuantile = 0.99
	// DefaultGraceSeconds is Kubernetes's default
	// terminationGracePeriodSeconds: what an app gets after SIGTERM when
	// it has no preStop hook.
	DefaultGraceSeconds = 30
	// drainStep is the granularity of the drain delay recommended.
	drainStep = 0.1
)

// Sweep fields whose swept value is the setting advise recommends.
const (
	FieldPreStop    = "preStopSeconds"
	FieldDrainDelay = "drainDelay"
)

// Options tune Advise. The zero value uses the defaults.
type Options struct {
	// Quantile is the share of pairs the delay must cover (default 0.99);
	// Confidence the confidence of the bound (default
	// stats.DefaultConfidence).
	Quantile   float64 `json:"quantile"`
	Confidence float64 `json:"confidence"`
}

func (o Options) withDefaults() Options {
	if o.Quantile == 0 {
		o.Quantile = DefaultQuantile
	}
	if o.Confidence == 0 {
		o.Confidence = stats.DefaultConfidence
	}
	return o
}

// Validate reports a quantile or confidence outside (0, 1). It checks
// the values as given (0 too, which Advise would replace by the default),
// as a command line gives them.
func (o Options) Validate() error {
	if !(o.Quantile > 0 && o.Quantile < 1) {
		return fmt.Errorf("--quantile %v: must be between 0 and 1, e.g. 0.99", o.Quantile)
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		return fmt.Errorf("--confidence %v: must be between 0 and 1, e.g. 0.95", o.Confidence)
	}
	return nil
}

// Run is one run directory's analysis.
type Run struct {
	Dir     string
	Summary *analysis.Summary
}

// NoRouteDataError says the runs hold no (pod, node) pair whose stop of
// routing was seen: nothing to advise from.
type NoRouteDataError struct {
	Runs []string
	// Missing is how many pairs were recorded without their stop seen.
	Missing int
}

func (e *NoRouteDataError) Error() string {
	what := "no (pod, node) route data"
	if e.Missing > 0 {
		what = fmt.Sprintf("no node's stop of routing seen (%d pairs recorded, none seen)", e.Missing)
	}
	return fmt.Sprintf("%s in %s: run the scenario again with this droprun (droprun run SCENARIO) on a kind cluster, which records when each node stops routing to each deleted pod", what, strings.Join(e.Runs, ", "))
}

// Pair is one (pod, node) pair and where it was measured.
type Pair struct {
	Run string `json:"run"`
	Row string `json:"row"`
	analysis.RouteGap
}

// Dist describes a set of delays in seconds (nearest-rank quantiles).
type Dist struct {
	N      int     `json:"n"`
	Median float64 `json:"medianSeconds"`
	P90    float64 `json:"p90Seconds"`
	Max    float64 `json:"maxSeconds"`
}

func distOf(vals []float64) Dist {
	if len(vals) == 0 {
		return Dist{}
	}
	s := slices.Sorted(slices.Values(vals))
	return Dist{N: len(s), Median: stats.SampleQuantile(s, 0.5), P90: stats.SampleQuantile(s, 0.9), Max: s[len(s)-1]}
}

// Group is the delays of the pairs sharing a kube-proxy mode or a node.
type Group struct {
	Name string `json:"name"`
	Dist
}

// Bound is the delay within which, at Confidence, a Quantile of rollouts
// had every deleted pod unrouted.
type Bound struct {
	// Quantile is the quantile bounded: the one asked for when the pairs
	// support it (Supported), else the highest they support, bounded by
	// their maximum.
	Quantile   float64 `json:"quantile"`
	Confidence float64 `json:"confidence"`
	Supported  bool    `json:"supported"`
	// Seconds is the bound D, the Rank-th smallest of the rollouts' worst
	// delays (1-based).
	Seconds float64 `json:"seconds"`
	Rank    int     `json:"rank"`
}

// Tighten is how many more rollouts would improve the bound: reach the
// quantile asked for when it is not Supported, or else move the bound one
// rank down (one fewer slow rollout above it, closer to the quantile).
// Rollouts is the rollouts it takes in all.
type Tighten struct {
	Rollouts     int    `json:"rollouts"`
	MoreRollouts int    `json:"moreRollouts"`
	Why          string `json:"why"`
}

// Recommendation is the settings D implies.
type Recommendation struct {
	// PreStopSleepSeconds is lifecycle.preStop.sleep.seconds: ⌈D⌉.
	PreStopSleepSeconds int64 `json:"preStopSleepSeconds"`
	// DrainDelaySeconds is D rounded up to 100 ms: how long an app that
	// delays its own listener close after SIGTERM must wait.
	DrainDelaySeconds float64 `json:"drainDelaySeconds"`
	// GracePeriodSeconds is the terminationGracePeriodSeconds the preStop
	// implies, and GraceBasis how it was derived.
	GracePeriodSeconds int64  `json:"terminationGracePeriodSeconds"`
	GraceBasis         string `json:"graceBasis"`
}

// Margins are the delays the recommendation does not count on, one per
// deleted pod: from deletion to the app's SIGTERM, and the app's own
// SIGTERM → listener close.
type Margins struct {
	DeletionToSIGTERM       Dist `json:"deletionToSigterm"`
	SIGTERMToListenerClosed Dist `json:"sigtermToListenerClosed"`
	// SIGTERMToExit is how long the app took from SIGTERM to exit (the
	// kubelet's finish time, whole seconds): what the grace period must
	// hold after the preStop hook.
	SIGTERMToExit Dist `json:"sigtermToExit"`
}

// Sweep verdicts: how a sweep's clean floor compares with the
// recommendation.
const (
	// Agrees: the sweep was clean from a value at the recommendation.
	Agrees = "agrees"
	// Conservative: the sweep was clean from a value below it.
	Conservative = "conservative"
	// Disagrees: a swept value at or above the recommendation dropped
	// requests beyond the floor: the recommendation would have dropped.
	Disagrees = "disagrees"
	// Untested: the sweep has no value that settles it.
	Untested = "untested"
)

// SweepValue is one swept value, over every run and row that measured it.
type SweepValue struct {
	Value    string  `json:"value"`
	Number   float64 `json:"number"`
	Rollouts int     `json:"rollouts"`
	// Failures are the measurable failures in the rollout windows, and
	// Allowed the most Clean lets through.
	Failures uint64 `json:"failures"`
	Allowed  uint64 `json:"allowed"`
	Clean    bool   `json:"clean"`
}

// SweepCheck is one sweep of preStopSeconds or drainDelay beside the
// recommendation.
type SweepCheck struct {
	Group  string       `json:"group"`
	Field  string       `json:"field"`
	Runs   []string     `json:"runs"`
	Values []SweepValue `json:"values"`
	// CleanFrom is the smallest swept value from which every larger one
	// was clean (HasClean false: the largest dropped).
	HasClean  bool    `json:"hasClean"`
	CleanFrom float64 `json:"cleanFrom,omitempty"`
	// Recommended is the recommendation in the field's unit (seconds).
	Recommended float64 `json:"recommended"`
	Verdict     string  `json:"verdict"`
	Message     string  `json:"message"`
}

// HopKubeProxy names the hop of the nodes' kube-proxy rules; a front's
// hop is named by its path (path.Traefik's "traefik").
const HopKubeProxy = "kube-proxy"

// Hop is what one hop's pairs say: the nodes' kube-proxy rules, whose
// pairs are (pod, node), or a front that picks the pod itself, whose
// pairs are (pod, front pod) and whose stops come from the front's own
// list of the pods it sends to (analysis.RouteSourceFront).
type Hop struct {
	Name string `json:"hop"`
	// Pairs is how many pairs were measured (their stop seen); Missing
	// lists those whose stop was not seen, which the bound excludes.
	Pairs   int    `json:"pairs"`
	Missing []Pair `json:"missing,omitempty"`
	// Rollouts is how many rollouts gave measured pairs, and
	// PairsPerRollout the pairs each gave on average.
	Rollouts        int     `json:"rollouts"`
	PairsPerRollout float64 `json:"pairsPerRollout"`
	// Deletions is how many deleted pods had every pair seen, each with
	// the stop of its latest node (Latest). DeletionsPerRollout is their
	// mean per rollout, and Incomplete the deletions left out for a
	// missing pair.
	Deletions           int     `json:"deletions"`
	DeletionsPerRollout float64 `json:"deletionsPerRollout"`
	Incomplete          int     `json:"incomplete,omitempty"`
	Latest              Dist    `json:"latest"`
	// Worst is, per rollout all of whose deletions were seen, the latest
	// stop of its worst pod: the bound's observations. The deletions of
	// one rollout share its moment (a busy kube-proxy delays them all),
	// so they are not independent draws; rollouts are. CleanRollouts is
	// how many rollouts Worst holds, and IncompleteRollouts those left
	// out for a missing pair.
	Worst              Dist `json:"worstPerRollout"`
	CleanRollouts      int  `json:"boundRollouts"`
	IncompleteRollouts int  `json:"incompleteRollouts,omitempty"`
	// Sources counts the pairs by how their stop was seen.
	Sources map[string]int `json:"sources"`
	All     Dist           `json:"all"`
	// ByMode groups the nodes' pairs by kube-proxy mode (none for a
	// front); ByNode is set when the pairs come from more than one node
	// (or front pod).
	ByMode []Group `json:"byKubeProxyMode,omitempty"`
	ByNode []Group `json:"byNode,omitempty"`
	// Resolution is how closely a front's stops were placed
	// (RouteGap.UnroutedResolution): each delay is the late end of a
	// bracket this wide, so it is late by at most that much.
	Resolution *Dist `json:"resolution,omitempty"`
	// WidestRequests is how many requests the front pod started inside
	// the widest of those brackets (RouteGap.UnroutedRequests): few
	// means the front paused, and its stop could not be placed closer.
	WidestRequests *int    `json:"widestRequests,omitempty"`
	Bound          Bound   `json:"bound"`
	Tighten        Tighten `json:"tighten"`
}

// Front says whether the hop is a front's rather than the nodes' rules.
func (h *Hop) Front() bool { return h.Name != HopKubeProxy }

// chooser names what picks the pod in the hop's pairs: "node",
// "traefik pod".
func (h *Hop) chooser() string {
	if h.Front() {
		return h.Name + " pod"
	}
	return "node"
}

// Advice is what the pairs of the runs say about the shutdown delay.
type Advice struct {
	Runs []string `json:"runs"`
	Options
	// Hop is the hop whose bound is the largest, which sets the
	// recommendation: a pod must outlast every list that still names it.
	Hop
	// Hops is every hop measured, Hop among them, when the runs measured
	// more than one (a run through a front measures the front and the
	// nodes' rules, which the web Service's other clients go through).
	Hops           []Hop `json:"hops,omitempty"`
	Recommendation `json:"recommendation"`
	Margins        Margins      `json:"margins"`
	Sweeps         []SweepCheck `json:"sweeps,omitempty"`
	// Notes are what else a reader should know (suspect runs, polled
	// sources).
	Notes []string `json:"notes,omitempty"`
}

// modeNotRecorded names the pairs of runs whose run.json has no
// kube-proxy mode.
const modeNotRecorded = "mode not recorded"

// Advise bounds, for each hop, the delay after deletion by which every
// node (or front pod) stopped routing to the pod, over every measured
// pair of runs, and derives the settings the largest bound implies. With
// no measured pair it returns a *NoRouteDataError.
func Advise(runs []Run, o Options) (*Advice, error) {
	o = o.withDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	a := &Advice{Options: o}
	g := newGaps()
	g.collect(a, runs)
	var missing int
	for _, name := range g.order {
		h, ok := g.hops[name].measure(o)
		missing += len(h.Missing)
		if !ok {
			if h.Pairs > 0 || len(h.Missing) > 0 {
				a.Notes = append(a.Notes, fmt.Sprintf("%s: no deleted pod had every %s's stop seen (%d pairs seen, %d missing): the hop is left out of the bound", h.Name, h.chooser(), h.Pairs, len(h.Missing)))
			}
			continue
		}
		a.Hops = append(a.Hops, h)
	}
	if len(a.Hops) == 0 {
		return nil, &NoRouteDataError{Runs: a.Runs, Missing: missing}
	}
	set := 0
	for i, h := range a.Hops {
		if h.Bound.Seconds > a.Hops[set].Bound.Seconds {
			set = i
		}
	}
	a.Hop = a.Hops[set]
	if len(a.Hops) == 1 {
		a.Hops = nil
	} else if len(g.through) > 0 {
		a.Notes = append(a.Notes, fmt.Sprintf("%s, which picks the pod from its own endpoint list: those requests did not take the nodes' kube-proxy rules to the web pods, which the web Service's other clients go through; each hop is bounded, and the larger bound sets the recommendation", strings.Join(g.through, "; ")))
	}
	a.Margins = Margins{DeletionToSIGTERM: distOf(g.sigterm), SIGTERMToListenerClosed: distOf(g.closing), SIGTERMToExit: distOf(g.exiting)}
	if g.led > 0 {
		a.Notes = append(a.Notes, fmt.Sprintf("%d of %d deleted pods got SIGTERM sooner after the deletion droprun saw than their preStop hook lasts (by up to %s): their kubelet saw the deletion first, and their delays count from its start of the hook", g.led, len(g.pods), short(g.maxLead)))
	}
	for _, h := range a.hopsOrSelf() {
		if n := h.Sources[analysis.RouteSourceKubeProxy]; n > 0 {
			a.Notes = append(a.Notes, fmt.Sprintf("%d of %d pairs were seen through kube-proxy's sync metric, polled (the fallback where droprun cannot watch a node's rules): their times have the poll interval's resolution, not milliseconds", n, h.Pairs))
		}
	}
	a.Recommendation = recommend(a.Bound.Seconds, a.Margins.SIGTERMToExit)
	for _, sw := range sweeps(runs) {
		a.Sweeps = append(a.Sweeps, checkSweep(sw, a.Recommendation))
	}
	return a, nil
}

// hopsOrSelf is every hop measured: Hops, or the one hop.
func (a *Advice) hopsOrSelf() []Hop {
	if len(a.Hops) > 0 {
		return a.Hops
	}
	return []Hop{a.Hop}
}

// deletion is one deleted pod: the latest delay of its nodes' seen stops
// of routing (-1 before one is seen), and whether a node's was not seen.
type deletion struct {
	latest  float64
	missing bool
	rollout string // run, row and rollout
}

// hopGaps gathers one hop's route gaps: each (pod, node) pair once, the
// seen delays overall, by kube-proxy mode and by node, the rollouts they
// come from, and each deleted pod (keyed by run, row, rollout and pod, in
// order of appearance).
type hopGaps struct {
	name           string
	vals           []float64
	byMode, byNode map[string][]float64
	rollouts, seen map[string]bool
	dels           map[string]*deletion
	delOrder       []string
	missing        []Pair
	sources        map[string]int
	resolution     []float64         // the widths of a front's stops' brackets
	widest         analysis.RouteGap // the stop with the widest of them
}

// gaps gathers the runs' route gaps for Advise, by hop (kube-proxy
// first, then each front in order of appearance), and the app's times per
// deleted pod, which every hop shares.
type gaps struct {
	hops  map[string]*hopGaps
	order []string
	// pods is every deleted pod seen; its value says whether its kubelet
	// began before droprun saw the deletion (lead).
	pods map[string]bool
	// The app's times per deleted pod: deletion → SIGTERM, SIGTERM →
	// listener closed, SIGTERM → exit.
	sigterm, closing, exiting []float64
	// led counts the deleted pods whose kubelet began before droprun saw
	// the deletion, maxLead the longest such lead, seconds.
	led     int
	maxLead float64
	// through says which runs went through a front that picks the pod.
	through []string
}

func newGaps() *gaps {
	return &gaps{hops: map[string]*hopGaps{}, pods: map[string]bool{}}
}

// hop returns the named hop's gaps, made on first use.
func (c *gaps) hop(name string) *hopGaps {
	h := c.hops[name]
	if h == nil {
		h = &hopGaps{name: name, byMode: map[string][]float64{}, byNode: map[string][]float64{},
			rollouts: map[string]bool{}, seen: map[string]bool{}, dels: map[string]*deletion{}, sources: map[string]int{}}
		c.hops[name] = h
		if name == HopKubeProxy {
			c.order = slices.Insert(c.order, 0, name)
		} else {
			c.order = append(c.order, name)
		}
	}
	return h
}

// collect adds every run's route gaps, and records in a the runs and
// their suspect notes.
func (c *gaps) collect(a *Advice, runs []Run) {
	for _, r := range runs {
		a.Runs = append(a.Runs, r.Dir)
		if r.Summary == nil {
			continue
		}
		for _, s := range r.Summary.Suspect {
			a.Notes = append(a.Notes, fmt.Sprintf("%s is suspect: %s", r.Dir, s))
		}
		front := "front"
		if p, ok := path.Lookup(r.Summary.Traffic.Target); ok && p.Proxy != nil && p.Proxy.PicksPod {
			front = p.Name
			c.through = append(c.through, fmt.Sprintf("%s went through %s", r.Dir, p.Name))
		}
		mode := cmp.Or(r.Summary.Cluster.KubeProxyMode, modeNotRecorded)
		for _, v := range r.Summary.Variants {
			for _, g := range v.Routes {
				hop, m := HopKubeProxy, mode
				if g.Source == analysis.RouteSourceFront {
					hop, m = front, ""
				}
				c.add(c.hop(hop), r.Dir, v.Variant, m, g, hookSeconds(v, g.Rollout))
			}
		}
	}
}

// hookSeconds is the known length of the preStop hook of the pods that
// rollout n of row v deleted (a sleep action's seconds, N for an exec of
// `sleep N`), 0 with no hook or one of unknown length.
func hookSeconds(v analysis.VariantSummary, n int) float64 {
	for _, ro := range v.Rollouts {
		if ro.N == n && ro.LivePods != nil && ro.LivePods.PreStopSeconds != nil {
			return float64(*ro.LivePods.PreStopSeconds)
		}
	}
	return 0
}

// lead is how long before droprun saw g's deletion the kubelet began to
// shut the pod down, as the app's SIGTERM shows it: the SIGTERM came hook
// seconds after the kubelet started the preStop hook, so a SIGTERM less
// than hook seconds after the deletion droprun saw means the kubelet saw
// it first (the watches lag one another on a busy cluster). 0 without the
// app's SIGTERM; with a hook of unknown length, only a SIGTERM before the
// deletion counts.
func lead(g analysis.RouteGap, hook float64) float64 {
	if !g.AppTimes {
		return 0
	}
	return max(0, hook-g.SIGTERM)
}

// add takes one route gap of run's row variant into hop h, unless its
// pair was taken already. A gap whose stop of routing was not seen
// (Unrouted < 0) is a missing pair, and marks its deletion incomplete.
// Its delay counts from the start of the pod's shutdown: the deletion
// droprun saw, or the kubelet's start of the hook where that came first
// (lead), since a preStop runs from there. mode is the node's kube-proxy
// mode, "" for a front's pair.
func (c *gaps) add(h *hopGaps, run, variant, mode string, g analysis.RouteGap, hook float64) {
	key := fmt.Sprint(run, "\x00", variant, "\x00", g.Rollout, "\x00", g.Pod, "\x00", g.Node)
	if h.seen[key] {
		return
	}
	h.seen[key] = true
	podKey := fmt.Sprint(run, "\x00", variant, "\x00", g.Rollout, "\x00", g.Pod)
	if _, ok := c.pods[podKey]; !ok {
		c.pods[podKey] = false
		if g.AppTimes {
			c.sigterm = append(c.sigterm, g.SIGTERM)
			c.closing = append(c.closing, g.ListenerClosed-g.SIGTERM)
			c.exiting = append(c.exiting, max(0, g.Exited-g.SIGTERM))
		}
	}
	d, ok := h.dels[podKey]
	if !ok {
		d = &deletion{latest: -1, rollout: fmt.Sprint(run, "\x00", variant, "\x00", g.Rollout)}
		h.dels[podKey] = d
		h.delOrder = append(h.delOrder, podKey)
	}
	if g.Unrouted < 0 {
		d.missing = true
		h.missing = append(h.missing, Pair{Run: run, Row: variant, RouteGap: g})
		return
	}
	delay := g.Unrouted
	if l := lead(g, hook); l > 0 {
		delay += l
		if !c.pods[podKey] {
			c.pods[podKey] = true
			c.led++
			c.maxLead = max(c.maxLead, l)
		}
	}
	d.latest = max(d.latest, delay)
	h.vals = append(h.vals, delay)
	if mode != "" {
		h.byMode[mode] = append(h.byMode[mode], delay)
	}
	h.byNode[g.Node] = append(h.byNode[g.Node], delay)
	h.rollouts[fmt.Sprint(run, "\x00", variant, "\x00", g.Rollout)] = true
	h.sources[cmp.Or(g.Source, "unknown")]++
	if g.UnroutedResolution > 0 {
		h.resolution = append(h.resolution, g.UnroutedResolution)
		if g.UnroutedResolution > h.widest.UnroutedResolution {
			h.widest = g
		}
	}
}

// measure is the hop's distributions and bound; false when no deletion
// had all its pairs seen, which leaves nothing to bound.
func (h *hopGaps) measure(o Options) (Hop, bool) {
	m := Hop{Name: h.name, Pairs: len(h.vals), Missing: h.missing, Rollouts: len(h.rollouts), Sources: h.sources}
	latest, incomplete := h.latestPerDeletion()
	m.Incomplete, m.Deletions = incomplete, len(latest)
	if m.Pairs == 0 || m.Deletions == 0 {
		return m, false
	}
	m.PairsPerRollout = float64(m.Pairs) / float64(m.Rollouts)
	m.DeletionsPerRollout = float64(m.Deletions) / float64(m.Rollouts)
	m.Latest, m.All = distOf(latest), distOf(h.vals)
	if len(h.resolution) > 0 {
		d := distOf(h.resolution)
		m.Resolution, m.WidestRequests = &d, h.widest.UnroutedRequests
	}
	m.ByMode = groups(h.byMode)
	if len(h.byNode) > 1 {
		m.ByNode = groups(h.byNode)
	}
	worst, incompleteRollouts := h.worstPerRollout()
	m.IncompleteRollouts, m.CleanRollouts = incompleteRollouts, len(worst)
	if len(worst) == 0 {
		return m, false
	}
	m.Worst = distOf(worst)
	slices.Sort(worst)
	m.Bound, m.Tighten = bound(worst, o)
	return m, true
}

// worstPerRollout returns, per rollout all of whose deletions were seen,
// the latest stop of its worst deletion, in order of appearance, and how
// many rollouts have a deletion with a missing pair (left out).
func (h *hopGaps) worstPerRollout() (worst []float64, incomplete int) {
	byRollout := map[string]float64{}
	missing := map[string]bool{}
	var order []string
	for _, k := range h.delOrder {
		d := h.dels[k]
		if _, ok := byRollout[d.rollout]; !ok {
			byRollout[d.rollout] = -1
			order = append(order, d.rollout)
		}
		switch {
		case d.missing:
			missing[d.rollout] = true
		case d.latest >= 0:
			byRollout[d.rollout] = max(byRollout[d.rollout], d.latest)
		}
	}
	for _, r := range order {
		switch {
		case missing[r]:
			incomplete++
		case byRollout[r] >= 0:
			worst = append(worst, byRollout[r])
		}
	}
	return worst, incomplete
}

// latestPerDeletion returns the latest node's delay of each deletion all
// of whose pairs were seen, in order of appearance, and how many
// deletions have a missing pair (the bound excludes them).
func (h *hopGaps) latestPerDeletion() (latest []float64, incomplete int) {
	for _, k := range h.delOrder {
		switch d := h.dels[k]; {
		case d.missing:
			incomplete++
		case d.latest >= 0:
			latest = append(latest, d.latest)
		}
	}
	return latest, incomplete
}

// groups sorts named delay sets into Groups, by name.
func groups(m map[string][]float64) []Group {
	var out []Group
	for name, v := range m {
		out = append(out, Group{Name: name, Dist: distOf(v)})
	}
	slices.SortFunc(out, func(a, b Group) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// bound puts the upper bound on the quantile asked for of the rollouts'
// worst delays (sorted), or on the highest they support, and says how
// many more rollouts would tighten it. The rollouts are the unit: a bound
// on the q quantile of the worst pod's delay per rollout says that, with
// a delay D, at least q of rollouts have every deleted pod unrouted in
// time.
func bound(sorted []float64, o Options) (Bound, Tighten) {
	n := len(sorted)
	b := Bound{Quantile: o.Quantile, Confidence: o.Confidence}
	var t Tighten
	if d, k, ok := stats.UpperQuantileBound(sorted, o.Quantile, o.Confidence); ok {
		b.Supported, b.Seconds, b.Rank = true, d, k
		// One more value above the bound moves it down one rank.
		above := n - k
		t.Rollouts = stats.PairsForRank(o.Quantile, o.Confidence, above+1)
		t.Why = fmt.Sprintf("the bound would be the %s rollout's worst delay instead of the %s, closer to the quantile", largest(above+2), largest(above+1))
	} else {
		// The maximum bounds the highest quantile n supports.
		b.Quantile, b.Seconds, b.Rank = stats.MaxSupportedQuantile(n, o.Confidence), sorted[n-1], n
		t.Rollouts = stats.PairsNeeded(o.Quantile, o.Confidence)
		t.Why = fmt.Sprintf("their maximum would bound the %s asked for", percentile(o.Quantile))
	}
	t.MoreRollouts = max(0, t.Rollouts-n)
	return b, t
}

// recommend derives the settings from the delay bound d (seconds).
func recommend(d float64, exit Dist) Recommendation {
	// The tiny shrink keeps a bound exact at a step (2.000 s, 1.300 s)
	// from being bumped by representation error.
	pre := max(1, int64(math.Ceil(d*(1-1e-12))))
	drain := max(drainStep, math.Ceil(d/drainStep*(1-1e-12))*drainStep)
	drain = math.Round(drain*10) / 10
	r := Recommendation{PreStopSleepSeconds: pre, DrainDelaySeconds: drain, GracePeriodSeconds: pre + DefaultGraceSeconds}
	// Kubernetes counts the preStop hook inside the grace period; after
	// it the app needs its own exit time. Never less than the 30 s it gets
	// after SIGTERM by default: a short exit in these runs is no promise
	// under another load.
	if exit.N == 0 {
		r.GraceBasis = fmt.Sprintf("preStop %d s + the %d s the app gets after SIGTERM by default: the runs hold no exit time of the app", pre, DefaultGraceSeconds)
		return r
	}
	need := int64(math.Ceil(exit.Max)) + 1 + graceHeadroom // + 1: the kubelet's finish time has whole seconds
	if need > DefaultGraceSeconds {
		r.GracePeriodSeconds = pre + need
		r.GraceBasis = fmt.Sprintf("preStop %d s + the app's longest SIGTERM → exit in these runs (%s) + %d s of headroom", pre, wholeSeconds(exit.Max), graceHeadroom)
		return r
	}
	r.GraceBasis = fmt.Sprintf("preStop %d s + the %d s the app gets after SIGTERM by default, more than its longest SIGTERM → exit in these runs (%s) + %d s of headroom", pre, DefaultGraceSeconds, wholeSeconds(exit.Max), graceHeadroom)
	return r
}

// wholeSeconds says an exit time measured against the kubelet's finish
// time, which has whole seconds.
func wholeSeconds(s float64) string {
	if s < 1 {
		return "under 1 s, the kubelet's finish time having whole seconds"
	}
	return fmt.Sprintf("about %.0f s, to the second", math.Ceil(s))
}

// graceHeadroom is the grace period's spare seconds beyond the app's
// longest measured exit.
const graceHeadroom = 5

// Clean reports whether a swept value's rollout windows dropped nothing
// beyond the rig's floor, by the one definition the report uses too
// (analysis.AtFloor): its measurable failures are at most the failures
// its control windows' rate predicts (0 when they were clean). allowed is
// the most failures that leaves clean.
func Clean(failures uint64, expectedFloor float64) (clean bool, allowed uint64) {
	allowed = uint64(math.Floor(math.Max(0, expectedFloor)))
	return analysis.AtFloor(failures, expectedFloor), allowed
}

// sweep is the rows of one sweep, over every run.
type sweep struct {
	group, field string
	runs         []string
	rows         []analysis.VariantSummary
}

// sweeps collects the rows of each sweep of a field advise recommends, by
// group and field, in the order first seen. The row that introduced a
// variant (NAME/introducing) deleted the pods of the variant before it,
// so it measures no swept value and is left out.
func sweeps(runs []Run) []*sweep {
	var out []*sweep
	idx := map[string]*sweep{}
	for _, r := range runs {
		if r.Summary == nil {
			continue
		}
		for _, v := range r.Summary.Variants {
			if v.Sweep == nil || (v.Sweep.Field != FieldPreStop && v.Sweep.Field != FieldDrainDelay) || analysis.RowVariant(v.Variant) != v.Variant {
				continue
			}
			key := v.Sweep.Group + "\x00" + v.Sweep.Field
			sw := idx[key]
			if sw == nil {
				sw = &sweep{group: v.Sweep.Group, field: v.Sweep.Field}
				idx[key] = sw
				out = append(out, sw)
			}
			if !slices.Contains(sw.runs, r.Dir) {
				sw.runs = append(sw.runs, r.Dir)
			}
			sw.rows = append(sw.rows, v)
		}
	}
	return out
}

// checkSweep finds a sweep's clean floor and compares it with the
// recommendation.
func checkSweep(sw *sweep, r Recommendation) SweepCheck {
	c := SweepCheck{Group: sw.group, Field: sw.field, Runs: sw.runs}
	c.Recommended = float64(r.PreStopSleepSeconds)
	if sw.field == FieldDrainDelay {
		c.Recommended = r.DrainDelaySeconds
	}
	// Rows that measured the same value (two runs of one scenario) add up.
	floors := map[float64]float64{}
	at := map[float64]int{}
	for _, v := range sw.rows {
		if len(v.Rollouts) == 0 {
			continue
		}
		i, ok := at[v.Sweep.Number]
		if !ok {
			i = len(c.Values)
			at[v.Sweep.Number] = i
			c.Values = append(c.Values, SweepValue{Value: v.Sweep.Value, Number: v.Sweep.Number})
		}
		c.Values[i].Rollouts += len(v.Rollouts)
		c.Values[i].Failures += v.Measurable.Failures
		floors[v.Sweep.Number] += v.ExpectedFloor
	}
	for i := range c.Values {
		c.Values[i].Clean, c.Values[i].Allowed = Clean(c.Values[i].Failures, floors[c.Values[i].Number])
	}
	slices.SortFunc(c.Values, func(a, b SweepValue) int { return cmp.Compare(a.Number, b.Number) })
	if len(c.Values) == 0 {
		c.Verdict, c.Message = Untested, "no swept value has a rollout"
		return c
	}
	// The clean floor: the first value after the last one that dropped.
	last := -1
	for i, v := range c.Values {
		if !v.Clean {
			last = i
		}
	}
	rec := c.Recommended
	name := fieldSetting(sw.field)
	if last >= 0 {
		u := c.Values[last]
		if u.Number >= rec-1e-9 {
			c.Verdict = Disagrees
			c.Message = fmt.Sprintf("%s %s, at or above the recommended %s, dropped %d requests (the floor allows %d) in %d rollouts: the recommendation would have dropped requests",
				name, u.Value, formatSetting(sw.field, rec), u.Failures, u.Allowed, u.Rollouts)
			if last+1 < len(c.Values) {
				c.HasClean, c.CleanFrom = true, c.Values[last+1].Number
				c.Message += fmt.Sprintf("; the sweep was clean from %s", c.Values[last+1].Value)
			}
			return c
		}
	}
	if last+1 == len(c.Values) {
		c.Verdict = Untested
		c.Message = fmt.Sprintf("every swept value up to %s dropped requests, all below the recommended %s: sweep up to it to test it", c.Values[last].Value, formatSetting(sw.field, rec))
		return c
	}
	f := c.Values[last+1]
	c.HasClean, c.CleanFrom = true, f.Number
	switch {
	case f.Number > rec+1e-9:
		c.Verdict = Untested
		below := "the sweep has no value below it"
		if last >= 0 {
			below = fmt.Sprintf("%s dropped, and the sweep has no value between", c.Values[last].Value)
		}
		c.Message = fmt.Sprintf("clean from %s, above the recommended %s; %s: it neither confirms nor refutes the recommendation", f.Value, formatSetting(sw.field, rec), below)
	case f.Number < rec-1e-9:
		c.Verdict = Conservative
		c.Message = fmt.Sprintf("clean from %s, below the recommended %s: the sweep agrees, and the bound is conservative (it covers the slow deletions a high quantile allows for, which the sweep's rollouts may not have met)", f.Value, formatSetting(sw.field, rec))
	default:
		c.Verdict = Agrees
		c.Message = fmt.Sprintf("clean from %s, the recommended value: the sweep agrees", f.Value)
	}
	return c
}

// fieldSetting names a swept field as the setting it is.
func fieldSetting(field string) string {
	if field == FieldDrainDelay {
		return "drainDelay"
	}
	return "preStopSeconds"
}

// formatSetting prints a recommended value in its field's form.
func formatSetting(field string, v float64) string {
	if field == FieldDrainDelay {
		return stats.FormatSig(v, 3) + "s"
	}
	return fmt.Sprintf("%g", v)
}

// percentile names a quantile: 0.99 → "99th percentile", 0.9281 →
// "92.8 % quantile" (rounded down, so the claim never exceeds the data).
func percentile(q float64) string {
	p := math.Floor(q*1000*(1+1e-12)) / 10
	s := stats.FormatSig(p, 3)
	if p != math.Trunc(p) {
		return s + " % quantile" // a fraction has no ordinal
	}
	return ordinal(int(p)) + " percentile"
}

// largest names the r-th largest of a set: "largest", "2nd largest".
func largest(r int) string {
	if r == 1 {
		return "largest"
	}
	return ordinal(r) + " largest"
}

// ordinal prints 1 → "1st", 2 → "2nd", 11 → "11th", 22 → "22nd".
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}
