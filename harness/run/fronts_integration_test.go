package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/closeprobe"
	"github.com/droprun/droprun/harness/frontlog"
	"github.com/droprun/droprun/harness/generators/pods"
	"github.com/droprun/droprun/harness/jsonl"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

// TestIntegrationRunCaddy: through Caddy, which finds the web pods by a
// headless Service's DNS name, looked up again every second, and logs each
// lookup; see testFront. Traefik, read through its API every 20 ms from
// inside a node, is measured from generator pods with a user's own app
// (TestIntegrationRunCustomApp) and held to the same stops.
func TestIntegrationRunCaddy(t *testing.T) {
	testFront(t, "caddy", "log")
}

// TestIntegrationFrontRetries: through Caddy with load_balancing retries
// (traffic.frontRetries: 2), no-prestop's refusals are resent to a pod
// picked again and served: in every rollout the analysis counts requests
// the front resent and the client was served (masked by the front's
// retries), the same number the raw files give when each client record
// is joined to its access-log line by ID, and more than the 502s that
// still reached the client (those needed every try to fail).
func TestIntegrationFrontRetries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	needCluster(t, ctx)
	sc := itScenario(t, `metadata: {name: e2e-front-retries}
variants:
  - variant: no-prestop
rollouts: 2
traffic: {rate: 150, control: 5s, between: 3s, settle: 3s, target: caddy, frontRetries: 2}
`)
	quietRun(ctx, t, sc, func(t testing.TB, a *analysis.Analysis, dir string) {
		lines := readFrontLog(t, dir)
		v := a.Summary.Variants[0]
		masked := v.Control.FrontMasked + v.Outside.FrontMasked
		for _, ro := range v.Rollouts {
			t.Logf("rollout %d: %d drops (classes %v), the front resent %d, %d of them served", ro.N, ro.Window.Failures, ro.Window.Classes, ro.Window.FrontResent, ro.Window.FrontMasked)
			if ro.Window.FrontMasked == 0 {
				t.Errorf("rollout %d: the front served no resent request; no-prestop's pods refuse requests Traefik still sends them", ro.N)
			}
			masked += ro.Window.FrontMasked + ro.Tail.FrontMasked
		}
		rf, err := os.Open(filepath.Join(dir, runfile.ResultsFileOf(v.Variant, traffic.HostOrigin)))
		if err != nil {
			t.Fatal(err)
		}
		defer rf.Close()
		var raw uint64
		if err := traffic.ReadResults(rf, func(rec traffic.Record) error {
			if l, ok := lines[rec.RequestID()]; ok && l.Retries > 0 && !rec.Class.Failed() {
				raw++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if raw != masked {
			t.Errorf("the analysis counts %d requests served after a resend, the raw files %d", masked, raw)
		}
		if v.Classes[traffic.Class502] >= v.FrontMasked {
			t.Errorf("%d 502s reached the client, %d refusals were masked by the retries; want the retries to hide most", v.Classes[traffic.Class502], v.FrontMasked)
		}
	})
}

// testFront runs no-prestop and graceful-drain through the front target
// (built from the Go module proxy once and kept in the user's cache), at
// 150 req/s from the host: a front, its access log (then streamed through
// the API server) and its readings kept this 2-core machine 90-98 % busy
// at 300 (a clean-clone CI run lost 3,014 answers Traefik gave), and a run
// the rig stalled in whose checks fail is measured again (quietRun):
// both control windows are clean, no-prestop's drops show as 502s, and
// graceful-drain, which serves until it is out of every endpoint list,
// drops none beyond the rig's floor and the answers the front gave that
// the client never received (charged to the way back from the front).
// The front's access log (frontlog.jsonl), read from its file inside the
// front pod's node, holds a line for nearly every
// request, joined to the client's record by its ID, and every 502 the
// client got is one the front logged. The front's own account of the pods
// it sends to, read via via, places its stop of sending to every deleted
// web pod (checkFrontStops). No-prestop's drops are explained by the
// (pod, front pod) race windows, well above chance; those the rig excused
// (a stalled client or node) and those the front answered 2xx are left
// out of that count, and graceful-drain's floor, and said.
func testFront(t *testing.T, target, via string) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	needCluster(t, ctx)
	sc := itScenario(t, fmt.Sprintf(`metadata: {name: e2e-%s}
variants:
  - variant: no-prestop
  - variant: graceful-drain
rollouts: 2
traffic: {rate: 150, control: 5s, between: 3s, settle: 3s, balance: 10s, target: %s}
`, target, target))
	quietRun(ctx, t, sc, func(t testing.TB, a *analysis.Analysis, dir string) {
		lines := readFrontLog(t, dir)
		events := readEvents(t, dir)
		checkFrontLogFromNode(t, dir)
		checkFrontStops(t, events, lines, a, target, via, "web-")
		if via == "log" {
			checkWideStops(t, events, lines)
		}
		if target == "caddy" {
			checkUpstreamErrors(t, a, lines)
		}
		for _, v := range a.Summary.Variants {
			t.Logf("%s %s: %d drops of %d, classes %v, control %d/%d", target, v.Variant, v.Drops, v.WindowRequests, v.Classes, v.Control.Failures, v.Control.Requests)
			if v.Control.Failures > 0 || v.Control.Requests == 0 {
				t.Errorf("%s through %s: control %d failures in %d requests, want a clean control window", v.Variant, target, v.Control.Failures, v.Control.Requests)
			}
			rf, err := os.Open(filepath.Join(dir, runfile.ResultsFileOf(v.Variant, traffic.HostOrigin)))
			if err != nil {
				t.Fatal(err)
			}
			var n, joined, bad502, answered int
			upstreams := map[string]int{}
			err = traffic.ReadResults(rf, func(rec traffic.Record) error {
				n++
				l, ok := lines[rec.RequestID()]
				if ok {
					joined++
				}
				if rec.Code == 502 && (!ok || l.Status != 502) {
					bad502++
				}
				if ok && rec.Class.Failed() {
					upstreams[fmt.Sprintf("%s %d", l.Upstream, l.Status)]++
					if l.Status >= 200 && l.Status < 300 {
						answered++
						// Where the time went: before the front read it,
						// or in its answer.
						t.Logf("%s %s: %s answered %s (sent %s) 200: read %s after it was sent, answered in %s; the client: %s after %s",
							target, v.Variant, l.Pod, rec.RequestID(), rec.Time.Format("15:04:05.000"), l.Start.Sub(rec.Time).Round(time.Millisecond),
							l.Duration.Round(time.Millisecond), rec.Class, rec.Latency.Round(time.Millisecond))
					}
				}
				return nil
			})
			rf.Close()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s: %d of %d requests in its access log; failures by upstream and status: %v", target, v.Variant, joined, n, upstreams)
			if n == 0 || float64(joined) < 0.95*float64(n) || bad502 > 0 {
				t.Errorf("%s through %s: %d of %d requests joined to its access log, %d 502s it did not log as 502; want at least 95%% joined and every 502 logged", v.Variant, target, joined, n, bad502)
			}
			// The drops the front answered 2xx (the client never received the
			// answers) are charged to the way back from the front, each one
			// a line of its log the test finds too.
			after := v.ByHop[analysis.HopFrontAnswered]
			if after > uint64(answered) {
				t.Errorf("%s through %s: %d drops charged to %q, but only %d failed requests have a 2xx line in its log", v.Variant, target, after, analysis.HopFrontAnswered, answered)
			}
			if v.FrontResent != 0 || v.Control.FrontResent != 0 {
				t.Errorf("%s through %s: the front resent %d requests (%d in the control window); it was told to send each once", v.Variant, target, v.FrontResent, v.Control.FrontResent)
			}
			switch v.Variant {
			case "no-prestop":
				if v.Drops == 0 || v.Classes[traffic.Class502] == 0 {
					t.Errorf("no-prestop through %s: %d drops, classes %v; want drops, 502s among them", target, v.Drops, v.Classes)
				}
				// Each drop is placed by the front pod that handled it and
				// the pod it chose: inside that (pod, front pod) window,
				// from the pod's listener close to the front's stop of
				// sending to it, well above chance.
				e := v.Explained
				if e == nil {
					t.Fatalf("no-prestop through %s: no explanation of its %d drops", target, v.Drops)
				}
				named := v.Drops - v.Excused - e.Why[analysis.WhyFrontNoLine] - e.FrontAnswered()
				shifted := 0.0
				if e.Chance != nil {
					shifted = e.Chance.TimesShifted
				}
				t.Logf("no-prestop through %s: of %d drops, %d named a front pod; explained %+v, times-shifted baseline %.0f", target, v.Drops, named, e, shifted)
				if got := float64(e.Explained + e.Cut); named == 0 || got < 0.95*float64(named) || got < shifted+0.5*float64(named) {
					t.Errorf("no-prestop through %s: %d of the %d drops that name a front pod explained by its race windows (times-shifted baseline %.0f); want at least 95%%, and 50 points above the baseline", target, e.Explained+e.Cut, named, shifted)
				}
			case "graceful-drain":
				checkAtFloor(t, "graceful-drain through "+target, v)
			}
		}
	})
}

// checkUpstreamErrors: Caddy logs why it failed each request (its error
// log, joined to the access-log line by request ID): every 502 line
// carries its upstream's error, and the analysis classifies no-prestop's
// (frontlog.Line.UpstreamError, analysis.Explained.FrontErrors).
func checkUpstreamErrors(t testing.TB, a *analysis.Analysis, lines map[string]frontlog.Line) {
	t.Helper()
	var n502, missing int
	errs := map[string]int{}
	for _, l := range lines {
		if l.Status != 502 {
			continue
		}
		n502++
		if l.UpstreamError == "" {
			missing++
		}
		errs[string(traffic.Classify(0, l.UpstreamError))]++
	}
	t.Logf("caddy: %d 502 lines, their upstream errors by class %v", n502, errs)
	if missing > 0 {
		t.Errorf("caddy: %d of %d 502 lines carry no upstream error; Caddy logs one for each (http.log.error)", missing, n502)
	}
	for _, v := range a.Summary.Variants {
		if v.Variant != "no-prestop" || v.Classes[traffic.Class502] == 0 {
			continue
		}
		var classified uint64
		if e := v.Explained; e != nil {
			for _, k := range e.FrontErrors {
				classified += k
			}
		}
		if classified == 0 {
			t.Errorf("no-prestop through caddy: %d 502s, none classified by the front's error (explained %+v)", v.Classes[traffic.Class502], v.Explained)
		}
	}
}

// checkFrontStops holds the front target's own account of the pods it
// sends to, read via via, in a run's events: it shows the front stop
// sending to every app pod (named pods*) the rollouts deleted
// (front.removed), each stop placed by its readings and narrowed by its
// access log (the front's last send to the pod; through Traefik, its
// picks of the others after it): half to within 100 ms, every one within
// two reads' timeouts (500 ms each) and a poll (Traefik's reads slow down
// while it applies a change; docs/fronts.md), and any wider than 100 ms
// only by the front's own pause (checkPausedStops).
func checkFrontStops(t testing.TB, events []timeline.Event, lines map[string]frontlog.Line, a *analysis.Analysis, target, via, pods string) {
	t.Helper()
	deleted := map[string]time.Time{} // web pod IP → deletion requested
	removed := map[string]time.Time{} // web pod IP → the front stopped sending to it
	var placed []time.Duration        // how closely each removal was placed
	for _, e := range events {
		switch e.Kind {
		case timeline.KindFrontWatching:
			if e.Detail["via"] != via {
				t.Errorf("%s pod %s read via %q, want %s", target, e.Pod, e.Detail["via"], via)
			}
		case timeline.KindPodDeletionRequested:
			if strings.HasPrefix(e.Pod, pods) && e.IP != "" {
				deleted[e.IP] = e.Time
			}
		case timeline.KindFrontRemoved:
			at, last := e.FrontChange()
			if _, ok := removed[e.IP]; !ok {
				removed[e.IP] = at
			}
			if !last.IsZero() {
				placed = append(placed, at.Sub(last))
			}
		}
	}
	if len(deleted) == 0 {
		t.Fatalf("no deletion of a pod named %s* in the timeline", pods)
	}
	for ip, d := range deleted {
		r, ok := removed[ip]
		if !ok {
			t.Errorf("pod %s, deleted at %s: %s never showed it stop sending to it", ip, d.Format("15:04:05.000"), target)
			continue
		}
		t.Logf("pod %s: %s stopped sending to it %s after its deletion", ip, target, r.Sub(d).Round(time.Millisecond))
	}
	slices.Sort(placed)
	if len(placed) == 0 {
		t.Fatal("no front.removed event with the reading before it")
	}
	t.Logf("%s's %d stops placed by its readings alone to within %s (median), %s (worst)", target, len(placed), placed[len(placed)/2].Round(time.Millisecond), placed[len(placed)-1].Round(time.Millisecond))
	// The analysis narrows each bracket by the front's access log
	// (RouteGap.UnroutedResolution); that is what advise and the report
	// quote.
	var narrowed []time.Duration
	for _, v := range a.Summary.Variants {
		for _, g := range v.Routes {
			if g.Source == analysis.RouteSourceFront && g.UnroutedResolution > 0 {
				narrowed = append(narrowed, time.Duration(g.UnroutedResolution*float64(time.Second)))
			}
		}
	}
	slices.Sort(narrowed)
	if len(narrowed) == 0 {
		t.Fatal("no front stop with a bracket in the summary's routes")
	}
	median, p90, worst := narrowed[len(narrowed)/2], narrowed[(len(narrowed)*9+9)/10-1], narrowed[len(narrowed)-1] // nearest rank
	t.Logf("%s's %d stops placed to within %s (median), %s (p90), %s (worst) with its sends", target, len(narrowed), median.Round(time.Millisecond), p90.Round(time.Millisecond), worst.Round(time.Millisecond))
	// A bracket spans two reads (the last that had the pod, from its
	// start, and the first that did not, to its end): its worst is two
	// reads' timeouts and a poll (a CI-like run: 733 ms, as Traefik
	// applied a change). The front's sends narrow most to tens of ms.
	if median > 100*time.Millisecond || worst > 2*500*time.Millisecond+closeprobe.PollEvery {
		t.Errorf("stops of sending placed to within %s (median) and %s (worst); want 100 ms and two reads' timeouts plus a poll", median, worst)
	}
	checkPausedStops(t, a, lines)
}

// checkPausedStops holds every front stop the analysis places less
// closely than 100 ms to the front's pause: its front pod started fewer
// requests inside the bracket (RouteGap.UnroutedRequests) than it starts
// in 100 ms on average, so the width is time the front sent (almost)
// nothing, which no reading narrows and on which no request's fate
// turns.
func checkPausedStops(t testing.TB, a *analysis.Analysis, lines map[string]frontlog.Line) {
	t.Helper()
	type span struct {
		n           int
		first, last time.Time
	}
	perPod := map[string]*span{}
	for _, l := range lines {
		s := perPod[l.Pod]
		if s == nil {
			s = &span{first: l.Start, last: l.Start}
			perPod[l.Pod] = s
		}
		s.n++
		if l.Start.Before(s.first) {
			s.first = l.Start
		}
		if l.Start.After(s.last) {
			s.last = l.Start
		}
	}
	for _, v := range a.Summary.Variants {
		for _, g := range v.Routes {
			if g.Source != analysis.RouteSourceFront || g.UnroutedResolution <= 0.1 {
				continue
			}
			s := perPod[g.Node]
			if g.UnroutedRequests == nil || s == nil || !s.last.After(s.first) {
				t.Errorf("stop of %s by %s placed to within %.0f ms: no count of the requests inside it (%v) or no access log of the front pod", g.Pod, g.Node, 1000*g.UnroutedResolution, g.UnroutedRequests)
				continue
			}
			per100ms := float64(s.n) / s.last.Sub(s.first).Seconds() / 10
			t.Logf("stop of %s by %s placed to within %.0f ms: the front pod started %d requests inside it (%.1f in 100 ms on average)", g.Pod, g.Node, 1000*g.UnroutedResolution, *g.UnroutedRequests, per100ms)
			if float64(*g.UnroutedRequests) >= per100ms {
				t.Errorf("stop of %s by %s placed to within %.0f ms with %d requests started inside: more than the front pod's %.1f in 100 ms, so the front did not pause; its readings blur it", g.Pod, g.Node, 1000*g.UnroutedResolution, *g.UnroutedRequests, per100ms)
			}
		}
	}
}

// checkFrontLogFromNode holds a kind run to reading the front's access
// log from its file inside the node (its log says so), not through the
// API server, whose kubelet would cost the machine as much as the front.
func checkFrontLogFromNode(t testing.TB, dir string) {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(dir, runfile.LogFile))
	if err != nil || !strings.Contains(string(log), "in frontlog.jsonl, read from its file inside the pod's node") {
		t.Errorf("the run did not read the front's access log from its file inside the node (%v): on kind it must not go through the API server", err)
	}
}

// checkWideStops holds a front whose log places its stops
// (frontlog.CaddyServers: between its set's expiry and the lookup the
// next request starts) to 100 ms, or to the reason it cannot: a stop
// placed less closely is one where the front started no request, bar
// the one that looked again, for that long (its own stall). Stops
// between variants, when no traffic flows, are left out.
func checkWideStops(t testing.TB, events []timeline.Event, lines map[string]frontlog.Line) {
	t.Helper()
	var starts []time.Time
	for _, l := range lines {
		starts = append(starts, l.Start)
	}
	slices.SortFunc(starts, time.Time.Compare)
	for _, e := range events {
		if e.Kind != timeline.KindFrontRemoved {
			continue
		}
		at, last := e.FrontChange()
		if w := at.Sub(last); w <= 100*time.Millisecond || w > 2*time.Second {
			continue
		}
		i, _ := slices.BinarySearchFunc(starts, last, time.Time.Compare)
		if i < len(starts) && starts[i].Before(at.Add(-10*time.Millisecond)) {
			t.Errorf("stop of %s placed to within %s (%s to %s), yet the front started a request inside, at %s: the bracket should end at its next lookup",
				e.IP, at.Sub(last), last.Format("15:04:05.000"), at.Format("15:04:05.000"), starts[i].Format("15:04:05.000"))
		} else {
			t.Logf("stop of %s placed to within %s: the front started no request in it (its own stall)", e.IP, at.Sub(last))
		}
	}
}

// checkJoined holds v's requests from three generator pods to a front's
// access log: each carries an ID prefixed with the variant and its
// generator pod's name (unique across the pods, so a replaced pod never
// repeats one), the log joins at least 95 % of them by it, and every 502
// the client got is one the front logged.
func checkJoined(t testing.TB, dir string, v analysis.VariantSummary, lines map[string]frontlog.Line, placed map[string]bool) {
	t.Helper()
	var n, joined, bad502 int
	badIDs := map[string]int{}
	for i := range 3 {
		rf, err := os.Open(filepath.Join(dir, runfile.ResultsFileOf(v.Variant, pods.OriginOf(i))))
		if err != nil {
			t.Fatal(err)
		}
		err = traffic.ReadResults(rf, func(rec traffic.Record) error {
			n++
			id := rec.RequestID()
			rest, ok := strings.CutPrefix(id, v.Variant+".")
			if dash := strings.LastIndexByte(rest, '-'); !ok || dash < 0 || !placed[rest[:dash]] {
				badIDs[id]++
			}
			l, ok := lines[id]
			if ok {
				joined++
			}
			if rec.Code == 502 && (!ok || l.Status != 502) {
				bad502++
			}
			return nil
		})
		rf.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%s from pods: %d of %d requests in the front's access log", v.Variant, joined, n)
	if len(badIDs) > 0 {
		t.Errorf("%s: %d requests without an ID naming the variant and a generator pod (%v), e.g. %v", v.Variant, len(badIDs), placed, badIDs)
	}
	if n == 0 || float64(joined) < 0.95*float64(n) || bad502 > 0 {
		t.Errorf("%s: %d of %d requests joined to the front's access log, %d 502s it did not log as 502; want at least 95%% joined and every 502 logged", v.Variant, joined, n, bad502)
	}
}

// checkAtFloor holds a draining row to the rig's floor. What a front
// answered is no shutdown's refusal: the rig lost it (a CI run: 23
// timeouts Traefik logged as 200, in a rollout with a stall). Nor are
// timeouts the rig excused with evidence (a node without CPU for 1.5 s
// here: 424 timeouts, 287 of them answered late by Caddy, which a starved
// node reached 1.2 s late). Refusals are never excused: every other drop
// is the row's own, and at most drainFloor may be.
func checkAtFloor(t testing.TB, label string, v analysis.VariantSummary) {
	t.Helper()
	// An excused timeout may be one the front answered too: a rollout's
	// lost drops are at least the larger of the two.
	var lost uint64
	for _, ro := range v.Rollouts {
		if ro.Excused > 0 && (ro.Rig == nil || !ro.Rig.Saturated) {
			t.Errorf("%s rollout %d: %d timeouts excused in a rollout not flagged saturated", label, ro.N, ro.Excused)
		}
		lost += max(ro.Excused, ro.ByHop[analysis.HopFrontAnswered])
	}
	if v.Drops-lost > drainFloor {
		t.Errorf("%s: %d drops (%d the front answered 2xx, %d excused as the rig's: at least %d lost by the rig), classes %v; want at most %d beside those",
			label, v.Drops, v.ByHop[analysis.HopFrontAnswered], v.Excused, lost, v.Classes, drainFloor)
	}
	if lost > 0 && len(v.Suspect) == 0 {
		t.Errorf("%s: %d drops the rig lost, but the row is not suspect", label, lost)
	}
}

// drainFloor is the rig's own drops on a used cluster (see
// TestIntegrationStarvedRig) that a draining row may show.
const drainFloor = 5

// readFrontLog reads the run's front access log (frontlog.jsonl) by
// request ID.
func readFrontLog(t testing.TB, dir string) map[string]frontlog.Line {
	t.Helper()
	lines := map[string]frontlog.Line{}
	f, err := os.Open(filepath.Join(dir, runfile.FrontLogFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := jsonl.Read(f, runfile.FrontLogFile, func(l frontlog.Line) error { lines[l.RequestID] = l; return nil }); err != nil {
		t.Fatal(err)
	}
	return lines
}
