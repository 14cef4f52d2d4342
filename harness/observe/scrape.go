package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"

	"github.com/droprun/droprun/harness/appmetrics"
)

// The bookshop metrics the collector reads.
const (
	metricRequests = "bookshop_http_requests_total"
	metricInFlight = "bookshop_http_requests_in_flight"
)

// Scraper reads the Prometheus text metrics of one pod.
type Scraper interface {
	Scrape(ctx context.Context, pod *corev1.Pod) ([]byte, error)
}

// ProxyScraper reads a pod's metrics through the API server's pod proxy:
// GET /api/v1/namespaces/NS/pods/NAME:PORT/proxy/PATH.
type ProxyScraper struct {
	Client kubernetes.Interface
	// Port is the container port serving the metrics; Path their path.
	Port int
	Path string
}

// Scrape reads pod's metrics. A pod that is shutting down makes this fail
// (refused, reset, timed out): callers count such failures.
func (s ProxyScraper) Scrape(ctx context.Context, pod *corev1.Pod) ([]byte, error) {
	resp := s.Client.CoreV1().Pods(pod.Namespace).ProxyGet("http", pod.Name, strconv.Itoa(s.Port), s.Path, nil)
	if resp == nil { // a fake clientset without a proxy reactor
		return nil, errors.New("the client returned no proxy response")
	}
	b, err := readBounded(ctx, resp)
	if err != nil {
		return nil, fmt.Errorf("reading %s/%s:%d%s through the API server: %w", pod.Namespace, pod.Name, s.Port, s.Path, err)
	}
	return b, nil
}

// scrapeTimeout bounds one read through the API server's proxy: a pod or
// API server that never answers fails the read, never blocks its caller.
const scrapeTimeout = 10 * time.Second

// MaxScrape bounds one metrics scrape: a pod that answers more is an
// error, not a process that runs out of memory.
const MaxScrape = 16 << 20

// readBounded reads a pod-proxy response, streamed through MaxScrape.
func readBounded(ctx context.Context, resp restclient.ResponseWrapper) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	rc, err := resp.Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, MaxScrape+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxScrape {
		return nil, fmt.Errorf("the metrics exceed %d MiB: droprun reads no more of them", MaxScrape>>20)
	}
	return b, nil
}

// sample is what one scrape says.
type sample struct {
	counts   appmetrics.Counts
	inFlight int
	// noCounter: the text lacked the custom app's counter (appmetrics.Counter.Name).
	noCounter bool
}

// parseMetrics reads bookshop_http_requests_total (by its handler and code
// labels) and bookshop_http_requests_in_flight from a Prometheus text
// exposition. Text without the counter is a bookshop that has answered
// nothing yet: zero counts, no error.
func parseMetrics(text []byte) (sample, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return sample{}, fmt.Errorf("parsing metrics: %w", err)
	}
	s := sample{counts: appmetrics.Counts{}}
	if f := families[metricRequests]; f != nil {
		for _, m := range f.GetMetric() {
			var handler, code string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "handler":
					handler = l.GetValue()
				case "code":
					code = l.GetValue()
				}
			}
			s.counts.Add(handler, code, int(math.Round(value(m))))
		}
	}
	if f := families[metricInFlight]; f != nil {
		for _, m := range f.GetMetric() {
			s.inFlight += int(math.Round(value(m)))
		}
	}
	return s, nil
}

// value is a sample's value whatever its type (a text exposition without
// a TYPE line makes every sample untyped).
func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
}

// terminationMessage is the part of bookshop's termination message the
// collector reads (see apps/bookshop).
type terminationMessage struct {
	Exit      string            `json:"exit"`
	Signal    string            `json:"signal"`
	Requests  *int              `json:"requests"`
	InFlight  int               `json:"inFlight"`
	OpenConns int               `json:"openConns"`
	Sealed    bool              `json:"sealed"`
	ByCode    map[string]int    `json:"byCode"`
	ByHandler appmetrics.Counts `json:"byHandler"`
}

// parseTerminationMessage reads a container's termination message. A
// message that is not bookshop's (no requests field) is an error.
func parseTerminationMessage(msg string) (terminationMessage, error) {
	var m terminationMessage
	if err := json.Unmarshal([]byte(msg), &m); err != nil {
		return m, fmt.Errorf("termination message is not bookshop's JSON line: %w", err)
	}
	if m.Requests == nil {
		return m, errors.New(`termination message has no "requests" field: not bookshop's`)
	}
	return m, nil
}
