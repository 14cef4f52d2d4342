package run

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/report"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

// TestIntegrationRunH2C measures a rolling update over HTTP/2 (h2c, 4
// connections per node's port, 300 req/s, 2 rollouts): no-prestop, whose
// pods cut their connections at SIGTERM while the nodes still route new
// ones to them, drops in the HTTP/2 client's own classes; graceful-drain,
// which serves through its drain delay and then sends GOAWAY, drops none
// beyond the rig's floor (a stream its GOAWAY refused is retried on a new
// connection, and counted as masked, not dropped).
func TestIntegrationRunH2C(t *testing.T) {
	protocolRun(t, protocolCase{
		wire: "h2c", protocol: traffic.ProtocolH2C, drops: "no-prestop", clean: "graceful-drain",
		// What an HTTP/2 client meets on a pod that stopped: a new
		// connection refused or timed out, streams cut with the
		// connection (EOF, reset), refused by a GOAWAY or reset.
		classes: []traffic.Class{traffic.ClassRefused, traffic.ClassTimeout, traffic.ClassEOF, traffic.ClassReset, traffic.ClassGoAway, traffic.ClassStreamReset},
	})
}

// TestIntegrationRunGRPC measures a rolling update over gRPC (Check calls
// on 4 channels per node's port, 300 req/s, 2 rollouts): grpc-graceful-stop,
// whose listener closes at SIGTERM while the nodes still route new
// connections to it, drops in gRPC's classes; grpc-drain, which serves
// through its drain delay and then stops gracefully, drops none beyond the
// rig's floor (a call its GOAWAY refused is retried by grpc-go, masked).
func TestIntegrationRunGRPC(t *testing.T) {
	protocolRun(t, protocolCase{
		wire: "grpc", protocol: traffic.ProtocolGRPC, drops: "grpc-graceful-stop", clean: "grpc-drain",
		// What a gRPC client meets: UNAVAILABLE for a refused or
		// timed-out connection, a connection closed or reset under the
		// call, a stream refused or reset, or no connection to try;
		// DEADLINE_EXCEEDED (timeout).
		classes: []traffic.Class{traffic.ClassRefused, traffic.ClassTimeout, traffic.ClassEOF, traffic.ClassReset, traffic.ClassGoAway, traffic.ClassStreamReset, traffic.ClassUnavailable},
	})
}

// protocolCase is one protocol's end-to-end run: a variant that drops and
// one that does not, and the failure classes its client can meet.
type protocolCase struct {
	wire         string
	protocol     traffic.Protocol
	drops, clean string
	classes      []traffic.Class
}

func protocolRun(t *testing.T, pc protocolCase) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	needCluster(t, ctx)
	sc := itScenario(t, fmt.Sprintf(`metadata: {name: e2e-%s}
variants:
  - variant: %s
  - variant: %s
rollouts: 2
traffic: {rate: 300, protocol: %s, connections: 4, control: 5s, between: 3s, settle: 3s, balance: 10s}
`, pc.wire, pc.drops, pc.clean, pc.wire))
	quietRun(ctx, t, sc, func(t testing.TB, a *analysis.Analysis, dir string) {
		if got := a.Summary.Traffic.ProtocolOf(); got != pc.protocol || a.Summary.Traffic.Connections != 4 {
			t.Errorf("the run recorded protocol %s with %d connections, want %s with 4", got, a.Summary.Traffic.Connections, pc.protocol)
		}
		const floor = 5 // the rig's own drops on a used cluster (see TestIntegrationStarvedRig)
		for _, v := range a.Summary.Variants {
			t.Logf("%s %s: %d drops of %d, classes %v, masked %d %v, control %d/%d", pc.wire, v.Variant, v.Drops, v.WindowRequests, v.Classes, v.Masked, v.MaskedClasses, v.Control.Failures, v.Control.Requests)
			if v.Control.Failures > 0 || v.Control.Requests == 0 {
				t.Errorf("%s %s: control %d failures in %d requests, want a clean control window", pc.wire, v.Variant, v.Control.Failures, v.Control.Requests)
			}
			for c, n := range v.Classes {
				if c.Failed() && n > 0 && !slices.Contains(pc.classes, c) {
					t.Errorf("%s %s: %d requests of class %s, not one its client meets in a rollout (%v); their errors: %q",
						pc.wire, v.Variant, n, c, pc.classes, errorsOf(t, dir, v.Variant, c, 5))
				}
			}
			balanced(t, dir, pc.wire, v, 300)
			switch v.Variant {
			case pc.drops:
				if v.RolloutsWithDrops == 0 {
					t.Errorf("%s %s: no rollout dropped (classes %v): the race was not reproduced", pc.wire, v.Variant, v.Classes)
				}
				if pc.protocol == traffic.ProtocolGRPC {
					checkChannels(t, dir, v)
				}
			case pc.clean:
				if v.Drops-v.Excused > floor {
					t.Errorf("%s %s: %d drops (%d excused as the rig's), classes %v; want at most %d", pc.wire, v.Variant, v.Drops, v.Excused, v.Classes, floor)
				}
				// What a retry hid is the GOAWAY's refusal (or the
				// connection closing under the stream), never unknown.
				t.Logf("%s %s: %d requests retried behind the client's back, by class %v", pc.wire, v.Variant, v.Masked, v.MaskedClasses)
				for _, c := range slices.Sorted(maps.Keys(v.MaskedClasses)) {
					if c != traffic.ClassGoAway && c != traffic.ClassEOF && c != traffic.ClassReset {
						t.Errorf("%s %s: %d masked requests hid a failure of class %s, want %s (or the connection closing)", pc.wire, v.Variant, v.MaskedClasses[c], c, traffic.ClassGoAway)
					}
				}
			default:
				t.Errorf("the run measured variant %s, want %s and %s", v.Variant, pc.drops, pc.clean)
			}
		}
	})
}

// checkChannels checks a gRPC variant's channel states and what they
// explain: every channel (4 per node's port) was seen READY, every failed
// call names its channel, and the drops measurement explains are at
// least 90 % of the dropping row's (issue 37's bar): the race windows, the channels'
// backoff (far above its chance with the send times shifted), the close,
// and the stale conntrack entries a channel's hung attempt shows (a CI
// run's grpc-graceful-stop had 357 of 782 such in one rollout).
func checkChannels(t testing.TB, dir string, v analysis.VariantSummary) {
	t.Helper()
	ready := map[string]bool{}
	for _, e := range readEvents(t, dir) {
		if e.Kind == timeline.KindGRPCChannel && e.Detail["variant"] == v.Variant && e.Detail["state"] == "READY" {
			ready[e.Detail["target"]+"/"+e.Detail["channel"]] = true
		}
	}
	if len(ready) != 3*4 {
		t.Errorf("grpc %s: channels seen READY %v, want 4 for each of 3 nodes' ports", v.Variant, slices.Sorted(maps.Keys(ready)))
	}
	f, err := os.Open(filepath.Join(dir, runfile.ResultsFile(v.Variant)))
	if err != nil {
		t.Fatalf("reading %s's results: %v", v.Variant, err)
	}
	defer f.Close()
	var unnamed []string
	err = traffic.ReadResults(f, func(r traffic.Record) error {
		if _, ok := r.Channel(); r.Class.Failed() && r.Code == 0 && !ok && len(unnamed) < 5 {
			unnamed = append(unnamed, r.Error)
		}
		return nil
	})
	if err != nil || len(unnamed) > 0 {
		t.Errorf("grpc %s: failed calls that name no channel %q (%v)", v.Variant, unnamed, err)
	}
	// The row's drops, explained by measurement (race windows, backoff,
	// a close, a hung attempt), against 90 % of them: issue 37's bar for
	// each dropping row. One rollout may fall below it: a clean-clone CI
	// run saw 45 of a rollout's 206 outside every window (the row 473 of
	// 518), not yet understood; each rollout's split is logged.
	var rowMeasured, rowTotal uint64
	for _, rs := range v.Rollouts {
		e := rs.Explained
		if e == nil || e.Chance == nil {
			continue
		}
		measured := e.Explained + e.Backoff + e.Cut + e.Conntrack
		total := measured + e.Slow + e.Unexplained
		rowMeasured, rowTotal = rowMeasured+measured, rowTotal+total
		t.Logf("grpc %s rollout %d: %d drops: race windows %d, backoff %d (%.1f by chance), cut %d, conntrack %d, slow %d, unexplained %d %v",
			v.Variant, rs.N, total, e.Explained, e.Backoff, e.Chance.BackoffShifted, e.Cut, e.Conntrack, e.Slow, e.Unexplained, e.Why)
		// The backoff's windows explain far more than chance: most of
		// what they explain is beyond what the times shifted at random
		// give, and chance (Poisson with that mean) would reach the count
		// less than once in a thousand rollouts. (The shipped grpc run's
		// chance shares are 6-24 %, a CI run's 28 %: the windows of a
		// rollout whose channels back off long cover much of its time.)
		if e.Backoff > 10 {
			if p := poissonAtLeast(e.Backoff, e.Chance.BackoffShifted); e.Chance.BackoffShifted > float64(e.Backoff)/2 || p >= 0.001 {
				t.Errorf("grpc %s rollout %d: %d drops put down to the backoff, %.1f by chance (Poisson p = %.2g): want chance under half, p < 0.001", v.Variant, rs.N, e.Backoff, e.Chance.BackoffShifted, p)
			}
		}
	}
	switch {
	case rowTotal == 0:
		t.Errorf("grpc %s: no rollout's drops were accounted for (no explained record with a chance baseline)", v.Variant)
	case float64(rowMeasured) < 0.9*float64(rowTotal):
		t.Errorf("grpc %s: race windows, backoff, close and hung attempts explain %d of the row's %d drops, want at least 90 %%", v.Variant, rowMeasured, rowTotal)
	}
}

// poissonAtLeast is P(X >= k) for X Poisson with mean lambda, summed up
// from k in log space (no underflow for a large mean).
func poissonAtLeast(k uint64, lambda float64) float64 {
	if lambda <= 0 {
		return map[bool]float64{true: 1, false: 0}[k == 0]
	}
	lg, _ := math.Lgamma(float64(k) + 1)
	term := math.Exp(-lambda + float64(k)*math.Log(lambda) - lg)
	p := 0.0
	for i := k; term > 0 && (float64(i) < lambda || term > p*1e-17); i++ {
		p += term
		term *= lambda / float64(i+1)
	}
	return min(p, 1)
}

// balanced checks that every rollout of v has the new pods' shares over
// its balance span, decided, and that the pods' counters over the span
// add up to what the client got answered 2xx in it (within 10%: the
// span's edges are readings a few milliseconds off the marks), which is
// at most the client's rate: a dropping variant's client can still fail
// after the rollout completed (gRPC's reconnect backoff; a CI run's
// grpc-graceful-stop got 2,553 answers in a 10 s span at 300/s).
func balanced(t testing.TB, dir, wire string, v analysis.VariantSummary, rate float64) {
	t.Helper()
	spans := map[int][2]time.Time{} // rollout → the span's edges
	for _, e := range readEvents(t, dir) {
		if e.Kind != timeline.KindBalance || e.Detail["variant"] != v.Variant {
			continue
		}
		n, _ := strconv.Atoi(e.Detail["rollout"])
		sp := spans[n]
		if e.Detail["edge"] == "start" {
			sp[0] = e.Time
		} else {
			sp[1] = e.Time
		}
		spans[n] = sp
	}
	got := map[int]int{} // rollout → the client's 2xx sent in its span
	f, err := os.Open(filepath.Join(dir, runfile.ResultsFile(v.Variant)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = traffic.ReadResults(f, func(r traffic.Record) error {
		for n, sp := range spans {
			if r.Class == traffic.Class2xx && !r.Time.Before(sp[0]) && r.Time.Before(sp[1]) {
				got[n]++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, ro := range v.Rollouts {
		b := ro.Balance
		if b == nil {
			t.Errorf("%s %s rollout %d: no new pods' shares measured", wire, v.Variant, ro.N)
			continue
		}
		t.Logf("%s %s rollout %d: %s", wire, v.Variant, ro.N, report.BalanceText(b))
		want := float64(got[ro.N])
		if b.Undecided != "" || len(b.Pods) < 2 || want == 0 || math.Abs(float64(b.Answered)-want) > 0.1*want || want > 1.1*rate*b.Seconds {
			t.Errorf("%s %s rollout %d: %d pods answered %d in %.1f s (undecided: %q); want the Deployment's pods, about the %.0f the client got answered then (at most %.0f), decided",
				wire, v.Variant, ro.N, len(b.Pods), b.Answered, b.Seconds, b.Undecided, want, rate*b.Seconds)
		}
	}
}

// errorsOf returns up to n distinct error texts of class c in variant's
// results under dir: what a test names when a class is unexpected.
func errorsOf(t testing.TB, dir, variant string, c traffic.Class, n int) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, runfile.ResultsFile(variant)))
	if err != nil {
		t.Errorf("reading %s's results: %v", variant, err)
		return nil
	}
	defer f.Close()
	var texts []string
	err = traffic.ReadResults(f, func(r traffic.Record) error {
		if r.Class == c && len(texts) < n && !slices.Contains(texts, r.Error) {
			texts = append(texts, r.Error)
		}
		return nil
	})
	if err != nil {
		t.Errorf("reading %s's results: %v", variant, err)
	}
	return texts
}

// TestIntegrationIdleTimeout measures idle timeouts in both orders on
// kept-alive POSTs (10 clients taking turns, Poisson arrivals at 300
// req/s, the client's idle timeout 150ms): an app that closes idle
// connections after 100ms, before the client, fails requests in the
// control window, before any rollout, all of them 000:idle-closed, and
// the report names both timeouts; one that closes them after 1s fails
// none there. The baseline after the rollout does not wait for the
// idle-closed failures to stop.
func TestIntegrationIdleTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	needCluster(t, ctx)
	sc := itScenario(t, `metadata: {name: e2e-idle}
variants:
  - {name: app-closes-first, variant: graceful-drain, idleTimeout: 100ms}
  - {name: client-closes-first, variant: graceful-drain, idleTimeout: 1s}
rollouts: 1
traffic: {rate: 300, keepAlive: true, connections: 10, idleTimeout: 150ms, arrivals: poisson, method: POST, control: 15s, between: 3s, settle: 3s, balance: 0s}
`)
	quietRun(ctx, t, sc, func(t testing.TB, a *analysis.Analysis, dir string) {
		for _, v := range a.Summary.Variants {
			o := v.Idle
			if o == nil {
				t.Fatalf("%s: no idle timeouts in the summary", v.Variant)
			}
			text := report.IdleText(o)
			t.Logf("%s: control %d/%d %v; %s", v.Variant, v.Control.Failures, v.Control.Requests, v.Control.Classes, text)
			for _, s := range v.Suspect {
				if strings.Contains(s, "no clean baseline") {
					t.Errorf("%s: %s; want the baseline not to wait for idle-closed failures", v.Variant, s)
				}
			}
			switch v.Variant {
			case "app-closes-first":
				if !o.AppFirst || o.ControlFailed == 0 || o.ControlFailed != v.Control.Failures {
					t.Errorf("%s: app first %v, %d idle-closed of the control window's %d failures (%v; errors %q); want some, and nothing else",
						v.Variant, o.AppFirst, o.ControlFailed, v.Control.Failures, v.Control.Classes, errorsOf(t, dir, v.Variant, traffic.ClassOther, 3))
				}
				if !strings.Contains(text, "idle for 100ms, before the client's 150ms") {
					t.Errorf("%s: the report says %q; want it to name both timeouts in order", v.Variant, text)
				}
			case "client-closes-first":
				if o.AppFirst || v.Control.Failures != 0 || v.Control.Requests == 0 {
					t.Errorf("%s: app first %v, control %d failures in %d requests (%v); want a clean control window", v.Variant, o.AppFirst, v.Control.Failures, v.Control.Requests, v.Control.Classes)
				}
				if !strings.Contains(text, "idle for 150ms, before the app's 1s: the safe order") {
					t.Errorf("%s: the report says %q; want it to name both timeouts in order", v.Variant, text)
				}
			default:
				t.Errorf("the run measured variant %s, want app-closes-first and client-closes-first", v.Variant)
			}
		}
	})
}

// TestPoissonAtLeast holds the tail checkChannels tests the backoff with
// to values known in closed form.
func TestPoissonAtLeast(t *testing.T) {
	for _, c := range []struct {
		k      uint64
		lambda float64
		want   float64
	}{
		{0, 3, 1},
		{1, 1, 1 - math.Exp(-1)},
		{2, 2, 1 - 3*math.Exp(-2)},
		{3, 0, 0},
		{1000, 1000, 0.50421}, // a mean no plain sum of e^-λ λ^i/i! survives (e^-1000 underflows)
	} {
		if got := poissonAtLeast(c.k, c.lambda); math.Abs(got-c.want) > 1e-3 {
			t.Errorf("P(X >= %d | mean %g) = %.6f, want %.6f", c.k, c.lambda, got, c.want)
		}
	}
	if p := poissonAtLeast(62, 17.3); p > 1e-10 {
		t.Errorf("P(X >= 62 | mean 17.3) = %g, want below 1e-10", p)
	}
}
