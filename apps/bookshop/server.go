package main

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"sync/atomic"
	"time"
)

// Response headers that attribute a response to the process that made it.
const (
	headerPod     = "X-Bookshop-Pod"
	headerVersion = "X-Bookshop-Version"
	headerGateway = "X-Bookshop-Gateway"
)

// maxDelay caps /version?delay=.
const maxDelay = 30 * time.Second

// phase is where the process is in its shutdown; its value is the value of
// the bookshop_shutdown_phase gauge.
type phase int32

const (
	phaseServing      phase = 0
	phaseDraining     phase = 1
	phaseShuttingDown phase = 2
)

func (p phase) String() string {
	switch p {
	case phaseServing:
		return "serving"
	case phaseDraining:
		return "draining"
	case phaseShuttingDown:
		return "shutting_down"
	}
	return fmt.Sprintf("phase(%d)", int32(p))
}

// lifecycle holds the current phase; handlers read it, the shutdown code sets it.
type lifecycle struct{ p atomic.Int32 }

func (l *lifecycle) get() phase  { return phase(l.p.Load()) }
func (l *lifecycle) set(p phase) { l.p.Store(int32(p)) }

// identity names the process in response headers and bodies.
type identity struct{ pod, version string }

// stamp makes every response of h carry X-Bookshop-Pod and X-Bookshop-Version.
func (id identity) stamp(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(headerPod, id.pod)
		w.Header().Set(headerVersion, id.version)
		h.ServeHTTP(w, r)
	})
}

// route registers h at pattern, stamped with id and counted under name.
func route(mux *http.ServeMux, pattern, name string, h http.Handler, id identity, m *metrics) {
	mux.Handle(pattern, id.stamp(m.instrument(name, h)))
}

// addProbes registers /healthz, /readyz and /metrics, which both modes serve
// themselves.
func addProbes(mux *http.ServeMux, id identity, life *lifecycle, m *metrics) {
	route(mux, "/healthz", "healthz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	}), id, m)
	route(mux, "/readyz", "readyz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := life.get(); p != phaseServing {
			// Tell the cluster to stop routing here; keep serving anyway.
			http.Error(w, p.String(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	}), id, m)
	// Scrapes are counted but not in flight: the gauge would always read 1.
	mux.Handle("/metrics", id.stamp(m.count("metrics", m.handler())))
}

// newWeb returns the storefront handler.
func newWeb(id identity, life *lifecycle, m *metrics) http.Handler {
	mux := http.NewServeMux()
	addProbes(mux, id, life, m)
	route(mux, "GET /{$}", "index", indexHandler(id), id, m)
	route(mux, "GET /version", "version", versionHandler(id), id, m)
	// droprun's traffic can send POST (traffic.Config.Method), as it once
	// did for every kept-alive attack.
	route(mux, "POST /version", "version", versionHandler(id), id, m)
	route(mux, "/", "other", http.NotFoundHandler(), id, m)
	return mux
}

// book is a title on the storefront.
type book struct{ Title, Author string }

var books = []book{
	{"Moby-Dick", "Herman Melville"},
	{"Middlemarch", "George Eliot"},
	{"The Count of Monte Cristo", "Alexandre Dumas"},
	{"Frankenstein", "Mary Shelley"},
}

var indexPage = template.Must(template.New("index").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>The Bookshop</title></head>
<body>
<h1>The Bookshop</h1>
<ul>
{{- range .Books}}
<li><em>{{.Title}}</em> by {{.Author}}</li>
{{- end}}
</ul>
<footer>version {{.Version}} &middot; served by pod {{.Pod}}</footer>
</body>
</html>
`))

func indexHandler(id identity) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = indexPage.Execute(w, struct {
			Books        []book
			Version, Pod string
		}{books, id.version, id.pod})
	})
}

// versionHandler answers {"pod": ..., "version": ...}, after ?delay= if given.
func versionHandler(id identity) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		delay, err := parseDelay(r.URL.Query().Get("delay"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if delay > 0 {
			t := time.NewTimer(delay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done(): // the client gave up
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(struct {
			Pod     string `json:"pod"`
			Version string `json:"version"`
		}{id.pod, id.version})
	})
}

// parseDelay parses ?delay=, a Go duration such as 1s or 250ms, capped at maxDelay.
func parseDelay(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("delay %q: want a non-negative Go duration such as 250ms or 1s", s)
	}
	return min(d, maxDelay), nil
}
