package analysis

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/appmetrics"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

// TestExplain: one pod deleted at 0; its listener closes at 100 ms; node
// a stops routing to it at 700 ms, node b at 50 ms (before the close: a
// margin). Failures through a inside [100, 700] ms are explained; one
// through b, one before the close, one through an unwatched node and one
// without an entry node are not, each for its reason. A reset of a request
// sent before the close is cut by the close, not explained by routing.
func TestExplain(t *testing.T) {
	t0 := base
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(ms int, kind timeline.Kind, node, ip string) timeline.Event {
		return timeline.Event{Time: at(ms), Kind: kind, Node: node, IP: ip}
	}
	events := []timeline.Event{
		ev(-5000, timeline.KindRouteWatching, "a", ""),
		ev(-5000, timeline.KindRouteWatching, "b", ""),
		ev(-5000, timeline.KindRouteSnapshot, "a", "10.0.0.1"),
		ev(-5000, timeline.KindRouteSnapshot, "b", "10.0.0.1"),
		{Time: at(-4000), Kind: timeline.KindPodReady, Object: "pod/web-1", Pod: "web-1", IP: "10.0.0.1"},
		{Time: at(0), Kind: timeline.KindPodDeletionRequested, Object: "pod/web-1", Pod: "web-1", IP: "10.0.0.1"},
		ev(50, timeline.KindRouteRemoved, "b", "10.0.0.1"),
		ev(700, timeline.KindRouteRemoved, "a", "10.0.0.1"),
	}
	in := &input{events: events, deletions: deletionsOf(events), podIPs: podIPsOf(events), app: []appmetrics.Record{{
		Source: appmetrics.SourceTermination, Pod: "web-1", Time: at(900), SignalAt: at(20), ListenerClosedAt: at(100),
	}}}
	ex := in.newExplainer("alpha", []RolloutSummary{{N: 1, Start: at(-1000), WindowEnd: at(5000)}})
	if len(ex.gaps) != 2 {
		t.Fatalf("pairs = %+v, want one per node", ex.gaps)
	}
	// The app's SIGTERM and listener close precede droprun's sight of the
	// deletion when the kubelet is quicker than the watch: still known.
	late := &input{events: events, deletions: deletionsOf(events), podIPs: podIPsOf(events), app: []appmetrics.Record{{
		Source: appmetrics.SourceTermination, Pod: "web-1", Time: at(900), SignalAt: at(-30), ListenerClosedAt: at(-29),
	}}}
	if g := late.newExplainer("alpha", []RolloutSummary{{N: 1, Start: at(-1000), WindowEnd: at(5000)}}).gaps[0]; !g.Known() || g.ListenerClosed >= 0 {
		t.Errorf("a listener closed before the deletion was seen: %+v, want it known and negative", g)
	}
	for _, g := range ex.gaps {
		want := map[string]float64{"a": 0.6, "b": -0.05}[g.Node]
		if !g.Known() || g.Source != RouteSourceDataPlane || g.SIGTERM != 0.02 || abs(g.Window-want) > 1e-9 {
			t.Errorf("pair %+v: want window %.3f s, SIGTERM 0.02 s, from the data plane", g, want)
		}
	}
	fail := func(ms int, class traffic.Class) traffic.Record {
		return traffic.Record{Time: at(ms), Class: class, Latency: time.Millisecond}
	}
	// Each failure says how it was accounted for (Failure.Explained).
	for _, tc := range []struct {
		node     string
		rec      traffic.Record
		how, pod string
	}{
		{"a", fail(150, traffic.ClassRefused), AccountedRace, "web-1"},
		{"a", fail(690, traffic.ClassTimeout), AccountedRace, "web-1"},
		{"a", fail(60, traffic.ClassReset), AccountedCut, "web-1"}, // sent 40 ms before the close: in flight, cut by it
		{"a", fail(0, traffic.ClassRefused), WhyOutside, ""},       // before the close
		{"b", fail(200, traffic.ClassRefused), WhyOutside, ""},
		{"c", fail(200, traffic.ClassRefused), WhyNoRoutes, ""},
		{"", fail(200, traffic.ClassRefused), WhyNoEntryNode, ""},
	} {
		if how, pod := ex.explain(1, tc.node, false, tc.rec, 0); how != tc.how || pod != tc.pod {
			t.Errorf("%s at %s on %q: accounted %q (pod %q), want %q (pod %q)", tc.rec.Class, tc.rec.Time.Sub(base), tc.node, how, pod, tc.how, tc.pod)
		}
	}
	gaps, e := ex.rowRoutes([]RolloutSummary{{N: 1}})
	// Answerable: the explained timeout and the cut reset, not the refused.
	if e.Explained != 2 || e.Cut != 1 || e.Answerable != 2 || e.Unexplained != 4 || e.Why[WhyOutside] != 2 || e.Why[WhyNoRoutes] != 1 || e.Why[WhyNoEntryNode] != 1 {
		t.Errorf("explained = %+v", e)
	}
	for _, g := range gaps {
		if g.Node == "a" && (g.Drops[traffic.ClassRefused] != 1 || g.Drops[traffic.ClassTimeout] != 1 || g.Drops[traffic.ClassReset] != 0) {
			t.Errorf("node a's drops = %v", g.Drops)
		}
		if g.Node == "a" {
			if got, want := g.RaceText(), "node a still routed to web-1 for 600 ms after its listener closed: 1 refused, 1 timeout"; got != want {
				t.Errorf("RaceText = %q, want %q", got, want)
			}
		}
	}
	// A generator pod's request, its node's clock known to ±700 ms, wider
	// than node a's 600 ms window: not placed in it; to ±500 ms, it is.
	if how, _ := ex.explain(1, "a", false, fail(150, traffic.ClassRefused), 700*time.Millisecond); how != WhyClock {
		t.Errorf("a clock known to ±700 ms: %q, want %q", how, WhyClock)
	}
	if how, _ := ex.explain(1, "a", false, fail(150, traffic.ClassRefused), 500*time.Millisecond); how != AccountedRace {
		t.Errorf("a clock known to ±500 ms: %q, want %q", how, AccountedRace)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestExplainPicksThePodItMet: two pods deleted a second apart, both still
// routed by node a. A refusal after both listeners closed goes to the pod
// that closed last before it; one between the closes to the first pod.
func TestExplainPicksThePodItMet(t *testing.T) {
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	events := []timeline.Event{
		{Time: at(-5000), Kind: timeline.KindRouteWatching, Node: "a"},
		{Time: at(-4000), Kind: timeline.KindPodReady, Object: "pod/web-1", Pod: "web-1", IP: "10.0.0.1"},
		{Time: at(-4000), Kind: timeline.KindPodReady, Object: "pod/web-2", Pod: "web-2", IP: "10.0.0.2"},
		{Time: at(0), Kind: timeline.KindPodDeletionRequested, Object: "pod/web-1", Pod: "web-1"},
		{Time: at(1000), Kind: timeline.KindPodDeletionRequested, Object: "pod/web-2", Pod: "web-2"},
		{Time: at(3000), Kind: timeline.KindRouteRemoved, Node: "a", IP: "10.0.0.1"},
		{Time: at(3000), Kind: timeline.KindRouteRemoved, Node: "a", IP: "10.0.0.2"},
	}
	in := &input{events: events, deletions: deletionsOf(events), podIPs: podIPsOf(events), app: []appmetrics.Record{
		// web-1 closes 50 ms after its deletion, web-2 10 ms after its own:
		// relative to their own deletions web-1 closed "later".
		{Source: appmetrics.SourceTermination, Pod: "web-1", Time: at(4000), SignalAt: at(40), ListenerClosedAt: at(50)},
		{Source: appmetrics.SourceTermination, Pod: "web-2", Time: at(4000), SignalAt: at(1005), ListenerClosedAt: at(1010)},
	}}
	ex := in.newExplainer("alpha", []RolloutSummary{{N: 1, Start: at(-1000), WindowEnd: at(6000)}})
	ex.explain(1, "a", false, traffic.Record{Time: at(2000), Class: traffic.ClassRefused}, 0)
	ex.explain(1, "a", false, traffic.Record{Time: at(500), Class: traffic.ClassRefused}, 0)
	for _, g := range ex.gaps {
		if n := g.Drops[traffic.ClassRefused]; n != 1 {
			t.Errorf("%s got %d refusals, want 1 each: %+v", g.Pod, n, ex.gaps)
		}
	}
}

// racedOnA is one pod, web-1, deleted at 0: node a stopped routing to it
// at 700 ms, node b at 50 ms (before its listener closes at 100 ms in the
// tests' app records: no race on b). at gives the times.
func racedOnA() (at func(ms int) time.Time, events []timeline.Event) {
	at = func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	return at, []timeline.Event{
		{Time: at(-5000), Kind: timeline.KindRouteWatching, Node: "a"},
		{Time: at(-5000), Kind: timeline.KindRouteWatching, Node: "b"},
		{Time: at(-4000), Kind: timeline.KindPodReady, Object: "pod/web-1", Pod: "web-1", IP: "10.0.0.1"},
		{Time: at(0), Kind: timeline.KindPodDeletionRequested, Object: "pod/web-1", Pod: "web-1", IP: "10.0.0.1"},
		{Time: at(50), Kind: timeline.KindRouteRemoved, Node: "b", IP: "10.0.0.1"},
		{Time: at(700), Kind: timeline.KindRouteRemoved, Node: "a", IP: "10.0.0.1"},
	}
}

// TestStaleConntrack: a late failure outside every window is put down to a
// stale conntrack entry only with all the evidence: a class that got no
// answer (a 502 only through a proxy), a race window its node held open,
// and stale entries the flush after the rollout found on that node.
func TestStaleConntrack(t *testing.T) {
	at, events := racedOnA()
	in := &input{events: events, deletions: deletionsOf(events), podIPs: podIPsOf(events), app: []appmetrics.Record{{
		Source: appmetrics.SourceTermination, Pod: "web-1", Time: at(900), SignalAt: at(20), ListenerClosedAt: at(100),
	}}}
	rs := []RolloutSummary{{N: 1, Start: at(-1000), WindowEnd: at(9000), ConntrackFlushed: map[string]int{"a": 4, "b": 4}}}
	late := func(class traffic.Class) traffic.Record {
		return traffic.Record{Time: at(3000), Class: class, Latency: 500 * time.Millisecond}
	}
	for _, tc := range []struct {
		name    string
		node    string
		proxied bool
		rec     traffic.Record
		want    bool
	}{
		{"a timeout on a raced node", "a", false, late(traffic.ClassTimeout), true},
		{"a 502 through a proxy", "a", true, func() traffic.Record { r := late(traffic.Class502); r.Via = "gw-1"; return r }(), true},
		{"a 502 on the direct path", "a", false, late(traffic.Class502), false},
		{"a refusal", "a", false, late(traffic.ClassRefused), false},
		{"a node that never raced", "b", false, late(traffic.ClassTimeout), false},
	} {
		ex := in.newExplainer("alpha", rs)
		ex.explain(1, tc.node, tc.proxied, tc.rec, 0)
		if got := ex.explained[1].Conntrack == 1; got != tc.want {
			t.Errorf("%s: conntrack %v, want %v (%+v)", tc.name, got, tc.want, ex.explained[1])
		}
	}
	noFlush := []RolloutSummary{{N: 1, Start: at(-1000), WindowEnd: at(9000)}}
	ex := in.newExplainer("alpha", noFlush)
	ex.explain(1, "a", false, late(traffic.ClassTimeout), 0)
	if e := ex.explained[1]; e.Conntrack != 0 || e.Why[WhyOutside] != 1 {
		t.Errorf("no stale entries found: %+v, want it outside every window", e)
	}
}

// grpcTarget is the target of the gRPC tests' calls, and grpcChannels
// its channels' states and connection attempts: channel 0 lost its
// connection at 300 ms and its attempt at 400 ms, inside node a's race
// window (100-700 ms), was refused, so it waited out its backoff until
// its next attempt at 1.5 s; channel 1's attempt at 3 s, outside every
// window, was refused too; channel 2's attempt at 400 ms was refused and
// its next, at 1.4 s, hung until 9 s (a stale conntrack entry), the
// channel in TRANSIENT_FAILURE throughout, as grpc-go keeps it.
const grpcTarget = "http://127.0.0.1:31080" + traffic.GRPCPath

func grpcChannels(at func(ms int) time.Time) []timeline.Event {
	var evs []timeline.Event
	for _, st := range []struct {
		ms        int
		ch, state string
	}{
		{-4000, "0", "READY"}, {-4000, "1", "READY"}, {-4000, "2", "READY"},
		{300, "0", "IDLE"}, {400, "0", "CONNECTING"}, {400, "0", traffic.StateDialing}, {401, "0", traffic.StateDialFailed}, {402, "0", "TRANSIENT_FAILURE"},
		{1500, "0", traffic.StateDialing}, {1501, "0", traffic.StateDialed}, {1502, "0", "READY"},
		{2900, "1", "IDLE"}, {3000, "1", "CONNECTING"}, {3000, "1", traffic.StateDialing}, {3001, "1", traffic.StateDialFailed}, {3002, "1", "TRANSIENT_FAILURE"},
		{4000, "1", traffic.StateDialing}, {4001, "1", traffic.StateDialed}, {4002, "1", "READY"},
		{300, "2", "IDLE"}, {400, "2", "CONNECTING"}, {400, "2", traffic.StateDialing}, {401, "2", traffic.StateDialFailed}, {402, "2", "TRANSIENT_FAILURE"},
		{1400, "2", traffic.StateDialing}, {9000, "2", traffic.StateDialed}, {9001, "2", "READY"},
		{400, "3", traffic.StateDialing}, {401, "3", traffic.StateDialFailed}, {1400, "3", traffic.StateDialing}, {1700, "3", traffic.StateDialed},
		{400, "4", traffic.StateDialing}, {401, "4", traffic.StateDialFailed}, {1400, "4", traffic.StateDialing},
	} {
		evs = append(evs, timeline.Event{Time: at(st.ms).Add(time.Millisecond), Kind: timeline.KindGRPCChannel, Detail: map[string]string{
			"variant": "alpha", "target": "127.0.0.1:31080", "channel": st.ch, "state": st.state, "at": at(st.ms).Format(time.RFC3339Nano)}})
	}
	return evs
}

// grpcFailure is a call to grpcTarget sent at ms on channel ch that
// failed with class (a refusal's text, or a bare UNAVAILABLE).
func grpcFailure(at func(ms int) time.Time, ms, ch int, class traffic.Class) traffic.Record {
	text := `rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:31080: connect: connection refused"`
	if class == traffic.ClassUnavailable {
		text = "rpc error: code = Unavailable desc = no connection"
	}
	if ch >= 0 {
		text += " [gRPC channel " + strconv.Itoa(ch) + "]"
	}
	return traffic.Record{Time: at(ms), Latency: time.Millisecond, URL: grpcTarget + "?droprun-id=x", Class: class, Error: text}
}

// TestReconnectBackoff: over gRPC a refusal outside every window is the
// channel's backoff when its channel's recorded attempts say so: its last
// failed attempt before the call, inside a race window on the node that
// routed it, with the channel not READY since (it stays in
// TRANSIENT_FAILURE while it tries again, so a call just after its next
// attempt began, or during one answered in 300 ms, is the backoff's
// too). Not when the channel was READY again, that attempt was outside
// every window, or the next one hung (unanswered for a second or to the
// end: then a node whose flush found stale entries holds it), nor when
// the node never raced or the call names no channel. Over HTTP there is
// no backoff.
func TestReconnectBackoff(t *testing.T) {
	at, events := racedOnA()
	events = append(events, grpcChannels(at)...)
	flushedB := []RolloutSummary{{N: 1, Start: at(-1000), WindowEnd: at(20000), ConntrackFlushed: map[string]int{"b": 1}}}
	flushedA := []RolloutSummary{{N: 1, Start: at(-1000), WindowEnd: at(20000), ConntrackFlushed: map[string]int{"a": 1}}}
	for _, tc := range []struct {
		name, wire, node string
		rs               []RolloutSummary
		rec              traffic.Record
		want             string
	}{
		{"gRPC, its channel in backoff after a raced attempt", "grpc", "a", flushedB, grpcFailure(at, 1000, 0, traffic.ClassRefused), AccountedBackoff},
		{"gRPC, an UNAVAILABLE then", "grpc", "a", flushedB, grpcFailure(at, 1400, 0, traffic.ClassUnavailable), AccountedBackoff},
		{"gRPC, its channel READY again", "grpc", "a", flushedB, grpcFailure(at, 2000, 0, traffic.ClassRefused), WhyOutside},
		{"gRPC, a failed attempt outside every window", "grpc", "a", flushedB, grpcFailure(at, 3500, 1, traffic.ClassRefused), WhyOutside},
		{"gRPC, another channel than the one in backoff", "grpc", "a", flushedB, grpcFailure(at, 1000, 1, traffic.ClassRefused), WhyOutside},
		{"gRPC, no channel named", "grpc", "a", flushedB, grpcFailure(at, 1000, -1, traffic.ClassRefused), WhyOutside},
		{"gRPC, a node that never raced", "grpc", "b", flushedB, grpcFailure(at, 1000, 0, traffic.ClassRefused), WhyOutside},
		{"gRPC, its next attempt hung", "grpc", "a", flushedB, grpcFailure(at, 2000, 2, traffic.ClassRefused), WhyOutside},
		{"gRPC, its next attempt hung, stale entries found", "grpc", "a", flushedA, grpcFailure(at, 2000, 2, traffic.ClassRefused), AccountedConntrack},
		{"gRPC, its next attempt never answered, stale entries found", "grpc", "a", flushedA, grpcFailure(at, 2000, 4, traffic.ClassRefused), AccountedConntrack},
		{"gRPC, its next attempt answered in 300 ms (still in TRANSIENT_FAILURE), stale entries found", "grpc", "a", flushedA, grpcFailure(at, 1500, 3, traffic.ClassRefused), AccountedBackoff},
		{"gRPC, just after its next attempt began, before READY", "grpc", "a", flushedB, afterMs(grpcFailure(at, 1500, 0, traffic.ClassRefused), 0.5), AccountedBackoff},
		{"gRPC, in backoff before the hung attempt", "grpc", "a", flushedA, grpcFailure(at, 1300, 2, traffic.ClassRefused), AccountedBackoff},
		{"HTTP, stale entries found", "http1", "a", flushedA, traffic.Record{Time: at(2000), Class: traffic.ClassRefused, Latency: time.Millisecond}, WhyOutside},
	} {
		sc, err := scenario.Parse("s.yaml", []byte("apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nvariants: [{variant: no-prestop}]\ntraffic: {protocol: "+tc.wire+"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		in := &input{sc: sc, events: events, deletions: deletionsOf(events), podIPs: podIPsOf(events), app: []appmetrics.Record{{
			Source: appmetrics.SourceTermination, Pod: "web-1", Time: at(900), SignalAt: at(20), ListenerClosedAt: at(100),
		}}}
		if how, _ := in.newExplainer("alpha", tc.rs).explain(1, tc.node, false, tc.rec, 0); how != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, how, tc.want)
		}
	}
}

// podIPsOf is each pod's IP, as Analyze gives the input.
func podIPsOf(events []timeline.Event) map[string]string {
	ips, _ := podPlaces(events)
	return ips
}

// TestChanceBaselines: drops spread inside three nodes' windows of
// different lengths are all explained; shuffled among the nodes, or
// shifted in time, far fewer are, and the baselines are the same on every
// analysis.
func TestChanceBaselines(t *testing.T) {
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	unrouted := map[string]int{"a": 1800, "b": 600, "c": 1000}
	in := oneDeletion(unrouted)
	analyse := func() *Explained {
		ex := in.newExplainer("alpha", []RolloutSummary{{N: 1, Start: at(-1000), WindowEnd: at(8000)}})
		for _, n := range []string{"a", "b", "c"} {
			for ms := 30; ms < unrouted[n]; ms += 10 {
				ex.explain(1, n, false, traffic.Record{Time: at(ms), Class: traffic.ClassRefused, Latency: time.Millisecond}, 0)
			}
		}
		_, e := ex.rowRoutes([]RolloutSummary{{N: 1}})
		return e
	}
	e := analyse()
	c := e.Chance
	if c == nil || e.Explained != c.Tried || e.Unexplained != 0 {
		t.Fatalf("explained %+v, chance %+v: want every drop explained and tried", e, c)
	}
	t.Logf("%d explained; by chance: %.1f with the nodes shuffled, %.1f with the times shifted", e.Explained, c.NodesShuffled, c.TimesShifted)
	if c.NodesShuffled >= 0.9*float64(c.Tried) || c.NodesShuffled <= 0 {
		t.Errorf("nodes shuffled explain %.1f of %d", c.NodesShuffled, c.Tried)
	}
	if c.TimesShifted >= 0.5*float64(c.Tried) {
		t.Errorf("times shifted explain %.1f of %d", c.TimesShifted, c.Tried)
	}
	// By burst, the unit: one burst a node, each in its window; shifted
	// times rarely put all three in windows (a permutation p-value).
	if c.Bursts != 3 || c.BurstsExplained != 3 || !(c.PShifted < 0.05) || c.PShifted < 1.0/200 {
		t.Errorf("bursts: %d of %d explained, p = %v with the times shifted; want 3 of 3, 0.005 ≤ p < 0.05", c.BurstsExplained, c.Bursts, c.PShifted)
	}
	if again := analyse().Chance; *again != *c {
		t.Errorf("a second analysis gives %+v, the first %+v", again, c)
	}
}

// TestNoListenerClose: an app that records no listener close (a custom
// app) gets that reason, never "outside every window".
func TestNoListenerClose(t *testing.T) {
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	events := []timeline.Event{
		{Time: at(-5000), Kind: timeline.KindRouteWatching, Node: "a"},
		{Time: at(-5000), Kind: timeline.KindRouteSnapshot, Node: "a", IP: "10.0.0.1"},
		{Time: at(-4000), Kind: timeline.KindPodReady, Object: "pod/caddy-1", Pod: "caddy-1", IP: "10.0.0.1"},
		{Time: at(0), Kind: timeline.KindPodDeletionRequested, Object: "pod/caddy-1", Pod: "caddy-1", IP: "10.0.0.1"},
		{Time: at(900), Kind: timeline.KindRouteRemoved, Node: "a", IP: "10.0.0.1"},
	}
	in := &input{events: events, deletions: deletionsOf(events), podIPs: podIPsOf(events)}
	ex := in.newExplainer("alpha", []RolloutSummary{{N: 1, Start: at(-1000), WindowEnd: at(5000)}})
	ex.explain(1, "a", false, traffic.Record{Time: at(300), Class: traffic.ClassRefused}, 0)
	_, e := ex.rowRoutes([]RolloutSummary{{N: 1}})
	if e.Why[WhyNoListenerClose] != 1 || e.Why[WhyOutside] != 0 {
		t.Errorf("explained %+v, want the listener close unknown", e)
	}
}

// TestRemovedAfterIsBoundedByThePodsLife: a route to a pod's IP removed
// long after the pod was gone, or after the IP was routed anew (another
// pod got it), is not that pod's unrouting; one inside its life is.
func TestRemovedAfterIsBoundedByThePodsLife(t *testing.T) {
	at := func(s float64) time.Time { return base.Add(time.Duration(s * float64(time.Second))) }
	ix := indexRoutes([]timeline.Event{
		{Time: at(-10), Kind: timeline.KindRouteWatching, Node: "a"},
		{Time: at(-10), Kind: timeline.KindRouteSnapshot, Node: "a", IP: "10.0.0.1"},
		{Time: at(-10), Kind: timeline.KindRouteSnapshot, Node: "a", IP: "10.0.0.2"},
		{Time: at(1), Kind: timeline.KindRouteRemoved, Node: "a", IP: "10.0.0.1"},
		{Time: at(5), Kind: timeline.KindRouteAdded, Node: "a", IP: "10.0.0.2"}, // reused
		{Time: at(300), Kind: timeline.KindRouteRemoved, Node: "a", IP: "10.0.0.2"},
	}, false, nil)
	if got, ok := ix.removedAfter("a", "10.0.0.1", at(0), at(40)); !ok || !got.t.Equal(at(1)) {
		t.Errorf("inside the pod's life: %v, %v", got, ok)
	}
	if _, ok := ix.removedAfter("a", "10.0.0.1", at(0), at(0.5)); ok {
		t.Error("a removal after the bound was taken")
	}
	if _, ok := ix.removedAfter("a", "10.0.0.2", at(0), at(400)); ok {
		t.Error("a removal after the IP was routed anew was taken")
	}
}

// TestNoUnroute: a pod whose close is known but whose route the watched
// node was never seen to drop (the watch followed another Service) gets
// that reason, not "outside every window".
func TestNoUnroute(t *testing.T) {
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	events := []timeline.Event{
		{Time: at(-5000), Kind: timeline.KindRouteWatching, Node: "a"},
		{Time: at(-4000), Kind: timeline.KindPodReady, Object: "pod/podinfo-1", Pod: "podinfo-1", IP: "10.0.0.1"},
		{Time: at(0), Kind: timeline.KindPodDeletionRequested, Object: "pod/podinfo-1", Pod: "podinfo-1", IP: "10.0.0.1"},
		{Time: at(30), Kind: timeline.KindListenerProbed, Object: "pod/podinfo-1", Pod: "podinfo-1", IP: "10.0.0.1",
			Detail: map[string]string{timeline.DetailProbeOpen: at(10).Format(time.RFC3339Nano), timeline.DetailProbeClosed: at(15).Format(time.RFC3339Nano), "how": "refused"}},
	}
	in := &input{events: events, deletions: deletionsOf(events), podIPs: podIPsOf(events)}
	ex := in.newExplainer("alpha", []RolloutSummary{{N: 1, Start: at(-1000), WindowEnd: at(5000)}})
	if len(ex.gaps) != 1 || ex.gaps[0].CloseSource != CloseFromProbe || ex.gaps[0].ListenerClosed != 0.015 || ex.gaps[0].Unrouted >= 0 {
		t.Fatalf("pairs %+v: want one, its close from the prober at 15 ms, its unrouting unseen", ex.gaps)
	}
	ex.explain(1, "a", false, traffic.Record{Time: at(300), Class: traffic.ClassRefused}, 0)
	_, e := ex.rowRoutes([]RolloutSummary{{N: 1}})
	if e.Why[WhyNoUnroute] != 1 || e.Why[WhyOutside] != 0 {
		t.Errorf("explained %+v, want the unrouting unseen", e)
	}
}

// TestBackoffChance: refusals on a channel in backoff after a raced
// attempt are accounted to it far more often than with their send times
// shifted; without channel states (HTTP) the chance of it is 0.
func TestBackoffChance(t *testing.T) {
	at, events := racedOnA()
	events = append(events, grpcChannels(at)...)
	rs := []RolloutSummary{{N: 1, Start: at(-1000), WindowEnd: at(20000)}}
	for _, wire := range []string{"grpc", "http1"} {
		sc, err := scenario.Parse("s.yaml", []byte("apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nvariants: [{variant: no-prestop}]\ntraffic: {protocol: "+wire+"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		in := &input{sc: sc, events: events, deletions: deletionsOf(events), podIPs: podIPsOf(events), app: []appmetrics.Record{{
			Source: appmetrics.SourceTermination, Pod: "web-1", Time: at(900), SignalAt: at(20), ListenerClosedAt: at(100),
		}}}
		ex := in.newExplainer("alpha", rs)
		backoff := 0
		for ms := 800; ms < 1500; ms += 50 {
			rec := grpcFailure(at, ms, 0, traffic.ClassRefused)
			if wire != "grpc" {
				rec = traffic.Record{Time: at(ms), Class: traffic.ClassRefused, Latency: time.Millisecond}
			}
			if how, _ := ex.explain(1, "a", false, rec, 0); how == AccountedBackoff {
				backoff++
			}
		}
		var e Explained
		ex.chance(1, &e)
		c := e.Chance
		t.Logf("%s: %d accounted to the backoff, %.1f by chance with the times shifted", wire, backoff, c.BackoffShifted)
		switch {
		case wire == "grpc" && (backoff != 14 || c.BackoffShifted >= float64(backoff)/4):
			t.Errorf("gRPC: %d of 14 refusals accounted to the backoff, %.1f by chance; want all, and under a quarter as many by chance", backoff, c.BackoffShifted)
		case wire == "http1" && (backoff != 0 || c.BackoffShifted != 0):
			t.Errorf("HTTP: %d accounted to a backoff, %.1f by chance; want 0 and 0", backoff, c.BackoffShifted)
		}
	}
}

// TestSlowPodIsNotTheRace: a synthetic non-race cause. Every pod stalls
// for 1.5 s after SIGTERM, still listening (it reported its listener
// closed at once, as an app that closes late can), so on every node the
// requests time out on connections the pod accepted, inside what look
// like race windows. Those timeouts are the pod being slow, not requests
// routed to it after its listener closed: counted as Slow, none as the
// race. The same failures recorded without the client's word on the
// connection (older runs, other protocols) are put down to the windows,
// as before; so are those sent through a proxy or a front, whose accepted
// connection ended there, not at the pod (a Traefik run's 119 timeouts,
// logged 499 after Traefik waited on a deleted pod, were once called slow).
func TestSlowPodIsNotTheRace(t *testing.T) {
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	unrouted := map[string]int{"a": 1800, "b": 1200, "c": 1500}
	in := oneDeletion(unrouted)
	stalled := "Get \"http://127.0.0.1:30080/\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
	analyse := func(accepted, proxied bool) *Explained {
		ex := in.newExplainer("alpha", []RolloutSummary{{N: 1, Start: at(-1000), WindowEnd: at(8000)}})
		for _, n := range []string{"a", "b", "c"} {
			for ms := 30; ms < 1500; ms += 10 {
				rec := traffic.Record{Time: at(ms), Class: traffic.ClassTimeout, Latency: 2 * time.Second, Error: stalled}
				if accepted {
					rec.Error += " (on a new connection the server had accepted)"
				}
				if proxied {
					rec.Via = "proxy-" + n
				}
				ex.explain(1, n, proxied, rec, 0)
			}
		}
		_, e := ex.rowRoutes([]RolloutSummary{{N: 1}})
		return e
	}
	e := analyse(true, false)
	if e.Slow != 3*147 || e.Explained != 0 || e.Answerable != 0 {
		t.Errorf("accepted timeouts: %+v; want all %d slow, none explained by the race", e, 3*147)
	}
	if old := analyse(false, false); old.Explained < 400 || old.Slow != 0 {
		t.Errorf("the same timeouts without the client's word on the connection: %+v; want every one in a window, as before", old)
	}
	if via := analyse(true, true); via.Explained < 400 || via.Slow != 0 {
		t.Errorf("the same accepted timeouts through a proxy: %+v; want every one in a window (the proxy accepted them, not the pod)", via)
	}
}

// oneDeletion is the input of one pod, web-1, deleted at base on nodes a,
// b and c, each stopping to route to it unrouted[node] ms later; the app
// reports SIGTERM at 10 ms and its listener closed at 20 ms.
func oneDeletion(unrouted map[string]int) *input {
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	events := []timeline.Event{
		{Time: at(-4000), Kind: timeline.KindPodReady, Object: "pod/web-1", Pod: "web-1", IP: "10.0.0.1"},
		{Time: at(0), Kind: timeline.KindPodDeletionRequested, Object: "pod/web-1", Pod: "web-1", IP: "10.0.0.1"},
	}
	for _, n := range []string{"a", "b", "c"} {
		events = append(events,
			timeline.Event{Time: at(-5000), Kind: timeline.KindRouteWatching, Node: n},
			timeline.Event{Time: at(-5000), Kind: timeline.KindRouteSnapshot, Node: n, IP: "10.0.0.1"},
			timeline.Event{Time: at(unrouted[n]), Kind: timeline.KindRouteRemoved, Node: n, IP: "10.0.0.1"})
	}
	slices.SortStableFunc(events, func(x, y timeline.Event) int { return x.Time.Compare(y.Time) })
	return &input{events: events, deletions: deletionsOf(events), podIPs: podIPsOf(events), app: []appmetrics.Record{{
		Source: appmetrics.SourceTermination, Pod: "web-1", Time: at(2500), SignalAt: at(10), ListenerClosedAt: at(20),
	}}}
}

// afterMs moves a record's send ms milliseconds later.
func afterMs(rec traffic.Record, ms float64) traffic.Record {
	rec.Time = rec.Time.Add(time.Duration(ms * float64(time.Millisecond)))
	return rec
}
