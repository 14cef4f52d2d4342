package observe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/droprun/droprun/harness/jsonl"

	"github.com/droprun/droprun/harness/timeline"
)

// warningSelector asks the API server for Warning events about pods only
// (a fake clientset ignores it, so the handler filters too).
const warningSelector = "type=Warning,involvedObject.kind=Pod"

// RecorderOptions configures a Recorder. The zero value records the namespace's
// objects with time.Now and does not poll kube-proxy.
type RecorderOptions struct {
	// KubeProxy turns on polling of each node's kube-proxy metrics, the
	// routed stage. The zero value disables it.
	KubeProxy KubeProxyOptions
	// Now is the clock events are stamped with; nil means time.Now. Stamps
	// are stored in UTC.
	Now func() time.Time
	// Keep keeps every event in memory too, for Events (tests). Without it
	// the events go to the file only, and a long run's memory does not
	// grow with them: read them back from the file (Flush first).
	Keep bool
}

// Recorder writes the transitions of one namespace's Pods, ReplicaSets,
// EndpointSlices, Deployments and Warning pod Events, plus the caller's
// marks, to one timeline, written as they come (in memory too only with
// RecorderOptions.Keep). Its methods are safe for concurrent use.
type Recorder struct {
	now func() time.Time

	mu      sync.Mutex
	w       *jsonl.Writer
	keep    bool
	events  []timeline.Event
	stopped bool
	notify  []func(timeline.Event)

	cancel    context.CancelFunc
	factories []informers.SharedInformerFactory
	wg        sync.WaitGroup
	stopOnce  sync.Once
}

// Start runs shared informers on the Pods, ReplicaSets, EndpointSlices
// (discovery/v1), Deployments and Warning Events about pods of namespace,
// and writes every timeline.Event as one JSON line to out, buffered and flushed at
// least every second and on Stop. Objects that already exist are written as
// snapshot events (see the package documentation), never as created.
//
// Start returns once every informer has listed its objects and the
// snapshot events are recorded; give ctx a deadline, as an unreachable API
// server would make it wait until ctx ends. The informers and the
// kube-proxy poller run until Stop or until ctx ends; the Recorder keeps
// accepting marks until Stop either way.
func StartRecorder(ctx context.Context, client kubernetes.Interface, namespace string, out io.Writer, opts RecorderOptions) (*Recorder, error) {
	if client == nil || out == nil {
		return nil, errors.New("timeline: Start needs a client and a writer")
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	runCtx, cancel := context.WithCancel(ctx)
	r := &Recorder{now: now, w: jsonl.NewWriter(out, "events.jsonl"), keep: opts.Keep, cancel: cancel}

	objects := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	warnings := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = warningSelector }))
	r.factories = []informers.SharedInformerFactory{objects, warnings}

	var regs []cache.ResourceEventHandlerRegistration
	var errs []error
	keep := func(reg cache.ResourceEventHandlerRegistration, err error) {
		regs, errs = append(regs, reg), append(errs, err)
	}
	keep(follow(r, objects.Core().V1().Pods().Informer(), "pods", podAdded, podUpdated, podDeleted))
	keep(follow(r, objects.Discovery().V1().EndpointSlices().Informer(), "endpointslices", sliceAdded, sliceUpdated, sliceDeleted))
	keep(follow(r, objects.Apps().V1().ReplicaSets().Informer(), "replicasets", rsAdded, rsUpdated, rsDeleted))
	keep(follow(r, objects.Apps().V1().Deployments().Informer(), "deployments", deploymentAdded, deploymentUpdated, deploymentDeleted))
	keep(follow(r, warnings.Core().V1().Events().Informer(), "events", warningAdded, warningUpdated, nil))
	if err := errors.Join(errs...); err != nil {
		cancel()
		return nil, fmt.Errorf("timeline: registering informer handlers: %w", err)
	}

	for _, f := range r.factories {
		f.StartWithContext(runCtx)
	}

	checkers := make([]cache.DoneChecker, 0, len(regs))
	for _, reg := range regs {
		checkers = append(checkers, reg.HasSyncedChecker())
	}
	if !cache.WaitFor(runCtx, "", checkers...) {
		err := context.Cause(runCtx)
		_ = r.Stop()
		return nil, fmt.Errorf("timeline: waiting for the informers of namespace %s to sync: %w", namespace, err)
	}

	if opts.KubeProxy.Interval > 0 {
		p := newKubeProxyPoller(r, client, opts.KubeProxy)
		r.wg.Go(func() { p.run(runCtx) })
	}
	return r, nil
}

// follow registers handlers that turn informer notifications for objects
// of type T into events. A nil del records nothing on deletion.
func follow[T any](r *Recorder, inf cache.SharedIndexInformer, resource string,
	add func(obj T, initial bool) []timeline.Event, update func(old, cur T) []timeline.Event, del func(obj T) []timeline.Event,
) (cache.ResourceEventHandlerRegistration, error) {
	if err := inf.SetWatchErrorHandlerWithContext(r.watchError(resource)); err != nil {
		return nil, fmt.Errorf("%s: %w", resource, err)
	}
	return inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if o, ok := obj.(T); ok {
				r.record(add(o, initial)...)
			}
		},
		UpdateFunc: func(old, cur any) {
			o, okOld := old.(T)
			c, okCur := cur.(T)
			if okOld && okCur {
				r.record(update(o, c)...)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if o, ok := obj.(T); ok && del != nil {
				r.record(del(o)...)
			}
		},
	})
}

// warningAdded records a Warning about a pod emitted after Start; those
// listed at Start are history and are not replayed.
func warningAdded(e *corev1.Event, initial bool) []timeline.Event {
	if ev, ok := warningEvent(e); ok && !initial {
		return []timeline.Event{ev}
	}
	return nil
}

// warningUpdated records a Warning about a pod that was emitted again.
func warningUpdated(old, cur *corev1.Event) []timeline.Event {
	if ev, ok := warningEvent(cur); ok && warningRepeated(old, cur) {
		return []timeline.Event{ev}
	}
	return nil
}

// watchError records a failed watch (the API connection was lost, ...),
// keeping client-go's own logging. Expired watches are routine (the
// informer relists) and are not recorded; nor is anything once the
// Recorder is stopping.
func (r *Recorder) watchError(resource string) cache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, ref *cache.Reflector, err error) {
		cache.DefaultWatchErrorHandler(ctx, ref, err)
		if ctx.Err() != nil || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return
		}
		r.record(timeline.Event{Kind: timeline.KindWatchError, Detail: map[string]string{"resource": resource, "error": err.Error()}})
	}
}

// record stamps events with one reading of the clock (they arrived
// together) and appends them to memory and to the file. Stamping under
// the lock keeps the file in clock order.
func (r *Recorder) record(events ...timeline.Event) {
	if len(events) == 0 {
		return
	}
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	t := r.now().UTC()
	for k := range events {
		events[k].Time = t
		if r.keep {
			r.events = append(r.events, events[k])
		}
		r.write(events[k])
	}
	notify := r.notify
	r.mu.Unlock()
	for _, fn := range notify {
		for _, e := range events {
			fn(e)
		}
	}
}

// OnEvent calls fn with every event recorded from now on, in order, after
// it is written (outside the recorder's lock: fn may record). fn must not
// block: it runs on the informer's goroutine.
func (r *Recorder) OnEvent(fn func(timeline.Event)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notify = append(slices.Clip(r.notify), fn)
}

// write encodes e as one line; the first error sticks and is returned by
// Stop. Called with r.mu held, which keeps the file in clock order.
func (r *Recorder) write(e timeline.Event) { r.w.Write(e) }

// Mark records a caller event (rollout.start, window.close, ...) on the same
// clock and in the same file as the cluster's events. detail is copied.
// Marks after Stop are dropped.
func (r *Recorder) Mark(kind timeline.Kind, detail map[string]string) {
	r.record(timeline.Event{Kind: kind, Detail: maps.Clone(detail)})
}

// Record records a caller event with a typed payload (Stats, Flushed,
// Rig), stamped like Mark. e's maps must not be changed afterwards.
func (r *Recorder) Record(e timeline.Event) {
	e.Time = time.Time{}
	r.record(e)
}

// Flush writes out what the file's buffer holds: after it the file has
// every event recorded so far, for a reader such as analysis.Analyze.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.w.Flush()
}

// Events returns a copy of every event recorded so far, in the order
// recorded (which is clock order); nil without RecorderOptions.Keep.
func (r *Recorder) Events() []timeline.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]timeline.Event, len(r.events))
	for i, e := range r.events {
		out[i] = e.Clone()
	}
	return out
}

// Stop stops the informers and the kube-proxy poller, flushes every event
// to the writer and returns the first error writing them. It is safe to
// call more than once; later calls return the same error.
func (r *Recorder) Stop() error {
	r.stopOnce.Do(func() {
		r.cancel()
		for _, f := range r.factories {
			f.Shutdown()
		}
		r.wg.Wait()
		r.mu.Lock()
		r.stopped = true
		r.mu.Unlock()
	})
	return r.w.Close()
}
