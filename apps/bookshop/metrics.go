package main

import (
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metric names.
const (
	metricRequests = "bookshop_http_requests_total"
	metricInFlight = "bookshop_http_requests_in_flight"
	metricPhase    = "bookshop_shutdown_phase"
	metricBuild    = "bookshop_build_info"
)

// metrics holds the process's Prometheus metrics on a registry of its own,
// so nothing registered on the global default registry leaks into /metrics.
type metrics struct {
	reg *prometheus.Registry
	// counts holds requests and inFlight only, so that reading the totals
	// as the process dies costs microseconds, not a runtime and /proc scan.
	counts   *prometheus.Registry
	requests *prometheus.CounterVec
	inFlight prometheus.Gauge
}

func newMetrics(version, mode string, life *lifecycle) *metrics {
	m := &metrics{
		reg:    prometheus.NewRegistry(),
		counts: prometheus.NewRegistry(),
		// Both labels are bounded: handler is a fixed route name, code an HTTP status.
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricRequests,
			Help: "HTTP requests answered, by status code and handler.",
		}, []string{"code", "handler"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: metricInFlight,
			Help: "HTTP requests being served, not counting scrapes of /metrics.",
		}),
	}
	phase := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: metricPhase,
		Help: "Shutdown phase: 0 serving, 1 draining, 2 shutting down.",
	}, func() float64 { return float64(life.get()) })
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        metricBuild,
		Help:        "Always 1; labels carry the build version and the mode.",
		ConstLabels: prometheus.Labels{"version": version, "mode": mode},
	})
	build.Set(1)
	m.reg.MustRegister(m.requests, m.inFlight, phase, build,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.counts.MustRegister(m.requests, m.inFlight)
	return m
}

// count counts h's responses under handler=name.
func (m *metrics) count(name string, h http.Handler) http.Handler {
	return promhttp.InstrumentHandlerCounter(m.requests.MustCurryWith(prometheus.Labels{"handler": name}), h)
}

// instrument counts h's responses under handler=name and its requests in flight.
func (m *metrics) instrument(name string, h http.Handler) http.Handler {
	return promhttp.InstrumentHandlerInFlight(m.inFlight, m.count(name, h))
}

// handler serves the registry in the Prometheus text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// totals is one reading of the request counters.
type totals struct {
	total     int
	byCode    map[string]int
	byHandler map[string]int
	// byHandlerCode is the counter as the registry holds it: handler, then code.
	byHandlerCode map[string]map[string]int
	inFlight      int
	// openConns is the server's connections new or active at the reading
	// (set by the caller, not read from the registry).
	openConns int
}

// totals reads bookshop_http_requests_total and the in-flight gauge once.
func (m *metrics) totals() totals {
	t := totals{byCode: map[string]int{}, byHandler: map[string]int{}, byHandlerCode: map[string]map[string]int{}}
	families, _ := m.counts.Gather() // a partial result is still worth reporting
	for _, f := range families {
		switch f.GetName() {
		case metricInFlight:
			for _, s := range f.GetMetric() {
				t.inFlight += int(s.GetGauge().GetValue())
			}
		case metricRequests:
			for _, s := range f.GetMetric() {
				n := int(s.GetCounter().GetValue())
				var code, handler string
				for _, l := range s.GetLabel() {
					switch l.GetName() {
					case "code":
						code = l.GetValue()
					case "handler":
						handler = l.GetValue()
					}
				}
				t.total += n
				t.byCode[code] += n
				t.byHandler[handler] += n
				if t.byHandlerCode[handler] == nil {
					t.byHandlerCode[handler] = map[string]int{}
				}
				t.byHandlerCode[handler][code] += n
			}
		}
	}
	return t
}

// log logs the totals as one JSON line. A pod's /metrics dies with it; this
// line is what a log collector can still read afterwards.
func (t totals) log(log *slog.Logger) {
	log.Info("final request totals", "total", t.total, "by_code", t.byCode, "by_handler", t.byHandler, "in_flight", t.inFlight)
}

// logTotals reads the totals and logs them (see totals.log).
func (m *metrics) logTotals(log *slog.Logger) {
	m.totals().log(log)
}
