package analysis

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/droprun/droprun/harness/rig"
	"github.com/droprun/droprun/harness/stats"
	"github.com/droprun/droprun/harness/timeline"
)

// SaturationLag is the stall that makes the client, not the pods, the
// likely cause of a timeout: the client sending that far behind schedule,
// or its goroutines waiting that long for a core, while the request was in
// flight. It is half the default 2 s request timeout: a client whose
// goroutines cannot run for a second cannot read the answers that arrived
// either, so they time out on its side although the pods answered them.
const SaturationLag = time.Second

// NodeStarvedShare is the share of a sample's interval a kind node must
// go without CPU (every runnable task of it waiting, none running) to
// count toward a node stall; a node stalls when that lasts SaturationLag.
// On this project's 2-core host no busy rollout, at 1,000 to 2,500
// req/s, kept a node at 0.62 or more for a whole second (single samples
// reached 0.89), while a hog beside the nodes kept the worst one at 0.83
// or more for its 10 s (see docs/reading-results.md).
const NodeStarvedShare = 0.7

// RigSample is one rig sample as the analysis uses it, its timing
// corrected (see rigSamples).
type RigSample struct {
	// T is when the sample was taken (the end of its interval), Interval
	// how long that interval was.
	T        time.Time
	Interval time.Duration
	// Lag is how far behind schedule the client sent its latest request,
	// Sched the longest one of its goroutines waited for a core, seconds.
	Lag, Sched float64
	// Pressure is the share of the CPU span (T-Interval to CPUEnd) in
	// which some runnable task waited for a core, Busy the share of the
	// host's cores busy, both 0..1. Pressure is -1 when the kernel does
	// not report it; both are -1 for a sample with no CPU reading of its
	// own (merged into the one before it, whose CPUEnd then reaches its T).
	Pressure, Busy float64
	CPUEnd         time.Time
	// Starved is the largest share of the interval a kind node went
	// without CPU, StarvedNode that node ("" when no node was watched).
	// NodeStall is how long, in seconds, the stretch of samples with a
	// node that starved (Starved ≥ NodeStarvedShare) lasted, when it
	// lasted SaturationLag or more; else 0.
	Starved     float64
	StarvedNode string
	NodeStall   float64
}

// Stalled reports whether the rig was stalled during the sample: the
// client, or a node as a whole.
func (s RigSample) Stalled() bool { return s.ClientStalled() || s.NodeStall > 0 }

// ClientStalled reports whether the client was stalled during the sample.
func (s RigSample) ClientStalled() bool {
	return s.Lag > SaturationLag.Seconds() || s.Sched > SaturationLag.Seconds()
}

// minCPUSpan is the shortest sample whose CPU shares stand on their own:
// two jiffies at 100 Hz. A shorter one is merged into the one before.
const minCPUSpan = 20 * time.Millisecond

// defaultRigInterval is the sampling interval assumed for a sample that
// does not say (the sampler's default).
const defaultRigInterval = 250 * time.Millisecond

// RigGap is how far apart two samples may be, beyond the interval the
// later one covers, to count as contiguous: more, and the sampler was not
// running in between.
const RigGap = 50 * time.Millisecond

// decodeRig returns the sample an event holds: its typed Rig payload, or
// the string Detail of runs recorded before it had one.
func decodeRig(e timeline.Event) (rig.Sample, bool) {
	if e.Rig != nil {
		return *e.Rig, true
	}
	if e.Kind != timeline.KindRigSample || e.Detail == nil {
		return rig.Sample{}, false
	}
	d := e.Detail
	num := func(key string) float64 { v, _ := strconv.ParseFloat(d[key], 64); return v }
	ms := func(key string) time.Duration { return time.Duration(num(key) * float64(time.Millisecond)) }
	s := rig.Sample{Time: e.Time, Interval: ms("interval_ms"), HostBusy: num("host_busy"), CPUPressure: -1,
		SchedMax: ms("sched_max_ms"), Client: rig.ClientState{Lag: ms("lag_ms")}}
	if t, err := time.Parse(time.RFC3339Nano, d["at"]); err == nil {
		s.Time = t
	}
	if _, ok := d["cpu_pressure"]; ok {
		s.CPUPressure = num("cpu_pressure")
	}
	return s, true
}

// rigSamples turns the run's rig events into samples, in time order, taken
// once for every use (the saturation flags, the excused timeouts and the
// rig panels all see the same samples).
//
// Two quirks of the recording are undone. An event is stamped when the
// recorder takes it, which on a starved machine can be seconds after the
// sample was taken, while the samples' intervals chain exactly (each runs
// from the previous reading to its own): so a sample was taken at the
// earlier of its own time and the next sample's start. And a reading takes
// its time before it reads the CPU counters, so when the sampler stalls in
// between, the next sample finds the counters where it left them (host
// busy exactly 0): its share of the CPU belongs to the sample before,
// whose CPU span then reaches on, with pressure the time-weighted mean of
// both. So is a sample shorter than minCPUSpan, whose busy share (counted
// in jiffies) is mostly rounding.
func rigSamples(raw []rig.Sample) []RigSample {
	var out []RigSample
	anyBusy := false
	for _, r := range raw {
		s := RigSample{T: r.Time, Interval: defaultRigInterval, Pressure: -1,
			Lag: max(r.Client.Lag.Seconds(), 0), Sched: max(r.SchedMax.Seconds(), 0)}
		if r.Interval > 0 {
			s.Interval = r.Interval
		}
		if r.CPUPressure >= 0 {
			s.Pressure = min(r.CPUPressure, 1)
		}
		s.Busy = min(max(r.HostBusy, 0), 1)
		anyBusy = anyBusy || s.Busy > 0
		for name, v := range r.NodesStarved {
			if v > s.Starved || v == s.Starved && name < s.StarvedNode {
				s.Starved, s.StarvedNode = v, name
			}
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil
	}
	slices.SortStableFunc(out, func(a, b RigSample) int { return a.T.Compare(b.T) })
	for k := len(out) - 2; k >= 0; k-- {
		if next := out[k+1].T.Add(-out[k+1].Interval); next.Before(out[k].T) {
			out[k].T = next
		}
	}
	last := -1 // the latest sample with a CPU reading
	for k := range out {
		s := &out[k]
		s.CPUEnd = s.T
		if !anyBusy {
			s.Busy = -1 // the host's CPU was not read at all
		}
		stalled := s.Busy == 0
		merge := (stalled || s.Interval < minCPUSpan) && last >= 0 &&
			!s.T.Add(-s.Interval).After(out[last].CPUEnd.Add(RigGap))
		switch {
		case !merge && stalled: // nothing before it to merge into
			s.Busy, s.Pressure = -1, -1
			continue
		case !merge:
			last = k
			continue
		}
		prev := &out[last]
		w0 := prev.CPUEnd.Sub(prev.T.Add(-prev.Interval)).Seconds()
		w1 := s.Interval.Seconds()
		mean := func(a, b float64) float64 { return (a*w0 + b*w1) / (w0 + w1) }
		if prev.Pressure >= 0 && s.Pressure >= 0 {
			prev.Pressure = mean(prev.Pressure, s.Pressure)
		}
		if !stalled && prev.Busy >= 0 && s.Busy >= 0 {
			prev.Busy = mean(prev.Busy, s.Busy)
		}
		prev.CPUEnd = s.T
		s.Busy, s.Pressure = -1, -1
	}
	markNodeStalls(out)
	return out
}

// markNodeStalls sets NodeStall on every sample of a stretch of contiguous
// samples in which some node starved, when the stretch lasted
// SaturationLag or more.
func markNodeStalls(all []RigSample) {
	for i := 0; i < len(all); {
		if all[i].Starved < NodeStarvedShare {
			i++
			continue
		}
		j := i + 1
		for j < len(all) && all[j].Starved >= NodeStarvedShare &&
			!all[j].T.Add(-all[j].Interval).After(all[j-1].T.Add(RigGap)) {
			j++
		}
		if span := all[j-1].T.Sub(all[i].T.Add(-all[i].Interval)).Seconds(); span >= SaturationLag.Seconds() {
			for k := i; k < j; k++ {
				all[k].NodeStall = span
			}
		}
		i = j
	}
}

// RigBetween returns the samples of all (in time order) that cover part of
// [from, to], sharing all's memory: those taken within it and the first
// one after it, whose interval reaches back into it.
func RigBetween(all []RigSample, from, to time.Time) []RigSample {
	i, _ := slices.BinarySearchFunc(all, from, func(s RigSample, t time.Time) int { return s.T.Compare(t) })
	j, _ := slices.BinarySearchFunc(all, to, func(s RigSample, t time.Time) int {
		if s.T.After(t) {
			return 1
		}
		return -1
	})
	if j < len(all) && all[j].T.Add(-all[j].Interval).Before(to) {
		j++
	}
	if i >= j {
		return nil
	}
	return all[i:j:j]
}

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
	// NodeStallMax is the longest a kind node went (almost) without CPU,
	// in seconds (RigSample.NodeStall), StalledNode that node; 0 and ""
	// when none did for SaturationLag.
	NodeStallMax float64 `json:"nodeStallSeconds,omitempty"`
	StalledNode  string  `json:"stalledNode,omitempty"`
	// Saturated is true when some sample of the window shows the client
	// or a node stalled (RigSample.Stalled): timeouts in flight then may
	// be the rig's.
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
	out := fmt.Sprintf("client up to %.2fs behind schedule, its goroutines up to %.2fs waiting for a core, host %.0f%% busy, CPU pressure %s",
		s.ClientLagMax, s.SchedMax, 100*s.HostBusyMean, p)
	if s.NodeStallMax > 0 {
		out += fmt.Sprintf(", node %s without CPU for %.2fs", s.StalledNode, s.NodeStallMax)
	}
	return out
}

// Stalls says what of the rig stalled, for captions, joined by sep: the
// client's lag and goroutine wait, unless only a node stalled, and the
// node's time without CPU when one went without.
func (s *RigSummary) Stalls(sep string) string {
	var out []string
	if s.NodeStallMax == 0 || max(s.ClientLagMax, s.SchedMax) > SaturationLag.Seconds() {
		out = append(out, fmt.Sprintf("the client ran up to %s behind schedule and its goroutines waited up to %s for a core",
			stats.FormatSeconds(s.ClientLagMax), stats.FormatSeconds(s.SchedMax)))
	}
	if s.NodeStallMax > 0 {
		out = append(out, fmt.Sprintf("node %s went without CPU for %s", s.StalledNode, stats.FormatSeconds(s.NodeStallMax)))
	}
	return strings.Join(out, sep)
}

// summarizeRig summarises the samples taken within [from, to]; nil when
// there are none (a run recorded before the sampler existed).
func summarizeRig(all []RigSample, from, to time.Time) *RigSummary {
	s := RigSummary{CPUPressureMax: -1}
	var busy, pressure float64
	busyN, pressureN := 0, 0
	for _, r := range all {
		if r.T.Before(from) || r.T.After(to) {
			continue
		}
		s.Samples++
		if r.Busy >= 0 {
			busy += r.Busy
			busyN++
		}
		if r.Pressure >= 0 {
			pressure += r.Pressure
			pressureN++
			s.CPUPressureMax = max(s.CPUPressureMax, r.Pressure)
		}
		s.ClientLagMax = max(s.ClientLagMax, r.Lag)
		s.SchedMax = max(s.SchedMax, r.Sched)
		if r.NodeStall > s.NodeStallMax {
			s.NodeStallMax, s.StalledNode = r.NodeStall, r.StarvedNode
		}
		s.Saturated = s.Saturated || r.Stalled()
	}
	if s.Samples == 0 {
		return nil
	}
	if busyN > 0 {
		s.HostBusyMean = busy / float64(busyN)
	}
	s.CPUPressureMean = -1
	if pressureN > 0 {
		s.CPUPressureMean = pressure / float64(pressureN)
	}
	return &s
}

// stalls are the stretches of time in which the client or a node was
// stalled, in time order, for excusing timeouts.
type stalls []stall

type stall struct {
	from, to time.Time
	// stallWhy is the sample's worst stall of each kind, seconds: 0 for
	// one that did not stall.
	stallWhy
}

// stallWhy is how long the client stalled (behind schedule, or its
// goroutines waiting for a core), how long a generator pod sending the
// request was behind schedule, and how long a node went without CPU.
type stallWhy struct{ client, generator, node float64 }

func (w stallWhy) max(o stallWhy) stallWhy {
	return stallWhy{client: max(w.client, o.client), generator: max(w.generator, o.generator), node: max(w.node, o.node)}
}

// String says what stalled, for a rollout's excused timeouts.
func (w stallWhy) String() string {
	var why []string
	if w.client > 0 {
		why = append(why, fmt.Sprintf("the client was up to %s behind schedule or waiting for a core", stats.FormatSeconds(w.client)))
	}
	if w.generator > 0 {
		why = append(why, fmt.Sprintf("the generator pod that sent them was up to %s behind schedule or waiting for a core", stats.FormatSeconds(w.generator)))
	}
	if w.node > 0 {
		why = append(why, fmt.Sprintf("a kind node went without CPU for up to %s", stats.FormatSeconds(w.node)))
	}
	return strings.Join(why, ", or ") + " while they were in flight"
}

func stallsOf(all []RigSample) stalls {
	var out stalls
	for _, s := range all {
		if s.Stalled() {
			w := stallWhy{node: s.NodeStall}
			if s.ClientStalled() {
				w.client = max(s.Lag, s.Sched)
			}
			out = append(out, stall{from: s.T.Add(-s.Interval), to: s.T, stallWhy: w})
		}
	}
	return out
}

// during returns the worst stalls overlapping [from, to]: zero when none
// did.
func (st stalls) during(from, to time.Time) stallWhy {
	i, _ := slices.BinarySearchFunc(st, from, func(s stall, t time.Time) int { return s.to.Compare(t) })
	var worst stallWhy
	for ; i < len(st) && !st[i].from.After(to); i++ {
		worst = worst.max(st[i].stallWhy)
	}
	return worst
}
