package plot

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/droprun/droprun/harness/run"
	"github.com/droprun/droprun/harness/timeline"
)

// The synthetic run: two variants at 100 requests/s, one request every
// 10 ms. alpha (no-prestop) has two rollouts; beta (prestop-sleep, from
// no-prestop) has two rollouts too, so two rows: "beta/introducing" (its
// rollout 1) and "beta" (its rollout 2). Times are seconds after synthT0.
var synthT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(s float64) time.Time { return synthT0.Add(time.Duration(s * float64(time.Second))) }

const synthScenario = `apiVersion: droprun/v1alpha1
kind: Scenario
metadata:
  name: synthetic
variants:
- name: alpha
  variant: no-prestop
- name: beta
  variant: prestop-sleep
  from: no-prestop
`

// synthFailure is a stretch of failed requests: every request sent in
// [from, to) fails with the error text err (code 0).
type synthFailure struct {
	from, to float64
	err      string
}

// The failures the synthetic run's requests get, and what they count.
var synthFailures = []synthFailure{
	{4.5, 4.8, `Get "http://x/": dial tcp: connect: connection refused`},                                        // alpha r1: 30, 0.5–0.8 s after old-a1's deletion
	{10.0, 10.05, `Get "http://x/": EOF`},                                                                       // alpha r1's tail: 5
	{12.5, 12.6, `Get "http://x/": EOF`},                                                                        // alpha r2 before its deletion: 10, placed against old-a1's and left out
	{13.2, 13.4, `Get "http://x/": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`}, // alpha r2: 20
	{34.2, 34.5, `read tcp: connection reset by peer`},                                                          // beta r1: 30
}

type synthEvent struct {
	t      float64
	kind   timeline.Kind
	pod    string
	detail map[string]string
}

// synthEvents is the synthetic run's events.jsonl.
func synthEvents() []synthEvent {
	mark := func(t float64, kind timeline.Kind, variant string, rollout int, kv ...string) synthEvent {
		d := map[string]string{"variant": variant}
		if rollout > 0 {
			d["rollout"] = strconv.Itoa(rollout)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			d[kv[i]] = kv[i+1]
		}
		return synthEvent{t: t, kind: kind, detail: d}
	}
	pod := func(t float64, kind timeline.Kind, name string) synthEvent {
		return synthEvent{t: t, kind: kind, pod: name}
	}
	return []synthEvent{
		mark(0, run.MarkTrafficStart, "alpha", 0),
		mark(2, run.MarkWindowClose, "alpha", 0, "phase", "control"),
		mark(3, run.MarkRolloutStart, "alpha", 1, "from", "v1", "to", "v2"),
		pod(4.0, timeline.KindPodReady, "new-a1"),
		pod(4.0, timeline.KindPodDeletionRequested, "old-a1"),
		pod(5.5, timeline.KindEndpointRemoved, "old-a1"),
		pod(6.0, timeline.KindPodGone, "old-a1"),
		mark(7, run.MarkRolloutComplete, "alpha", 1),
		mark(9, run.MarkWindowClose, "alpha", 1, "phase", "rollout"),
		mark(12, run.MarkRolloutStart, "alpha", 2, "from", "v2", "to", "v1"),
		pod(13.0, timeline.KindPodDeletionRequested, "old-a2"),
		pod(14.2, timeline.KindEndpointRemoved, "old-a2"),
		pod(14.5, timeline.KindPodGone, "old-a2"),
		mark(15, run.MarkRolloutComplete, "alpha", 2),
		mark(17, run.MarkWindowClose, "alpha", 2, "phase", "rollout"),
		mark(19, run.MarkTrafficStop, "alpha", 0),

		mark(30, run.MarkTrafficStart, "beta", 0),
		mark(32, run.MarkWindowClose, "beta", 0, "phase", "control"),
		mark(33, run.MarkRolloutStart, "beta", 1, "from", "v1", "to", "v2"),
		pod(34.0, timeline.KindPodDeletionRequested, "old-b1"),
		pod(35.0, timeline.KindEndpointRemoved, "old-b1"),
		mark(36, run.MarkRolloutComplete, "beta", 1),
		mark(38, run.MarkWindowClose, "beta", 1, "phase", "rollout"),
		mark(41, run.MarkRolloutStart, "beta", 2, "from", "v2", "to", "v1"),
		// The slice update is recorded before the deletion: the gap is
		// "not seen".
		pod(41.9, timeline.KindEndpointRemoved, "old-b2"),
		pod(42.0, timeline.KindPodDeletionRequested, "old-b2"),
		pod(42.5, timeline.KindPodGone, "old-b2"),
		mark(44, run.MarkRolloutComplete, "beta", 2),
		mark(46, run.MarkWindowClose, "beta", 2, "phase", "rollout"),
		mark(48, run.MarkTrafficStop, "beta", 0),
	}
}

// synthRigSamples are rig samples (run.MarkRigSample) every 250 ms while
// alpha's traffic runs (0–19 s), none while beta's does. The client keeps
// up (2 ms behind) except in alpha's rollout 2, where it falls behind:
// from 13.0 s its lag grows by 400 ms a sample to 1.6 s at 14.0 s, then
// it catches up by 14.5 s (alpha r2 is saturated, alpha r1 is not). CPU
// pressure is 10%, 90% from 12.5 s to 14.5 s; the host is 60% busy, then
// 100%.
func synthRigSamples() []synthEvent {
	var out []synthEvent
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
		out = append(out, synthEvent{t: t, kind: run.MarkRigSample, detail: map[string]string{
			"interval_ms":  "250.0",
			"host_busy":    strconv.FormatFloat(busy, 'f', 3, 64),
			"cpu_pressure": strconv.FormatFloat(pressure, 'f', 3, 64),
			"client_cpu":   "0.300",
			"sched_max_ms": "0.5",
			"lag_ms":       strconv.FormatFloat(lag, 'f', 1, 64),
			"in_flight":    "3",
			"nodes_cpu":    "droprun-control-plane=0.400,droprun-worker=0.100",
		}})
	}
	return out
}

// writeSynthRun writes the synthetic run directory and returns it.
func writeSynthRun(tb testing.TB) string {
	tb.Helper()
	return writeSynthRunEvents(tb, synthEvents())
}

// writeSynthRigRun writes the synthetic run directory with rig samples
// (synthRigSamples) and returns it.
func writeSynthRigRun(tb testing.TB) string {
	tb.Helper()
	return writeSynthRunEvents(tb, append(synthEvents(), synthRigSamples()...))
}

// writeSynthRunEvents writes the synthetic run directory with the given
// events (written in time order) and returns it.
func writeSynthRunEvents(tb testing.TB, events []synthEvent) string {
	tb.Helper()
	dir := tb.TempDir()
	events = slices.Clone(events)
	slices.SortStableFunc(events, func(a, b synthEvent) int {
		switch {
		case a.t < b.t:
			return -1
		case a.t > b.t:
			return 1
		}
		return 0
	})
	if err := os.WriteFile(filepath.Join(dir, run.ScenarioFile), []byte(synthScenario), 0o644); err != nil {
		tb.Fatal(err)
	}
	ef, err := os.Create(filepath.Join(dir, run.EventsFile))
	if err != nil {
		tb.Fatal(err)
	}
	enc := json.NewEncoder(ef)
	for _, e := range events {
		obj := ""
		if e.pod != "" {
			obj = "pod/" + e.pod
		}
		if err := enc.Encode(timeline.Event{Time: at(e.t), Kind: e.kind, Object: obj, Pod: e.pod, Detail: e.detail}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := ef.Close(); err != nil {
		tb.Fatal(err)
	}
	writeResults(tb, filepath.Join(dir, run.ResultsFile("alpha")), 0, 19)
	writeResults(tb, filepath.Join(dir, run.ResultsFile("beta")), 30, 48)
	return dir
}

// writeResults writes one request every 10 ms in [from, to) seconds, as
// harness/traffic does (vegeta's gob encoder), failing those inside a
// synthFailures stretch.
func writeResults(tb testing.TB, path string, from, to float64) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	enc := vegeta.NewEncoder(f)
	n := int((to - from) * 100)
	for k := range n {
		ms := int(from*1000) + 10*k
		s := float64(ms) / 1000
		res := vegeta.Result{Attack: "synthetic", Seq: uint64(k), Code: 200, Timestamp: synthT0.Add(time.Duration(ms) * time.Millisecond), Latency: 3 * time.Millisecond}
		for _, sf := range synthFailures {
			if s >= sf.from && s < sf.to {
				res.Code, res.Error = 0, sf.err
			}
		}
		if err := enc.Encode(&res); err != nil {
			tb.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}
