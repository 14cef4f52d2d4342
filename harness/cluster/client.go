package cluster

import (
	"io"
	"os"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// ClientQPS and ClientBurst are the client-side rate limit of droprun's
// API client, instead of client-go's default QPS 5, burst 10.
//
// Why 50/100: a run asks ~7 requests/s steadily (kube-proxy polls 2/s on 3
// nodes, ~4 pod scrapes every 5 s) and tens at once around a rollout
// (applies, gets, informers' lists and watches); the local API server
// protects itself with priority and fairness.
const (
	ClientQPS   = 50
	ClientBurst = 100
)

// setRateLimit sizes rc's client-side rate limit for a run (both Kind's
// and Existing's clients are built by clientFor, which calls it).
func setRateLimit(rc *rest.Config) {
	rc.QPS, rc.Burst = ClientQPS, ClientBurst
}

// clientLogPrefix starts every line client-go logs through RouteClientLogs.
const clientLogPrefix = "client-go: "

// clientLog is where klog's output goes: stderr until RouteClientLogs.
var clientLog = struct {
	mu sync.Mutex
	w  io.Writer
}{w: stderr{}}

// stderr writes to os.Stderr as it is at the time of the write.
type stderr struct{}

func (stderr) Write(p []byte) (int, error) { return os.Stderr.Write(p) }

// clientLogWriter writes one klog entry, prefixed, to clientLog's writer.
type clientLogWriter struct{}

func (clientLogWriter) Write(p []byte) (int, error) {
	clientLog.mu.Lock()
	defer clientLog.mu.Unlock()
	if _, err := clientLog.w.Write(append([]byte(clientLogPrefix), p...)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// klog's logger is installed once, before any goroutine logs (klog's
// SetLogger is not safe against concurrent logging); RouteClientLogs then
// only swaps the writer.
func init() {
	out := clientLogWriter{}
	klog.SetLoggerWithOptions(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(out))),
		klog.WriteKlogBuffer(func(b []byte) { _, _ = out.Write(b) }))
}

// RouteClientLogs sends what client-go logs through klog (client-side
// throttling notices, API warnings, watch errors) to w instead of stderr,
// each line prefixed "client-go: ", and returns the function that puts the
// previous writer back. A nil w discards them. Writes to w are serialized.
func RouteClientLogs(w io.Writer) (restore func()) {
	if w == nil {
		w = io.Discard
	}
	clientLog.mu.Lock()
	prev := clientLog.w
	clientLog.w = w
	clientLog.mu.Unlock()
	return func() {
		clientLog.mu.Lock()
		clientLog.w = prev
		clientLog.mu.Unlock()
	}
}
