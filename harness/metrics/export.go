package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/push"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/droprun/droprun/harness/atomicfile"
)

// MetricsPath is where Serve serves the metrics.
const MetricsPath = "/metrics"

// PushJob is the job label of pushed metrics.
const PushJob = "droprun"

// shutdownTimeout bounds how long Serve's server waits for scrapes in
// progress once its context ends.
const shutdownTimeout = 5 * time.Second

// pushTimeout bounds one push, whatever the context says: a Pushgateway
// that does not answer must not hold up the end of a run.
const pushTimeout = 30 * time.Second

var errNil = errors.New("metrics: nil Metrics")

// Serve serves the metrics over HTTP at MetricsPath on addr (host:port;
// "127.0.0.1:0" picks a free port) until ctx ends, then shuts the server
// down. It returns once it listens, with the address it is bound to (the
// actual port when addr's is 0). A port already in use is an error that
// says to pick another --metrics-addr.
func (m *Metrics) Serve(ctx context.Context, addr string) (string, error) {
	if m == nil {
		return "", errNil
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("metrics: serving on %s: %w", addr, err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return "", fmt.Errorf("metrics: cannot serve on %s: the address is already in use (another droprun or exporter?); pick another --metrics-addr, e.g. 127.0.0.1:0 for any free port: %w", addr, err)
	} else if err != nil {
		return "", fmt.Errorf("metrics: cannot serve on %s: %w; pick another --metrics-addr (host:port, e.g. 127.0.0.1:9464, or 127.0.0.1:0 for any free port)", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle(MetricsPath, promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "droprun run %s: metrics at %s\n", m.runID, MetricsPath)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }() // returns http.ErrServerClosed on shutdown
	context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
	})
	return ln.Addr().String(), nil
}

// Push pushes the metrics to the Pushgateway at url (its base URL, e.g.
// http://pushgateway:9091, without /metrics) under job PushJob and grouping
// label run_id, replacing what an earlier push of the same run left there
// (HTTP PUT on url/metrics/job/droprun/run_id/<run ID>). The run_id label of
// droprun_run_info is left out of the body: the Pushgateway refuses a
// metric that carries a grouping label, and adds run_id back from the path.
// A push takes at most 30s, or less if ctx ends sooner.
func (m *Metrics) Push(ctx context.Context, url string) error {
	if m == nil {
		return errNil
	}
	if url == "" {
		return errors.New("metrics: pushing: no Pushgateway URL given")
	}
	if m.runID == "" {
		return fmt.Errorf("metrics: pushing to the Pushgateway at %s: the run ID is empty, and it is the grouping key", url)
	}
	err := push.New(url, PushJob).
		Grouping("run_id", m.runID).
		Gatherer(withoutLabel{m.reg, "run_id"}).
		Client(&http.Client{Timeout: pushTimeout}).
		PushContext(ctx)
	if err != nil {
		return fmt.Errorf("metrics: pushing to the Pushgateway at %s: %w (check that the URL is the Pushgateway's base URL, e.g. http://pushgateway:9091 without /metrics, and that the Pushgateway is up and reachable from here)", url, err)
	}
	return nil
}

// withoutLabel gathers g and removes the label name from every metric.
type withoutLabel struct {
	g    prometheus.Gatherer
	name string
}

// Gather implements prometheus.Gatherer.
func (w withoutLabel) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := w.g.Gather()
	for _, mf := range mfs {
		for _, metric := range mf.GetMetric() {
			// A fresh slice: the gathered one is the collector's own
			// label pairs, shared with every later Gather.
			kept := make([]*dto.LabelPair, 0, len(metric.Label))
			for _, l := range metric.Label {
				if l.GetName() != w.name {
					kept = append(kept, l)
				}
			}
			metric.Label = kept
		}
	}
	return mfs, err
}

// WriteFile writes the metrics as they are now to path in the Prometheus
// text exposition format (what a scrape of /metrics returns, version 0.0.4),
// so that a run directory keeps its final metrics. The file is written to a
// temporary file next to path and renamed over it: path is whole or absent.
func (m *Metrics) WriteFile(path string) error {
	if m == nil {
		return errNil
	}
	mfs, err := m.reg.Gather()
	if err != nil {
		return fmt.Errorf("metrics: gathering for %s: %w", path, err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("metrics: encoding %s for %s: %w", mf.GetName(), path, err)
		}
	}
	// Unlike atomicfile, which creates missing directories, WriteFile
	// fails when path's directory does not exist.
	if _, err := os.Stat(filepath.Dir(path)); err != nil {
		return fmt.Errorf("metrics: writing %s: %w", path, err)
	}
	if err := atomicfile.Write(path, buf.Bytes()); err != nil {
		return fmt.Errorf("metrics: writing %s: %w", path, err)
	}
	return nil
}
