package analysis

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/droprun/droprun/harness/appmetrics"
	"github.com/droprun/droprun/harness/jsonl"
	"github.com/droprun/droprun/harness/path"
	"github.com/droprun/droprun/harness/rig"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

// TimelinePad is how much traffic before a rollout's start and after its
// window's end a rollout's series holds.
const TimelinePad = 2 * time.Second

// Options tune Analyze. The zero value analyses every variant from the
// files alone.
type Options struct {
	// Events, when not nil, are used instead of reading events.jsonl: the
	// live run passes its recorder's, which hold what is not flushed yet.
	Events []timeline.Event
	// Variants limits the analysis to these scenario variants (nil: all).
	Variants []string
	// Failure, when set, receives every failed request, attributed.
	Failure func(Failure) error
}

// Analysis is everything a run directory's raw data says.
type Analysis struct {
	// Summary is the rows (summary.json).
	Summary *Summary
	// ScenarioYAML is scenario.yaml as recorded, and Scenario its parse.
	ScenarioYAML []byte
	Scenario     *scenario.Scenario
	// Rows are the series of each row of Summary.Variants, in its order.
	Rows []*RowSeries
	// Rig is every rig sample of the run, timing corrected, in time order.
	Rig []RigSample
}

// RowSeries is what the figures of one row draw.
type RowSeries struct {
	Row string
	// Rollouts are the row's rollouts' timelines, in order.
	Rollouts []*RolloutSeries
	// Since holds the rollout windows' failures by time since the latest
	// pod deletion of their own rollout, in BinWidth bins.
	Since Sparse
	// NoDeletion counts window failures sent before their rollout deleted
	// any pod; they have no place on the since-deletion axis.
	NoDeletion uint64
}

// RolloutSeries is one rollout's timeline: its requests binned by the time
// they were sent, relative to the rollout's start, the cluster events to
// mark, and the rig samples of its range.
type RolloutSeries struct {
	Row     string
	Rollout RolloutSummary
	// End is the window's end, from the rollout's start; Closed is false
	// for a window never closed (the run was interrupted).
	End    time.Duration
	Closed bool
	// Hist covers offsets [-TimelinePad, End+TimelinePad).
	Hist    *Hist
	Markers []Marker
	Rig     []RigSample
}

// Marker is one cluster event on a rollout's timeline.
type Marker struct {
	Kind timeline.Kind
	// Node is set for a node's event (a kube-proxy sync that applied
	// changes).
	Node string
	// X is seconds since the rollout's start.
	X float64
}

// MarkerKinds are the events a timeline marks, in legend order.
var MarkerKinds = []timeline.Kind{
	timeline.KindPodReady,
	timeline.KindPodDeletionRequested,
	timeline.KindKubeProxySynced,
	timeline.KindRouteRemoved,
	timeline.KindEndpointRemoved,
	timeline.KindPodGone,
	timeline.KindRolloutComplete,
}

// introducingSuffix names the row of a variant with From that holds the
// rollout which introduced it.
const introducingSuffix = "/introducing"

// RowVariant returns the scenario variant a summary row was built from:
// the one whose results file (runfile.ResultsFile) holds the row's requests.
func RowVariant(row string) string { return strings.TrimSuffix(row, introducingSuffix) }

// Analyze reads the run directory dir once and derives its Analysis. A
// directory without scenario.yaml or events.jsonl is not a run (the error
// wraps os.ErrNotExist). Variants whose traffic never started are left out.
func Analyze(dir string, o Options) (*Analysis, error) {
	scYAML, err := runfile.Read(dir, runfile.ScenarioFile, 0)
	if err != nil {
		return nil, err
	}
	sc, err := scenario.Parse(filepath.Join(dir, runfile.ScenarioFile), scYAML)
	if err != nil {
		return nil, err
	}
	a := &Analysis{ScenarioYAML: scYAML, Scenario: sc}
	ri, warn, err := runInfo(dir)
	if err != nil {
		return nil, err
	}
	sum := &Summary{Format: SummaryVersion, Facts: ri.Facts}
	sum.Scenario = sc.Metadata.Name
	a.Summary = sum
	if warn != "" {
		sum.Warnings = append(sum.Warnings, warn)
	}
	events := o.Events
	if events == nil {
		if events, err = readEvents(dir, sum); err != nil {
			return nil, err
		}
	}
	events = byTime(events)
	a.Rig = rigOf(events)
	app, err := readApp(dir, sum)
	if err != nil {
		return nil, err
	}
	via, err := pathOf(ri, sc)
	if err != nil {
		return nil, err
	}
	if ri.Traffic.Generators == 0 { // generator pods send from inside: to a Service or a node, no hop droprun did not deploy
		sum.Unseen = unseenHop(ri.Traffic.URL)
	}
	podIPs, podNodes := podPlaces(events)
	var rotation time.Duration
	if via.Proxy != nil {
		rotation = via.Proxy.RoundRobin
	}
	frontLog, err := readFrontLog(dir, sum, events, rotation)
	if err != nil {
		return nil, err
	}
	in := &input{sc: sc, sharedClock: ri.Cluster.Kind, events: events, deletions: deletionsOf(events), rig: a.Rig, stalls: stallsOf(a.Rig),
		app: app, nodes: nodesOf(ri.Traffic.Targets), path: via, podIPs: podIPs, podNodes: podNodes, frontLog: frontLog, failure: o.Failure}
	for _, v := range sc.Variants {
		if o.Variants != nil && !slices.Contains(o.Variants, v.Name) {
			continue
		}
		files, err := runfile.ResultsFiles(dir, v.Name)
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			continue // its traffic never started
		}
		rows, series, err := in.variant(v, dir, files, sum)
		if err != nil {
			return nil, err
		}
		for k := range rows {
			rows[k].Sweep = sweepPoint(v)
		}
		sum.Variants = append(sum.Variants, rows...)
		a.Rows = append(a.Rows, series...)
		for _, row := range rows {
			for _, s := range row.Suspect {
				sum.Suspect = append(sum.Suspect, row.Variant+": "+s)
			}
		}
	}
	SetIntervals(sum)
	return a, nil
}

// rigOf is the rig's samples among events.
func rigOf(events []timeline.Event) []RigSample {
	var raw []rig.Sample
	for _, e := range events {
		if s, ok := decodeRig(e); ok {
			raw = append(raw, s)
		}
	}
	return rigSamples(raw)
}

// pathOf is the traffic path the run took: run.json's target, or the
// scenario's for a run recorded before run.json named it.
func pathOf(ri *RunInfo, sc *scenario.Scenario) (path.Path, error) {
	target := ri.Traffic.Target
	if target == "" {
		target = sc.Traffic.Target
	}
	via, ok := path.Lookup(target)
	if !ok {
		return path.Path{}, fmt.Errorf("%s: traffic target %q is not a path droprun knows (%s)", runfile.RunFile, target, strings.Join(path.Names(), ", "))
	}
	return via, nil
}

// readEvents reads events.jsonl, up to its last whole line.
func readEvents(dir string, sum *Summary) ([]timeline.Event, error) {
	f, err := runfile.OpenRaw(dir, runfile.EventsFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	events, err := timeline.ReadEvents(f)
	if err := warnTruncated(err, sum); err != nil {
		return nil, err
	}
	return events, nil
}

// readApp reads the pods' own counters; none for a run without them.
func readApp(dir string, sum *Summary) ([]appmetrics.Record, error) {
	f, err := runfile.OpenRaw(dir, runfile.AppFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	records, err := appmetrics.Read(f)
	if err := warnTruncated(err, sum); err != nil {
		return nil, err
	}
	return records, nil
}

// warnTruncated turns a cut-off last line into a warning and returns any
// other error.
func warnTruncated(err error, sum *Summary) error {
	var tr *jsonl.Truncated
	if errors.As(err, &tr) {
		sum.Warnings = append(sum.Warnings, tr.Error())
		return nil
	}
	return err
}

// byTime returns events in time order, keeping the recorded order of
// equal stamps; it copies only when they are out of order.
func byTime(events []timeline.Event) []timeline.Event {
	cmp := func(a, b timeline.Event) int { return a.Time.Compare(b.Time) }
	if slices.IsSortedFunc(events, cmp) {
		return events
	}
	sorted := slices.Clone(events)
	slices.SortStableFunc(sorted, cmp)
	return sorted
}

// nodesOf maps each target's scheme://host:port to its entry node.
func nodesOf(targets []traffic.Target) map[string]string {
	m := map[string]string{}
	for _, t := range targets {
		if t.Node != "" {
			m[origin(t.URL)] = t.Node
		}
	}
	return m
}

// origin returns url's scheme://host:port.
func origin(url string) string {
	if i := strings.Index(url, "://"); i >= 0 {
		if j := strings.IndexByte(url[i+3:], '/'); j >= 0 {
			return url[:i+3+j]
		}
	}
	return url
}

// input is what every variant's analysis shares.
type input struct {
	sc *scenario.Scenario
	// sharedClock says the nodes share droprun's clock (a kind cluster),
	// so generator pods' times need no correction.
	sharedClock bool
	events      []timeline.Event
	deletions   []deletion
	rig         []RigSample
	stalls      stalls
	app         []appmetrics.Record
	nodes       map[string]string // target URL → entry node
	path        path.Path         // the way the requests took
	podIPs      map[string]string // pod → IP
	podNodes    map[string]string // pod → node
	frontLog    *frontLog         // through a front that logs requests: its failed lines and its 2xx answers
	failure     func(Failure) error
}

// entryNode returns the node a request to url entered through ("" when
// not known).
func (in *input) entryNode(url string) string {
	if len(in.nodes) == 0 {
		return ""
	}
	return in.nodes[origin(url)]
}

// variant analyses one scenario variant from its results files, however
// many sources wrote them.
func (in *input) variant(v scenario.Variant, dir string, files []runfile.Results, sum *Summary) ([]VariantSummary, []*RowSeries, error) {
	p, err := planOf(in.events, v.Name, in.sc.Traffic.Settle.Duration)
	if err != nil {
		return nil, nil, err
	}
	sum.Warnings = append(sum.Warnings, p.warnings...)
	ps := in.newPass(v, p)
	for _, f := range files {
		if err := ps.read(dir, f, sum); err != nil {
			return nil, nil, err
		}
	}
	for k := range ps.rollouts {
		rs := &ps.rollouts[k]
		if rs.Excused > 0 {
			rs.ExcusedWhy = ps.excusedWhy[k].String()
		}
		rs.Incomplete = ps.gens.incomplete(rs.Start, rs.WindowEnd)
	}
	in.addBalance(p, ps.rollouts)
	rows := in.rows(v, p, ps.tl, ps.rollouts)
	clocks := ps.gens.nodeClocks()
	for k := range rows {
		rows[k].Routes, rows[k].Explained = ps.ex.rowRoutes(rows[k].Rollouts)
		rows[k].suspectExplained()
		rows[k].Clocks = clocks
	}
	// rows filled in the rollouts' tallies, rig and kube-proxy figures:
	// only now are they what the summary says.
	for k := range ps.rollouts {
		ps.series[k].Rollout = ps.rollouts[k]
	}
	in.addServerView(rows, p, ps.tl)
	return rows, ps.rowSeries(rows), nil
}

// pass is one variant's analysis while its requests stream by: what each
// request adds to, per rollout.
type pass struct {
	in       *input
	variant  string
	tl       *Timeline
	rollouts []RolloutSummary
	byN      map[int]int // rollout number → index into rollouts
	series   []*RolloutSeries
	// Per rollout: failures by time since its latest deletion, failures
	// before it deleted anything, and the worst stall behind its excuses.
	since      []Sparse
	noDeletion []uint64
	excusedWhy []stallWhy
	ex         *explainer
	// gens are the variant's generator pods, when they sent its load.
	gens generatorRuns
}

func (in *input) newPass(v scenario.Variant, p *plan) *pass {
	ps := &pass{in: in, variant: v.Name, tl: NewTimeline(p.windows()), rollouts: p.rollouts, byN: map[int]int{}, gens: generatorsOf(in.events, v.Name, in.sharedClock)}
	n := len(ps.rollouts)
	ps.series, ps.since, ps.noDeletion, ps.excusedWhy = make([]*RolloutSeries, n), make([]Sparse, n), make([]uint64, n), make([]stallWhy, n)
	for k := range ps.rollouts {
		ps.byN[ps.rollouts[k].N] = k
		ps.series[k] = in.rolloutSeries(&ps.rollouts[k], ps.tl)
		ps.since[k] = Sparse{}
	}
	ps.ex = in.newExplainer(v.Name, ps.rollouts)
	return ps
}

// read streams one results file through the pass; a file cut off by a
// killed run is read up to its last whole result, with a warning.
func (ps *pass) read(dir string, f runfile.Results, sum *Summary) error {
	r, err := runfile.OpenRaw(dir, f.Name)
	if err != nil {
		return err
	}
	defer r.Close()
	err = traffic.ReadResults(r, func(rec traffic.Record) error {
		rec.Origin = f.Origin
		if f.Origin != traffic.HostOrigin {
			rec.Time = rec.Time.Add(-ps.gens.correction(rec.Origin, rec.Time)) // a generator's clock to droprun's
		}
		return ps.record(rec)
	})
	name := f.Name
	if errors.Is(err, io.ErrUnexpectedEOF) {
		sum.Warnings = append(sum.Warnings, fmt.Sprintf("%s was cut off (the run was killed while writing it?): read up to its last whole result", name))
		err = nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	return nil
}

// routedBy is the hop that chose rec's web pod: a node whose kube-proxy
// rules did (path.RoutingNode), or, through a front that picks the pod
// itself, the front pod its access log names ("" when it names none).
func (in *input) routedBy(entry string, rec traffic.Record) string {
	if p := in.path.Proxy; p != nil && p.PicksPod {
		h, _ := in.frontLog.hop(rec.RequestID())
		return h.pod
	}
	return in.path.RoutingNode(entry, rec, in.podNodes)
}

// unseenHop says why a run whose client sent to target (TrafficInfo.URL)
// has a hop it cannot time: a host beyond this machine is the user's own
// load balancer or ingress (--allow-target). "" for 127.0.0.1, where
// every front is one droprun deployed and reads.
func unseenHop(target string) string {
	u, err := url.Parse(target)
	if err != nil || u.Hostname() == "" || u.Hostname() == "localhost" {
		return ""
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsLoopback() {
		return ""
	}
	return fmt.Sprintf("per-hop times unavailable: the requests went to %s, a load balancer or ingress droprun did not deploy; "+
		"it cannot read when that front stopped sending to each pod, or which pod it chose for a request, so no drop is timed or explained "+
		"at that hop (docs/real-clusters.md: the load balancer's leg of the race)", u.Host)
}

// The hops a failure is charged to when none chose its pod by name.
const (
	// HopBeforeFront: through a front that picks the pod itself, a
	// failure its access log has no line for: the front did not fail it,
	// the way to the front did (or its log missed the line).
	HopBeforeFront = "before the front (no failed line in its log)"
	// HopFrontAnswered: a failure the front's access log says it
	// answered 2xx: the pod answered, and the front got the request too
	// late (a starved front reads it after the client gave up) or its
	// answer was lost on the way back (WhyFrontAnswered).
	HopFrontAnswered = "the front answered it 2xx (the client never received the answer)"
	// HopUnknown: the node whose rules chose the pod is not known.
	HopUnknown = "hop not known"
)

// hopOf names the hop routedBy is (see Failure.Hop) for the failed
// request rec.
func (in *input) hopOf(routedBy string, rec traffic.Record) string {
	front := in.path.Proxy != nil && in.path.Proxy.PicksPod
	switch {
	case routedBy == "" && front && in.frontLog.answeredOK(rec.RequestID()):
		return HopFrontAnswered
	case routedBy == "" && front:
		return HopBeforeFront
	case routedBy == "":
		return HopUnknown
	case front:
		return "front pod " + routedBy
	default:
		return "node " + routedBy
	}
}

// record adds one request: to the rollout timelines, its window's tally by
// entry node, and, when it failed, to the failures with its attribution.
func (ps *pass) record(rec traffic.Record) error {
	in, tl := ps.in, ps.tl
	for _, s := range ps.series {
		s.Hist.Add(rec.Time.Sub(s.Rollout.Start), rec.Class)
	}
	w := tl.AddRecord(rec)
	resends := 0
	if in.frontLog.anyResent() {
		if resends = in.frontLog.resends(rec.RequestID()); resends > 0 {
			tl.addResent(w, !rec.Class.Failed())
		}
	}
	node := in.entryNode(rec.URL)
	if node == "" && in.path.Inside {
		// East-west: the sending pod's own node's rules routed it.
		node = ps.gens.node(rec.Origin, rec.Time)
	}
	k := -1
	if w >= 0 && tl.Windows[w].Phase == PhaseRollout {
		k = ps.byN[tl.Windows[w].Rollout]
		if node != "" {
			rs := &ps.rollouts[k]
			if rs.ByNode == nil {
				rs.ByNode = map[string]Tally{}
			}
			t := rs.ByNode[node]
			t.AddRecord(rec)
			rs.ByNode[node] = t
		}
	}
	if !rec.Class.Failed() {
		return nil
	}
	fl := Failure{Time: rec.Time, Variant: ps.variant, Phase: "outside", Class: rec.Class, Code: rec.Code, Error: rec.Error,
		Latency: rec.Latency.Seconds(), Node: node, Origin: rec.Origin, Via: rec.Via, RoutedBy: in.routedBy(node, rec), FrontResends: resends}
	fl.Hop = in.hopOf(fl.RoutedBy, rec)
	if w >= 0 {
		fl.Phase, fl.Rollout = tl.Windows[w].Phase, tl.Windows[w].Rollout
	}
	d, found := nearest(in.deletions, rec.Time)
	if found {
		fl.NearestDeletion, fl.SinceDeletion = d.pod, rec.Time.Sub(d.t).Seconds()
	}
	if k >= 0 {
		ps.rolloutFailure(k, &fl, rec, d, found)
	}
	if in.failure != nil {
		return in.failure(fl)
	}
	return nil
}

// rolloutFailure adds a failure inside rollout k's window: excused when it
// was a timeout in flight while the client stalled, else explained by a
// race window (or not), and binned by time since the latest deletion d.
func (ps *pass) rolloutFailure(k int, fl *Failure, rec traffic.Record, d deletion, found bool) {
	rs := &ps.rollouts[k]
	if rs.ByHop == nil {
		rs.ByHop = map[string]uint64{}
	}
	rs.ByHop[fl.Hop]++
	// A client's stall (its pacing in the rig samples) excuses the host
	// client's own requests only, a generator pod's its own only; a
	// node's, every request's.
	if rec.Class == traffic.ClassTimeout {
		w := ps.in.stalls.during(rec.Time, rec.End())
		if rec.Origin != traffic.HostOrigin && rec.Origin != "" {
			w.client = 0
			w = w.max(ps.gens.stalled(rec.Origin, rec.Time, rec.End()))
		}
		if w != (stallWhy{}) {
			fl.Excused = true
			rs.Excused++
			ps.excusedWhy[k] = ps.excusedWhy[k].max(w)
		}
	}
	if !fl.Excused {
		fl.Explained, fl.RacePod = ps.ex.explain(rs.N, fl.RoutedBy, ps.in.path.Proxy != nil, rec, ps.gens.clockBound(rec.Origin, rec.Time))
	}
	if found && !d.t.Before(rs.Start) {
		ps.since[k].Add(rec.Time.Sub(d.t), rec.Class)
	} else {
		ps.noDeletion[k]++
	}
}

// addServerView sets the pods' own view on every row, and flags the 2xx
// the pods answered that the client never received beyond what the race
// and the tails account for: an answer can hide behind a timeout, reset
// or EOF that a race window explains (a request delayed or cut by the
// rollout), or behind one in a tail, which counts toward no drop; answers
// beyond those came while the client (or the rig under it) gave up inside
// a window for no reason of the rollout's, so its drops may be overstated.
func (in *input) addServerView(rows []VariantSummary, p *plan, tl *Timeline) {
	server := in.serverView(p, tl)
	var raced, tail uint64 // the variant's race-explained and tail timeouts, resets and EOFs
	for _, row := range rows {
		if row.Explained != nil {
			raced += row.Explained.Answerable
		}
		for _, c := range answerable {
			tail += row.Tail.Classes[c]
		}
	}
	var failed uint64 // every timeout, reset and EOF the client had
	for _, t := range append(append([]Tally(nil), tl.Tallies...), tl.Outside) {
		for _, c := range answerable {
			failed += t.Classes[c]
		}
	}
	if server != nil && server.Exact() && server.Lost > raced+tail {
		// What no failure of the client's is left to hide is not the
		// client giving up: the pods answered it twice.
		if hideable := failed - min(failed, raced); server.Lost-raced-tail > hideable {
			server.Unhidden = server.Lost - raced - tail - hideable
		}
	}
	for k := range rows {
		rows[k].Server = server
		if c := in.custom(); server == nil && c != nil && c.Metrics == nil {
			rows[k].NoServerView = NoCustomMetrics
		}
		if server != nil && server.Exact() && server.Lost-server.Unhidden > raced+tail {
			rows[k].Unreceived = server.Lost - server.Unhidden - raced - tail
			rows[k].Suspect = append(rows[k].Suspect, fmt.Sprintf("the pods answered %d 2xx that the client never received, more than the %d timeouts, resets and EOFs a race window explains and the %d in the tails (the client gave up on answers that came)", server.Lost-server.Unhidden, raced, tail))
		}
	}
}

// rowSeries splits the rollouts' series by row, the way rows split the
// rollouts.
func (ps *pass) rowSeries(rows []VariantSummary) []*RowSeries {
	var out []*RowSeries
	for _, row := range rows {
		rsr := &RowSeries{Row: row.Variant, Since: Sparse{}}
		for _, rs := range row.Rollouts {
			k := ps.byN[rs.N]
			s := ps.series[k]
			s.Row = row.Variant
			rsr.Rollouts = append(rsr.Rollouts, s)
			rsr.NoDeletion += ps.noDeletion[k]
			rsr.Since.Merge(ps.since[k])
		}
		out = append(out, rsr)
	}
	return out
}

// rolloutSeries prepares the timeline of rs.
func (in *input) rolloutSeries(rs *RolloutSummary, tl *Timeline) *RolloutSeries {
	end := rs.WindowEnd
	closed := !end.IsZero()
	if !closed {
		// Never closed (interrupted): up to where the timeline says it ends.
		for k, w := range tl.Windows {
			if w.Phase == PhaseRollout && w.Rollout == rs.N {
				end = tl.Windows[k].End
			}
		}
	}
	// variant replaces Rollout with the finished summary once rows has
	// filled it in; until then its Start is what requests are binned
	// against.
	s := &RolloutSeries{Rollout: *rs, End: end.Sub(rs.Start), Closed: closed}
	s.Hist = NewHist(-TimelinePad, s.End+TimelinePad)
	from, to := rs.Start.Add(-TimelinePad), end.Add(TimelinePad)
	s.Rig = RigBetween(in.rig, from, to)
	for _, e := range in.events {
		if e.Time.Before(from) || e.Time.After(to) || !slices.Contains(MarkerKinds, e.Kind) {
			continue
		}
		if e.Kind == timeline.KindKubeProxySynced {
			if _, changed := programmingLatency(e); !changed {
				continue
			}
		}
		s.Markers = append(s.Markers, Marker{Kind: e.Kind, Node: e.Node, X: e.Time.Sub(rs.Start).Seconds()})
	}
	return s
}
