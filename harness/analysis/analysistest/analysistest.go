// Package analysistest writes small synthetic run directories, exactly as
// a run lays them out, for the tests of the packages that analyse and
// render runs (analysis, plot, report, cmd/droprun).
package analysistest

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

// T0 is the synthetic runs' time zero; At(s) is s seconds after it.
var T0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// At returns T0 + s seconds.
func At(s float64) time.Time { return T0.Add(time.Duration(s * float64(time.Second))) }

// Scenario is the synthetic scenario: alpha (no-prestop) and beta
// (prestop-sleep, from no-prestop: two rows, "beta/introducing" and
// "beta"), with a 2 s settle.
const Scenario = `apiVersion: droprun/v1alpha1
kind: Scenario
metadata:
  name: synthetic
traffic:
  settle: 2s
variants:
- name: alpha
  variant: no-prestop
- name: beta
  variant: prestop-sleep
  from: no-prestop
`

// Failure is a stretch of failed requests: every request sent in
// [From, To) seconds fails with Err (code 0) or, with Code set, that code.
// URL, when set, limits it to the requests sent to that target.
type Failure struct {
	From, To float64
	Err      string
	Code     uint16
	URL      string
	// Latency overrides the request's 3 ms latency (a timeout takes 2 s).
	Latency time.Duration
	// Hidden, when set, makes the requests 200s that net/http got only by
	// retrying after a failure with this error text (masked requests);
	// Err and Code are then ignored.
	Hidden string
	// Via, when set, is the proxy pod that answered (traffic.ViaHeader).
	Via string
	// RequestID, when set, is the ID the requests carried: their URLs
	// end in its query parameter (traffic.RequestIDParam).
	RequestID string
	// Served, when set, makes the requests 200s that carried RequestID
	// (a stretch a front's log says more of); Err and Code are ignored.
	Served bool
}

// Common error texts, as vegeta records them.
const (
	Refused = `Get "http://x/": dial tcp: connect: connection refused`
	EOF     = `Get "http://x/": EOF`
	Reset   = `read tcp: connection reset by peer`
	Timeout = `Get "http://x/": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`
)

// Failures are the synthetic run's failed requests, and what they count.
var Failures = []Failure{
	{From: 4.5, To: 4.8, Err: Refused},                             // alpha r1: 30, 0.5–0.8 s after old-a1's deletion
	{From: 10.0, To: 10.05, Err: EOF},                              // alpha r1's tail: 5
	{From: 12.5, To: 12.6, Err: EOF},                               // alpha r2 before its deletion: 10
	{From: 13.2, To: 13.4, Err: Timeout, Latency: 2 * time.Second}, // alpha r2: 20
	{From: 34.2, To: 34.5, Err: Reset},                             // beta r1: 30
}

// Event is one line of events.jsonl, at T seconds.
type Event struct {
	T     float64
	Event timeline.Event
}

// Mark is a run mark of variant (and rollout, if > 0) with detail
// key-value pairs.
func Mark(t float64, kind timeline.Kind, variant string, rollout int, kv ...string) Event {
	d := map[string]string{"variant": variant}
	if rollout > 0 {
		d["rollout"] = strconv.Itoa(rollout)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		d[kv[i]] = kv[i+1]
	}
	return Event{T: t, Event: timeline.Event{Kind: kind, Detail: d}}
}

// Pod is a pod event.
func Pod(t float64, kind timeline.Kind, name string) Event {
	return Event{T: t, Event: timeline.Event{Kind: kind, Object: "pod/" + name, Pod: name}}
}

// Events is the synthetic run's events.jsonl.
func Events() []Event {
	return []Event{
		Mark(0, timeline.KindTrafficStart, "alpha", 0),
		Mark(2, timeline.KindWindowClose, "alpha", 0, "phase", "control"),
		Mark(3, timeline.KindRolloutStart, "alpha", 1, "from", "v1", "to", "v2", "measured", "no-prestop"),
		Pod(4.0, timeline.KindPodReady, "new-a1"),
		Pod(4.0, timeline.KindPodDeletionRequested, "old-a1"),
		Pod(5.5, timeline.KindEndpointRemoved, "old-a1"),
		Pod(6.0, timeline.KindPodGone, "old-a1"),
		Mark(7, timeline.KindRolloutComplete, "alpha", 1),
		Mark(9, timeline.KindWindowClose, "alpha", 1, "phase", "rollout"),
		Mark(12, timeline.KindRolloutStart, "alpha", 2, "from", "v2", "to", "v1", "measured", "no-prestop"),
		Pod(13.0, timeline.KindPodDeletionRequested, "old-a2"),
		Pod(14.2, timeline.KindEndpointRemoved, "old-a2"),
		Pod(14.5, timeline.KindPodGone, "old-a2"),
		Mark(15, timeline.KindRolloutComplete, "alpha", 2),
		Mark(17, timeline.KindWindowClose, "alpha", 2, "phase", "rollout"),
		{T: 19, Event: timeline.Event{Kind: timeline.KindTrafficStop, Detail: map[string]string{"variant": "alpha"}}},

		Mark(30, timeline.KindTrafficStart, "beta", 0),
		Mark(32, timeline.KindWindowClose, "beta", 0, "phase", "control"),
		Mark(33, timeline.KindRolloutStart, "beta", 1, "from", "v1", "to", "v2", "measured", "no-prestop"),
		Pod(34.0, timeline.KindPodDeletionRequested, "old-b1"),
		Pod(35.0, timeline.KindEndpointRemoved, "old-b1"),
		Mark(36, timeline.KindRolloutComplete, "beta", 1),
		Mark(38, timeline.KindWindowClose, "beta", 1, "phase", "rollout"),
		Mark(41, timeline.KindRolloutStart, "beta", 2, "from", "v2", "to", "v1", "measured", "prestop-sleep"),
		// The slice update is recorded before the deletion: the gap is
		// "not seen".
		Pod(41.9, timeline.KindEndpointRemoved, "old-b2"),
		Pod(42.0, timeline.KindPodDeletionRequested, "old-b2"),
		Pod(42.5, timeline.KindPodGone, "old-b2"),
		Mark(44, timeline.KindRolloutComplete, "beta", 2),
		Mark(46, timeline.KindWindowClose, "beta", 2, "phase", "rollout"),
		{T: 48, Event: timeline.Event{Kind: timeline.KindTrafficStop, Detail: map[string]string{"variant": "beta"}}},
	}
}

// RigSamples are rig samples every 250 ms while alpha's traffic runs
// (0–19 s), none while beta's does. The client keeps up (2 ms behind)
// except in alpha's rollout 2, where it falls behind: from 13.0 s its lag
// grows by 400 ms a sample to 1.6 s at 14.0 s, then it catches up by
// 14.5 s (alpha r2 is saturated, alpha r1 is not). CPU pressure is 10%,
// 90% from 12.5 s to 14.5 s; the host is 60% busy, then 100%. They are
// written the way runs before typed payloads wrote them (string details),
// which the analysis still reads.
func RigSamples() []Event {
	var out []Event
	for k := 1; k <= 76; k++ {
		t := float64(k) * 0.25
		lag := 2.0
		switch {
		case t > 13 && t <= 14:
			lag = 1600 * (t - 13)
		case t > 14 && t < 14.5:
			lag = 1600 - 3200*(t-14)
		}
		pressure, busy := 0.1, 0.6
		if t > 12.5 && t <= 14.5 {
			pressure, busy = 0.9, 1
		}
		out = append(out, Event{T: t, Event: timeline.Event{Kind: timeline.KindRigSample, Detail: map[string]string{
			"interval_ms":  "250.0",
			"host_busy":    strconv.FormatFloat(busy, 'f', 3, 64),
			"cpu_pressure": strconv.FormatFloat(pressure, 'f', 3, 64),
			"client_cpu":   "0.300",
			"sched_max_ms": "0.5",
			"lag_ms":       strconv.FormatFloat(lag, 'f', 1, 64),
			"in_flight":    "3",
		}}})
	}
	return out
}

// Run describes a synthetic run directory.
type Run struct {
	// Scenario is scenario.yaml (default Scenario).
	Scenario string
	// Events are events.jsonl (default Events()).
	Events []Event
	// Failures are the failed stretches (default Failures).
	Failures []Failure
	// Traffic is, per variant, the seconds its requests span, one every
	// 10 ms (default alpha 0–19, beta 30–48).
	Traffic map[string][2]float64
	// RunJSON is run.json verbatim ("" writes none).
	RunJSON string
	// Targets, when set, send request k to Targets[k mod len] (their URLs)
	// so the analysis can tell the entry node.
	Targets []string
	// Extra, when set, is called with the directory once it is written,
	// to add files or damage them.
	Extra func(dir string)
}

// Write writes r into a new temporary directory and returns it.
func Write(tb testing.TB, r Run) string {
	tb.Helper()
	if r.Scenario == "" {
		r.Scenario = Scenario
	}
	if r.Events == nil {
		r.Events = Events()
	}
	if r.Failures == nil {
		r.Failures = Failures
	}
	if r.Traffic == nil {
		r.Traffic = map[string][2]float64{"alpha": {0, 19}, "beta": {30, 48}}
	}
	dir := tb.TempDir()
	must(tb, os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte(r.Scenario), 0o644))
	if r.RunJSON != "" {
		must(tb, os.WriteFile(filepath.Join(dir, "run.json"), []byte(r.RunJSON), 0o644))
	}
	events := slices.Clone(r.Events)
	slices.SortStableFunc(events, func(a, b Event) int {
		switch {
		case a.T < b.T:
			return -1
		case a.T > b.T:
			return 1
		}
		return 0
	})
	ef, err := os.Create(filepath.Join(dir, "events.jsonl"))
	must(tb, err)
	enc := json.NewEncoder(ef)
	for _, e := range events {
		ev := e.Event
		ev.Time = At(e.T)
		must(tb, enc.Encode(ev))
	}
	must(tb, ef.Close())
	for v, span := range r.Traffic {
		WriteResults(tb, filepath.Join(dir, "results-"+v+".bin"), span[0], span[1], r.Failures, r.Targets)
	}
	if r.Extra != nil {
		r.Extra(dir)
	}
	return dir
}

// WriteResults writes one request every 10 ms in [from, to) seconds, as
// harness/traffic does (vegeta's gob encoder), failing those inside a
// failure stretch. With targets, request k goes to targets[k mod len].
func WriteResults(tb testing.TB, path string, from, to float64, failures []Failure, targets []string) {
	tb.Helper()
	f, err := os.Create(path)
	must(tb, err)
	enc := vegeta.NewEncoder(f)
	n := int((to - from) * 100)
	for k := range n {
		ms := int(from*1000) + 10*k
		s := float64(ms) / 1000
		res := vegeta.Result{Attack: "synthetic", Seq: uint64(k), Code: 200, Timestamp: T0.Add(time.Duration(ms) * time.Millisecond), Latency: 3 * time.Millisecond}
		if len(targets) > 0 {
			res.URL = targets[k%len(targets)]
		}
		for _, sf := range failures {
			if s < sf.From || s >= sf.To || (sf.URL != "" && res.URL != sf.URL) {
				continue
			}
			if sf.Hidden != "" {
				res.Headers = http.Header{traffic.HiddenHeader: {sf.Hidden}}
				continue
			}
			if sf.Served {
				res.URL += "?" + traffic.RequestIDParam + "=" + sf.RequestID
				continue
			}
			res.Code, res.Error = 0, sf.Err
			if sf.Via != "" {
				res.Headers = http.Header{traffic.ViaHeader: {sf.Via}}
			}
			if sf.RequestID != "" {
				res.URL += "?" + traffic.RequestIDParam + "=" + sf.RequestID
			}
			if sf.Code != 0 {
				res.Code = sf.Code
			}
			if sf.Latency > 0 {
				res.Latency = sf.Latency
			}
		}
		must(tb, enc.Encode(&res))
	}
	must(tb, f.Close())
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
