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
	// tally counts the requests: bookshop_http_requests_total and
	// bookshop_http_requests_in_flight on /metrics, and the final totals.
	tally *tally
}

func newMetrics(version, mode string, life *lifecycle) *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), tally: newTally()}
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
	m.reg.MustRegister(m.tally, phase, build,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// count counts h's responses under handler=name.
func (m *metrics) count(name string, h http.Handler) http.Handler {
	return m.tally.wrap(name, false, h)
}

// instrument counts h's responses under handler=name and its requests in flight.
func (m *metrics) instrument(name string, h http.Handler) http.Handler {
	return m.tally.wrap(name, true, h)
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
	// byHandlerCode is the counter as /metrics exposes it: handler, then code.
	byHandlerCode map[string]map[string]int
	inFlight      int
	// sealed: this is the last reading (see tally).
	sealed bool
}

// totals reads the counters once, leaving them open.
func (m *metrics) totals() totals { return m.tally.read(false) }

// seal reads the counters once, for the last time (see tally).
func (m *metrics) seal() totals { return m.tally.read(true) }

// log logs the totals as one JSON line. A pod's /metrics dies with it; this
// line is what a log collector can still read afterwards.
func (t totals) log(log *slog.Logger) {
	log.Info("final request totals", "total", t.total, "by_code", t.byCode, "by_handler", t.byHandler, "in_flight", t.inFlight)
}

// logTotals reads the totals and logs them (see totals.log).
func (m *metrics) logTotals(log *slog.Logger) {
	m.totals().log(log)
}
