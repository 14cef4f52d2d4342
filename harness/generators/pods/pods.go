package pods

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"golang.org/x/sync/errgroup"

	"github.com/droprun/droprun/harness/generators"
	"github.com/droprun/droprun/harness/kube"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/traffic"
)

// Origin is the load source's name in the run's timeline; each
// generator's records carry its own, OriginOf(index).
const Origin = "pods"

// OriginOf is the origin of generator index's records and results file.
func OriginOf(index int) string { return "pod-" + strconv.Itoa(index) }

// indexLabel is the label the Job controller puts on each pod: its
// completion index.
const indexLabel = "batch.kubernetes.io/job-completion-index"

// Defaults of Config.
const (
	DefaultStartIn      = 2 * time.Second
	DefaultReadyTimeout = 2 * time.Minute
	// stopTimeout bounds the wait for every generator's end line after
	// the stop: its requests in flight time out well within it.
	stopTimeout = 30 * time.Second
	// controlTimeout bounds each control request (clock, start, stop):
	// a generator or API server that never answers fails it, never hangs
	// the run's stop.
	controlTimeout = 10 * time.Second
	// controlConcurrency bounds the control requests (clock, start)
	// in flight at once through the API server.
	controlConcurrency = 16
	// repoll is how often a follower looks again for its index's pod
	// while it has none to follow.
	repoll = 500 * time.Millisecond
)

// Config says which generators to run and where their results go.
type Config struct {
	Client    kubernetes.Interface
	Namespace string
	Job       render.Generators
	// Rate is the rate the generators share, asked of them in Job.Args.
	Rate int
	// Apply applies the Job as droprun's own, so that the run's teardown
	// deletes it even when Stop is never called (testbed.Apply).
	Apply func(ctx context.Context, objs ...any) ([]kube.Ref, error)
	// Open returns the results file of a generator's origin (OriginOf).
	Open func(origin string) (io.WriteCloser, error)
	// Observe is given every generator's every request, from several
	// goroutines at once; nil for none.
	Observe func(traffic.Record)
	// Placed is told of each generator's pod once it is ready to send: at
	// the start (with its clock estimate) and after each replacement;
	// nil for none.
	Placed func(g Generator)
	// Log receives a line per step. Default io.Discard.
	Log io.Writer
	// StartIn is how far ahead of now the common start is set: time for
	// every /start to arrive first. Default DefaultStartIn.
	StartIn time.Duration
	// ReadyTimeout bounds the wait for every generator to be ready.
	ReadyTimeout time.Duration
}

// Generator is one generator's place and account: its pod, node, clock
// and stream.
type Generator struct {
	Index int
	// Pod and Node are where its latest container ran.
	Pod, Node string
	// Start is its clock estimated over the API server's proxy at the
	// start (zero for a replacement); End the same made again at the
	// stop, before the stop request (zero when the generator no longer
	// answered), so a drift between the two shows.
	Start, End Clock
	Stream     *generators.Stream
	file       io.WriteCloser
}

// Clock is one estimate of a generator's clock: at At (droprun's time),
// its Offset (its clock minus droprun's) and the estimate's error Bound
// (half the exchange's round trip).
type Clock struct {
	At            time.Time
	Offset, Bound time.Duration
}

// Source is the generator pods of one variant as one traffic.Source.
type Source struct {
	cfg     Config
	refs    []kube.Ref
	gens    []*Generator
	start   time.Time
	stopped chan struct{}
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex // guards every Generator's Pod and Node, and errs
	errs    []error
}

// Start applies the generators' Job, waits until every index's pod is
// ready, estimates each one's clock offset, starts them all at one
// barrier StartIn from now, and follows every pod's log into its
// generator's Stream until Stop. A generator whose pod is replaced is
// started again as soon as its new pod is ready, and its stream says it
// restarted.
func Start(ctx context.Context, cfg Config) (*Source, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.StartIn <= 0 {
		cfg.StartIn = DefaultStartIn
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	cfg.Job.Token = rand.Text() // this run's: no other pod can start or stop its load
	job, err := render.GeneratorsJob(cfg.Job)
	if err != nil {
		return nil, err
	}
	s := &Source{cfg: cfg, stopped: make(chan struct{})}
	if s.refs, err = cfg.Apply(ctx, job); err != nil {
		return nil, fmt.Errorf("applying the generators' Job: %w", err)
	}
	// abort undoes what Start did before err: the files it opened, the Job.
	abort := func(err error) (*Source, error) {
		return nil, errors.Join(err, s.closeFiles(), s.delete(context.WithoutCancel(ctx)))
	}
	fmt.Fprintf(cfg.Log, "generators: %d pods of Job %s/%s (%s), waiting until they are ready\n", cfg.Job.Count, cfg.Namespace, render.GeneratorsName, cfg.Job.Image)
	ready, err := s.waitReady(ctx)
	if err != nil {
		return abort(err)
	}
	for i, p := range ready {
		g := &Generator{Index: i, Pod: p.Name, Node: p.Spec.NodeName}
		if g.file, err = cfg.Open(OriginOf(i)); err != nil {
			return abort(err)
		}
		g.Stream = generators.NewStream(OriginOf(i), g.file, cfg.Observe)
		s.gens = append(s.gens, g)
	}
	if err := s.each(ctx, func(ctx context.Context, g *Generator) (err error) {
		if g.Start, err = s.clock(ctx, g.Pod); err != nil {
			return fmt.Errorf("generator %d's clock: %w", g.Index, err)
		}
		return nil
	}); err != nil {
		return abort(err)
	}
	s.start = time.Now().Add(cfg.StartIn)
	if err := s.each(ctx, func(ctx context.Context, g *Generator) error {
		if err := s.post(ctx, g.Pod, "start", strconv.FormatInt(s.start.UnixNano(), 10)); err != nil {
			return fmt.Errorf("starting generator %d (pod %s): %w", g.Index, g.Pod, err)
		}
		return nil
	}); err != nil {
		return abort(err)
	}
	if late := time.Since(s.start); late > 0 {
		fmt.Fprintf(cfg.Log, "generators: the last start arrived %s after the start time; raise the start lead (%s)\n", late.Round(time.Millisecond), cfg.StartIn)
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	for _, g := range s.gens {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.follow(fctx, g)
		}()
	}
	for _, g := range s.gens {
		fmt.Fprintf(cfg.Log, "generator %d: pod %s on %s, clock offset %s ± %s\n", g.Index, g.Pod, g.Node, g.Start.Offset, g.Start.Bound)
		s.placed(*g)
	}
	return s, nil
}

// each runs fn for every generator, at most controlConcurrency at once
// (each a request through the API server), and returns the first error.
func (s *Source) each(ctx context.Context, fn func(context.Context, *Generator) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(controlConcurrency)
	for _, gen := range s.gens {
		g.Go(func() error { return fn(ctx, gen) })
	}
	return g.Wait()
}

// everyOne runs fn for every generator as each does, but a failure does
// not cancel the others: every generator is tried, and every error is
// returned. Stop uses it, so that one generator that cannot be stopped
// does not leave the others sending.
func (s *Source) everyOne(ctx context.Context, fn func(context.Context, *Generator) error) error {
	var mu sync.Mutex
	var errs []error
	var g errgroup.Group
	g.SetLimit(controlConcurrency)
	for _, gen := range s.gens {
		g.Go(func() error {
			if err := fn(ctx, gen); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}

// Origin is Origin: the generators as one load source.
func (s *Source) Origin() string { return Origin }

// Generators returns the generators' places and accounts.
func (s *Source) Generators() []*Generator { return s.gens }

// Pacing is the furthest behind schedule any generator said it sent in
// its latest beat, and the requests in flight over all of them.
func (s *Source) Pacing() (time.Duration, uint64) {
	var lag time.Duration
	var inFlight uint64
	for _, g := range s.gens {
		b := g.Stream.Latest()
		lag = max(lag, b.Lag)
		inFlight += b.InFlight
	}
	return lag, inFlight
}

// Stop tells every generator to stop, waits for their end lines (bounded
// by stopTimeout), closes their accounts and results files, deletes the
// Job and returns the generators' totals as one account.
func (s *Source) Stop() (traffic.Stats, error) {
	ctx := context.Background()
	close(s.stopped)
	end := time.Now()
	var errs []error
	if err := s.everyOne(ctx, func(ctx context.Context, g *Generator) error {
		s.mu.Lock()
		pod := g.Pod
		s.mu.Unlock()
		// The clock again, for its drift since the start; a generator
		// that does not answer has none, and the stop says why.
		if c, err := s.clock(ctx, pod); err == nil {
			s.mu.Lock()
			g.End = c
			s.mu.Unlock()
		}
		err := s.post(ctx, pod, "stop", "")
		if err == nil {
			return nil
		}
		// A generator already ended (its index failed for good, or it
		// stopped by itself) has nothing to stop: its account says what
		// is missing.
		if p, perr := s.podOf(ctx, g.Index); perr == nil && (p == nil || ended(p)) {
			fmt.Fprintf(s.cfg.Log, "generator %d: already ended, not stopped (%v)\n", g.Index, err)
			return nil
		}
		return fmt.Errorf("stopping generator %d (pod %s): %w", g.Index, pod, err)
	}); err != nil {
		errs = append(errs, err)
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(stopTimeout):
		errs = append(errs, fmt.Errorf("the generators' logs were still open %s after the stop", stopTimeout))
		s.cancel()
		<-done
	}
	s.cancel()
	now := time.Now()
	s.mu.Lock()
	for _, g := range s.gens {
		g.Stream.Close(now)
		if n := g.Stream.TooLong; n > 0 {
			fmt.Fprintf(s.cfg.Log, "generator %d: %d line(s) of its log over %d KiB skipped unread (none of a generator's own lines is that long)\n", g.Index, n, generators.MaxLine>>10)
		}
	}
	errs = append(errs, s.errs...)
	s.mu.Unlock()
	errs = append(errs, s.closeFiles(), s.delete(ctx))
	return s.stats(end), errors.Join(errs...)
}

// stats is the generators' account as droprun read it, record by record
// (so sent = the sum of the classes = the records in their files), with
// each generator's own evidence: its end line's complaints, its gaps, and
// results its totals count that never reached droprun.
func (s *Source) stats(end time.Time) traffic.Stats {
	st := traffic.Stats{ByClass: map[traffic.Class]uint64{}, Start: s.start, End: end, AskedRate: float64(s.cfg.Rate)}
	for _, c := range traffic.Classes() {
		st.ByClass[c] = 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.gens {
		gs := g.Stream
		st.Requests += gs.Results
		for c, n := range gs.ByClass {
			st.ByClass[c] += n
		}
		st.MaxLag = max(st.MaxLag, gs.MaxLag)
		say := func(format string, a ...any) {
			st.Suspect = append(st.Suspect, fmt.Sprintf("generator %d: ", g.Index)+fmt.Sprintf(format, a...))
		}
		if e := gs.End; e != nil {
			st.ClientCPU += e.CPU
			for _, why := range e.Suspect {
				// Its lag is in its Stalls, request by request: the
				// analysis excuses its own timeouts in flight then.
				if !strings.HasPrefix(why, traffic.LagSuspect) {
					say("%s", why)
				}
			}
			if e.Stopped != "" {
				say("%s", e.Stopped)
			}
		}
		for _, gap := range gs.Gaps {
			say("%s from %s to %s: its requests there are missing", gap.Why, gap.From.Format(time.RFC3339Nano), gap.To.Format(time.RFC3339Nano))
		}
		if gs.Missing > 0 {
			say("its totals count %d results droprun never read of its log", gs.Missing)
		}
	}
	if d := end.Sub(s.start).Seconds(); d > 0 {
		st.AchievedRate = float64(st.Requests) / d
	}
	return st
}

// follow reads generator g's logs until Stop and its last container has
// ended: each of its index's pods in turn, a pod's log again when the
// API server's stream breaks while it runs, and a new pod (the Job's
// replacement of a failed one) started again once ready. A log read
// through after its container was seen ended is whole and not read again.
func (s *Source) follow(ctx context.Context, g *Generator) {
	pod := g.Pod
	var over, whole bool // pod's container was seen ended; its log read since
	for ctx.Err() == nil {
		var err error
		if !whole {
			err = s.consume(ctx, g, pod)
			whole = over
		}
		p, perr := s.podOf(ctx, g.Index)
		switch {
		case perr != nil:
			s.fail(fmt.Errorf("generator %d: finding its pod: %w", g.Index, perr))
			return
		case p != nil && p.Name != pod:
			// The Job replaced the pod: a new container, a new log.
			s.mu.Lock()
			g.Stream.Restarted()
			g.Pod = p.Name
			s.mu.Unlock()
			pod, over, whole = p.Name, false, false
			fmt.Fprintf(s.cfg.Log, "generator %d: replaced by pod %s; starting it once it is ready\n", g.Index, p.Name)
			// Seen before the scheduler placed it, the new pod may have
			// no node yet: the node is the ready pod's.
			node, err := s.restart(ctx, g.Index, pod)
			if err != nil {
				s.fail(err)
				return
			}
			s.mu.Lock()
			g.Node = node
			s.mu.Unlock()
			s.placed(Generator{Index: g.Index, Pod: pod, Node: node})
		case p != nil && !ended(p):
			// The log stream broke while the container runs: read it
			// again (Consume skips what it read).
			if err != nil {
				fmt.Fprintf(s.cfg.Log, "generator %d: following its log again after: %v\n", g.Index, err)
			}
		case s.isStopped() && (whole || p == nil):
			return // its log is whole, or its pod gone: nothing more to read
		case p != nil && !over:
			over = true // read its log once more, through to its end
		default:
			// Ended (or gone) before the stop: the Job replaces it,
			// unless the index has failed for good (its gap stays open).
			if !s.sleep(ctx, repoll) {
				return
			}
		}
	}
}

// restart waits for generator index's new pod to be ready and starts it
// now: it sends its share from then on. It returns the node the ready pod runs on.
func (s *Source) restart(ctx context.Context, index int, pod string) (node string, err error) {
	err = wait.PollUntilContextTimeout(ctx, repoll, s.cfg.ReadyTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := s.cfg.Client.CoreV1().Pods(s.cfg.Namespace).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = p.Spec.NodeName
		return podReady(p), nil
	})
	if err != nil {
		return "", fmt.Errorf("generator %d's new pod %s: %w", index, pod, err)
	}
	if s.isStopped() {
		return node, nil
	}
	if err := s.post(ctx, pod, "start", strconv.FormatInt(time.Now().UnixNano(), 10)); err != nil {
		return node, fmt.Errorf("starting generator %d's new pod %s: %w", index, pod, err)
	}
	return node, nil
}

// consume follows pod's log into g's stream until it ends.
func (s *Source) consume(ctx context.Context, g *Generator, pod string) error {
	rc, err := s.cfg.Client.CoreV1().Pods(s.cfg.Namespace).GetLogs(pod, &corev1.PodLogOptions{Container: render.GeneratorContainer, Follow: true}).Stream(ctx)
	if err != nil {
		if !s.sleep(ctx, repoll) {
			return ctx.Err()
		}
		return err
	}
	defer rc.Close()
	return g.Stream.Consume(rc)
}

// podOf is the newest pod of generator index; nil when it has none.
func (s *Source) podOf(ctx context.Context, index int) (*corev1.Pod, error) {
	byIndex, err := s.pods(ctx, indexLabel+"="+strconv.Itoa(index))
	return byIndex[index], err
}

// pods lists the generators' pods (those matching also, when set) in one
// call and returns the newest of each index.
func (s *Source) pods(ctx context.Context, also string) (map[int]*corev1.Pod, error) {
	sel := "app=" + render.GeneratorsName
	if also != "" {
		sel += "," + also
	}
	l, err := s.cfg.Client.CoreV1().Pods(s.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	newest := map[int]*corev1.Pod{}
	for i := range l.Items {
		p := &l.Items[i]
		n, err := strconv.Atoi(p.Labels[indexLabel])
		if err != nil {
			continue
		}
		if cur := newest[n]; cur == nil || p.CreationTimestamp.After(cur.CreationTimestamp.Time) {
			newest[n] = p
		}
	}
	return newest, nil
}

// waitReady waits until every index has a ready pod and returns them by
// index: one list of the generators' pods per poll, whatever their number.
func (s *Source) waitReady(ctx context.Context) ([]*corev1.Pod, error) {
	n := s.cfg.Job.Count
	var ready []*corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, repoll, s.cfg.ReadyTimeout, true, func(ctx context.Context) (bool, error) {
		byIndex, err := s.pods(ctx, "")
		if err != nil {
			return false, err
		}
		ready = make([]*corev1.Pod, n)
		for i := range n {
			p := byIndex[i]
			if p == nil || !podReady(p) {
				return false, nil
			}
			ready[i] = p
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("the generators were not all ready within %s: %w%s", s.cfg.ReadyTimeout, err,
			kube.Diagnose(context.WithoutCancel(ctx), s.cfg.Client, s.cfg.Namespace, map[string]string{"app": render.GeneratorsName}))
	}
	return ready, nil
}

// clockExchanges is how many exchanges estimate a generator's clock; the
// one with the shortest round trip is kept, the least disturbed by the
// API server's queues (as NTP's clock filter keeps its shortest delay).
const clockExchanges = 4

// clock estimates pod's clock offset from droprun's: its /clock against
// the middle of the exchange, with half the round trip as the error
// bound, of the exchange with the shortest round trip.
func (s *Source) clock(ctx context.Context, pod string) (Clock, error) {
	var best Clock
	for range clockExchanges {
		sent := time.Now()
		b, err := s.proxy(pod, "clock").Do(ctx).Raw()
		got := time.Now()
		if err != nil {
			return Clock{}, err
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return Clock{}, fmt.Errorf("its /clock said %q: %w", b, err)
		}
		half := got.Sub(sent) / 2
		mid := sent.Add(half)
		if best.At.IsZero() || half < best.Bound {
			best = Clock{At: mid, Offset: time.Unix(0, ns).Sub(mid), Bound: half}
		}
	}
	return best, nil
}

// post sends POST /what (?at=at when at is set) to pod's control port.
func (s *Source) post(ctx context.Context, pod, what, at string) error {
	r := s.proxy(pod, what).Param(generators.TokenParam, s.cfg.Job.Token)
	if at != "" {
		r = r.Param("at", at)
	}
	return r.Do(ctx).Error()
}

// proxy is a request to pod's control port through the API server.
func (s *Source) proxy(pod, path string) *rest.Request {
	verb := "POST"
	if path == "clock" {
		verb = "GET"
	}
	return s.cfg.Client.CoreV1().RESTClient().Verb(verb).Namespace(s.cfg.Namespace).Resource("pods").
		Name(pod + ":" + strconv.Itoa(render.GeneratorControlPort)).SubResource("proxy").Suffix(path).
		Timeout(controlTimeout)
}

// delete deletes the Job with its pods and waits until they are gone.
func (s *Source) delete(ctx context.Context) error {
	if err := kube.DeleteOurs(ctx, s.cfg.Client, s.refs, 2*time.Minute); err != nil {
		return fmt.Errorf("deleting the generators: %w", err)
	}
	return nil
}

func (s *Source) closeFiles() error {
	var errs []error
	for _, g := range s.gens {
		if g.file != nil {
			errs = append(errs, g.file.Close())
			g.file = nil
		}
	}
	return errors.Join(errs...)
}

func (s *Source) placed(g Generator) {
	if s.cfg.Placed != nil {
		g.Stream, g.file = nil, nil
		s.cfg.Placed(g)
	}
}

func (s *Source) fail(err error) {
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.mu.Unlock()
}

func (s *Source) isStopped() bool {
	select {
	case <-s.stopped:
		return true
	default:
		return false
	}
}

// sleep waits d; false when ctx ended first.
func (s *Source) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// ended reports whether p's containers have all finished.
func ended(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// podReady reports whether p runs and is Ready.
func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
