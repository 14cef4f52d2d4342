package analysis

import (
	"time"

	"github.com/droprun/droprun/harness/traffic"
)

// Route sources: how a node's stop of routing to a pod was seen.
const (
	// RouteSourceDataPlane is the node's own rules, watched inside the
	// node (harness/dataplane): millisecond resolution.
	RouteSourceDataPlane = "data-plane"
	// RouteSourceKubeProxy is the node's first kube-proxy sync after the
	// endpoint change, read from its metrics by polling (the fallback on
	// clusters droprun cannot look inside): the poll interval's resolution.
	RouteSourceKubeProxy = "kube-proxy-sync"
	// RouteSourceFront is a front pod's own list of the pods it sends to
	// (Traefik's API, read every 20 ms, or Caddy's log of its DNS
	// refreshes: front.* events): the pair's Node is then that front pod,
	// the hop that chose the pod. A front's pair has it even when its stop
	// was not seen (Unrouted < 0), so the pair's hop is always known.
	RouteSourceFront = "front-api"
)

// RouteGap is one (old pod, node) pair of a rollout: when that node stopped
// routing new connections to the pod, beside when the pod got SIGTERM and
// closed its listener. Times are seconds after the pod's deletion request
// (droprun's clock, shared by the kind nodes); -1 means not seen.
type RouteGap struct {
	Rollout int    `json:"rollout"`
	Pod     string `json:"pod"`
	IP      string `json:"ip,omitempty"`
	Node    string `json:"node"`
	// Deleted is when the pod's deletion was requested.
	Deleted time.Time `json:"deleted"`
	// Unrouted is when this node stopped routing to the pod, and Source
	// how that was seen (RouteSourceDataPlane, RouteSourceKubeProxy, or
	// RouteSourceFront when Node is a front pod).
	Unrouted float64 `json:"unroutedSeconds"`
	Source   string  `json:"source,omitempty"`
	// UnroutedResolution is how closely Unrouted is placed, for a front
	// pod: the stop came between the start of the last reading that still
	// had the pod (its API read, or its DNS lookup) and the end of the
	// first that did not (Unrouted), this many seconds apart. 0 when exact
	// or not known.
	UnroutedResolution float64 `json:"unroutedResolutionSeconds,omitempty"`
	// UnroutedRequests, for a front pod's stop placed by a bracket, is
	// how many requests the front pod started inside it, to any pod (at
	// most 16,384), by its access log: those it might have sent to the
	// pod had it not stopped yet. A wide bracket that holds few is the
	// front's own pause, which no reading can narrow and no request
	// depends on. Nil without an access log.
	UnroutedRequests *int `json:"unroutedRequests,omitempty"`
	// SIGTERM and ListenerClosed are the app's own account (bookshop's
	// termination message), when AppTimes says it gave one: when its
	// process got SIGTERM and when it closed its listening socket. Either
	// can be negative: with no preStop the kubelet can signal the pod
	// before droprun's watch sees the deletion. -1 when not AppTimes.
	AppTimes       bool    `json:"appTimes"`
	SIGTERM        float64 `json:"sigtermSeconds"`
	ListenerClosed float64 `json:"listenerClosedSeconds"`
	// Exited is when the container finished, by the kubelet (whole
	// seconds): with SIGTERM, how long the app took to exit. Set with
	// AppTimes, -1 otherwise.
	Exited float64 `json:"exitedSeconds"`
	// CloseSource says where ListenerClosed comes from: CloseFromApp (the
	// app's own record) or CloseFromProbe (droprun's prober, from outside,
	// for an app that records none; CloseResolution is then how long
	// before the first failed connect one last succeeded, 0 when none
	// did). Empty when the close is not known.
	CloseSource     string  `json:"closeSource,omitempty"`
	CloseResolution float64 `json:"closeResolutionSeconds,omitempty"`
	// Window is Unrouted − ListenerClosed: how long the node still sent
	// new connections to a closed listener. Negative: the margin that kept
	// the pair safe. Only meaningful when both are seen (Known).
	Window float64 `json:"windowSeconds"`
	// Drops are the failed requests explained by this pair's race window,
	// by class.
	Drops map[traffic.Class]uint64 `json:"drops,omitempty"`
}

// Where a pair's listener close was seen (RouteGap.CloseSource).
const (
	CloseFromApp   = "app"
	CloseFromProbe = "probe"
)

// CloseKnown reports whether the pod's listener close is known, from the
// app or from outside.
func (g RouteGap) CloseKnown() bool { return g.AppTimes || g.CloseSource != "" }

// Known reports whether the pair's race window is measured: both the
// node's stop of routing and the pod's listener close were seen.
func (g RouteGap) Known() bool { return g.Unrouted >= 0 && g.CloseKnown() }

// Explained is how a rollout's drops split between the (pod, node) race
// windows that account for them and the rest.
type Explained struct {
	// Explained drops fell inside the race window of a pod that the node
	// routing them (path.RoutingNode: the entry node directly, the proxy
	// pod's node through a proxy) still routed to after its listener
	// closed.
	Explained uint64 `json:"explained"`
	// Conntrack drops were left by a stale conntrack entry: sent after
	// the node that routed them had stopped routing to every pod the
	// rollout deleted, of a class that gets no answer (a timeout; through
	// a proxy, a 502 after its dial to the dead pod timed out), on a node
	// whose conntrack flush after the rollout cleared stale SYN_SENT
	// entries. A new connection that reuses the source port of an earlier
	// one to a dead pod matches that entry and goes to the dead pod again,
	// whatever the rules say. A client with a reconnect backoff (gRPC)
	// shows it as refusals: its channel's attempt hangs on the stale entry
	// while its calls fail with the refusal before; where the channels
	// were recorded, the call must have failed while its channel's
	// attempt went unanswered for a second or more. Counted apart from
	// Explained.
	Conntrack uint64 `json:"conntrack,omitempty"`
	// Backoff drops were a gRPC channel's reconnect backoff after a race,
	// as the channel's recorded states (grpc.channel events) show: a
	// refusal (or an UNAVAILABLE without a cause) on a channel in
	// TRANSIENT_FAILURE whose failed connection attempt overlapped a race
	// window on the node that routed the call. Such a channel fails its
	// calls with that attempt's error until it is READY again, through
	// its next attempt too (pick_first's sticky TRANSIENT_FAILURE, gRFC
	// A62), unless that attempt hangs (then Conntrack). Runs recorded
	// before droprun watched channels have none. Counted apart from
	// Explained.
	Backoff uint64 `json:"backoff,omitempty"`
	// Cut drops were resets or EOFs of requests sent before a pod's
	// listener closed, inside its race window (through a front that logs
	// its errors, 502s whose front error was a reset, an EOF or a reused
	// idle connection closed): in flight
	// when the close (or the process's exit) cut them, not sent to a
	// closed listener by a node's stale rules. Counted apart from
	// Explained.
	Cut uint64 `json:"cut,omitempty"`
	// FrontErrors counts, through a front that logs why it failed a
	// request (Caddy), the drops tried against race windows (explained
	// or not) by the front's error: what the pod did to the front's request, classified
	// as the client's errors are (traffic.Classify).
	FrontErrors map[traffic.Class]uint64 `json:"frontErrors,omitempty"`
	// Slow drops timed out on a new connection the pod itself had
	// accepted (traffic.Accepted, on a direct path only): the pod was listening and did not answer in
	// time, so no rule sent them to it after its listener closed; not the
	// race, whatever window they fall in. Counted apart from Explained.
	Slow uint64 `json:"slow,omitempty"`
	// Answerable counts the Explained, Conntrack and Cut drops of a class
	// a pod's answer can hide behind (a timeout, reset or EOF): the race
	// may have let the pod answer them as the client gave up.
	Answerable uint64 `json:"answerable,omitempty"`
	// Unexplained drops found no such window; Why counts their reasons
	// (the Why* constants).
	Unexplained uint64            `json:"unexplained"`
	Why         map[string]uint64 `json:"why,omitempty"`
	// Chance is what race windows would explain by chance; nil when no
	// failure was matched against a window.
	Chance *Chance `json:"chance,omitempty"`
}

// FrontAnswered is how many of the unexplained drops the front answered
// 2xx (its access log): late, lost, or either.
func (e *Explained) FrontAnswered() uint64 {
	if e == nil {
		return 0
	}
	return e.Why[WhyFrontLate] + e.Why[WhyFrontLost] + e.Why[WhyFrontAnswered]
}

// Chance is the explained share's chance baselines: of the Tried failures
// matched against race windows, how many (the mean over draws) a window
// would explain with the routing nodes shuffled among them, and with
// their send times shifted by a random 0.5–5 s. Windows that explain
// drops for a reason explain far fewer of these.
type Chance struct {
	Tried         uint64  `json:"tried"`
	NodesShuffled float64 `json:"nodesShuffled"`
	TimesShifted  float64 `json:"timesShifted"`
	// BackoffShifted is, for a gRPC client, how many of the failures
	// tried outside every race window the backoff would account for with
	// their channels' failed attempts shifted by the same random
	// 0.5–5 s: Explained.Backoff by chance. (Shifting the calls instead
	// would measure nothing: a call's channel state is read, not matched,
	// and a call in a race window shifted later lands in the backoff that
	// window caused.) 0 for a client without channels.
	BackoffShifted float64 `json:"backoffShifted,omitempty"`
	// Bursts is how many bursts the tried failures make (one node's
	// failures less than 250 ms apart), BurstsExplained how many of them
	// a race window explains (at the burst's median failure); PShifted and
	// PShuffled are the permutation p-values that as many or more would be
	// explained with the send times shifted 0.5–5 s, or the bursts' nodes
	// shuffled (199 draws each; 0.005 at the least). The burst is the
	// unit: hundreds of drops of one burst are one observation.
	Bursts          uint64  `json:"bursts,omitempty"`
	BurstsExplained uint64  `json:"burstsExplained,omitempty"`
	PShifted        float64 `json:"pShifted,omitempty"`
	PShuffled       float64 `json:"pShuffled,omitempty"`
}

// SweepPoint says which value of a swept workload field a row measured.
type SweepPoint struct {
	// Field is the workload field swept, as written in the scenario
	// (e.g. preStopSeconds, drainDelay).
	Field string `json:"field"`
	// Value is the value as written (e.g. "3", "500ms"), and Number the
	// same in the field's unit for plots (seconds for durations).
	Value  string  `json:"value"`
	Number float64 `json:"number"`
	// Group is the name of the scenario entry that was swept: the rows of
	// one sweep share it.
	Group string `json:"group"`
}
