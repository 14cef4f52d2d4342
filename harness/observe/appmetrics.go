package observe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/droprun/droprun/harness/jsonl"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/variant"

	"github.com/droprun/droprun/harness/appmetrics"
)

// maxErrorText bounds the error text kept in a record.
const maxErrorText = 300

// AppMetricsOptions tune a AppMetrics. The zero value scrapes port 8080's /metrics
// every second through the API server.
type AppMetricsOptions struct {
	// Interval between two scrapes of a pod; default 1s.
	Interval time.Duration
	// Timeout bounds one scrape; default 1s. A pod whose previous scrape
	// is still running is skipped, so scrapes never pile up.
	Timeout time.Duration
	// Port and Path of the metrics; defaults 8080 (variant.ContainerPort)
	// and /metrics.
	Port int
	Path string
	// Container is the app's container in the pod, whose state and
	// termination message are read; "" means the pod's first container.
	Container string
	// Scraper reads one pod's metrics; nil means a ProxyScraper on the
	// client, Port and Path.
	Scraper Scraper
	// appmetrics.Counter, when set, is the request counter of an app other than
	// bookshop: it is read instead of bookshop's metrics, and termination
	// messages are not read (only bookshop writes its totals there).
	Counter *appmetrics.Counter
	// Now is the clock records are stamped with; nil means time.Now.
	Now func() time.Time
}

// AppMetricsStats counts what a AppMetrics did.
type AppMetricsStats struct {
	// Scrapes is the number of successful scrapes, Failures of failed
	// ones (expected while pods shut down).
	Scrapes, Failures int
	// TerminationMessages is the number of termination messages recorded;
	// BadMessages of those that were not bookshop's.
	TerminationMessages, BadMessages int
}

// AppMetrics scrapes the pods of one namespace and selector and records
// their termination messages. Its methods are safe for concurrent use.
type AppMetrics struct {
	opts     AppMetricsOptions
	selector labels.Selector
	now      func() time.Time

	mu      sync.Mutex
	w       *jsonl.Writer
	records []appmetrics.Record
	stopped bool
	pods    map[string]*target   // by pod name, the pods the informer has
	failing map[string]*failures // by pod name, failed scrapes not yet written
	finals  map[string]bool      // termination messages recorded, by instance
	stats   AppMetricsStats

	cancel   context.CancelFunc
	factory  informers.SharedInformerFactory
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// target is a pod the collector follows.
type target struct {
	pod     *corev1.Pod // the informer's latest; read-only
	running int         // scrapes under way
}

// failures are the failed scrapes of one pod since the last record of them.
type failures struct {
	n           int
	first, last time.Time
	err         string
}

// Start watches the pods of namespace that match selector (a label
// selector such as app=web; "" is every pod), scrapes each running one
// every opts.Interval and records their termination messages, writing
// every appmetrics.Record as one JSON line to out (buffered, flushed at least every
// second and on Stop).
//
// Start returns once the pods are listed; give ctx a deadline, as an
// unreachable API server would make it wait until ctx ends. Collection
// runs until Stop or until ctx ends.
func StartAppMetrics(ctx context.Context, client kubernetes.Interface, namespace, selector string, out io.Writer, opts AppMetricsOptions) (*AppMetrics, error) {
	if client == nil || out == nil {
		return nil, errors.New("appmetrics: Start needs a client and a writer")
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("appmetrics: selector %q: %w", selector, err)
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if opts.Port == 0 {
		opts.Port = variant.ContainerPort
	}
	if opts.Path == "" {
		opts.Path = "/metrics"
	}
	if opts.Scraper == nil {
		opts.Scraper = ProxyScraper{Client: client, Port: opts.Port, Path: opts.Path}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}

	runCtx, cancel := context.WithCancel(ctx)
	c := &AppMetrics{
		opts: opts, selector: sel, now: func() time.Time { return now().UTC() },
		w:    jsonl.NewWriter(out, runfile.AppFile),
		pods: map[string]*target{}, failing: map[string]*failures{}, finals: map[string]bool{},
		cancel: cancel,
	}
	c.factory = podInformers(client, namespace, selector)
	inf := c.factory.Core().V1().Pods().Informer()
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.podSeen(obj) },
		UpdateFunc: func(_, obj any) { c.podSeen(obj) },
		DeleteFunc: c.podGone,
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("appmetrics: registering the pod handler: %w", err)
	}
	c.factory.StartWithContext(runCtx)
	if !cache.WaitForCacheSync(runCtx.Done(), reg.HasSynced) {
		err := context.Cause(runCtx)
		_ = c.Stop()
		return nil, fmt.Errorf("appmetrics: listing the pods of namespace %s: %w", namespace, err)
	}
	c.wg.Go(func() { c.loop(runCtx) })
	return c, nil
}

// podSeen follows a pod the informer added or updated and records its
// termination messages.
func (c *AppMetrics) podSeen(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.selector.Matches(labels.Set(pod.Labels)) { // relabelled, or a watch that does not filter
		c.forget(pod.Name)
		return
	}
	c.recordFinals(pod)
	if t := c.pods[pod.Name]; t != nil {
		t.pod = pod
		return
	}
	c.pods[pod.Name] = &target{pod: pod}
}

// podGone records the termination messages of a deleted pod, if its last
// state has them, and stops following it.
func (c *AppMetrics) podGone(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.selector.Matches(labels.Set(pod.Labels)) {
		c.recordFinals(pod)
	}
	c.forget(pod.Name)
}

// forget stops following a pod and writes its pending scrape failures.
// Called with c.mu held.
func (c *AppMetrics) forget(name string) {
	delete(c.pods, name)
	c.writeFailures(name)
}

// container is the status of the app's container in pod, nil if none.
func (c *AppMetrics) container(pod *corev1.Pod) *corev1.ContainerStatus {
	name := c.opts.Container
	if name == "" && len(pod.Spec.Containers) > 0 {
		name = pod.Spec.Containers[0].Name
	}
	for i := range pod.Status.ContainerStatuses {
		if s := &pod.Status.ContainerStatuses[i]; s.Name == name {
			return s
		}
	}
	return nil
}

// base is a record about pod's container instance id, with the pod's
// identity filled in.
func base(pod *corev1.Pod, container, id string, started time.Time) appmetrics.Record {
	return appmetrics.Record{
		Pod: pod.Name, Variant: pod.Labels[variant.LabelVariant], Row: pod.Labels[variant.LabelRow],
		Container: container, ContainerID: id, Started: started.UTC(),
	}
}

// recordFinals records the termination messages in pod's app container
// status (its current state and its last one) not recorded yet. Called
// with c.mu held.
func (c *AppMetrics) recordFinals(pod *corev1.Pod) {
	cs := c.container(pod)
	if cs == nil || c.opts.Counter != nil {
		return
	}
	for _, term := range []*corev1.ContainerStateTerminated{cs.LastTerminationState.Terminated, cs.State.Terminated} {
		if term == nil || term.Message == "" {
			continue
		}
		r := base(pod, cs.Name, term.ContainerID, term.StartedAt.Time)
		key := r.Instance()
		if term.ContainerID == "" { // no runtime ID (a fake): one instance per finish time
			key += "@" + term.FinishedAt.String()
		}
		if c.finals[key] {
			continue
		}
		c.finals[key] = true
		r.Time, r.Source, r.ExitCode, r.Reason = term.FinishedAt.UTC(), appmetrics.SourceTermination, term.ExitCode, term.Reason
		if term.FinishedAt.IsZero() {
			r.Time = c.now()
		}
		c.stats.TerminationMessages++
		m, err := parseTerminationMessage(term.Message)
		if err != nil {
			c.stats.BadMessages++
			r.Error = truncate(err.Error())
		} else {
			r.Requests, r.ByCode, r.ByHandler, r.InFlight, r.OpenConns, r.Sealed, r.Exit, r.Signal = *m.Requests, m.ByCode, m.ByHandler, m.InFlight, m.OpenConns, m.Sealed, m.Exit, m.Signal
			r.SignalAt, r.ListenerClosedAt = terminationTimes(term.Message)
		}
		c.record(r)
	}
}

// terminationTimes reads when the app received its signal and when it
// closed its listener from a termination message bookshop wrote (see
// apps/bookshop), in UTC. A time the message lacks is zero, and both are
// if one cannot be read: the message's counts stand on their own.
func terminationTimes(msg string) (signalAt, listenerClosedAt time.Time) {
	var m struct {
		SignalAt         time.Time `json:"signalAt"`
		ListenerClosedAt time.Time `json:"listenerClosedAt"`
	}
	if json.Unmarshal([]byte(msg), &m) != nil {
		return time.Time{}, time.Time{}
	}
	return m.SignalAt.UTC(), m.ListenerClosedAt.UTC() // a zero time stays zero
}

func (c *AppMetrics) loop(ctx context.Context) {
	t := time.NewTicker(c.opts.Interval)
	defer t.Stop()
	due := time.Now()
	for {
		c.tick(ctx, due)
		select {
		case <-ctx.Done():
			return
		case due = <-t.C: // the time the tick was due, however late it is read
		}
	}
}

// tick starts a scrape, due at due, of every followed pod whose app
// container is running and whose previous scrape is over.
func (c *AppMetrics) tick(ctx context.Context, due time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.launch(ctx, &c.wg, false, due, nil)
}

// ScrapeNow scrapes every followed pod whose app container is running
// once, even one whose periodic scrape is under way, and returns when the
// scrapes are done and recorded: a reading as fresh as the caller's
// moment (the end of the traffic, say). Every record so far is flushed to
// the writer before it returns, so a reader of the file sees this reading.
// ctx bounds it, as does AppMetricsOptions.Timeout. Stop does it once more before it
// returns. It returns how many pods it could not read.
func (c *AppMetrics) ScrapeNow(ctx context.Context) (failed int) {
	due := time.Now()
	var wg sync.WaitGroup
	var failures atomic.Int64
	c.mu.Lock()
	if !c.stopped {
		c.launch(ctx, &wg, true, due, &failures)
	}
	c.mu.Unlock()
	wg.Wait()
	c.mu.Lock()
	c.flush()
	c.mu.Unlock()
	return int(failures.Load())
}

// launch starts a scrape due at due, counted by wg, of every followed pod
// whose app container is running, skipping those with a scrape under way
// unless force; failed, when not nil, counts the scrapes that failed.
// Called with c.mu held.
func (c *AppMetrics) launch(ctx context.Context, wg *sync.WaitGroup, force bool, due time.Time, failed *atomic.Int64) {
	for _, t := range c.pods {
		cs := c.container(t.pod)
		if (t.running > 0 && !force) || ctx.Err() != nil || t.pod.Status.Phase != corev1.PodRunning || t.pod.Status.PodIP == "" ||
			cs == nil || cs.State.Running == nil {
			continue
		}
		t.running++
		r := base(t.pod, cs.Name, cs.ContainerID, cs.State.Running.StartedAt.Time)
		pod := t.pod
		wg.Go(func() {
			if !c.scrape(ctx, pod, r, due) && failed != nil {
				failed.Add(1)
			}
		})
	}
}

// scrape reads one pod's metrics and records them as r, with its timing
// against due (monotonic clock), or counts the failure and returns false.
func (c *AppMetrics) scrape(ctx context.Context, pod *corev1.Pod, r appmetrics.Record, due time.Time) bool {
	began := time.Now()
	sctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	text, err := c.opts.Scraper.Scrape(sctx, pod)
	cancel()
	took := time.Since(began)
	at := c.now()
	var s sample
	switch {
	case err != nil:
	case c.opts.Counter != nil:
		s, err = parseCounter(text, *c.opts.Counter)
	default:
		s, err = parseMetrics(text)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.pods[pod.Name]; t != nil && t.running > 0 {
		t.running--
	}
	if err != nil {
		if ctx.Err() != nil { // stopping: not the pod's failure
			return false
		}
		c.stats.Failures++
		f := c.failing[pod.Name]
		if f == nil {
			f = &failures{first: at}
			c.failing[pod.Name] = f
		}
		f.n, f.last, f.err = f.n+1, at, err.Error()
		if c.pods[pod.Name] == nil { // the pod went while this scrape ran
			c.writeFailures(pod.Name)
		}
		return false
	}
	c.stats.Scrapes++
	late := max(0, began.Sub(due))
	r.Time, r.Source = at, appmetrics.SourceScrape
	// Scheduled in the records' clock (AppMetricsOptions.Now), so that Time =
	// Scheduled + late + took holds.
	r.Scheduled, r.LateSeconds, r.TookSeconds = at.Add(-late-took), seconds(late), seconds(took)
	r.Requests, r.ByCode, r.ByHandler, r.InFlight, r.NoCounter = s.counts.Total(), s.counts.ByCode(), s.counts, s.inFlight, s.noCounter
	c.record(r)
	return true
}

// writeFailures records the pod's pending scrape failures, if any. Called
// with c.mu held.
func (c *AppMetrics) writeFailures(name string) {
	f := c.failing[name]
	if f == nil {
		return
	}
	delete(c.failing, name)
	c.record(appmetrics.Record{Time: f.last, Since: f.first, Source: appmetrics.SourceScrapeErrors, Pod: name, Errors: f.n, Error: truncate(f.err)})
}

// record keeps r and writes it as one line. Called with c.mu held.
func (c *AppMetrics) record(r appmetrics.Record) {
	if c.stopped {
		return
	}
	c.records = append(c.records, r)
	c.w.Write(r)
}

// flush hands buffered records to the writer. Called with c.mu held.
func (c *AppMetrics) flush() { _ = c.w.Flush() }

// Records returns a copy of every record so far, in the order written.
// Their maps are shared: do not modify them.
func (c *AppMetrics) Records() []appmetrics.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]appmetrics.Record(nil), c.records...)
}

// appmetrics.Totals is appmetrics.Totals over the records so far.
func (c *AppMetrics) Totals(from, to time.Time) appmetrics.Summary {
	return appmetrics.Totals(c.Records(), from, to)
}

// AppMetricsStats returns the counts of scrapes and termination messages so far.
func (c *AppMetrics) Stats() AppMetricsStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Stop scrapes the running pods a last time (see ScrapeNow), ends
// collection, writes the pending scrape failures, flushes every record to
// the writer and returns the first error writing them. It is
// safe to call more than once; later calls return the same error.
func (c *AppMetrics) Stop() error {
	c.stopOnce.Do(func() {
		// The last values of the pods still running.
		final, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
		c.ScrapeNow(final)
		cancel()

		c.cancel()
		c.factory.Shutdown()
		c.wg.Wait()
		c.mu.Lock()
		defer c.mu.Unlock()
		for name := range c.failing {
			c.writeFailures(name)
		}
		c.stopped = true
	})
	return c.w.Close()
}

// seconds is d in seconds, to the microsecond.
func seconds(d time.Duration) float64 {
	return d.Round(time.Microsecond).Seconds()
}

func truncate(s string) string {
	if len(s) > maxErrorText {
		return s[:maxErrorText] + "…"
	}
	return s
}
