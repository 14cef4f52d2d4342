package analysis

import (
	"testing"
	"time"

	"github.com/droprun/droprun/harness/rig"
	"github.com/droprun/droprun/harness/timeline"
)

// rigEvent is a rig sample event stamped at s seconds after t0, with the
// given detail pairs, the way runs wrote them before typed payloads.
func rigEvent(s float64, kv ...string) timeline.Event {
	d := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		d[kv[i]] = kv[i+1]
	}
	return timeline.Event{Time: at(s), Kind: timeline.KindRigSample, Detail: d}
}

// rawSamples decodes the rig samples of events, as Analyze does.
func rawSamples(events []timeline.Event) []rig.Sample {
	var raw []rig.Sample
	for _, e := range events {
		if s, ok := decodeRig(e); ok {
			raw = append(raw, s)
		}
	}
	return raw
}

func nearTime(a, b time.Time) bool { return a.Sub(b).Abs() < time.Microsecond }

func TestRigSamples(t *testing.T) {
	if rigSamples(rawSamples([]timeline.Event{{Time: at(1), Kind: timeline.KindPodReady}})) != nil {
		t.Error("samples from a run without any")
	}
	events := []timeline.Event{
		rigEvent(1.0, "interval_ms", "250.0", "lag_ms", "12.5", "cpu_pressure", "0.400", "host_busy", "0.700"),
		{Time: at(1.1), Kind: timeline.KindPodReady, Pod: "p"},
		// Stamped 0.3 s late: the next sample's interval says it was
		// taken at 1.25 s.
		rigEvent(1.55, "interval_ms", "250.0", "lag_ms", "300.0", "cpu_pressure", "1.000", "host_busy", "0.900"),
		// Its counters had not moved (host_busy 0): merged into the one
		// before, whose CPU span then ends at 1.55 s. Pressure weighted
		// by time: (1·0.25 + 0.2·0.3)/0.55.
		rigEvent(1.55, "interval_ms", "300.0", "lag_ms", "310.0", "cpu_pressure", "0.200", "host_busy", "0.000"),
		// No CPU pressure reported.
		rigEvent(1.8, "interval_ms", "250.0", "lag_ms", "0.0", "host_busy", "0.500"),
		// Too short for its own busy share: merged, busy weighted too:
		// (0.5·0.25 + 1·0.005)/0.255.
		rigEvent(1.805, "interval_ms", "5.0", "lag_ms", "1.0", "host_busy", "1.000"),
	}
	got := rigSamples(rawSamples(events))
	type want struct {
		t, interval, cpuEnd, lag, pressure, busy float64
	}
	wants := []want{
		{1.0, 0.25, 1.0, 0.0125, 0.4, 0.7},
		{1.25, 0.25, 1.55, 0.3, (0.25 + 0.2*0.3) / 0.55, 0.9},
		{1.55, 0.3, 1.55, 0.31, -1, -1},
		{1.8, 0.25, 1.805, 0, -1, (0.5*0.25 + 0.005) / 0.255},
		{1.805, 0.005, 1.805, 0.001, -1, -1},
	}
	if len(got) != len(wants) {
		t.Fatalf("%d samples, want %d: %+v", len(got), len(wants), got)
	}
	for i, w := range wants {
		g := got[i]
		if !nearTime(g.T, at(w.t)) || !near(g.Interval.Seconds(), w.interval) || !nearTime(g.CPUEnd, at(w.cpuEnd)) ||
			!near(g.Lag, w.lag) || !near(g.Pressure, w.pressure) || !near(g.Busy, w.busy) {
			t.Errorf("sample %d: t %v, interval %v, cpu to %v, lag %g, pressure %g, busy %g; want %+v",
				i, g.T.Sub(t0), g.Interval, g.CPUEnd.Sub(t0), g.Lag, g.Pressure, g.Busy, w)
		}
	}

	// A run whose samples never read the host's CPU keeps their pressure.
	got = rigSamples(rawSamples([]timeline.Event{
		rigEvent(1, "interval_ms", "250.0", "cpu_pressure", "0.300"),
		rigEvent(1.25, "interval_ms", "250.0", "cpu_pressure", "0.500"),
	}))
	if len(got) != 2 || got[0].Busy != -1 || got[1].Busy != -1 || got[0].Pressure != 0.3 || got[1].Pressure != 0.5 {
		t.Errorf("samples without host_busy: %+v", got)
	}

	// A typed payload is taken as it is, whatever the event's stamp.
	typed := rig.Sample{Time: at(2), Interval: 250 * time.Millisecond, HostBusy: 0.5, CPUPressure: 0.25,
		SchedMax: 3 * time.Millisecond, Client: rig.ClientState{Lag: 40 * time.Millisecond}}
	raw := rawSamples([]timeline.Event{{Time: at(2.4), Kind: timeline.KindRigSample, Rig: &typed}})
	if len(raw) != 1 || !raw[0].Time.Equal(at(2)) {
		t.Fatalf("typed sample decoded as %+v", raw)
	}
	got = rigSamples(raw)
	if len(got) != 1 || !got[0].T.Equal(at(2)) || !near(got[0].Lag, 0.04) || !near(got[0].Sched, 0.003) || got[0].Pressure != 0.25 || got[0].Busy != 0.5 {
		t.Errorf("typed sample: %+v", got)
	}
}

func TestRigBetween(t *testing.T) {
	var all []RigSample
	for k := 1; k <= 20; k++ {
		s := float64(k) * 0.25
		all = append(all, RigSample{T: at(s), Interval: 250 * time.Millisecond})
	}
	got := RigBetween(all, at(1.1), at(2.1))
	// Taken within [1.1, 2.1]: 1.25 ... 2.0; and 2.25, which covers
	// from 2.0.
	if len(got) != 5 || !got[0].T.Equal(at(1.25)) || !got[4].T.Equal(at(2.25)) {
		t.Errorf("samples %v", got)
	}
	if cap(got) != len(got) {
		t.Error("the samples of a range can be appended to over the next ones")
	}
	if got := RigBetween(all, at(10), at(12)); got != nil {
		t.Errorf("samples after the last: %v", got)
	}
	if got := RigBetween(all, at(-5), at(0.1)); len(got) != 1 {
		t.Errorf("the first sample covers from 0 s: %v", got)
	}
	if RigBetween(nil, at(0), at(1)) != nil {
		t.Error("samples from none")
	}
}
