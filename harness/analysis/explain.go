package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/droprun/droprun/harness/stats"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

// Why a drop is left unexplained (Explained.Why keys).
const (
	WhyNoEntryNode = "entry node not known"
	// WhyNoProxyPod: through a proxy, a failure with no response names no
	// proxy pod, so the node whose rules chose its web pod is not known
	// (it failed before the proxy, or the client gave up while the proxy
	// still waited on its upstream).
	WhyNoProxyPod = "no proxy pod named (no response): the node that routed it is not known"
	// WhyNoProxyNode: the proxy pod named is not in the timeline.
	WhyNoProxyNode = "the proxy pod's node not known"
	WhyNoRoutes    = "no route data for the node that routed it"
	// WhyNoListenerClose: for the node that routed it, no pod the rollout
	// deleted has a known listener close (the app records none, and
	// nothing outside saw it), so no race window can be drawn.
	WhyNoListenerClose = "the app's listener close is unknown"
	// WhyNoUnroute: the node that routed it was watched, but it was never
	// seen to stop routing to any pod the rollout deleted (their routes
	// never showed in its rules), so no race window can be drawn.
	WhyNoUnroute = "the node was not seen to stop routing to the deleted pods"
	WhyOutside   = "outside every (pod, node) race window"
	// WhyClock: the generator pod that sent it ran on a node whose clock
	// droprun knows only to a bound wider than that node's narrowest race
	// window (or never estimated), so its time cannot place it in one.
	WhyClock = "the sending generator's clock is known less well than its node's race windows are wide"
	// WhyProxyOwn: a 502 from a proxy that sends through the nodes'
	// rules (the gateway), sent after the proxy pod's node had stopped
	// routing to every pod the rollout deleted, with no dial left
	// unanswered there (the flush after the rollout found no stale
	// SYN_SENT entry on that node): the network sent its dial to a live
	// pod, so the proxy failed it itself, most often a starved proxy pod
	// or node that let its dial timeout pass before it ran.
	WhyProxyOwn = "the proxy's own 502: sent after its node stopped routing to the deleted pods, with no unanswered dial there (a starved proxy)"
	// WhyFrontNoLine: through a front that picks the pod itself
	// (Traefik), the front pod that handled a request is known only from
	// its access log, and no line of it has the request's ID (the front
	// never got it, or its log was not recorded).
	WhyFrontNoLine = "not in the front's access log: the front pod that chose its pod is not known"
	// WhyFrontLate: the front's access log says it answered the request
	// 2xx (its pod answered it), after the client's request had failed
	// (timed out, most often): no shutdown refused it; the front read or
	// answered it late, the rig's (a starved front pod, node or client)
	// or the front's own delay, never a race window's.
	WhyFrontLate = "the front answered it 2xx after the client's request had failed (it read or answered it late)"
	// WhyFrontLost: the front answered it 2xx before the client's
	// request failed: the answer was lost on the way back, or the
	// client did not read it in time.
	WhyFrontLost = "the front answered it 2xx before the client's request failed: the answer was lost on the way back"
	// WhyFrontAnswered: the front answered it 2xx, within answerSlack of
	// when the client's request failed, or on a clock droprun's is not
	// known to share (a cluster other than kind), so which came first is
	// not known.
	WhyFrontAnswered = "the front answered it 2xx: it read the request after the client gave up, or the answer was lost on the way back"
)

// answerSlack is how close to the client's failure a front's answer may
// end and be said neither late nor lost: the two clocks' read-outs and
// the log's millisecond.
const answerSlack = 50 * time.Millisecond

// inFlightSlack is how far before a pod's listener closed a request may
// have been sent and still be cut by that close: a connection accepted
// just before the close, reset or cut when the process died. Refused and
// timed-out connections must be sent after the close (less this slack
// for the clocks' read-out) and before the node stopped routing.
const inFlightSlack = 50 * time.Millisecond

// routeStep is one node's route to one IP appearing or disappearing (or
// present when the watch started: snapshot).
type routeStep struct {
	t                 time.Time
	removed, snapshot bool
	// lastSeen, for a front's change, is when the last reading before it
	// began, or, for a stop, the front's last logged send to the pod if
	// later: the change happened between lastSeen and t (for a stop, t
	// is the earlier of the reading that showed it and when the front's
	// picks of its other pods show it: roundRobin).
	lastSeen time.Time
	// requests, for a front's stop, is how many requests the front pod
	// started inside (lastSeen, t]: -1 without its access log.
	requests int
}

// unrouteAfterGone bounds how long after a pod is gone a node's removal of
// a route to its IP still counts as the removal of that pod's route; past
// it the IP may well be another pod's.
const unrouteAfterGone = 10 * time.Second

// unrouteWithout is the bound when the pod's end was not seen.
const unrouteWithout = 2 * time.Minute

// routeIndex is what the data-plane watch saw: per node, per IP, the
// changes in time order, and which nodes were watched.
type routeIndex struct {
	steps   map[string]map[string][]routeStep // node → IP → steps
	watched map[string]time.Time              // node → watch start
	failed  map[string]time.Time              // node → watch failure
}

// indexRoutes indexes the nodes' rules, or, with front set, each front
// pod's list of the pods it sends to (front.* events), as if each front
// pod were a node: it is the hop that chooses the pod. sends (nil
// without an access log) narrows each front stop's bracket.
func indexRoutes(events []timeline.Event, front bool, sends *frontLog) routeIndex {
	ix := routeIndex{steps: map[string]map[string][]routeStep{}, watched: map[string]time.Time{}, failed: map[string]time.Time{}}
	if front {
		for _, e := range events {
			switch e.Kind {
			case timeline.KindFrontWatching:
				if _, ok := ix.watched[e.Pod]; ok {
					continue
				}
				at, _ := e.FrontChange()
				ix.watched[e.Pod] = at
				ix.steps[e.Pod] = map[string][]routeStep{}
				for ip := range strings.FieldsSeq(e.Detail["servers"]) {
					ix.steps[e.Pod][ip] = append(ix.steps[e.Pod][ip], routeStep{t: at, snapshot: true})
				}
			case timeline.KindFrontAdded, timeline.KindFrontRemoved:
				if ix.steps[e.Pod] == nil {
					ix.steps[e.Pod] = map[string][]routeStep{}
				}
				at, last := e.FrontChange()
				requests := -1
				if e.Kind == timeline.KindFrontRemoved {
					read := at
					if sent := sends.sentBefore(e.Pod, e.IP, read); sent.After(last) {
						last = sent
					}
					if by := sends.stoppedBy(e.Pod, e.IP, read); !by.IsZero() && by.After(last) {
						at = by
					}
					requests = sends.startedIn(e.Pod, e.IP, read, last, at)
				}
				ix.steps[e.Pod][e.IP] = append(ix.steps[e.Pod][e.IP], routeStep{t: at, removed: e.Kind == timeline.KindFrontRemoved, lastSeen: last, requests: requests})
			}
		}
		return ix
	}
	for _, e := range events {
		switch e.Kind {
		case timeline.KindRouteWatching:
			if _, ok := ix.watched[e.Node]; !ok {
				ix.watched[e.Node] = e.Time
			}
		case timeline.KindRouteWatchError:
			if _, ok := ix.failed[e.Node]; !ok {
				ix.failed[e.Node] = e.Time
			}
		case timeline.KindRouteAdded, timeline.KindRouteSnapshot, timeline.KindRouteRemoved:
			if ix.steps[e.Node] == nil {
				ix.steps[e.Node] = map[string][]routeStep{}
			}
			ix.steps[e.Node][e.IP] = append(ix.steps[e.Node][e.IP], routeStep{t: e.Time, removed: e.Kind == timeline.KindRouteRemoved, snapshot: e.Kind == timeline.KindRouteSnapshot})
		}
	}
	return ix
}

// nodes returns the watched nodes, sorted.
func (ix routeIndex) nodes() []string {
	var out []string
	for n := range ix.watched {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// watching reports whether node's routes were known at t.
func (ix routeIndex) watching(node string, t time.Time) bool {
	start, ok := ix.watched[node]
	if !ok || t.Before(start) {
		return false
	}
	f, failed := ix.failed[node]
	return !failed || t.Before(f)
}

// removedAfter returns the first time at or after t, and no later than
// until (the end of the pod's life, plus a margin), that node stopped
// routing to ip. A route to ip added after t first means the IP was given
// to another pod before node was seen to drop this one: not found.
func (ix routeIndex) removedAfter(node, ip string, t, until time.Time) (routeStep, bool) {
	for _, s := range ix.steps[node][ip] {
		switch {
		case s.t.Before(t):
		case s.t.After(until):
			return routeStep{}, false
		case s.removed:
			return s, true
		case !s.snapshot:
			return routeStep{}, false // re-added: the IP is another pod's now
		}
	}
	return routeStep{}, false
}

// podsGone returns when each pod was gone from the API.
func podsGone(events []timeline.Event) map[string]time.Time {
	out := map[string]time.Time{}
	for _, e := range events {
		if e.Kind == timeline.KindPodGone && e.Pod != "" {
			if _, ok := out[e.Pod]; !ok {
				out[e.Pod] = e.Time
			}
		}
	}
	return out
}

// podPlaces returns each pod's IP and node, from its own pod events.
func podPlaces(events []timeline.Event) (ips, nodes map[string]string) {
	ips, nodes = map[string]string{}, map[string]string{}
	for _, e := range events {
		if e.Pod == "" || e.Object != "pod/"+e.Pod {
			continue
		}
		if e.IP != "" {
			ips[e.Pod] = e.IP
		}
		if e.Node != "" {
			nodes[e.Pod] = e.Node
		}
	}
	return ips, nodes
}

// explainer joins one variant's failed requests with the (pod, node)
// race windows of its rollouts.
type explainer struct {
	routes    routeIndex
	gaps      []RouteGap             // every rollout's pairs
	byRollout map[int][]int          // rollout → indexes into gaps
	explained map[int]*Explained     // rollout → its split
	flushed   map[int]map[string]int // rollout → stale SYN_SENT entries cleared after it, per node
	tried     map[int][]attempt      // rollout → the failures matched against its windows
	// front is true through a front that picks the pod itself
	// (path.Proxy.PicksPod): the "nodes" are then front pods, and a
	// request matches only the window of the pod its hop names.
	front bool
	log   *frontLog
	// backoff is how long the client fails requests with an earlier
	// attempt's error (traffic.ProtocolInfo.Backoff; 0 for HTTP).
	backoff time.Duration
	// channels are the variant's gRPC channel states (empty over HTTP).
	channels channelIndex
	// sharedClock: the front pods' log and the client share droprun's
	// clock (a kind cluster), so their times compare.
	sharedClock bool
}

// frontAnswered is why a request the front answered 2xx failed: the
// answer ended after the client's request failed (WhyFrontLate) or
// before it (WhyFrontLost), more than answerSlack either way; else, or
// on clocks not known to be shared, WhyFrontAnswered.
func (ex *explainer) frontAnswered(rec traffic.Record) string {
	end, ok := ex.log.answeredAt(rec.RequestID())
	if !ok || !ex.sharedClock {
		return WhyFrontAnswered
	}
	failed := rec.End()
	switch {
	case end.After(failed.Add(answerSlack)):
		return WhyFrontLate
	case end.Before(failed.Add(-answerSlack)):
		return WhyFrontLost
	}
	return WhyFrontAnswered
}

// attempt is one failure matched against a rollout's race windows: the
// node that routed it and the request. The chance baselines match them
// again with the nodes shuffled or the times shifted.
type attempt struct {
	node, ip string // ip: the pod a front chose, "" when not known
	rec      traffic.Record
	// upstream is, through a front that logs its errors, what the pod
	// did to the front's request (the front's error, classified as the
	// client's are); "" when not known.
	upstream traffic.Class
}

// newExplainer measures the (pod, node) pairs of every rollout: each pod
// the rollout deleted, on each node, when that node stopped routing to it,
// beside the pod's own SIGTERM and listener close.
func (in *input) newExplainer(variant string, rollouts []RolloutSummary) *explainer {
	front := in.path.Proxy != nil && in.path.Proxy.PicksPod
	ex := &explainer{routes: indexRoutes(in.events, front, in.frontLog), byRollout: map[int][]int{}, explained: map[int]*Explained{}, flushed: map[int]map[string]int{}, tried: map[int][]attempt{},
		front: front, log: in.frontLog, channels: indexChannels(in.events, variant), sharedClock: in.sharedClock}
	if in.sc != nil {
		pi, _ := in.sc.Traffic.Protocol().Info()
		ex.backoff = pi.Backoff
	}
	for _, rs := range rollouts {
		ex.flushed[rs.N] = rs.ConntrackFlushed
	}
	ps := pairSources{ips: in.podIPs, times: podTimes(in.app), probed: probedCloses(in.events), gone: podsGone(in.events)}
	// Through a front the nodes' rules are measured too, after the front
	// pods' pairs: they did not choose the pods for the run's requests
	// (no failure matches them: their Node is a node, not a front pod),
	// but the web Service's other clients go through them.
	hops := []routeIndex{ex.routes}
	if front {
		hops = append(hops, indexRoutes(in.events, false, nil))
	}
	for _, rs := range rollouts {
		end := rs.WindowEnd
		if end.IsZero() {
			end = rs.Complete
		}
		for _, d := range in.deletions {
			if d.t.Before(rs.Start) || (!end.IsZero() && d.t.After(end)) {
				continue
			}
			for i, routes := range hops {
				for _, g := range ps.pairs(in.events, rs.N, d, routes, front && i == 0) {
					ex.byRollout[rs.N] = append(ex.byRollout[rs.N], len(ex.gaps))
					ex.gaps = append(ex.gaps, g)
				}
			}
		}
	}
	return ex
}

// pairSources are what a deletion's pairs are measured from besides the
// routes: each pod's IP, the app's own times, the prober's closes and
// when each pod was gone.
type pairSources struct {
	ips    map[string]string
	times  map[string]PodTimes
	probed map[string]probedClose
	gone   map[string]time.Time
}

// pairs measures deletion d of rollout n on every node (or, with front
// set, every front pod) routes watched: when it stopped routing to the
// pod, beside the pod's own SIGTERM and listener close. With no node
// watched it falls back to each node's first kube-proxy sync after the
// endpoint change, to the poll's resolution.
func (ps pairSources) pairs(events []timeline.Event, n int, d deletion, routes routeIndex, front bool) []RouteGap {
	since := func(t time.Time) float64 {
		if t.IsZero() {
			return -1
		}
		return t.Sub(d.t).Seconds()
	}
	pt := ps.times[d.pod]
	pairNodes := routes.nodes()
	var synced map[string]float64
	if len(pairNodes) == 0 && !front {
		synced = gapOf(events, d).KubeProxySynced
		for node := range synced {
			pairNodes = append(pairNodes, node)
		}
		sort.Strings(pairNodes)
	}
	var out []RouteGap
	for _, node := range pairNodes {
		g := RouteGap{Rollout: n, Pod: d.pod, IP: ps.ips[d.pod], Node: node, Deleted: d.t, Unrouted: -1, SIGTERM: -1, ListenerClosed: -1, Exited: -1}
		if !pt.Signal.IsZero() && !pt.ListenerClosed.IsZero() {
			g.AppTimes, g.SIGTERM, g.ListenerClosed, g.Exited = true, since(pt.Signal), since(pt.ListenerClosed), since(pt.Finished)
			g.CloseSource = CloseFromApp
		} else if pc, ok := ps.probed[d.pod]; ok {
			g.ListenerClosed, g.CloseSource, g.CloseResolution = since(pc.closed), CloseFromProbe, pc.resolution.Seconds()
		}
		if front {
			g.Source = RouteSourceFront // its hop, seen or not
		}
		if synced != nil {
			g.Unrouted, g.Source = synced[node], RouteSourceKubeProxy
		} else if g.IP != "" {
			until := d.t.Add(unrouteWithout)
			if end, ok := ps.gone[d.pod]; ok {
				until = end.Add(unrouteAfterGone)
			}
			if step, ok := routes.removedAfter(node, g.IP, d.t, until); ok {
				g.Unrouted = since(step.t)
				if !front {
					g.Source = RouteSourceDataPlane
				}
				if !step.lastSeen.IsZero() {
					g.UnroutedResolution = step.t.Sub(step.lastSeen).Seconds()
					if front && step.requests >= 0 {
						g.UnroutedRequests = &step.requests
					}
				}
			}
		}
		if g.Known() {
			g.Window = g.Unrouted - g.ListenerClosed
		}
		out = append(out, g)
	}
	return out
}

// How explain accounted for a failure (Failure.Explained); an
// unexplained one says why (the Why* constants).
const (
	AccountedRace      = "race window"
	AccountedCut       = "cut by the close"
	AccountedConntrack = "stale conntrack entry"
	AccountedBackoff   = "client's reconnect backoff"
	AccountedSlow      = "the pod was slow"
)

// answerable are the classes of failure a pod's answer can hide behind:
// the pod may have answered as the client gave up, or the answer was cut.
var answerable = []traffic.Class{traffic.ClassTimeout, traffic.ClassReset, traffic.ClassEOF, traffic.ClassIdleClosed}

// CutClass reports whether c is the class of a request a close cuts in
// flight: the connection reset or closed under it, or closed as it was
// reused (the report words a front's logged errors by it too).
func CutClass(c traffic.Class) bool {
	return c == traffic.ClassReset || c == traffic.ClassEOF || c == traffic.ClassIdleClosed
}

// explain attributes one failed request of rollout n whose web pod node's
// rules chose (the entry node on a direct path, the proxy pod's node
// through a proxy: path.RoutingNode; "" when not known): to the pair whose
// race window holds its send time, or to a reason it cannot be explained.
// proxied says the request went through a proxy (path.Path.Proxy). It
// returns how it accounted for it (an Accounted* constant or a Why*
// reason) and, for a race window, the pod.
//
// A run without route data (recorded before droprun watched the nodes, or
// on a cluster it cannot look inside) explains nothing and says nothing.
func (ex *explainer) explain(n int, node string, proxied bool, rec traffic.Record, clockBound time.Duration) (how, pod string) {
	if len(ex.routes.watched) == 0 {
		return "", ""
	}
	e := ex.explained[n]
	if e == nil {
		e = &Explained{}
		ex.explained[n] = e
	}
	unexplained := func(why string) (string, string) {
		e.Unexplained++
		if e.Why == nil {
			e.Why = map[string]uint64{}
		}
		e.Why[why]++
		return why, ""
	}
	if !ex.front && !proxied && traffic.Accepted(rec) {
		// The pod accepted the request's new connection and did not
		// answer in time: it was listening, so no rule routed the request
		// to it after its listener closed. Through a front or a proxy the
		// connection the client saw accepted ends there, not at the pod,
		// and says nothing of it.
		e.Slow++
		return AccountedSlow, ""
	}
	if why := ex.untried(n, node, proxied, rec, clockBound); why != "" {
		return unexplained(why)
	}
	a := ex.attempt(e, node, rec)
	ex.tried[n] = append(ex.tried[n], a)
	best, cut, noClose, noUnroute := ex.match(n, a)
	switch {
	case best >= 0 && cut:
		e.Cut++
		how, pod = AccountedCut, ex.gaps[best].Pod
	case best >= 0:
		e.Explained++
		g := &ex.gaps[best]
		if g.Drops == nil {
			g.Drops = map[traffic.Class]uint64{}
		}
		g.Drops[rec.Class]++
		how, pod = AccountedRace, g.Pod
	case noClose:
		return unexplained(WhyNoListenerClose)
	case noUnroute:
		return unexplained(WhyNoUnroute)
	case ex.backedOff(n, node, rec, 0):
		e.Backoff++
		how = AccountedBackoff
	case ex.staleConntrack(n, node, proxied, rec):
		e.Conntrack++
		how = AccountedConntrack
	case ex.proxyOwn(n, node, proxied, rec):
		return unexplained(WhyProxyOwn)
	default:
		return unexplained(WhyOutside)
	}
	if slices.Contains(answerable, rec.Class) {
		e.Answerable++
	}
	return how, pod
}

// untried says why a failure cannot be tried against the race windows
// (a Why* reason), or "" when it can: the hop that chose its pod is not
// known, that node's rules were not watched then, or the send time is
// less certain than rollout n's narrowest window on it (clockBound).
func (ex *explainer) untried(n int, node string, proxied bool, rec traffic.Record, clockBound time.Duration) string {
	switch {
	case ex.front && node == "" && ex.log.answeredOK(rec.RequestID()):
		return ex.frontAnswered(rec)
	case ex.front && node == "":
		return WhyFrontNoLine
	case ex.front:
	case proxied && rec.Via == "":
		return WhyNoProxyPod
	case proxied && node == "":
		return WhyNoProxyNode
	case node == "":
		return WhyNoEntryNode
	}
	if !ex.routes.watching(node, rec.Time) {
		return WhyNoRoutes
	}
	if clockBound > 0 && clockBound > ex.narrowest(n, node) {
		return WhyClock
	}
	return ""
}

// attempt is rec as tried against node's windows: through a front, with
// the pod IP the front's log names and the front's own error, counted
// in e.FrontErrors.
func (ex *explainer) attempt(e *Explained, node string, rec traffic.Record) attempt {
	a := attempt{node: node, rec: rec}
	if !ex.front {
		return a
	}
	h, _ := ex.log.hop(rec.RequestID())
	a.ip, a.upstream = h.ip, h.class
	if a.upstream != "" {
		if e.FrontErrors == nil {
			e.FrontErrors = map[traffic.Class]uint64{}
		}
		e.FrontErrors[a.upstream]++
	}
	return a
}

// narrowest is the shortest race window of rollout n on node, from a
// pod's listener close to the node's stop of routing to it; the longest
// duration when node has none.
func (ex *explainer) narrowest(n int, node string) time.Duration {
	w := time.Duration(math.MaxInt64)
	for _, i := range ex.byRollout[n] {
		g := &ex.gaps[i]
		if g.Node != node || !g.CloseKnown() || g.Unrouted < 0 {
			continue
		}
		if d := seconds(g.Unrouted) - seconds(g.ListenerClosed); d > 0 {
			w = min(w, d)
		}
	}
	return w
}

// match finds the pair of rollout n, on node, whose race window holds
// rec: its index in ex.gaps, or -1. cut says rec was a reset or EOF sent
// before that pod's listener closed: a request in flight cut by the close,
// not one routing sent to a closed listener. noClose says no window could
// be drawn on node because no pod the rollout deleted has a known listener
// close; noUnroute that none had a known close and a seen stop of routing
// on node. With ip set (the pod a front chose), only that pod's window
// counts. A request is cut by the close by its class, or through a front
// by what the pod did to the front's request (attempt.upstream); its
// window opens by the client's class all the same, as the front's own
// dial may come well after the client's send (Caddy holds requests while
// it looks the pods up). It changes nothing (the chance baselines call it
// too).
func (ex *explainer) match(n int, a attempt) (best int, cut, noClose, noUnroute bool) {
	node, ip, rec := a.node, a.ip, a.rec
	// Of several open windows, the pod whose listener closed last at or
	// before the send is the one the request most likely met; one that
	// closed after it (a request in flight at the close) only when no
	// window was open at the send.
	best = -1
	var bestClosed time.Time
	bestOpen, anyClose, anyPod, anyUnrouted := false, false, false, false
	for _, i := range ex.byRollout[n] {
		g := &ex.gaps[i]
		if g.Node != node || ip != "" && g.IP != ip {
			continue
		}
		anyPod = true
		if !g.CloseKnown() {
			continue
		}
		anyClose = true
		if g.Source != RouteSourceDataPlane && g.Source != RouteSourceFront || g.Unrouted < 0 {
			continue
		}
		anyUnrouted = true
		closed := g.Deleted.Add(seconds(g.ListenerClosed))
		unrouted := g.Deleted.Add(seconds(g.Unrouted))
		from := closed.Add(-inFlightSlack)
		if rec.Class != traffic.ClassRefused && rec.Class != traffic.ClassTimeout {
			from = closed.Add(-rec.Latency - inFlightSlack) // in flight when it closed
		}
		if rec.Time.Before(from) || rec.Time.After(unrouted.Add(inFlightSlack)) {
			continue
		}
		open := !closed.After(rec.Time)
		if best < 0 || open && !bestOpen || open == bestOpen && closed.After(bestClosed) {
			best, bestClosed, bestOpen = i, closed, open
		}
	}
	class := rec.Class
	if a.upstream != "" {
		class = a.upstream
	}
	cut = best >= 0 && !bestOpen && CutClass(class)
	return best, cut, anyPod && !anyClose, anyClose && !anyUnrouted
}

// chanceSeed fixes the chance baselines' draws: the same run gives the
// same numbers every time it is analysed.
const chanceSeed = 19

// chanceDraws is how many shuffles (and shifts) each baseline averages.
const chanceDraws = 20

// chance sets rollout n's chance baselines (Explained.Chance): how many of
// the failures matched against its windows a race window would explain
// with the routing nodes shuffled among them, and with every send time
// shifted by one random offset of 0.5–5 s either way, each the mean of
// chanceDraws draws; over gRPC, also how many outside every window the
// backoff would account for with their channels' failed attempts
// shifted so. A real explanation beats them by far.
func (ex *explainer) chance(n int, e *Explained) {
	tried := ex.tried[n]
	if len(tried) == 0 {
		return
	}
	rng := rand.New(rand.NewPCG(chanceSeed, uint64(n)))
	explains := func(a attempt) bool {
		best, cut, _, _ := ex.match(n, a)
		return best >= 0 && !cut
	}
	nodes := make([]string, len(tried))
	// The backoff's baseline is over the failures outside every window,
	// the same in every draw.
	outside := make([]bool, len(tried))
	for i, a := range tried {
		outside[i] = !explains(a)
	}
	var permuted, shifted, backoff int
	for range chanceDraws {
		for i, a := range tried {
			nodes[i] = a.node
		}
		rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		off := time.Duration((0.5 + 4.5*rng.Float64()) * float64(time.Second))
		if rng.IntN(2) == 0 {
			off = -off
		}
		for i, a := range tried {
			shuffled := a
			shuffled.node = nodes[i]
			if explains(shuffled) {
				permuted++
			}
			moved := a
			moved.rec.Time = moved.rec.Time.Add(off)
			if explains(moved) {
				shifted++
			}
			if outside[i] && ex.backedOff(n, a.node, a.rec, off) {
				backoff++
			}
		}
	}
	e.Chance = &Chance{Tried: uint64(len(tried)),
		NodesShuffled: float64(permuted) / chanceDraws, TimesShifted: float64(shifted) / chanceDraws, BackoffShifted: float64(backoff) / chanceDraws}
	ex.burstChance(n, tried, e.Chance)
}

// burstGap separates bursts: failures on one node more than this apart
// are two bursts.
const burstGap = 250 * time.Millisecond

// burstPermutations is how many shifts (and shuffles) a burst p-value is
// over: its smallest is 1/(burstPermutations+1) = 0.005.
const burstPermutations = 199

// burstChance sets the burst-level chance test of rollout n (c.Bursts and
// on): the unit is the burst, the failures one node routed less than
// burstGap apart (one burst of 300 drops is one observation, not 300),
// represented by its median failure. The statistic is how many bursts a
// race window explains; its p-values are the share of burstPermutations
// draws, with every send time shifted by one random 0.5–5 s either way,
// or the bursts' nodes shuffled among them, that explain as many or more
// (a permutation test: (1 + count) / (1 + draws)).
func (ex *explainer) burstChance(n int, tried []attempt, c *Chance) {
	sorted := slices.Clone(tried)
	slices.SortFunc(sorted, func(a, b attempt) int {
		if x := strings.Compare(a.node, b.node); x != 0 {
			return x
		}
		return a.rec.Time.Compare(b.rec.Time)
	})
	var bursts []attempt
	for i := 0; i < len(sorted); {
		j := i + 1
		for j < len(sorted) && sorted[j].node == sorted[i].node && sorted[j].rec.Time.Sub(sorted[j-1].rec.Time) <= burstGap {
			j++
		}
		bursts = append(bursts, sorted[i+(j-i)/2])
		i = j
	}
	count := func(nodes []string, off time.Duration) int {
		k := 0
		for i, b := range bursts {
			b.node = nodes[i]
			b.rec.Time = b.rec.Time.Add(off)
			if best, cut, _, _ := ex.match(n, b); best >= 0 && !cut {
				k++
			}
		}
		return k
	}
	nodes := make([]string, len(bursts))
	for i, b := range bursts {
		nodes[i] = b.node
	}
	obs := count(nodes, 0)
	rng := rand.New(rand.NewPCG(chanceSeed, uint64(n)+1<<32))
	shuffled := slices.Clone(nodes)
	var shifts, shuffles int
	for range burstPermutations {
		off := time.Duration((0.5 + 4.5*rng.Float64()) * float64(time.Second))
		if rng.IntN(2) == 0 {
			off = -off
		}
		if count(nodes, off) >= obs {
			shifts++
		}
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if count(shuffled, 0) >= obs {
			shuffles++
		}
	}
	c.Bursts, c.BurstsExplained = uint64(len(bursts)), uint64(obs)
	c.PShifted = float64(shifts+1) / (burstPermutations + 1)
	c.PShuffled = float64(shuffles+1) / (burstPermutations + 1)
}

// staleConntrack reports whether a failure of rollout n routed by node,
// outside every race window, is one a stale conntrack entry left (see
// Explained.Conntrack). All of it must hold: a class that gets no answer
// (a timeout; through a proxy, a 502); the request was sent after node
// stopped routing to the pods the rollout deleted (routedAway); and the
// flush after the rollout cleared stale entries on node.
//
// A client with a reconnect backoff (gRPC) shows it as refusals too: its
// channel's attempt hangs on the stale entry while its calls fail with the
// refusal of the attempt before. Where the run recorded the channels'
// attempts, the call must have ended while its channel's attempt hung
// (channelIndex.hungAttempt).
func (ex *explainer) staleConntrack(n int, node string, proxied bool, rec traffic.Record) bool {
	noAnswer := rec.Class == traffic.ClassTimeout || proxied && rec.Class == traffic.Class502 || ex.backoff > 0 && sticky(rec.Class) && ex.hung(rec)
	return noAnswer && ex.flushed[n][node] > 0 && ex.routedAway(n, node, rec)
}

// hung reports whether a gRPC call failed while its channel's connection
// attempt hung, as the channel's recorded attempts show; true for a run
// recorded before droprun watched the channels, which only shows the
// backoff.
func (ex *explainer) hung(rec traffic.Record) bool {
	if len(ex.channels) == 0 {
		return true
	}
	ch, ok := rec.Channel()
	return ok && ex.channels.hungAttempt(hostPort(rec.URL), strconv.Itoa(ch), rec.End())
}

// sticky are the classes a client with a reconnect backoff repeats from an
// earlier attempt: a refusal, or an UNAVAILABLE that no longer says why.
func sticky(c traffic.Class) bool { return c == traffic.ClassRefused || c == traffic.ClassUnavailable }

// backedOff reports whether a failure of rollout n routed by node,
// outside every race window, is its gRPC channel's reconnect backoff
// after an attempt a race window refused (Explained.Backoff), as the
// channel's recorded attempts show it: the call, of a sticky class, ended
// after its channel's last connection attempt failed and before the
// channel was READY again, with no attempt hung since
// (channelIndex.failedAttempt), and that attempt, moved by shift
// (the chance baseline's; 0 otherwise), overlapped the race window of a
// pod the rollout deleted, on node.
func (ex *explainer) backedOff(n int, node string, rec traffic.Record, shift time.Duration) bool {
	if len(ex.channels) == 0 || !sticky(rec.Class) {
		return false
	}
	ch, ok := rec.Channel()
	if !ok {
		return false
	}
	from, to, ok := ex.channels.failedAttempt(hostPort(rec.URL), strconv.Itoa(ch), rec.End())
	if !ok {
		return false
	}
	from, to = from.Add(shift), to.Add(shift)
	for _, i := range ex.byRollout[n] {
		g := &ex.gaps[i]
		if g.Node != node || !g.Known() || g.Window <= 0 || g.Unrouted < 0 {
			continue
		}
		closed := g.Deleted.Add(seconds(g.ListenerClosed))
		unrouted := g.Deleted.Add(seconds(g.Unrouted))
		if !to.Before(closed.Add(-inFlightSlack)) && !from.After(unrouted.Add(inFlightSlack)) {
			return true
		}
	}
	return false
}

// proxyOwn reports whether a 502 of rollout n, through a proxy that sends
// through node's rules (not a front that picks the pod itself), outside
// every race window, is the proxy's own (WhyProxyOwn): sent after node
// stopped routing to the pods the rollout deleted, and the flush after
// the rollout ran on node and found no stale entry, so no dial from node
// went unanswered.
func (ex *explainer) proxyOwn(n int, node string, proxied bool, rec traffic.Record) bool {
	if !proxied || ex.front || rec.Class != traffic.Class502 {
		return false
	}
	stale, flushed := ex.flushed[n][node]
	return flushed && stale == 0 && ex.routedAway(n, node, rec)
}

// routedAway reports whether node held a race window open for a pod
// rollout n deleted (connections went to a dead pod) and rec was sent
// after node stopped routing to every such pod deleted before rec ended
// (a pod deleted later was serving while rec was on its way).
func (ex *explainer) routedAway(n int, node string, rec traffic.Record) bool {
	var last time.Time
	raced := false
	end := rec.Time.Add(rec.Latency)
	for _, i := range ex.byRollout[n] {
		g := &ex.gaps[i]
		if g.Node != node || g.Source != RouteSourceDataPlane || !g.Deleted.Before(end) {
			continue
		}
		if g.Unrouted < 0 {
			return false // a pod whose route on node was never seen to go
		}
		raced = raced || g.Known() && g.Window > 0
		last = later(last, g.Deleted.Add(seconds(g.Unrouted)))
	}
	return raced && rec.Time.After(last.Add(inFlightSlack))
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// rowRoutes returns the pairs and the drop split of the given rollouts.
func (ex *explainer) rowRoutes(rollouts []RolloutSummary) ([]RouteGap, *Explained) {
	var gaps []RouteGap
	var total *Explained
	var pShifted, pShuffled []float64
	for k := range rollouts {
		n := rollouts[k].N
		for _, i := range ex.byRollout[n] {
			gaps = append(gaps, ex.gaps[i])
		}
		if e := ex.explained[n]; e != nil {
			ex.chance(n, e)
			rollouts[k].Explained = e
			if total == nil {
				total = &Explained{}
			}
			total.Explained += e.Explained
			total.Conntrack += e.Conntrack
			total.Backoff += e.Backoff
			total.Cut += e.Cut
			total.FrontErrors = addCounts(total.FrontErrors, e.FrontErrors)
			total.Slow += e.Slow
			total.Answerable += e.Answerable
			total.Unexplained += e.Unexplained
			if c := e.Chance; c != nil {
				if total.Chance == nil {
					total.Chance = &Chance{}
				}
				total.Chance.Tried += c.Tried
				total.Chance.NodesShuffled += c.NodesShuffled
				total.Chance.TimesShifted += c.TimesShifted
				if c.Bursts > 0 {
					total.Chance.Bursts += c.Bursts
					total.Chance.BurstsExplained += c.BurstsExplained
					// The rollouts' p-values, combined (Fisher's method):
					// rollouts are independent.
					pShifted = append(pShifted, c.PShifted)
					pShuffled = append(pShuffled, c.PShuffled)
				}
			}
			total.Why = addCounts(total.Why, e.Why)
		}
	}
	if total != nil && total.Chance != nil && len(pShifted) > 0 {
		total.Chance.PShifted, total.Chance.PShuffled = stats.CombinedP(pShifted), stats.CombinedP(pShuffled)
	}
	return gaps, total
}

// Hop names what chose the pod in the pair: "node droprun-worker2", or
// "front pod traefik-7dc6-x" for a front's own list.
func (g RouteGap) Hop() string {
	if g.Source == RouteSourceFront {
		return "front pod " + g.Node
	}
	return "node " + g.Node
}

// RaceText says what one pair did, e.g. "node droprun-worker2 still
// routed to web-7f9c-x2 for 640 ms after its listener closed: 212
// refused, 30 timeout" (classes without curl's 000: prefix); a front pod
// "still sent to" it.
func (g RouteGap) RaceText() string {
	if !g.Known() {
		return fmt.Sprintf("%s, pod %s: race window not measured", g.Hop(), g.Pod)
	}
	routed, routing := "routed", "routing"
	if g.Source == RouteSourceFront {
		routed, routing = "sent", "sending"
	}
	var what string
	if g.Window >= 0 {
		what = fmt.Sprintf("%s still %s to %s for %.0f ms after its listener closed", g.Hop(), routed, g.Pod, g.Window*1000)
	} else {
		what = fmt.Sprintf("%s stopped %s to %s %.0f ms before its listener closed", g.Hop(), routing, g.Pod, -g.Window*1000)
	}
	if len(g.Drops) == 0 {
		return what
	}
	classes := make([]traffic.Class, 0, len(g.Drops))
	for c := range g.Drops {
		classes = append(classes, c)
	}
	slices.Sort(classes)
	s := what + ":"
	for i, c := range classes {
		if i > 0 {
			s += ","
		}
		// "212 refused", not "212 000:refused" (which reads as 212,000).
		s += fmt.Sprintf(" %d %s", g.Drops[c], strings.TrimPrefix(string(c), "000:"))
	}
	return s
}
