package run

import (
	"fmt"
	"strconv"
	"time"

	"github.com/droprun/droprun/harness/timeline"
)

// SaturationLag is the stall that makes a window saturated: the client
// sending that far behind schedule, or its goroutines waiting that long
// for a core. On the 2-core machine this project runs on, the host is
// 80-100% busy all through a 1000 req/s run and the client routinely falls
// 200-300 ms behind without any effect on the outcome; what turns into
// spurious timeouts is a stall of a good share of the 2 s request timeout.
// One second is half of it. A client whose goroutines cannot run for a
// second cannot read the answers that arrived either: they time out on
// its side although the pods answered them.
const SaturationLag = time.Second

// RigSummary is what the rig sampler (harness/rig) saw during one window:
// how loaded the machine that runs both the cluster and the client was.
type RigSummary struct {
	// Samples is the number of rig samples in the window.
	Samples int `json:"samples"`
	// HostBusyMean is the mean share of the host's cores that were busy.
	HostBusyMean float64 `json:"hostBusyMean"`
	// CPUPressureMean and CPUPressureMax are the share of time some
	// runnable task waited for a core (-1: the kernel does not say).
	CPUPressureMean float64 `json:"cpuPressureMean"`
	CPUPressureMax  float64 `json:"cpuPressureMax"`
	// ClientLagMax is the furthest behind schedule the client sent a
	// request, in seconds.
	ClientLagMax float64 `json:"clientLagMaxSeconds"`
	// SchedMax bounds the longest a goroutine of the client waited for a
	// core, in seconds.
	SchedMax float64 `json:"schedMaxSeconds"`
	// Saturated is true when the client fell more than SaturationLag
	// behind schedule or its goroutines waited that long for a core: the
	// machine was short of CPU, so slow or timed-out requests in this
	// window may be the rig's and not the variant's.
	Saturated bool `json:"saturated"`
}

// String says what the rig did, in a few words.
func (s *RigSummary) String() string {
	if s == nil {
		return "no rig samples"
	}
	p := "n/a"
	if s.CPUPressureMax >= 0 {
		p = fmt.Sprintf("%.0f%% (max %.0f%%)", 100*s.CPUPressureMean, 100*s.CPUPressureMax)
	}
	return fmt.Sprintf("client up to %.2fs behind schedule, its goroutines up to %.2fs waiting for a core, host %.0f%% busy, CPU pressure %s",
		s.ClientLagMax, s.SchedMax, 100*s.HostBusyMean, p)
}

// rigSummary summarises the rig samples stamped within [from, to]; nil
// when there are none (a run recorded before the sampler existed).
func rigSummary(events []timeline.Event, from, to time.Time) *RigSummary {
	var s RigSummary
	var busy, pressure float64
	pressureN := 0
	s.CPUPressureMax = -1
	for _, e := range events {
		if e.Kind != MarkRigSample {
			continue
		}
		if t := sampleTime(e); t.Before(from) || t.After(to) {
			continue
		}
		s.Samples++
		busy += detailFloat(e.Detail, "host_busy")
		if p, ok := e.Detail["cpu_pressure"]; ok {
			v, _ := strconv.ParseFloat(p, 64)
			pressure += v
			pressureN++
			s.CPUPressureMax = max(s.CPUPressureMax, v)
		}
		s.ClientLagMax = max(s.ClientLagMax, detailFloat(e.Detail, "lag_ms")/1000)
		s.SchedMax = max(s.SchedMax, detailFloat(e.Detail, "sched_max_ms")/1000)
	}
	if s.Samples == 0 {
		return nil
	}
	s.HostBusyMean = busy / float64(s.Samples)
	s.CPUPressureMean = -1
	if pressureN > 0 {
		s.CPUPressureMean = pressure / float64(pressureN)
	}
	s.Saturated = s.ClientLagMax > SaturationLag.Seconds() || s.SchedMax > SaturationLag.Seconds()
	return &s
}

// sampleTime is when a rig sample was taken: its own "at", or the event's
// stamp for samples recorded without one.
func sampleTime(e timeline.Event) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, e.Detail["at"]); err == nil {
		return t
	}
	return e.Time
}

func detailFloat(d map[string]string, key string) float64 {
	v, _ := strconv.ParseFloat(d[key], 64)
	return v
}
