package metrics

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/droprun/droprun/harness/traffic"
)

// Phase is what a variant's run is doing: the value of the phase label of
// droprun_phase. The set is fixed (see Phases), so the label is bounded.
type Phase string

// The phases of one variant, in the order a run goes through them: deploy,
// control, then per rollout rollout → settle → between, and done at the end.
const (
	// PhaseDeploy is deploying the variant at its first version and waiting
	// for it to answer, before traffic starts.
	PhaseDeploy Phase = "deploy"
	// PhaseControl is the control window: steady traffic, no rollout.
	PhaseControl Phase = "control"
	// PhaseRollout runs from a rollout's start until its old pods are gone.
	PhaseRollout Phase = "rollout"
	// PhaseSettle is the settle time after the old pods are gone; the
	// rollout's measured window closes at its end.
	PhaseSettle Phase = "settle"
	// PhaseBetween is the time between two rollouts: conntrack flush, the
	// between pause and the wait for a clean baseline.
	PhaseBetween Phase = "between"
	// PhaseDone is a variant whose traffic has stopped.
	PhaseDone Phase = "done"
)

// phases is the order Phases returns.
var phases = [...]Phase{PhaseDeploy, PhaseControl, PhaseRollout, PhaseSettle, PhaseBetween, PhaseDone}

// Phases returns every phase, in run order. The slice is a fresh copy.
func Phases() []Phase { return append([]Phase(nil), phases[:]...) }

// classes are the label values of droprun_requests_total, in traffic's
// order (2xx first: the common case is found at the first comparison).
var classes = traffic.Classes()

// otherClass is the index in classes of traffic.ClassOther, where a record
// with a class traffic does not define is counted.
var otherClass = indexOf(classes, traffic.ClassOther)

func indexOf(cs []traffic.Class, c traffic.Class) int {
	for i, x := range cs {
		if x == c {
			return i
		}
	}
	panic("metrics: traffic.Classes() lacks " + string(c))
}

// MaxVariants bounds the variant label: the first MaxVariants distinct
// variant names get their own series, any further name is counted under
// OverflowVariant. Scenario variant names are few (and DNS labels); the bound
// only keeps a caller's mistake (passing, say, a pod name) from growing the
// series without end.
const MaxVariants = 64

// OverflowVariant is the variant label of every variant beyond MaxVariants.
// It cannot collide with a scenario variant name: those are DNS labels, which
// have no underscore.
const OverflowVariant = "_overflow"

// The metric names (see the package documentation for their labels and
// meaning).
const (
	RequestsTotal           = "droprun_requests_total"             // counter {variant, class}
	RequestDurationSeconds  = "droprun_request_duration_seconds"   // histogram {variant}
	RolloutsTotal           = "droprun_rollouts_total"             // counter {variant}
	RolloutDurationSeconds  = "droprun_rollout_duration_seconds"   // histogram {variant}
	RolloutWindowDropsTotal = "droprun_rollout_window_drops_total" // counter {variant}
	PhaseGauge              = "droprun_phase"                      // gauge {variant, phase}
	CurrentRollout          = "droprun_current_rollout"            // gauge {variant}
	RunInfo                 = "droprun_run_info"                   // gauge {scenario, run_id, droprun_version}
)

// requestBuckets are droprun_request_duration_seconds' upper bounds: from
// 1ms (a local answer) to the 2s default request timeout, with a bound right
// at it (a request cut off by a 2s timeout takes a little over 2s, so le="2"
// holds exactly the requests that completed in time), and beyond it for
// longer timeouts.
var requestBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 1.5, 2, 2.5, 5, 10}

// rolloutBuckets are droprun_rollout_duration_seconds' upper bounds: from
// one second to ten minutes (the default rollout timeout is three).
var rolloutBuckets = []float64{1, 2.5, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600}

// Metrics is droprun's own view of a run, as Prometheus metrics in a
// registry of its own (never the global one). Create it with New.
//
// All methods are safe for concurrent use. Observe is meant for the one
// goroutine that reads the traffic's results (attack.Start's observe
// callback); the run's own goroutine calls the others.
//
// A nil *Metrics records nothing: Observe, VariantStarted, Phase,
// RolloutStarted and RolloutDone do nothing on it, so a run without metrics
// can pass nil around; Serve, Push and WriteFile return an error.
type Metrics struct {
	runID string
	reg   *prometheus.Registry

	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	rollouts    *prometheus.CounterVec
	rolloutDur  *prometheus.HistogramVec
	windowDrops *prometheus.CounterVec
	phase       *prometheus.GaugeVec
	rollout     *prometheus.GaugeVec

	// mu guards variants and serialises phase changes.
	mu       sync.Mutex
	variants map[string]*variantMetrics
	// overflow are the series of every variant beyond MaxVariants.
	overflow *variantMetrics
	// last is the variant Observe saw last: its fast path.
	last atomic.Pointer[variantMetrics]
}

// variantMetrics are one variant's series, cached so that Observe looks
// nothing up by label.
type variantMetrics struct {
	name        string // as the caller passed it, the cache key
	byClass     []prometheus.Counter
	latency     prometheus.Observer
	rollouts    prometheus.Counter
	rolloutDur  prometheus.Observer
	windowDrops prometheus.Counter
	phases      [len(phases)]prometheus.Gauge
	rollout     prometheus.Gauge
}

// New returns the metrics of run runID (the run directory's name is a good
// one; it must not be empty to Push) of scenario, by droprun version
// (droprun_run_info's labels). Nothing is served or pushed until Serve or
// Push is called.
func New(runID, scenario, version string) *Metrics {
	m := &Metrics{
		runID:    runID,
		reg:      prometheus.NewRegistry(),
		variants: make(map[string]*variantMetrics),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: RequestsTotal,
			Help: "Requests droprun sent that completed, by variant and outcome class (2xx, 000:refused, 000:reset, 000:eof, 000:idle-closed, 000:goaway, 000:stream-reset, 000:unavailable, 000:timeout, 000:other, 502, 503, 5xx:other, 4xx).",
		}, []string{"variant", "class"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    RequestDurationSeconds,
			Help:    "Time from sending a request to its failure or its body read, by variant, whatever the outcome.",
			Buckets: requestBuckets,
		}, []string{"variant"}),
		rollouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: RolloutsTotal,
			Help: "Rollouts whose measured window has closed (start to old pods gone, plus settle), by variant.",
		}, []string{"variant"}),
		rolloutDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    RolloutDurationSeconds,
			Help:    "Time from a rollout's start until its old pods were gone, by variant.",
			Buckets: rolloutBuckets,
		}, []string{"variant"}),
		windowDrops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: RolloutWindowDropsTotal,
			Help: "Failed (non-2xx) requests sent inside closed rollout windows, by variant.",
		}, []string{"variant"}),
		phase: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: PhaseGauge,
			Help: "1 for the variant's current phase (deploy, control, rollout, settle, between, done), 0 for the others.",
		}, []string{"variant", "phase"}),
		rollout: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: CurrentRollout,
			Help: "The variant's current (or last) rollout, 1-based; 0 before the first.",
		}, []string{"variant"}),
	}
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: RunInfo,
		Help: "Always 1; its labels say which run, scenario and droprun version the metrics are of.",
	}, []string{"scenario", "run_id", "droprun_version"})
	info.WithLabelValues(labelValue(scenario), labelValue(runID), labelValue(version)).Set(1)
	m.reg.MustRegister(m.requests, m.latency, m.rollouts, m.rolloutDur, m.windowDrops, m.phase, m.rollout, info)
	return m
}

// Registry returns the registry holding the metrics, to gather them or to
// serve them another way. Registering more collectors in it adds them to
// what Serve, Push and WriteFile expose.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Observe counts one completed request of variant: droprun_requests_total by
// its Class and droprun_request_duration_seconds by its Latency. Nothing
// else of the record (error text, pod, code) becomes a label; a Class that
// traffic does not define is counted as traffic.ClassOther.
//
// Observe is the hot path (called for every request, at the traffic rate):
// it does not allocate once the variant has been seen, and a variant it has
// not seen is started as by VariantStarted, except that its phase is left
// alone.
func (m *Metrics) Observe(variant string, rec traffic.Record) {
	if m == nil {
		return
	}
	v := m.last.Load()
	if v == nil || v.name != variant {
		v = m.variant(variant)
		m.last.Store(v)
	}
	v.byClass[classIndex(rec.Class)].Inc()
	v.latency.Observe(rec.Latency.Seconds())
}

// classIndex is c's index in classes, or otherClass's.
func classIndex(c traffic.Class) int {
	for i, x := range classes {
		if x == c {
			return i
		}
	}
	return otherClass
}

// VariantStarted creates the variant's series, every one at zero (every
// request class, so that rate() and increase() work from the first
// request), and makes deploy its current phase and 0 its current rollout.
// Call it when the run turns to the variant, before deploying it.
func (m *Metrics) VariantStarted(variant string) {
	if m == nil {
		return
	}
	v := m.variant(variant)
	m.mu.Lock()
	defer m.mu.Unlock()
	v.setPhase(PhaseDeploy)
	v.rollout.Set(0)
}

// Phase makes p the variant's current phase: droprun_phase is 1 for it and
// 0 for the other phases. A p that is not one of Phases is no label value:
// every phase of the variant is then 0.
func (m *Metrics) Phase(variant string, p Phase) {
	if m == nil {
		return
	}
	v := m.variant(variant)
	m.mu.Lock()
	defer m.mu.Unlock()
	v.setPhase(p)
}

// RolloutStarted records that the variant's rollout n (1-based) has
// started: droprun_current_rollout becomes n and rollout the current phase.
func (m *Metrics) RolloutStarted(variant string, n int) {
	if m == nil {
		return
	}
	v := m.variant(variant)
	m.mu.Lock()
	defer m.mu.Unlock()
	v.rollout.Set(float64(n))
	v.setPhase(PhaseRollout)
}

// RolloutDone records a rollout whose measured window has closed: it counts
// it in droprun_rollouts_total, observes d (from its start until its old
// pods were gone, without the settle time) in
// droprun_rollout_duration_seconds, and adds drops (the failed requests sent
// inside its window) to droprun_rollout_window_drops_total. Call it when the
// window closes, after the settle time, once drops are known. It does not
// change the phase.
func (m *Metrics) RolloutDone(variant string, d time.Duration, drops uint64) {
	if m == nil {
		return
	}
	v := m.variant(variant)
	v.rollouts.Inc()
	v.rolloutDur.Observe(d.Seconds())
	v.windowDrops.Add(float64(drops))
}

// variant returns the variant's series, creating them (at zero) the first
// time the variant is seen.
func (m *Metrics) variant(name string) *variantMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.variants[name]; ok {
		return v
	}
	label := labelValue(name)
	if len(m.variants) >= MaxVariants {
		// Every name beyond the bound shares one set of series, kept under
		// OverflowVariant only: the map stays bounded too.
		if m.overflow == nil {
			m.overflow = m.newVariant(OverflowVariant, OverflowVariant)
		}
		return m.overflow
	}
	v := m.newVariant(name, label)
	m.variants[name] = v
	return v
}

// newVariant creates the series of variant label, at zero, cached under
// name.
func (m *Metrics) newVariant(name, label string) *variantMetrics {
	v := &variantMetrics{
		name:        name,
		byClass:     make([]prometheus.Counter, len(classes)),
		latency:     m.latency.WithLabelValues(label),
		rollouts:    m.rollouts.WithLabelValues(label),
		rolloutDur:  m.rolloutDur.WithLabelValues(label),
		windowDrops: m.windowDrops.WithLabelValues(label),
		rollout:     m.rollout.WithLabelValues(label),
	}
	for i, c := range classes {
		v.byClass[i] = m.requests.WithLabelValues(label, string(c))
	}
	for i, p := range phases {
		v.phases[i] = m.phase.WithLabelValues(label, string(p))
	}
	return v
}

// setPhase sets the phase gauges; the caller holds m.mu.
func (v *variantMetrics) setPhase(p Phase) {
	for i, g := range v.phases {
		if phases[i] == p {
			g.Set(1)
		} else {
			g.Set(0)
		}
	}
}

// labelValue makes s a valid label value: client_golang panics on invalid
// UTF-8.
func labelValue(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
