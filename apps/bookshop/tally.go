package main

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// tally counts requests under one lock, so that a reading is consistent:
// every request is either in flight or answered, never neither nor both
// (two Prometheus metrics read one after the other can miss a request
// that ends between the two reads).
//
// A response is counted after its handler returns and before net/http
// sends it (a handler's response is buffered until then). Once sealed, no
// response is counted and none is sent: a request that ends, or starts,
// after the seal is aborted (http.ErrAbortHandler, the connection closes
// with nothing written). So the sealed totals are exactly the responses
// the process let out, and its in-flight count the requests it cut.
type tally struct {
	// running is the handlers running now, sealed or not: a connection
	// busy without one is sending a counted response.
	running atomic.Int64

	mu       sync.Mutex
	sealed   bool
	inFlight int
	answered map[handlerCode]int
}

type handlerCode struct{ handler, code string }

var (
	descRequests = prometheus.NewDesc(metricRequests, "HTTP requests answered, by status code and handler.", []string{"code", "handler"}, nil)
	descInFlight = prometheus.NewDesc(metricInFlight, "HTTP requests being served, not counting scrapes of /metrics.", nil, nil)
)

func newTally() *tally { return &tally{answered: map[handlerCode]int{}} }

// wrap counts h's responses under handler=name, and its requests in flight
// when inFlight is set (not for /metrics, whose gauge would always read 1).
func (t *tally) wrap(name string, inFlight bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.running.Add(1)
		defer t.running.Add(-1)
		if !t.begin(inFlight) {
			panic(http.ErrAbortHandler)
		}
		cw := &codeWriter{ResponseWriter: w}
		h.ServeHTTP(cw, r)
		if !t.end(inFlight, handlerCode{name, strconv.Itoa(cw.status())}) {
			panic(http.ErrAbortHandler)
		}
	})
}

func (t *tally) begin(inFlight bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sealed {
		return false
	}
	if inFlight {
		t.inFlight++
	}
	return true
}

func (t *tally) end(inFlight bool, k handlerCode) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sealed {
		return false // still in flight in the sealed reading: cut
	}
	if inFlight {
		t.inFlight--
	}
	t.answered[k]++
	return true
}

// read returns one reading; seal makes it the last.
func (t *tally) read(seal bool) totals {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sealed = t.sealed || seal
	r := totals{byCode: map[string]int{}, byHandler: map[string]int{}, byHandlerCode: map[string]map[string]int{}, inFlight: t.inFlight, sealed: t.sealed}
	for k, n := range t.answered {
		r.total += n
		r.byCode[k.code] += n
		r.byHandler[k.handler] += n
		if r.byHandlerCode[k.handler] == nil {
			r.byHandlerCode[k.handler] = map[string]int{}
		}
		r.byHandlerCode[k.handler][k.code] += n
	}
	return r
}

// Describe and Collect make the tally a prometheus.Collector.
func (t *tally) Describe(ch chan<- *prometheus.Desc) {
	ch <- descRequests
	ch <- descInFlight
}

func (t *tally) Collect(ch chan<- prometheus.Metric) {
	r := t.read(false)
	for handler, codes := range r.byHandlerCode {
		for code, n := range codes {
			ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(n), code, handler)
		}
	}
	ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(r.inFlight))
}

// codeWriter records the status code a handler wrote. Unwrap lets
// http.ResponseController reach the connection's Flusher and deadlines.
type codeWriter struct {
	http.ResponseWriter
	code int
}

func (w *codeWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *codeWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *codeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *codeWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}
