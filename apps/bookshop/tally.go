package main

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// tally counts requests under one lock, so that a reading is consistent:
// every request is either in flight or answered, never neither nor both
// (two Prometheus metrics read one after the other can miss a request
// that ends between the two reads).
//
// A handler's response is held in a buffer until it is counted, then
// written whole (with its Content-Length) and flushed to the connection.
// Counting and the seal take the same lock, and a response counted but not
// yet written is "sending": once sealed, no response is counted and none
// is written (a request that ends, or starts, after the seal is aborted,
// http.ErrAbortHandler, and its connection closes with nothing written),
// and waitSent waits until nothing is sending. So the sealed totals are
// exactly the responses the process let out, by construction, and its
// in-flight count the requests it cut.
type tally struct {
	mu       sync.Mutex
	sealed   bool
	inFlight int
	sending  int           // counted, not yet written to the connection
	sent     chan struct{} // closed and replaced when sending falls to 0
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
// A handler that writes nothing gets net/http's empty 200, and is counted
// as that.
func (t *tally) wrap(name string, inFlight bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !t.begin(inFlight) {
			panic(http.ErrAbortHandler)
		}
		bw := &bufferedWriter{ResponseWriter: w}
		h.ServeHTTP(bw, r)
		if !t.end(inFlight, handlerCode{name, strconv.Itoa(bw.status())}) {
			panic(http.ErrAbortHandler)
		}
		defer t.written()
		bw.send()
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

// end counts a response and marks it sending, unless sealed.
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
	t.sending++
	return true
}

// written marks a counted response written to its connection (or failed:
// the client went away; it was let out either way).
func (t *tally) written() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sending--
	if t.sending == 0 && t.sent != nil {
		close(t.sent)
		t.sent = nil
	}
}

// waitSent waits, after the seal, until every counted response is
// written, or for timeout; it reports whether they all were.
func (t *tally) waitSent(timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		t.mu.Lock()
		if t.sending == 0 {
			t.mu.Unlock()
			return true
		}
		if t.sent == nil {
			t.sent = make(chan struct{})
		}
		sent := t.sent
		t.mu.Unlock()
		select {
		case <-sent:
		case <-deadline.C:
			return false
		}
	}
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

// bufferedWriter holds a handler's response until it is counted: the
// headers stay in the map, the status and body in the writer. Unwrap lets
// http.ResponseController reach the connection's deadlines; a flush from
// the handler does nothing (FlushError).
type bufferedWriter struct {
	http.ResponseWriter
	code int
	body bytes.Buffer
}

func (w *bufferedWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *bufferedWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.body.Write(b)
}

func (w *bufferedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// FlushError keeps a handler's flush (the gateway's ReverseProxy flushes
// a response of unknown length at once) from sending the held response
// before it is counted: http.ResponseController finds it before Unwrap.
func (w *bufferedWriter) FlushError() error { return nil }

func (w *bufferedWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// send writes the held response whole, with its Content-Length, and
// flushes it to the connection.
func (w *bufferedWriter) send() {
	if w.ResponseWriter.Header().Get("Content-Length") == "" && w.status() != http.StatusNoContent && w.status() != http.StatusNotModified {
		w.ResponseWriter.Header().Set("Content-Length", strconv.Itoa(w.body.Len()))
	}
	w.ResponseWriter.WriteHeader(w.status())
	w.ResponseWriter.Write(w.body.Bytes())
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}
