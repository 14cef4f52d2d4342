package run

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/traffic"
)

var dnsFailure = traffic.Record{Class: traffic.ClassOther, Origin: "pod-1", URL: "http://web.droprun.svc.cluster.local.:80/version",
	Error: `dial tcp: lookup web.droprun.svc.cluster.local. on 10.96.0.10:53: no such host`}

// TestUnreachable: a control window in which most requests failed stops
// the run before its rollouts, naming the first failure's target and
// error (a podinfo run once failed 2,415 of 2,415 control requests on a
// DNS error and went on for ten minutes); a window with a few failures, or
// too few requests to say, does not.
func TestUnreachable(t *testing.T) {
	r := newReach("podinfo")
	r.note(traffic.Record{Class: traffic.Class2xx})
	r.note(dnsFailure)
	r.note(traffic.Record{Class: traffic.ClassTimeout, Error: "later"})
	err := unreachable("podinfo", 2415, 2415, r.first.Load())
	if err == nil || !strings.Contains(err.Error(), "2415 of 2415 requests failed in the control window") || !strings.Contains(err.Error(), dnsFailure.URL+": "+dnsFailure.Error) {
		t.Errorf("every control request failed: %v", err)
	}
	for _, tc := range []struct{ sent, failed uint64 }{{1000, 500}, {1000, 3}, {10, 10}} {
		if err := unreachable("v", tc.sent, tc.failed, r.first.Load()); err != nil {
			t.Errorf("%d of %d failed: %v, want the run to go on", tc.failed, tc.sent, err)
		}
	}
}

// TestProbeStopsAtOnce: a target whose first ProbeRequests answers all
// failed ends the control window at once, naming the target, the
// generator that sent to it and the error; a target that answered once
// among its first, a failure after its first answers, an idle-closed
// connection (its server answered) or answers after the window closed
// stop nothing, and the window runs its length.
func TestProbeStopsAtOnce(t *testing.T) {
	ok := traffic.Record{Class: traffic.Class2xx, Origin: "pod-1", URL: dnsFailure.URL}
	idle := traffic.Record{Class: traffic.ClassIdleClosed, Origin: "host", URL: "http://127.0.0.1:30080/"}
	other := traffic.Record{Class: traffic.ClassRefused, Origin: "host", URL: "http://127.0.0.1:30081/"}

	r := newReach("podinfo")
	for range ProbeRequests - 1 {
		r.note(dnsFailure)
	}
	r.note(ok) // pod-1's target answered once among its first: reachable
	r.note(dnsFailure)
	for range 2 * ProbeRequests {
		r.note(idle)
	}
	r.note(traffic.Record{Class: traffic.Class2xx, Origin: "host", URL: other.URL})
	for range 2 * ProbeRequests {
		r.note(other) // failures after the target's first answer
	}
	start := time.Now()
	if err := r.control(context.Background(), 50*time.Millisecond); err != nil {
		t.Fatalf("no target broken: %v, want the whole window", err)
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("the window lasted %s, want its 50ms", took)
	}
	for range 2 * ProbeRequests {
		r.note(traffic.Record{Class: traffic.ClassRefused, Origin: "host", URL: "http://127.0.0.1:9/"})
	}
	select {
	case err := <-r.broken:
		t.Errorf("a target broken after the control window stopped the run: %v", err)
	default:
	}

	r = newReach("podinfo")
	pod0 := dnsFailure
	pod0.Origin = "pod-0"
	for range ProbeRequests {
		r.note(ok)
		r.note(pod0)
	}
	start = time.Now()
	err := r.control(context.Background(), time.Hour)
	if err == nil {
		t.Fatal("a target failed its first answers, and the control window ran on")
	}
	if time.Since(start) > time.Minute {
		t.Errorf("stopped after %s, want at once", time.Since(start))
	}
	for _, want := range []string{"variant podinfo", "the first 5 requests to " + dnsFailure.URL + " from pod-0 all failed", "000:other: " + dnsFailure.Error, "what was recorded is kept"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nwant %q in it", err, want)
		}
	}
}
