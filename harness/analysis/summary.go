package analysis

import (
	"slices"
	"strings"
	"time"

	"github.com/droprun/droprun/harness/traffic"
	"github.com/droprun/droprun/harness/variant"
)

// SummaryVersion is the version of summary.json's format.
const SummaryVersion = "droprun.summary/v2"

// Summary is summary.json: what a run measured, one record per variant
// row. It is derived from the raw data by Analyze and never read back.
type Summary struct {
	Format string `json:"format"`
	// Facts come from run.json: where, when and how the run ran.
	Facts
	Variants []VariantSummary `json:"variants"`
	// Suspect lists the reasons the run's numbers should not be trusted
	// (a control window with failures, a client that could not hold its
	// rate...). Empty when the measurement is clean.
	Suspect []string `json:"suspect,omitempty"`
	// Warnings are problems with the raw data that did not stop the
	// analysis (a results file cut off by a crash, a missing run.json).
	Warnings []string `json:"warnings,omitempty"`
	// Unseen says which hop of the requests' path the run could not time,
	// and why: the requests went to a load balancer or ingress droprun
	// did not deploy (cluster.existing.url), whose own list of pods and
	// log it cannot read. Empty when it deployed every front it sent
	// through.
	Unseen string `json:"unseen,omitempty"`
}

// VariantSummary is one row: a variant's rollouts and what they dropped.
type VariantSummary struct {
	// Variant is the row name. A variant with `from` gives two rows: the
	// rollout that introduced it (Name + "/introducing") and the later ones.
	Variant string `json:"variant"`
	// Builtin is the built-in variant the scenario asked for ("" for a
	// custom app).
	Builtin string `json:"builtin,omitempty"`
	// Requests is every request sent while this variant was measured
	// (control, rollout windows and tails), counted once per row's
	// results file; Sent is the same as the sum of every window's tally,
	// and equals what `vegeta report` counts in the results file.
	Requests uint64 `json:"requests"`
	// Drops are the non-2xx outcomes inside this row's rollout windows.
	Drops uint64 `json:"drops"`
	// WindowRequests are the requests inside this row's rollout windows.
	WindowRequests uint64 `json:"windowRequests"`
	// Classes counts every outcome class inside the rollout windows.
	Classes map[traffic.Class]uint64 `json:"classes"`
	// Masked is how many drops connection reuse masked inside the rollout
	// windows: requests net/http retried on another connection after a
	// failure on a reused one, without telling the client, and that the
	// retry served. They are 2xx, not Drops; MaskedClasses counts them by
	// the class of the failure hidden (see Tally.Masked, and the rollouts'
	// windows and tails for where they fell). Absent when none.
	Masked        uint64                   `json:"masked,omitempty"`
	MaskedClasses map[traffic.Class]uint64 `json:"maskedClasses,omitempty"`
	// FrontResent and FrontMasked are the rollout windows' requests the
	// front resent after the pod it picked did not answer, and those of
	// them the client was served (Tally.FrontResent): the front's retries
	// hid FrontMasked refusals from the client. Absent without retries.
	FrontResent uint64 `json:"frontResent,omitempty"`
	FrontMasked uint64 `json:"frontMasked,omitempty"`
	// RolloutsWithDrops is how many of the rollouts dropped anything.
	RolloutsWithDrops int `json:"rolloutsWithDrops"`
	// Control is the steady-state window before the first rollout.
	Control Tally `json:"control"`
	// ControlRig is the rig's load during the control window.
	ControlRig *RigSummary `json:"controlRig,omitempty"`
	// SaturatedRollouts counts the rollouts during which the rig was short
	// of CPU at some point (RigSummary.Saturated).
	SaturatedRollouts int `json:"saturatedRollouts"`
	// Excused counts the window timeouts sent while the client itself was
	// stalled (see the package documentation), with the evidence per
	// rollout in RolloutSummary.ExcusedWhy. Measurable is the windows'
	// tally without them: what the variant dropped.
	Excused    uint64 `json:"excused"`
	Measurable Tally  `json:"measurable"`
	// ExpectedFloor is the failures the rollout windows would show at the
	// control window's failure rate: drops near it are the rig's noise.
	ExpectedFloor float64 `json:"expectedFloor"`
	// Tail counts failures after rollout windows closed (the conntrack
	// tail), apart from the drops.
	Tail Tally `json:"tail"`
	// Outside counts requests outside every window (normally none).
	Outside Tally `json:"outside"`
	// ByNode tallies the rollout windows' requests by the node they
	// entered the cluster through (empty when the entry is not known).
	ByNode map[string]Tally `json:"byNode,omitempty"`
	// ByHop counts the rollout windows' drops by the hop that chose their
	// pod (RolloutSummary.ByHop, summed).
	ByHop    map[string]uint64 `json:"byHop,omitempty"`
	Rollouts []RolloutSummary  `json:"rollouts"`
	Client   ClientSummary     `json:"client"`
	// Gaps are, per pod deleted by this row's rollouts, the time from
	// deletion requested to its endpoint leaving the slice and to each
	// node's kube-proxy syncing after that.
	Gaps []Gap `json:"gaps,omitempty"`
	// Server sets the pods' own count of what they answered beside the
	// client's, over the variant's whole traffic.
	Server *ServerView `json:"server,omitempty"`
	// NoServerView says why there is no Server: a custom app without
	// app.custom.metrics exports nothing droprun was told to read.
	NoServerView string `json:"noServerView,omitempty"`
	// Unreceived is the 2xx the pods answered that the client never
	// received beyond those a race window or a tail accounts for (Server's
	// Lost less them; 0 when the pods' count is not exact). They hid behind
	// timeouts, resets or EOFs of this row's windows outside every race
	// window: up to that many of those drops may be the rig's (the client,
	// or the host's path to the cluster, giving up on answers that came),
	// not the variant's.
	Unreceived uint64 `json:"unreceived,omitempty"`
	// Sweep is the value of the swept field this row measured (nil
	// unless the scenario sweeps one).
	Sweep *SweepPoint `json:"sweep,omitempty"`
	// Routes are, per pod deleted by this row's rollouts and per node,
	// when the node stopped routing to it beside the pod's own SIGTERM
	// and listener close (see RouteGap).
	Routes []RouteGap `json:"routes,omitempty"`
	// Explained splits the rollout windows' drops into those a (pod,
	// node) race window explains and the rest.
	Explained *Explained `json:"explained,omitempty"`
	// Idle is the order of the client's and the app's idle timeouts for
	// kept-alive connections, and the idle-closed requests it cost; nil
	// where the client keeps no connection idle for reuse.
	Idle *IdleOrder `json:"idle,omitempty"`
	// Clocks are the clocks of the nodes generator pods sent from
	// (traffic.generators: pods), by node.
	Clocks []NodeClock `json:"generatorClocks,omitempty"`
	// HookFailures are Warning events such as FailedPreStopHook.
	HookFailures []string `json:"hookFailures,omitempty"`
	Suspect      []string `json:"suspect,omitempty"`
	// Intervals are the row's rates with the intervals the views show,
	// computed once, by IntervalsOf. They are not written to
	// summary.json, which keeps the tallies they are computed from.
	Intervals RowIntervals `json:"-"`
}

// ServerView is the client's view and the pods' view of one variant's
// traffic, side by side. The pods count from their own counters (scraped
// through the API server, and written by each pod as it exits into its
// termination message), probes and scrapes left out.
type ServerView struct {
	// ClientSent and ClientGot2xx are the requests the client sent and
	// the 2xx responses it got.
	ClientSent   uint64 `json:"clientSent"`
	ClientGot2xx uint64 `json:"clientGot2xx"`
	// PodsAnswered and PodsAnswered2xx are the requests the pods say they
	// answered. More 2xx answered than got means answers lost on the way
	// (Lost); fewer means the pods' counts are incomplete (see Uncertain).
	PodsAnswered    int `json:"podsAnswered"`
	PodsAnswered2xx int `json:"podsAnswered2xx"`
	// Lost is the 2xx the pods answered that the client never received
	// (PodsAnswered2xx − ClientGot2xx when positive).
	Lost uint64 `json:"lost"`
	// Unhidden is the part of Lost (which counts it) that no failed request of the
	// client's could hide: the client had no timeout, reset or EOF left
	// for it. Those are not drops but requests a pod answered twice (a
	// proxy re-sends a request when a reused connection closes under it)
	// or that the client did not send; they make no row suspect.
	Unhidden uint64 `json:"unhidden,omitempty"`
	// Pods is the pods that answered the client; PodsFinal those whose
	// count ends with their own exit totals; Uncertain the pods whose
	// count is not exact.
	Pods         int `json:"pods"`
	PodsFinal    int `json:"podsFinal"`
	Uncertain    int `json:"uncertain"`
	ScrapeErrors int `json:"scrapeErrors"`
	// Unread is the failed scrapes of pods droprun never read at all: what
	// they answered is missing from the count. A failed scrape of a pod
	// read before or after it costs nothing: its counters only grow, and
	// its last reading (or its exit totals) holds everything.
	Unread int `json:"unread,omitempty"`
	// Counter is, for a custom app, the counter the pods were counted by
	// (app.custom.metrics), e.g. http_requests_total{path="version"}; ""
	// for bookshop, counted by its own metrics and exit totals.
	Counter string `json:"counter,omitempty"`
	// Scrapes is, for a custom app, the successful scrapes of the pods
	// while the traffic ran; CounterMissing those whose metrics lacked the
	// counter (all of them: a counter name the app does not expose).
	// ScrapeError is the last failed scrape's error (a wrong codeLabel
	// fails every scrape).
	Scrapes        int    `json:"scrapes,omitempty"`
	CounterMissing int    `json:"counterMissing,omitempty"`
	ScrapeError    string `json:"scrapeError,omitempty"`
	// LowerBound is the pods whose count ends with a scrape taken before
	// they exited (no exit totals, as for every custom app): the requests
	// they answered after that scrape are not counted, so the pods' count
	// is a lower bound.
	LowerBound int `json:"lowerBound,omitempty"`
	// InFlightAtExit is, for pods whose exit totals are not sealed (older
	// bookshop images), the requests in flight (or connections open) when
	// they read them: such a pod may have sent those answers uncounted, so
	// the pods' 2xx can be short of the client's by up to this many.
	InFlightAtExit int `json:"inFlightAtExit,omitempty"`
}

// Exact reports whether the pods' count is exact: every pod's count
// either ends with its exit totals or with a scrape after traffic stopped
// (no LowerBound), every pod was read (no Unread), and every pod that
// exited sealed its totals or had nothing in flight.
func (s *ServerView) Exact() bool {
	return s != nil && s.Uncertain == 0 && s.Unread == 0 && s.InFlightAtExit == 0 && s.LowerBound == 0
}

// RolloutSummary is one rollout.
type RolloutSummary struct {
	N    int    `json:"n"`
	From string `json:"from"`
	To   string `json:"to"`
	// MeasuredVariant is the variant a live pod was before the rollout
	// (the pod template when none ran), detected from its fields: the
	// pods this rollout deletes.
	MeasuredVariant string `json:"measuredVariant"`
	// LiveTemplate describes what was found in that pod's spec.
	LiveTemplate string `json:"liveTemplate"`
	// LivePods are the shutdown settings of the container under test in a
	// live pod of the current ReplicaSet, or in the pod template when none
	// ran, as LivePods.Pod and FromTemplate say (preStop, grace period,
	// readiness probe): what the pods this rollout deleted did. Absent in
	// runs recorded before droprun read them.
	LivePods *variant.PodFacts `json:"livePods,omitempty"`
	Start    time.Time         `json:"start"`
	// Complete is when the rollout was done and the old pods were gone.
	Complete time.Time `json:"complete"`
	// OldPodsGone is when the last pod this rollout deleted was gone, as
	// the pod informer saw it (zero when not seen).
	OldPodsGone time.Time `json:"oldPodsGone,omitzero"`
	WindowEnd   time.Time `json:"windowEnd"`
	// WindowExtended is true when the run closed the window while an old
	// pod still existed: the analysis moved its end to that pod's removal
	// plus settle, so its drops are not lost to the tail.
	WindowExtended bool   `json:"windowExtended,omitempty"`
	Duration       string `json:"duration"`
	Window         Tally  `json:"window"`
	Tail           Tally  `json:"tail"`
	// Excused counts the window's timeouts sent while the client was
	// stalled; ExcusedWhy is the evidence.
	Excused    uint64 `json:"excused,omitempty"`
	ExcusedWhy string `json:"excusedWhy,omitempty"`
	// ByNode tallies the window's requests by entry node.
	ByNode map[string]Tally `json:"byNode,omitempty"`
	// ByHop counts the window's drops by the hop that chose their pod
	// (Failure.Hop): a node's kube-proxy rules or a front pod's own list.
	ByHop map[string]uint64 `json:"byHop,omitempty"`
	// SlowestNode is the node whose kube-proxy synced last after the
	// rollout's endpoint changes, and SlowestSync how long after the
	// deletion request (seconds): it set the race window.
	SlowestNode string  `json:"slowestNode,omitempty"`
	SlowestSync float64 `json:"slowestSyncSeconds,omitempty"`
	// ProgrammingLatency is the highest network programming latency any
	// kube-proxy reported for the syncs inside the window (seconds, its
	// own metric; 0 when not recorded): whether the rig slowed the system
	// under test.
	ProgrammingLatency float64 `json:"programmingLatencySeconds,omitempty"`
	// ConntrackFlushed is the stale SYN_SENT entries deleted per node
	// after this rollout's window closed (kind clusters only).
	ConntrackFlushed map[string]int `json:"conntrackFlushed,omitempty"`
	// BaselineWait is how long the run waited for a clean baseline before
	// the next rollout; BaselineClean false means it never got one.
	BaselineWait  string `json:"baselineWait,omitempty"`
	BaselineClean bool   `json:"baselineClean"`
	// Incomplete says why requests of this rollout's window may be
	// missing: a generator pod was gone or silent during it (its gap);
	// "" for a whole window.
	Incomplete string `json:"incomplete,omitempty"`
	// Rig is the rig's load during the window (absent in runs recorded
	// before droprun sampled it).
	Rig *RigSummary `json:"rig,omitempty"`
	// Balance is how the pods' answers spread over the new pods in the
	// span after the rollout completed (traffic.balance); absent when not
	// measured.
	Balance *Balance `json:"balance,omitempty"`
	// Explained splits this window's drops by cause (see
	// VariantSummary.Explained).
	Explained *Explained `json:"explained,omitempty"`
}

// ClientSummary is how well the traffic client held its rate.
type ClientSummary struct {
	AskedRate        float64  `json:"askedRate"`
	AchievedRate     float64  `json:"achievedRate"`
	CPU              float64  `json:"cpu"`
	WorkersExhausted bool     `json:"workersExhausted"`
	Suspect          []string `json:"suspect,omitempty"`
}

// Gap is one deleted pod's way out of the traffic path, in seconds from
// its deletion request (-1: not seen).
type Gap struct {
	Pod             string  `json:"pod"`
	EndpointUnready float64 `json:"endpointUnreadySeconds"`
	EndpointRemoved float64 `json:"endpointRemovedSeconds"`
	// KubeProxySynced is, per node, the first kube-proxy sync after the
	// endpoint change (resolution: the kube-proxy poll interval).
	KubeProxySynced map[string]float64 `json:"kubeProxySyncedSeconds,omitempty"`
}

// Failure is one failed request, attributed (failures.jsonl).
type Failure struct {
	Time    time.Time     `json:"t"`
	Variant string        `json:"variant"`
	Phase   Phase         `json:"phase"`
	Rollout int           `json:"rollout,omitempty"`
	Class   traffic.Class `json:"class"`
	Code    uint16        `json:"code"`
	Error   string        `json:"error,omitempty"`
	Latency float64       `json:"latencySeconds"`
	// Node is the node the request entered the cluster through.
	Node string `json:"node,omitempty"`
	// Origin is the load source that sent it (traffic.Record.Origin).
	Origin string `json:"origin,omitempty"`
	// Via is the proxy pod the request went through (traffic.Record.Via),
	// and RoutedBy the node whose kube-proxy rules chose its web pod: Node
	// on a direct path, the proxy pod's node through a proxy
	// (path.RoutingNode); empty when not known.
	Via      string `json:"via,omitempty"`
	RoutedBy string `json:"routedBy,omitempty"`
	// Hop names the hop that failed it, for the rollouts' ByHop: "node
	// X" (X's kube-proxy rules chose the pod), "front pod X" (a front
	// that picks the pod itself, from its access log), HopBeforeFront,
	// HopFrontAnswered or HopUnknown.
	Hop string `json:"hop,omitempty"`
	// FrontResends is how many times the front resent the request to
	// a pod before it gave up (traffic.frontRetries): every try
	// failed. 0 when it sent it once.
	FrontResends int `json:"frontResends,omitempty"`
	// Excused is true for a timeout sent while the client was stalled.
	Excused bool `json:"excused,omitempty"`
	// Explained is how a rollout window's failure was accounted for: a
	// race window (RacePod's, on RoutedBy), cut by a close, a stale
	// conntrack entry (the Accounted* constants), or why it is not (the
	// Why* reasons); empty when it was not tried (excused, or a run
	// without route data).
	Explained string `json:"explained,omitempty"`
	RacePod   string `json:"racePod,omitempty"`
	// NearestDeletion is the last pod deletion requested before the
	// request was sent, and SinceDeletion how long before.
	NearestDeletion string  `json:"nearestDeletion,omitempty"`
	SinceDeletion   float64 `json:"sinceDeletionSeconds,omitempty"`
}

// Accounted counts the requests of one scenario variant's results file as
// the rows place them: in windows (control, outside, and every rollout's
// window and tail, over both rows of a variant with `from`) and by class.
// Both equal the requests in the file (VariantSummary.Requests): every
// request is in exactly one window and of exactly one class.
func (s *Summary) Accounted(variant string) (inWindows, byClass uint64) {
	first := true
	for _, row := range s.Variants {
		if RowVariant(row.Variant) != variant {
			continue
		}
		tallies := []Tally{}
		if first { // the rows of one variant share its control and outside
			tallies = append(tallies, row.Control, row.Outside)
			first = false
		}
		for _, r := range row.Rollouts {
			tallies = append(tallies, r.Window, r.Tail)
		}
		for _, t := range tallies {
			inWindows += t.Requests
			for _, n := range t.Classes {
				byClass += n
			}
		}
	}
	return inWindows, byClass
}

// NodeClock is what a run knows of the clock of one node generator pods
// sent from, against droprun's own.
type NodeClock struct {
	Node string `json:"node"`
	// Estimates counts the estimates (at each generator's start and
	// stop); 0 for a node whose clock was never estimated (a replacement
	// placed there), where its drops are not placed in race windows.
	Estimates int `json:"estimates"`
	// Offset is the estimate furthest from droprun's clock, Bound the
	// widest error bound, seconds.
	Offset float64 `json:"offsetSeconds"`
	Bound  float64 `json:"boundSeconds"`
	// Corrected says its requests' times were corrected by the estimates
	// (some estimate was off by more than its bound); Shared that the
	// node shares droprun's clock (kind), so nothing needed correcting.
	Corrected bool `json:"corrected,omitempty"`
	Shared    bool `json:"shared,omitempty"`
}

// SuspectOf is why row v's numbers should not be trusted: the run's notes
// (less those that only repeat the row's own, which the run prefixes with
// its name) and the row's.
func (s *Summary) SuspectOf(v VariantSummary) []string {
	out := slices.DeleteFunc(slices.Clone(s.Suspect), func(note string) bool {
		own, ok := strings.CutPrefix(note, v.Variant+": ")
		return ok && slices.Contains(v.Suspect, own)
	})
	return append(out, v.Suspect...)
}
