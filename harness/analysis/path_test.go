package analysis_test

import (
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/analysis/analysistest"
	"github.com/droprun/droprun/harness/appmetrics"
	"github.com/droprun/droprun/harness/frontlog"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

// gatewayRun is a synthetic run through the gateway on two nodes, n1 and
// n2. Every request enters through n1; the gateway pod gw-1 runs on n2 and
// opens its own connection to the web Service, so n2's rules pick the web
// pod. old-a1 (10.0.0.1) is deleted at 4.0 s and closes its listener at
// 4.1 s; n1 stops routing to it at 4.2 s, n2 only at 4.8 s. The gateway
// answers 502 to the requests sent in [4.3, 4.7) s, and two requests at
// 4.25 s got no answer at all (no proxy pod named). Ten more 502s come at
// 6.5 s, long after n2 stopped routing to old-a1; the conntrack flush
// after the rollout cleared flushed stale entries on n2 (with flushed < 0,
// no flush was recorded).
func gatewayRun(t *testing.T, flushed int) string { return proxyRun(t, flushed, "gateway", false) }

// proxyRun is gatewayRun through the front target. With front, the run
// also has what droprun records through Traefik: the front pod traefik-1
// (on n2) stops sending to old-a1 at 4.625 s (front.removed, its reading
// before at 4.525 s), and its access log names it for the 502s: those at
// 4.3–4.7 s carry ID a-1, those at 6.5 s ID a-2, and two more at
// 4.00–4.01 s, in flight at old-a1's close, ID a-0; the timeouts at 4.25 s
// are in no line.
func proxyRun(t *testing.T, flushed int, target string, front bool, extra ...analysistest.Event) string {
	sc := `apiVersion: droprun/v1alpha1
kind: Scenario
metadata: {name: synthetic}
traffic: {settle: 2s, target: ` + target + `}
variants:
- {name: alpha, variant: no-prestop}
`
	runJSON := `{"format":"droprun.run/v1","scenario":"synthetic","started":"2026-01-02T03:04:00Z","finished":"2026-01-02T03:05:00Z",
"cluster":{"name":"droprun","kind":true,"nodes":2,"droprun":"test"},
"traffic":{"url":"http://127.0.0.1:30081/version","targets":[{"url":"http://127.0.0.1:30081/version","node":"n1"}],"rate":100,"keepAlive":false,"method":"GET","timeout":"2s","target":"` + target + `","rollouts":1,"settle":"2s","control":"2s","between":"1s"}}`
	route := func(t float64, kind timeline.Kind, node, ip string) analysistest.Event {
		return analysistest.Event{T: t, Event: timeline.Event{Kind: kind, Node: node, IP: ip}}
	}
	onNode := func(e analysistest.Event, node, ip string) analysistest.Event {
		e.Event.Node, e.Event.IP = node, ip
		return e
	}
	events := []analysistest.Event{
		route(0, timeline.KindRouteWatching, "n1", ""),
		route(0, timeline.KindRouteWatching, "n2", ""),
		route(0, timeline.KindRouteSnapshot, "n1", "10.0.0.1"),
		route(0, timeline.KindRouteSnapshot, "n2", "10.0.0.1"),
		onNode(analysistest.Pod(0, timeline.KindPodSnapshot, "gw-1"), "n2", "10.0.9.9"),
		onNode(analysistest.Pod(0, timeline.KindPodSnapshot, "old-a1"), "n1", "10.0.0.1"),
		analysistest.Mark(0, timeline.KindTrafficStart, "alpha", 0),
		analysistest.Mark(2, timeline.KindWindowClose, "alpha", 0, "phase", "control"),
		analysistest.Mark(3, timeline.KindRolloutStart, "alpha", 1, "from", "v1", "to", "v2", "measured", "no-prestop"),
		onNode(analysistest.Pod(4.0, timeline.KindPodDeletionRequested, "old-a1"), "n1", "10.0.0.1"),
		route(4.2, timeline.KindRouteRemoved, "n1", "10.0.0.1"),
		route(4.8, timeline.KindRouteRemoved, "n2", "10.0.0.1"),
		analysistest.Pod(6.0, timeline.KindPodGone, "old-a1"),
		analysistest.Mark(7, timeline.KindRolloutComplete, "alpha", 1),
		analysistest.Mark(9, timeline.KindWindowClose, "alpha", 1, "phase", "rollout"),
		{T: 10, Event: timeline.Event{Kind: timeline.KindTrafficStop, Detail: map[string]string{"variant": "alpha"}}},
	}
	events = append(events, extra...)
	if flushed >= 0 {
		events = append(events, analysistest.Event{T: 9.1, Event: timeline.Event{Kind: timeline.KindConntrackFlushed, Detail: map[string]string{"variant": "alpha", "rollout": "1"},
			Flushed: map[string]int{"n1": 0, "n2": flushed}}})
	}
	failures := []analysistest.Failure{
		{From: 4.25, To: 4.27, Err: analysistest.Timeout},
		{From: 4.3, To: 4.7, Code: 502, Err: "502 Bad Gateway", Via: "gw-1"},
		{From: 6.5, To: 6.6, Code: 502, Err: "502 Bad Gateway", Via: "gw-1", Latency: 500 * time.Millisecond},
	}
	var lines []frontlog.Line
	if front {
		failures[1].RequestID, failures[2].RequestID = "a-1", "a-2"
		// a-0: two 502s sent at 4.00 and 4.01 s, before old-a1's
		// listener closed (4.1 s), in flight when it did.
		failures = append(failures, analysistest.Failure{From: 4.0, To: 4.02, Code: 502, Err: "502 Bad Gateway", Latency: 300 * time.Millisecond, RequestID: "a-0"})
		events = append(events,
			analysistest.Event{T: 0, Event: timeline.Event{Kind: timeline.KindFrontWatching, Pod: "traefik-1", Node: "n2", Detail: map[string]string{"servers": "10.0.0.1"}}},
			analysistest.Event{T: 4.625, Event: timeline.Event{Kind: timeline.KindFrontRemoved, Pod: "traefik-1", Node: "n2", IP: "10.0.0.1",
				Detail: map[string]string{"last_seen": analysistest.At(4.525).Format(time.RFC3339Nano)}}})
		// a-2's 502s came after two resends; the front resent c-ok (in
		// the control window) and r-ok (in the rollout's) once and
		// served them.
		for _, id := range []string{"a-0", "a-1", "a-2"} {
			lines = append(lines, frontlog.Line{Pod: "traefik-1", RequestID: id, Upstream: "10.0.0.1:8080", Status: 502, Retries: map[string]int{"a-2": 2}[id]})
		}
		failures = append(failures,
			analysistest.Failure{From: 1.0, To: 1.05, Served: true, RequestID: "c-ok"},
			analysistest.Failure{From: 7.0, To: 7.2, Served: true, RequestID: "r-ok"})
		for _, id := range []string{"c-ok", "r-ok"} {
			lines = append(lines, frontlog.Line{Pod: "traefik-1", RequestID: id, Upstream: "10.0.0.2:8080", Status: 200, OriginStatus: 200, Retries: 1})
		}
		// Two timeouts inside the window that the front answered 200,
		// the pod did not refuse them: a-y after the client had given up
		// (its answer ended at 6.5 s, the client's 2 s ran out at 6.2 s),
		// a-z before (at 4.31 s: the client lost the answer).
		failures = append(failures,
			analysistest.Failure{From: 4.2, To: 4.21, Err: analysistest.Timeout, Latency: 2 * time.Second, RequestID: "a-y"},
			analysistest.Failure{From: 4.21, To: 4.22, Err: analysistest.Timeout, Latency: 2 * time.Second, RequestID: "a-z"})
		lines = append(lines,
			frontlog.Line{Pod: "traefik-1", RequestID: "a-y", Start: analysistest.At(4.5), Duration: 2 * time.Second, Upstream: "10.0.0.1:8080", Status: 200, OriginStatus: 200},
			frontlog.Line{Pod: "traefik-1", RequestID: "a-z", Start: analysistest.At(4.3), Duration: 10 * time.Millisecond, Upstream: "10.0.0.1:8080", Status: 200, OriginStatus: 200})
		// Sends that place traefik-1's stop: one to old-a1 at 4.6 s, after
		// the last reading that had it (4.525 s), narrows it to 25 ms; one
		// by another front pod, one to another pod and one after the stop
		// do not.
		for _, l := range []frontlog.Line{
			{Pod: "traefik-1", Start: analysistest.At(4.6), Upstream: "10.0.0.1:8080", Status: 200},
			{Pod: "traefik-2", Start: analysistest.At(4.61), Upstream: "10.0.0.1:8080", Status: 200},
			{Pod: "traefik-1", Start: analysistest.At(4.62), Upstream: "10.0.0.2:8080", Status: 200},
			{Pod: "traefik-1", Start: analysistest.At(4.7), Upstream: "10.0.0.1:8080", Status: 200},
		} {
			l.Duration = time.Millisecond
			lines = append(lines, l)
		}
	}
	return analysistest.Write(t, analysistest.Run{Scenario: sc, RunJSON: runJSON, Events: events, Failures: failures,
		Traffic: map[string][2]float64{"alpha": {0, 10}}, Targets: []string{"http://127.0.0.1:30081/version"},
		Extra: func(dir string) {
			b, err := json.Marshal(appmetrics.Record{Source: appmetrics.SourceTermination, Pod: "old-a1", Time: analysistest.At(5),
				SignalAt: analysistest.At(4.05), ListenerClosedAt: analysistest.At(4.1)})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, runfile.AppFile), append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			if lines == nil {
				return
			}
			var fl []byte
			for _, l := range lines {
				b, _ := json.Marshal(l)
				fl = append(append(fl, b...), '\n')
			}
			if err := os.WriteFile(filepath.Join(dir, runfile.FrontLogFile), fl, 0o644); err != nil {
				t.Fatal(err)
			}
		}})
}

// TestFrontResent: the requests a front resent after the pod it picked
// did not answer (its access log's retries) are counted where the client
// sent them: the rollout window's 20 served on a later try (masked by the
// front's retries, not drops) and 10 that failed after two resends, the
// control window's 5 served; each failure says how often the front
// resent it, and the report says what the retries hid.
func TestFrontResent(t *testing.T) {
	var failures []analysis.Failure
	a := analyze(t, proxyRun(t, 7, "traefik", true), analysis.Options{Failure: func(f analysis.Failure) error { failures = append(failures, f); return nil }})
	row := rows(a)["alpha"]
	w := row.Rollouts[0].Window
	if row.FrontResent != 30 || row.FrontMasked != 20 || w.FrontResent != 30 || w.FrontMasked != 20 || row.Control.FrontResent != 5 || row.Control.FrontMasked != 5 {
		t.Errorf("resent %d (masked %d), rollout 1 %d (%d), control %d (%d); want 30 (20), 30 (20), 5 (5)",
			row.FrontResent, row.FrontMasked, w.FrontResent, w.FrontMasked, row.Control.FrontResent, row.Control.FrontMasked)
	}
	if row.Drops != 56 {
		t.Errorf("%d drops; the front's served retries are not drops, want 56", row.Drops)
	}
	resent := 0
	for _, f := range failures {
		if f.FrontResends != 0 {
			resent++
			if f.FrontResends != 2 || f.Time.Before(analysistest.At(6.5)) {
				t.Errorf("failure at %v resent %d times; only a-2's (6.5 s) were, twice", f.Time, f.FrontResends)
			}
		}
	}
	if resent != 10 {
		t.Errorf("%d failures the front had resent, want a-2's 10", resent)
	}
	// A run whose front resent nothing says nothing of it.
	if row := rows(analyze(t, proxyRun(t, 7, "traefik", false), analysis.Options{}))["alpha"]; row.FrontResent != 0 || row.Control.FrontResent != 0 {
		t.Errorf("without the front's log: resent %d, control %d; want none", row.FrontResent, row.Control.FrontResent)
	}
}

// TestGatewayAttribution: a 502 through the gateway is explained by the
// race window of the gateway pod's node (n2, open 4.1–4.8 s), not the
// entry node's (n1, open 4.1–4.2 s, which holds none of them); a failure
// the gateway never answered is said to have failed before it. The same
// requests charged to their entry node would be all but unexplained.
func TestGatewayAttribution(t *testing.T) {
	var failures []analysis.Failure
	a := analyze(t, gatewayRun(t, 7), analysis.Options{Failure: func(f analysis.Failure) error { failures = append(failures, f); return nil }})
	row := rows(a)["alpha"]
	e := row.Explained
	if row.Drops != 52 || e == nil || e.Explained != 40 || e.Conntrack != 10 || e.Unexplained != 2 || e.Why[analysis.WhyNoProxyPod] != 2 {
		t.Fatalf("drops %d, explained %+v; want 52 drops: 40 502s in n2's race window, 10 late ones by stale conntrack entries, 2 failed before the gateway", row.Drops, e)
	}
	for _, g := range row.Routes {
		want := map[string]int{"n1": 0, "n2": 40}[g.Node]
		if got := int(g.Drops["502"]); got != want {
			t.Errorf("node %s's pair holds %d 502s, want %d (%s)", g.Node, got, want, g.RaceText())
		}
	}
	accounted := map[string]int{}
	for _, f := range failures {
		if f.Code == 502 && (f.Node != "n1" || f.Via != "gw-1" || f.RoutedBy != "n2") {
			t.Fatalf("failure %+v: want entry node n1, via gw-1, routed by n2", f)
		}
		if f.Code == 0 && (f.Via != "" || f.RoutedBy != "") {
			t.Fatalf("failure %+v: no proxy pod, no routing node", f)
		}
		if f.Explained == analysis.AccountedRace && f.RacePod != "old-a1" {
			t.Errorf("failure %+v: in a race window but not old-a1's", f)
		}
		accounted[f.Explained]++
	}
	// Each failure says how it was accounted for, as the row counts them.
	if want := map[string]int{analysis.AccountedRace: 40, analysis.AccountedConntrack: 10, analysis.WhyNoProxyPod: 2}; !maps.Equal(accounted, want) {
		t.Errorf("failures accounted %v, want %v", accounted, want)
	}
	// By hop: n2's rules chose the pod of every 502; the 2 that never
	// reached the gateway name no hop.
	if want := map[string]uint64{"node n2": 50, analysis.HopUnknown: 2}; !maps.Equal(row.ByHop, want) || !maps.Equal(row.Rollouts[0].ByHop, want) {
		t.Errorf("drops by hop %v (rollout 1: %v), want %v", row.ByHop, row.Rollouts[0].ByHop, want)
	}
}

// TestStaleConntrackNeedsEvidence: the late 502s are put down to stale
// conntrack entries only when the flush after the rollout found some on
// the node that routed them. When it ran and found none, no dial from
// that node went unanswered: they are the gateway's own (WhyProxyOwn),
// and the row is suspect. Without a flush recorded they stay outside
// every race window.
func TestStaleConntrackNeedsEvidence(t *testing.T) {
	row := rows(analyze(t, gatewayRun(t, 0), analysis.Options{}))["alpha"]
	e := row.Explained
	if e == nil || e.Explained != 40 || e.Conntrack != 0 || e.Why[analysis.WhyProxyOwn] != 10 || e.Why[analysis.WhyOutside] != 0 {
		t.Fatalf("explained %+v; want the 10 late 502s the gateway's own, none by conntrack", e)
	}
	if len(row.Suspect) != 1 || !strings.Contains(row.Suspect[0], "the proxy failed 10 of its drops itself") {
		t.Errorf("suspect %q; want the 10 the gateway failed itself named", row.Suspect)
	}
	e = rows(analyze(t, gatewayRun(t, -1), analysis.Options{}))["alpha"].Explained
	if e == nil || e.Explained != 40 || e.Conntrack != 0 || e.Why[analysis.WhyOutside] != 10 || e.Why[analysis.WhyProxyOwn] != 0 {
		t.Fatalf("explained %+v without a flush recorded; want the 10 late 502s outside every race window", e)
	}
}

// TestConntrackPodDeletedLater: the late 502s (sent at 6.5 s, answered
// by 7.1 s) are put down to stale conntrack entries even though the
// rollout deleted a second pod at 8 s whose route n2 was never seen to
// remove: that pod was serving while they were on their way.
func TestConntrackPodDeletedLater(t *testing.T) {
	pod := func(t float64, kind timeline.Kind) analysistest.Event {
		e := analysistest.Pod(t, kind, "old-a2")
		e.Event.Node, e.Event.IP = "n1", "10.0.0.2"
		return e
	}
	later := []analysistest.Event{
		{T: 0, Event: timeline.Event{Kind: timeline.KindRouteSnapshot, Node: "n2", IP: "10.0.0.2"}},
		pod(0, timeline.KindPodSnapshot),
		pod(8, timeline.KindPodDeletionRequested),
	}
	e := rows(analyze(t, proxyRun(t, 7, "gateway", false, later...), analysis.Options{}))["alpha"].Explained
	if e == nil || e.Conntrack != 10 || e.Why[analysis.WhyOutside] != 0 {
		t.Fatalf("explained %+v; want the 10 late 502s by stale conntrack entries", e)
	}
}

// TestFrontAttribution: through Traefik, which picks the pod itself, a
// drop is placed by the front pod its access log names and the pod that
// front pod chose: the 502s sent at 4.3–4.7 s to old-a1 fall in the
// (old-a1, traefik-1) window, from old-a1's listener close (4.1 s) to
// traefik-1's stop of sending to it (4.625 s, after its last logged send
// to old-a1 at 4.6 s), whatever the nodes' rules
// say; those sent after it are outside; the timeouts in no line of the
// log name no front pod, and those the front logged as answered 200 are
// charged to the way back from it, never to the window they were sent
// in. Without the access log and the front's stops (a
// run recorded before droprun watched the front), nothing is explained and
// nothing said: the nodes' rules did not choose the pods.
func TestFrontAttribution(t *testing.T) {
	var failures []analysis.Failure
	a := analyze(t, proxyRun(t, 7, "traefik", true), analysis.Options{Failure: func(f analysis.Failure) error { failures = append(failures, f); return nil }})
	row := rows(a)["alpha"]
	e := row.Explained
	// One 502 every 10 ms: 4.30–4.67 s, 38, inside the window (4.625 s
	// plus the 50 ms slack), 4.68 and 4.69 s after it, 10 at 6.5 s; 2 at
	// 4.00–4.01 s, in flight at the 4.1 s close (no error logged: in the
	// window, not cut); 2 timeouts in no line, 2 answered 200 by the
	// front.
	if row.Drops != 56 || e == nil || e.Explained != 40 || e.Conntrack != 0 || e.Why[analysis.WhyOutside] != 12 ||
		e.Why[analysis.WhyFrontNoLine] != 2 || e.Why[analysis.WhyFrontLate] != 1 || e.Why[analysis.WhyFrontLost] != 1 {
		t.Fatalf("drops %d, explained %+v; want 40 in the (old-a1, traefik-1) window, 12 outside it, 2 in no line of the access log, 2 the front answered: 1 after the client gave up, 1 before", row.Drops, e)
	}
	var front *analysis.RouteGap
	nodes := 0
	for i, g := range row.Routes {
		if g.Node == "traefik-1" {
			front = &row.Routes[i]
			continue
		}
		// The nodes' rules are measured beside the front (the Service's
		// other clients take them); they chose no pod for the run's
		// requests, so no drop is theirs.
		nodes++
		if g.Source != analysis.RouteSourceDataPlane || len(g.Drops) > 0 {
			t.Errorf("pair %s/%s from %s with drops %v through a front: want the node's rules, measured, with no drop", g.Pod, g.Node, g.Source, g.Drops)
		}
	}
	if nodes == 0 {
		t.Error("no pair of the nodes' rules beside the front's")
	}
	if front == nil || front.Source != analysis.RouteSourceFront || front.Pod != "old-a1" || math.Abs(front.Unrouted-0.625) > 1e-6 || math.Abs(front.UnroutedResolution-0.025) > 1e-6 {
		t.Fatalf("the front's pair: %+v; want old-a1 unrouted by traefik-1 0.625 s after its deletion, from the front's API, placed to within 25 ms by its last send to old-a1", front)
	}
	// Inside that bracket (4.6 s, 4.625 s] traefik-1 started one request
	// (to another pod, at 4.62 s); traefik-2's at 4.61 s is not its.
	if n := front.UnroutedRequests; n == nil || *n != 1 {
		t.Errorf("the front's pair holds %v requests inside its bracket; want 1, traefik-1's at 4.62 s", n)
	}
	for _, f := range failures {
		answered := f.Time.Before(analysistest.At(4.25))
		if f.Code == 502 && (f.RoutedBy != "traefik-1" || f.Hop != "front pod traefik-1") ||
			f.Code == 0 && answered && (f.RoutedBy != "" || f.Hop != analysis.HopFrontAnswered || f.Explained != analysis.WhyFrontLate && f.Explained != analysis.WhyFrontLost) ||
			f.Code == 0 && !answered && (f.RoutedBy != "" || f.Hop != analysis.HopBeforeFront) {
			t.Errorf("failure %+v: want 502s routed by traefik-1, the timeouts by no one known, before the front or (answered) after it", f)
		}
	}
	// Per rollout, by hop: the front pod failed the 502s; the timeouts
	// were not failed by the front.
	if !slices.ContainsFunc(row.Suspect, func(s string) bool {
		return strings.Contains(s, "rollout 1: the front answered 2 of its drops 2xx (its access log): the pods did not refuse them; 1 ended after the client's request had failed (the front read or answered them late), 1 ended before it (lost on the way back)")
	}) {
		t.Errorf("suspect %q: want the 2 answers the front gave named", row.Suspect)
	}
	if want := map[string]uint64{"front pod traefik-1": 52, analysis.HopBeforeFront: 2, analysis.HopFrontAnswered: 2}; !maps.Equal(row.Rollouts[0].ByHop, want) {
		t.Errorf("rollout 1's drops by hop %v, want %v", row.Rollouts[0].ByHop, want)
	}
	plain := rows(analyze(t, proxyRun(t, 7, "traefik", false), analysis.Options{}))["alpha"].Explained
	if plain != nil {
		t.Errorf("without the front's data: explained %+v; want nothing said (no (pod, node) window chose them)", plain)
	}
}

// TestFrontUpstreamErrors: through a front that logs why it failed a
// request (Caddy's error log, frontlog.Line.UpstreamError), what the pod
// did to the front's request decides whether a 502 was cut by the close.
// old-a1's listener closed at 4.1 s and the front stopped sending to it
// by 4.625 s. a-0's two 502s, sent at 4.00–4.01 s and in flight at the
// close, met an EOF: the close cut them. a-1's 38 inside the window and
// a-2's 10 long after were refused. Every error counts by class. With
// a-0's refused too, the front dialled old-a1 after the close: in the
// window, not cut; without the front's errors (Traefik logs none) a 502
// says nothing of what the pod did, and a-0's are in the window too.
func TestFrontUpstreamErrors(t *testing.T) {
	withErrors := func(errs map[string]string) string {
		dir := proxyRun(t, 7, "caddy", true)
		f := filepath.Join(dir, runfile.FrontLogFile)
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var out []byte
		for line := range strings.Lines(string(b)) {
			var l frontlog.Line
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Fatal(err)
			}
			l.UpstreamError = errs[l.RequestID]
			j, _ := json.Marshal(l)
			out = append(append(out, j...), '\n')
		}
		if err := os.WriteFile(f, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	const (
		eof     = "EOF"
		refused = "dial tcp 10.0.0.1:8080: connect: connection refused"
	)
	row := rows(analyze(t, withErrors(map[string]string{"a-0": eof, "a-1": refused, "a-2": refused}), analysis.Options{}))["alpha"]
	e := row.Explained
	want := map[traffic.Class]uint64{traffic.ClassEOF: 2, traffic.ClassRefused: 50}
	if e == nil || e.Cut != 2 || e.Explained != 38 || e.Why[analysis.WhyOutside] != 12 || !maps.Equal(e.FrontErrors, want) {
		t.Fatalf("explained %+v; want a-0's 2 cut, a-1's 38 in the window, 12 outside, the front's errors %v", e, want)
	}
	if ro := row.Rollouts[0].Explained; ro == nil || ro.Cut != 2 || !maps.Equal(ro.FrontErrors, want) {
		t.Errorf("rollout 1 explained %+v; want the row's cut and errors", ro)
	}
	e = rows(analyze(t, withErrors(map[string]string{"a-0": refused, "a-1": refused, "a-2": refused}), analysis.Options{}))["alpha"].Explained
	if e == nil || e.Cut != 0 || e.Explained != 40 || e.FrontErrors[traffic.ClassRefused] != 52 {
		t.Errorf("every error a refusal: explained %+v; want a-0's and a-1's 40 in the window, none cut", e)
	}
	e = rows(analyze(t, withErrors(nil), analysis.Options{}))["alpha"].Explained
	if e == nil || e.Cut != 0 || e.Explained != 40 || e.FrontErrors != nil {
		t.Errorf("without the front's errors: explained %+v; want 40 in the window, nothing of the front's errors", e)
	}
}
