package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/closeprobe"
	"github.com/droprun/droprun/harness/cluster"
	"github.com/droprun/droprun/harness/dataplane"
	"github.com/droprun/droprun/harness/disrupt"
	"github.com/droprun/droprun/harness/kube"
	"github.com/droprun/droprun/harness/metrics"
	"github.com/droprun/droprun/harness/observe"
	"github.com/droprun/droprun/harness/report"
	"github.com/droprun/droprun/harness/rig"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
	"github.com/droprun/droprun/harness/variant"
)

// Options tune a run. The zero value takes the defaults.
type Options struct {
	// Dir is the run's output directory. Default
	// <scenario output>/<UTC timestamp>-<scenario name>. It must not exist
	// or be empty: a run never overwrites recorded results.
	Dir string
	// Log receives progress lines (they are also kept in run.log).
	Log io.Writer
	// Testbed configures the cluster and images.
	Testbed testbed.Options
	// AllowTargets are the hosts beyond 127.0.0.1 the user named with
	// --allow-target: an existing cluster's URL may be on one of them
	// (testbed.CheckAllow).
	AllowTargets []traffic.AllowTarget
	// HostLock is the lock file that keeps to one run per host (default
	// rig.DefaultLock; where /run is not writable, one in the temporary
	// directory).
	HostLock string
	// Keep leaves a kind cluster that the run created running after the
	// run, or after its preparation failed (a cluster that existed before
	// is never deleted; droprun's objects in the namespace always are).
	Keep bool
	// BaselineQuiet is how long the traffic must be failure-free before a
	// rollout starts. Default 2s.
	BaselineQuiet time.Duration
	// BaselineMax bounds the wait for a clean baseline. Default 60s.
	BaselineMax time.Duration
	// RolloutTimeout turns a stuck rollout into a failure. Default 3m.
	RolloutTimeout time.Duration
	// Version is droprun's version, recorded in the summary.
	Version string
	// MetricsAddr, when set, is where droprun serves its live Prometheus
	// metrics (/metrics) during the run, e.g. 127.0.0.1:9464.
	MetricsAddr string
	// Pushgateway, when set, is a Pushgateway base URL the final metrics
	// are pushed to at the end of the run, grouped by run id.
	Pushgateway string
	// ClusterShares is the CPU weight of docker's containers (the kind
	// nodes) while the run lasts, in cgroup v1 cpu.shares units (see
	// rig.DefaultClusterShares). 0 means rig.DefaultClusterShares; -1
	// leaves the weight alone. Only for kind clusters.
	ClusterShares int
	// ClientProcs is the process's GOMAXPROCS while the run lasts. 0 means
	// DefaultClientProcs, unless the GOMAXPROCS environment variable is
	// set; -1 leaves GOMAXPROCS alone. The previous value is restored when
	// Run returns.
	ClientProcs int
	// Bare runs without the observers that explain drops (the nodes'
	// rule watch, the listener-close prober, the kube-proxy polls, the
	// pods' metrics, the front's log and servers): only the timeline's
	// informers, the run's marks and the rig sampler remain. It is what
	// make bench's observers' share (BenchmarkObserverShare) compares a
	// full run with; its analysis explains no drop.
	Bare bool
}

// DefaultClientProcs is the client's GOMAXPROCS during a run. On a 2-core
// machine that also runs the cluster, one P costs the client about 20%
// less CPU at 1000 new connections per second than two (measured here:
// 0.54 cores instead of 0.68), because the Go runtime no longer wakes idle
// threads for each ready goroutine, and every context switch is expensive
// on a virtual machine. The CPU it saves is what the cluster needs to
// start a pod during a rollout without starving the client.
const DefaultClientProcs = 1

// DefaultDir is a new run directory for sc: <scenario output>/<UTC
// timestamp>-<scenario name>.
func DefaultDir(sc *scenario.Scenario) string {
	return filepath.Join(sc.Output, time.Now().UTC().Format("20060102-150405")+"-"+sc.Metadata.Name)
}

func (o *Options) defaults(sc *scenario.Scenario) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Dir == "" {
		o.Dir = DefaultDir(sc)
	}
	if o.BaselineQuiet == 0 {
		o.BaselineQuiet = 2 * time.Second
	}
	if o.BaselineMax == 0 {
		o.BaselineMax = 60 * time.Second
	}
	if o.RolloutTimeout == 0 {
		o.RolloutTimeout = 3 * time.Minute
	}
	if o.ClusterShares == 0 {
		o.ClusterShares = rig.DefaultClusterShares
	}
	if o.ClientProcs == 0 && os.Getenv("GOMAXPROCS") == "" {
		o.ClientProcs = DefaultClientProcs
	}
}

// lockHost takes the host lock at path, or at rig.DefaultLock, falling
// back to one in the temporary directory where /run is not writable (not
// root): runs of one user still exclude each other.
func lockHost(path string, h rig.Holder) (*rig.HostLock, error) {
	if path != "" {
		return rig.LockHost(path, h)
	}
	l, err := rig.LockHost(rig.DefaultLock, h)
	if errors.Is(err, fs.ErrPermission) {
		l, err = rig.LockHost(filepath.Join(os.TempDir(), "droprun-run.lock"), h)
	}
	return l, err
}

// appScrapeEvery is how often the pods' own counters are scraped, and
// appScrapeTimeout how long one scrape may take: on a busy machine the API
// server's proxy can take over a second, and a failed last scrape leaves a
// pod's count up to appScrapeEvery old.
const (
	appScrapeEvery   = 5 * time.Second
	appScrapeTimeout = 3 * time.Second
)

// load is the load source running now.
type load struct{ traffic.Source }

// runner is one run in progress.
type runner struct {
	sc      *scenario.Scenario
	checked *testbed.Checked
	o       Options
	out     *Output
	tb      *testbed.Testbed
	rec     *observe.Recorder
	log     io.Writer
	// cpuWeight says how the kind nodes' CPU weight was set for the run
	// ("" when it was left alone).
	cpuWeight string
	// info is run.json, written when the testbed is ready and at the end.
	info *analysis.RunInfo
	// metrics is the live Prometheus view of the run.
	metrics *metrics.Metrics
	// app collects the pods' own request counters.
	app *observe.AppMetrics
	// frontAPI is the API of a front that wants a token, as the front
	// readers read it; frontGuarded is set once its guard was checked.
	frontAPI     *observe.FrontAPI
	frontGuarded bool
	// prober is the prober inside a kind node (listener closes, a front's
	// API), nil where none runs.
	prober *closeprobe.Prober
	// probers starts and stops the probers in kind nodes, prober's
	// among them; nil when there is none.
	probers *probers
	// load is the traffic running now, nil between variants; the rig
	// sampler reads its pacing.
	load atomic.Pointer[load]
	// routes watches the nodes' rules for the Service, nil where none runs.
	routes *dataplane.Watcher
}

// Run measures every variant of sc: for each, it deploys the variant,
// starts traffic, holds a control window, drives the rollouts, and records
// every request and every rollout event in the run directory. It then
// analyses the directory (harness/analysis) and returns the analysis,
// whose summary it writes to summary.json and whose failures to
// failures.jsonl. On cancellation or error the results recorded so far
// stay on disk, run.json says how the run ended, and the analysis covers
// what was recorded.
func Run(ctx context.Context, sc *scenario.Scenario, o Options) (*analysis.Analysis, error) {
	o.defaults(sc)
	// Bad input (an image archive missing, cut short, or without the
	// images named; load allowed where it may not go) fails before a run
	// directory or a cluster exists, and is checked only here.
	checked, err := testbed.Check(sc, o.AllowTargets)
	if err != nil {
		return nil, err
	}
	// One run per host, from before the run directory, the cluster or the
	// host is touched until all are put back.
	lock, err := lockHost(o.HostLock, rig.Holder{PID: os.Getpid(), Scenario: sc.Metadata.Name, Dir: o.Dir, Time: time.Now().UTC()})
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	out, err := CreateOutput(o.Dir, sc)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	if o.ClientProcs > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(o.ClientProcs))
	}
	r := &runner{sc: sc, checked: checked, o: o, out: out, log: io.MultiWriter(o.Log, out.Log)}
	r.o.Testbed.Log = r.log
	// client-go's own log lines (throttling, warnings) go to the run log.
	defer cluster.RouteClientLogs(r.log)()
	if sc.Cluster.Kind != nil {
		r.o.Testbed.CreateCluster = true
	}
	runID := filepath.Base(out.Dir)
	r.metrics = metrics.New(runID, sc.Metadata.Name, o.Version)
	if o.MetricsAddr != "" {
		sctx, stopServing := context.WithCancel(ctx)
		defer stopServing()
		addr, err := r.metrics.Serve(sctx, o.MetricsAddr)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(r.log, "metrics: serving http://%s%s\n", addr, metrics.MetricsPath)
	}
	fmt.Fprintf(r.log, "run %s: %d variant(s) × %d rollout(s) at %d req/s; results in %s\n",
		sc.Metadata.Name, len(sc.Variants), *sc.Rollouts, sc.Traffic.Rate, out.Dir)

	r.info = &analysis.RunInfo{Format: analysis.RunVersion, Facts: analysis.Facts{Scenario: sc.Metadata.Name, Started: time.Now()}}
	runErr := r.run(ctx)
	r.info.Finished = time.Now()
	if runErr != nil {
		r.info.Error = runErr.Error()
		r.info.Interrupted = errors.Is(runErr, context.Canceled)
	}
	if err := out.WriteRunInfo(r.info); err != nil && runErr == nil {
		runErr = err
	}
	// Everything is on disk now: the analysis reads the directory exactly
	// as `droprun report` will.
	a, err := analysis.Analyze(out.Dir, analysis.Options{Failure: out.WriteFailure})
	if err != nil {
		if runErr == nil {
			runErr = fmt.Errorf("analysing the run: %w", err)
		}
		fmt.Fprintf(r.log, "warning: analysing the run: %v\n", err)
	} else {
		for _, w := range a.Summary.Warnings {
			fmt.Fprintf(r.log, "warning: %s\n", w)
		}
		if err := out.WriteSummary(a.Summary); err != nil && runErr == nil {
			runErr = err
		}
		fmt.Fprintf(r.log, "summary written to %s\n", filepath.Join(out.Dir, runfile.SummaryFile))
	}
	if err := r.metrics.WriteFile(filepath.Join(out.Dir, runfile.MetricsFile)); err != nil && runErr == nil {
		runErr = err
	}
	if o.Pushgateway != "" {
		// Push even after an interrupted run: what was measured is kept.
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := r.metrics.Push(pctx, o.Pushgateway); err != nil {
			fmt.Fprintf(r.log, "warning: %v\n", err)
			if runErr == nil {
				runErr = err
			}
		} else {
			fmt.Fprintf(r.log, "metrics pushed to %s (job droprun, run_id %s)\n", o.Pushgateway, runID)
		}
	}
	return a, runErr
}

func (r *runner) run(ctx context.Context) (err error) {
	sc := r.sc
	to := r.o.Testbed
	to.Keep, to.Owner = r.o.Keep, kube.NewOwner(filepath.Base(r.out.Dir))
	tb, err := testbed.Prepare(ctx, r.checked, to)
	if err != nil {
		return err
	}
	r.tb = tb
	defer func() {
		// Clean up even when cancelled, but not forever.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
		defer cancel()
		if cerr := tb.Close(cctx, r.o.Keep); cerr != nil {
			fmt.Fprintf(r.log, "warning: %v\n", cerr)
		}
	}()
	switch {
	case tb.Cluster.Containers() != nil && r.o.ClusterShares > 0 && !sc.Traffic.FromPods():
		// The client runs on the host: the nodes yield to it. Generator
		// pods run in the nodes, and would be starved with them.
		defer r.favorClient()()
	default:
		// A weight left lowered by a killed run is put back even when
		// this run leaves the weight alone.
		if l, err := rig.RestoreLeftover(rig.DefaultMarker); err != nil {
			fmt.Fprintf(r.log, "warning: %v\n", err)
		} else if l.Found {
			fmt.Fprintf(r.log, "rig: %s\n", l)
		}
	}
	r.info.Cluster = r.clusterInfo(ctx)
	if r.info.Traffic, err = r.trafficInfo(ctx); err != nil {
		return err
	}
	if err := r.out.WriteRunInfo(r.info); err != nil {
		return err
	}

	observers := []observe.Observer{
		{Name: "the timeline watches", Start: r.startTimeline}, // first: the others write through it
		{Name: "the rig sampler", Start: r.startRigSampler},
	}
	if r.o.Bare {
		fmt.Fprintf(r.log, "bare: no rule watch, listener-close prober, kube-proxy polls, pods' metrics or front readers: this run's drops cannot be explained\n")
	} else {
		observers = append(observers, []observe.Observer{
			{Name: "the rule watch", Start: r.watchRoutes},
			{Name: "the listener-close prober", Start: r.startCloseProbe},
			{Name: "the pods' metrics collection", Start: r.startAppMetrics},
			{Name: "the front's access log", Start: r.startFrontLogs},
			{Name: "the front's servers", Start: r.startFrontServers},
		}...)
	}
	stopObservers, err := observe.StartAll(ctx, observers)
	if err != nil {
		return err
	}
	defer func() {
		if serr := stopObservers(); serr != nil && err == nil {
			err = serr
		}
	}()

	for _, v := range render.Variants(sc) {
		if verr := r.variant(ctx, v); verr != nil {
			return fmt.Errorf("variant %s: %w", v.Name(), verr)
		}
	}
	return nil
}

// startTimeline starts the informers (and, on kind, the kube-proxy poll)
// that write events.jsonl.
func (r *runner) startTimeline(ctx context.Context) (func() error, error) {
	rec, err := observe.StartRecorder(ctx, r.tb.Cluster.Client, r.sc.Namespace, r.out.Events, observe.RecorderOptions{KubeProxy: r.kubeProxyOptions()})
	if err != nil {
		return nil, err
	}
	r.rec = rec
	return rec.Stop, nil
}

// startFrontLogs records the front's access log (frontlog.jsonl), for a
// front that logs every request: each front pod's log from its start, read
// from its file by a prober in the pod's kind node, or else followed
// through the API server (whose kubelet asks the runtime for the
// container's state at every write it wakes for: results/README.md,
// "What the observers cost").
func (r *runner) startFrontLogs(ctx context.Context) (func() error, error) {
	p := r.sc.Path()
	if p.Proxy == nil || p.Proxy.AccessLog == nil {
		return func() error { return nil }, nil
	}
	file, err := r.out.Create(runfile.FrontLogFile)
	if err != nil {
		return nil, err
	}
	fl := observe.FrontLog{Container: p.Proxy.Name, AccessLog: p.Proxy.AccessLog, Servers: p.Proxy.LogServers, Record: r.rec.Record}
	how := "followed through the API server"
	if r.probers != nil {
		fl.OpenFile = func(ctx context.Context, pod *corev1.Pod, container string) (io.ReadCloser, error) {
			pr, err := r.probers.in(ctx, pod.Spec.NodeName)
			if err != nil {
				return nil, fmt.Errorf("reading its log file from inside its node: %w", err)
			}
			return pr.Follow(ctx, string(pod.UID), observe.PodLogFile(pod, container)), nil
		}
		how = "read from its file inside the pod's node"
	}
	logs, err := observe.StartFrontLogs(ctx, r.tb.Cluster.Client, r.sc.Namespace, "app="+p.Proxy.Name, fl, file)
	if err != nil {
		file.Close()
		return nil, err
	}
	fmt.Fprintf(r.log, "front: recording %s's access log (every request's ID, the pod it chose, its status) in %s, %s\n", p.Name, runfile.FrontLogFile, how)
	return func() error { return errors.Join(logs.Stop(), file.Close()) }, nil
}

// startFrontServers records the pods a front with an API sends new
// requests to (front.* events), so that its stop of sending to a deleted
// pod is known from the front itself: read every 20 ms from inside a kind
// node by the prober, or else every 100 ms through the API server.
func (r *runner) startFrontServers(ctx context.Context) (func() error, error) {
	p := r.sc.Path()
	if p.Proxy == nil || p.Proxy.API == nil {
		return func() error { return nil }, nil
	}
	api := observe.FrontAPI{Port: p.Proxy.API.Port, Path: p.Proxy.API.Path, Servers: p.Proxy.API.Servers}
	if p.Proxy.API.Token {
		// The Secret the front's pods take the token from, made now
		// (or kept: Apply never replaces it) so the reads know it.
		if _, err := r.tb.Apply(ctx, render.FrontToken(r.sc.Namespace)); err != nil {
			return nil, fmt.Errorf("front: the token %s's API wants: %w", p.Name, err)
		}
		tok, err := kube.SecretValue(ctx, r.tb.Cluster.Client, r.sc.Namespace, variant.FrontTokenSecret, variant.FrontTokenKey)
		if err != nil {
			return nil, fmt.Errorf("front: the token %s's API wants: %w", p.Name, err)
		}
		api.Query = url.Values{variant.FrontTokenParam: {tok}}
		r.frontAPI = &api
	}
	var poller observe.FrontPoller
	how := fmt.Sprintf("every %s through the API server (no prober runs inside a node)", observe.FrontPollEvery)
	if r.prober != nil {
		poller = r.prober
		how = fmt.Sprintf("every %s while a pod terminates (%s otherwise) from inside node %s, at each %s pod's IP", closeprobe.PollEvery, closeprobe.PollIdle, r.prober.Node(), p.Name)
	}
	fmt.Fprintf(r.log, "front: reading the pods %s sends to from its API (:%d%s) %s\n", p.Name, api.Port, api.Path, how)
	return observe.StartFrontServers(ctx, r.tb.Cluster.Client, r.sc.Namespace, "app="+p.Proxy.Name, api, poller, r.rec.Record)
}

// checkFrontGuard checks, once a run's front is up, that its API answers
// the reads with the token and refuses one without (observe's
// CheckFrontGuard); nothing to check for a front with no token.
func (r *runner) checkFrontGuard(ctx context.Context) error {
	if r.frontAPI == nil || r.frontGuarded {
		return nil
	}
	p := r.sc.Path()
	if err := observe.CheckFrontGuard(ctx, r.tb.Cluster.Client, r.sc.Namespace, "app="+p.Proxy.Name, *r.frontAPI, 30*time.Second); err != nil {
		return fmt.Errorf("front: %w", err)
	}
	r.frontGuarded = true
	fmt.Fprintf(r.log, "front: %s's API answers only with the token in secret %s (checked: 404 without it)\n", p.Name, variant.FrontTokenSecret)
	return nil
}

// startAppMetrics collects the pods' own counters, where they have any.
// Every 5 s, not every second: each scrape goes through the API server,
// and on a 2-core machine at 1000 req/s there is no CPU to spare. The
// exact final counts come from the pods' termination messages anyway.
func (r *runner) startAppMetrics(ctx context.Context) (func() error, error) {
	selector, opts, ok := r.appMetricsOptions()
	if !ok {
		fmt.Fprintf(r.log, "%s\n", analysis.NoCustomMetrics)
		return noStop, nil
	}
	app, err := observe.StartAppMetrics(ctx, r.tb.Cluster.Client, r.sc.Namespace, selector, r.out.App, opts)
	if err != nil {
		return nil, err
	}
	r.app = app
	return app.Stop, nil
}

// variant measures variant i and prints what its rows show.
func (r *runner) variant(ctx context.Context, rv render.Variant) error {
	v := rv.Entry
	fmt.Fprintf(r.log, "\n== variant %s\n", v.Name)
	r.metrics.VariantStarted(v.Name)
	defer r.metrics.Phase(v.Name, metrics.PhaseDone)

	if err := r.startState(ctx, rv); err != nil {
		return err
	}
	var lastFailure atomic.Int64 // UnixNano of the latest failed request's send time
	cfg := r.loadConfig(v.Name)
	// The pods' counters just before traffic starts: the baseline the
	// pods' view counts from (scrapes are 5 s apart otherwise), after
	// WaitAnswering's requests, which the client did not send.
	r.scrapeApp(ctx)
	var sent, failed atomic.Uint64
	reach := newReach()
	// The host client, or the generator pods (traffic.generators).
	src, loadDone, err := r.startLoad(ctx, v.Name, cfg, func(rec traffic.Record) {
		r.metrics.Observe(v.Name, rec)
		reach.note(rec)
		sent.Add(1)
		if rec.Class.Failed() {
			failed.Add(1)
			// The baseline waits for the rollout's failures to stop. An
			// app that closes idle connections before the client does
			// fails requests (000:idle-closed) at any time, rollout or
			// not: waiting for those to stop would wait in vain.
			if t := rec.Time.UnixNano(); t > lastFailure.Load() && rec.Class != traffic.ClassIdleClosed {
				lastFailure.Store(t)
			}
		}
	})
	if err != nil {
		return err
	}
	r.load.Store(&load{src})
	defer r.load.Store(nil)
	stopProgress := r.progress(ctx, v.Name, &sent, &failed)
	defer stopProgress()
	r.metrics.Phase(v.Name, metrics.PhaseControl)
	r.rec.Mark(timeline.KindTrafficStart, map[string]string{"variant": v.Name, "rate": strconv.Itoa(cfg.Rate)})
	r.logTraffic(cfg)

	runErr := r.rollouts(ctx, rv, &lastFailure, &failed, reach, func() error {
		return unreachable(sent.Load(), failed.Load(), reach.first.Load())
	})

	stats, stopErr := src.Stop()
	if err := loadDone(); err != nil && stopErr == nil {
		stopErr = err
	}
	r.rec.Record(timeline.Event{Kind: timeline.KindTrafficStop, Detail: map[string]string{"variant": v.Name, "origin": src.Origin()}, Stats: &stats})
	// The pods' counters as of now, so the pods' view covers the traffic;
	// after an interruption too (each scrape is bounded by its timeout).
	r.scrapeApp(context.WithoutCancel(ctx))
	r.rec.Mark(timeline.KindAppScraped, map[string]string{"variant": v.Name})
	if runErr == nil {
		runErr = stopErr
	}
	if ferr := r.rec.Flush(); ferr != nil && runErr == nil {
		runErr = ferr
	}
	r.logRows(v.Name)
	return runErr
}

// startState brings the variant (or its From) to v1 and answering, and
// holds the control window's start until no node routes to the pods just
// replaced and no connection is stuck on one (conntrack).
func (r *runner) startState(ctx context.Context, rv render.Variant) error {
	if err := r.tb.Deploy(ctx, rv, 0, true); err != nil {
		return err
	}
	if _, err := r.tb.WaitAnswering(ctx, time.Minute); err != nil {
		return err
	}
	if err := r.checkFrontGuard(ctx); err != nil {
		return err
	}
	if err := r.awaitRoutes(ctx); err != nil {
		return err
	}
	return r.flushConntrack(ctx, rv.Entry.Name, 0)
}

// loadConfig is the variant's load: the scenario's, to the testbed's
// targets, each gRPC channel's state changes marked on the timeline.
func (r *runner) loadConfig(variant string) traffic.Config {
	cfg := render.LoadConfig(r.sc, variant)
	cfg.Targets = r.tb.Targets()
	cfg.Allow = r.tb.Allow // the hosts beyond 127.0.0.1 the user named with --allow-target
	cfg.OnChannel = func(s traffic.ChannelState) {
		d := map[string]string{"variant": variant, "target": s.Target, "channel": strconv.Itoa(s.Channel), "state": s.State, "at": s.Time.Format(time.RFC3339Nano)}
		if s.Error != "" {
			d["error"] = s.Error
		}
		r.rec.Mark(timeline.KindGRPCChannel, d)
	}
	return cfg
}

// logTraffic says where the load goes and how.
func (r *runner) logTraffic(cfg traffic.Config) {
	t := r.sc.Traffic
	proto := cfg.Protocol.Text()
	if cfg.Connections > 0 {
		proto += fmt.Sprintf(", %d per target", cfg.Connections)
	}
	if t.FromPods() {
		fmt.Fprintf(r.log, "traffic: %d req/s from %d generator pods (%s); control window %s\n", cfg.Rate, t.Generators.Count, proto, t.Control)
	} else {
		fmt.Fprintf(r.log, "traffic: %d req/s round robin to %s (%s); control window %s\n", cfg.Rate, targetsText(cfg.Targets), proto, t.Control)
	}
}

// logRows prints what the variant's rows show so far, for the log; the
// run's summary comes from the whole directory at the end.
func (r *runner) logRows(variant string) {
	a, err := analysis.Analyze(r.out.Dir, analysis.Options{Variants: []string{variant}})
	if err != nil {
		fmt.Fprintf(r.log, "warning: analysing %s: %v\n", variant, err)
		return
	}
	for _, row := range a.Summary.Variants {
		fmt.Fprintf(r.log, "%s: %d drops in %d rollout-window requests (%d rollouts, %d with drops, %d timeouts excused); control %d/%d failures; tail %d\n",
			row.Variant, row.Drops, row.WindowRequests, len(row.Rollouts), row.RolloutsWithDrops, row.Excused, row.Control.Failures, row.Control.Requests, row.Tail.Failures)
		if len(row.ByNode) > 0 {
			fmt.Fprintf(r.log, "  by entry node: %s\n", report.NodesText(row.ByNode))
		}
		if len(row.ByHop) > 0 {
			fmt.Fprintf(r.log, "  drops by the hop that failed them: %s\n", report.HopsText(row.ByHop))
		}
	}
}

// rollouts holds the control window, then drives the variant's rollouts,
// unless reach finds a target broken in the window's first seconds or
// reachable says the whole window showed the target unreachable.
//
// failed counts the failures seen so far; the live metrics take each
// rollout's share of it (by completion time, so only roughly its drops).
func (r *runner) rollouts(ctx context.Context, rv render.Variant, lastFailure *atomic.Int64, failed *atomic.Uint64, reach *reach, reachable func() error) error {
	sc, tb := r.sc, r.tb
	v := rv.Entry
	if err := reach.control(ctx, sc.Traffic.Control.Duration); err != nil {
		return err
	}
	r.rec.Mark(timeline.KindWindowClose, map[string]string{"variant": v.Name, "phase": string(analysis.PhaseControl)})
	if err := reachable(); err != nil {
		return err
	}

	// Rounds of the one disruption there is (disrupt.Disruption).
	var dis disrupt.Disruption = disrupt.Rollout{Run: sc.Metadata.Name, Variant: rv, Apply: tb, Timeout: r.o.RolloutTimeout}
	for n := 1; n <= *sc.Rollouts; n++ {
		round, err := dis.Round(n)
		if err != nil {
			return err
		}
		from, to := round.From, round.To
		measured, found, facts, err := r.liveVariant(ctx, round.Deployment)
		if err != nil {
			return err
		}
		mark := func(kind timeline.Kind, detail map[string]string) {
			detail["variant"], detail["rollout"] = v.Name, strconv.Itoa(n)
			r.rec.Mark(kind, detail)
		}
		live := measured + "; " + facts.String()
		if sc.App.Custom != nil {
			live = facts.String()
		}
		fmt.Fprintf(r.log, "rollout %d/%d: %s → %s (live pods: %s)\n", n, *sc.Rollouts, from, to, live)
		start, failedBefore := time.Now(), failed.Load()
		r.metrics.RolloutStarted(v.Name, n)
		r.rec.Record(timeline.Event{Kind: timeline.KindRolloutStart, Live: facts, Detail: map[string]string{
			"variant": v.Name, "rollout": strconv.Itoa(n), "from": from, "to": to, "measured": measured, "live": found}})
		// The window lasts until the replaced pods are gone, not until
		// the Deployment says it rolled out.
		if err := round.Take(ctx); err != nil {
			return fmt.Errorf("rollout %d: %w", n, err)
		}
		mark(timeline.KindRolloutComplete, map[string]string{})
		balanceEnd := r.balanceEdge(ctx, mark, "start")
		took := time.Since(start).Round(100 * time.Millisecond)
		r.metrics.Phase(v.Name, metrics.PhaseSettle)
		if err := sleep(ctx, sc.Traffic.Settle.Duration); err != nil {
			return err
		}
		mark(timeline.KindWindowClose, map[string]string{"phase": string(analysis.PhaseRollout)})
		r.metrics.RolloutDone(v.Name, took, failed.Load()-failedBefore)
		r.metrics.Phase(v.Name, metrics.PhaseBetween)
		fmt.Fprintf(r.log, "rollout %d done in %s (old pods gone), window closed after %s settle\n", n, took, sc.Traffic.Settle)

		// Between rollouts: clear stale conntrack entries (never inside a
		// measured window), then wait for a clean baseline.
		if err := r.flushConntrack(ctx, v.Name, n); err != nil {
			return err
		}
		waitStart := time.Now()
		if err := sleep(ctx, sc.Traffic.Between.Duration); err != nil {
			return err
		}
		// The last rollout's baseline is checked like the others: its
		// failures must stop before the traffic does.
		clean, err := r.waitBaseline(ctx, lastFailure)
		if err != nil {
			return err
		}
		mark(timeline.KindBaseline, map[string]string{"clean": strconv.FormatBool(clean), "wait": time.Since(waitStart).Round(100 * time.Millisecond).String()})
		if !balanceEnd.IsZero() {
			if err := sleep(ctx, time.Until(balanceEnd)); err != nil {
				return err
			}
			r.balanceEdge(ctx, mark, "end")
		}
	}
	return nil
}

// balanceEdge reads the pods' counters at one edge of a rollout's balance
// span and marks it; at the start it returns when the span ends (zero:
// no span, as traffic.balance is 0 or no pods' counters are read).
func (r *runner) balanceEdge(ctx context.Context, mark func(timeline.Kind, map[string]string), edge string) time.Time {
	span := r.sc.Traffic.Balance.Duration
	if span <= 0 || r.app == nil {
		return time.Time{}
	}
	// An edge whose reading failed (the API server stalled) is unread,
	// and the rollout's balance undecided: read again, a few times.
	for try := 1; r.app.ScrapeNow(ctx) > 0 && try < balanceReads && ctx.Err() == nil; try++ {
		fmt.Fprintf(r.log, "balance: reading the pods' counters at the span's %s failed; reading again (%d of %d)\n", edge, try+1, balanceReads)
	}
	mark(timeline.KindBalance, map[string]string{"edge": edge})
	return time.Now().Add(span)
}

// balanceReads is how many times a balance edge's reading is tried.
const balanceReads = 5

// waitBaseline waits until no failed request was sent in the last
// BaselineQuiet (plus one request timeout, since a failure is known only
// when it completes), up to BaselineMax. It reports whether it got one.
func (r *runner) waitBaseline(ctx context.Context, lastFailure *atomic.Int64) (bool, error) {
	quiet := r.o.BaselineQuiet + r.sc.Traffic.Timeout.Duration
	deadline := time.Now().Add(r.o.BaselineMax)
	for {
		since := time.Since(time.Unix(0, lastFailure.Load()))
		if since >= quiet {
			return true, nil
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(r.log, "warning: no clean baseline within %s: failures keep coming (last %s ago); rolling anyway, the rollout's numbers are suspect\n", r.o.BaselineMax, since.Round(100*time.Millisecond))
			return false, nil
		}
		if err := sleep(ctx, min(quiet-since, time.Until(deadline))+10*time.Millisecond); err != nil {
			return false, err
		}
	}
}

// liveVariant reads a live pod of the Deployment's current ReplicaSet,
// one the next rollout deletes (its pod template when no such pod runs,
// which the facts say): the variant it actually is ("custom" for a custom
// app), what Detect found in it, and the shutdown settings of the
// container under test, which are what those pods will do.
func (r *runner) liveVariant(ctx context.Context, deployment string) (name, found string, facts *variant.PodFacts, err error) {
	d, pod, err := kube.LivePod(ctx, r.tb.Cluster.Client, r.sc.Namespace, deployment)
	if err != nil {
		return "", "", nil, fmt.Errorf("reading the live deployment and its pods: %w", err)
	}
	spec := &d.Spec.Template.Spec
	if pod != nil {
		spec = &pod.Spec
	}
	container := variant.ContainerName
	if c := r.sc.App.Custom; c != nil {
		container = c.Container
	}
	if facts, err = variant.Facts(spec, container); err != nil {
		return "", "", nil, fmt.Errorf("deployment %s: %w", deployment, err)
	}
	facts.Replicas = 1 // as Kubernetes defaults it
	if d.Spec.Replicas != nil {
		facts.Replicas = *d.Spec.Replicas
	}
	if pod != nil {
		facts.Pod = pod.Name
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name == container {
				facts.ImageID = cs.ImageID
			}
		}
	} else {
		facts.FromTemplate = true
	}
	if r.sc.App.Custom != nil {
		return "custom", facts.String(), facts, nil
	}
	name, found = variant.Detect(spec)
	if name == "" {
		name = "unknown"
	}
	return name, found, facts, nil
}

// appMetricsOptions says how the pods' own counters are collected:
// bookshop's metrics and exit totals from the web pods, or the counter
// app.custom.metrics names from every pod of the scenario's variants.
// ok is false for a custom app without app.custom.metrics.
func (r *runner) appMetricsOptions() (selector string, o observe.AppMetricsOptions, ok bool) {
	o = observe.AppMetricsOptions{Interval: appScrapeEvery, Timeout: appScrapeTimeout}
	c := r.sc.App.Custom
	if c == nil {
		return "app=" + variant.WebName, o, true
	}
	if c.Metrics == nil {
		return "", o, false
	}
	counter := analysis.CounterOf(c.Metrics)
	o.Port, o.Path, o.Container, o.Counter = c.Metrics.Port, c.Metrics.Path, c.Container, &counter
	// Every variant's pods carry the row label (variant.Custom sets it),
	// whatever labels their manifests give them.
	return variant.LabelRow, o, true
}

// scrapeApp reads the pods' counters now, when they are collected.
func (r *runner) scrapeApp(ctx context.Context) {
	if r.app != nil {
		r.app.ScrapeNow(ctx)
	}
}

// flushConntrack clears stale SYN_SENT entries on kind nodes and records
// it, as done after rollout n (0: before the control window).
func (r *runner) flushConntrack(ctx context.Context, variant string, n int) error {
	nodes := r.tb.Cluster.Conntrack()
	if nodes == nil {
		return nil
	}
	flushed, err := nodes.FlushConntrack(ctx)
	if err != nil {
		return err
	}
	total := 0
	for _, k := range flushed {
		total += k
	}
	r.rec.Record(timeline.Event{Kind: timeline.KindConntrackFlushed, Detail: map[string]string{"variant": variant, "rollout": strconv.Itoa(n)}, Flushed: flushed})
	if total > 0 {
		fmt.Fprintf(r.log, "conntrack: cleared %d stale SYN_SENT entries (after rollout %d)\n", total, n)
	}
	return nil
}

// kubeProxyOptions polls each node's kube-proxy every 500 ms while pods
// or endpoints change (and observe.DefaultIdleAfter after): it syncs at
// most once a second (minSyncPeriod), so no sync is missed. Every 5 s
// otherwise: every poll goes through the API server, which on a 2-core
// machine has no CPU to spare.
func (r *runner) kubeProxyOptions() observe.KubeProxyOptions {
	if r.tb.Cluster.Provider != cluster.ProviderKind || r.o.Bare {
		return observe.KubeProxyOptions{}
	}
	return observe.KubeProxyOptions{Interval: 500 * time.Millisecond, Idle: 5 * time.Second, Namespace: "kube-system", LabelSelector: "k8s-app=kube-proxy", Port: 10249}
}

func (r *runner) clusterInfo(ctx context.Context) analysis.ClusterInfo {
	ci := analysis.ClusterInfo{Name: r.tb.Cluster.Name, Kind: r.tb.Cluster.Provider == cluster.ProviderKind, DroprunVer: r.o.Version, CPUWeight: r.cpuWeight}
	if k := r.sc.Cluster.Kind; k != nil {
		ci.Nodes, ci.KubeProxyMode, ci.NodeImage = k.Nodes, k.KubeProxyMode, k.NodeImage
		if img := r.tb.Cluster.NodeImage.Image; img != "" {
			ci.NodeImage = img // what "auto" resolved to
		}
	}
	if v, err := r.tb.Cluster.Client.Discovery().ServerVersion(); err == nil {
		ci.Kubernetes = v.GitVersion
	}
	return ci
}

func (r *runner) trafficInfo(ctx context.Context) (analysis.TrafficInfo, error) {
	t := r.sc.Traffic
	method := traffic.Config{Method: t.Method}.RequestMethod()
	targets := r.tb.Targets()
	generators := 0
	if t.FromPods() {
		var err error
		if targets, err = insideTargets(ctx, r); err != nil {
			return analysis.TrafficInfo{}, err
		}
		generators = t.Generators.Count
	}
	ti := analysis.TrafficInfo{URL: targets[0].URL, Targets: targets, Rate: t.Rate, Protocol: t.Protocol(), Connections: t.Connections, KeepAlive: t.KeepAlive, Method: method, Timeout: t.Timeout.String(),
		Target: t.Target, Rollouts: *r.sc.Rollouts, Settle: t.Settle.String(), Control: t.Control.String(), Between: t.Between.String(),
		Arrivals: t.Arrivals, ClientProcs: runtime.GOMAXPROCS(0), Generators: generators}
	if t.IdleTimeout != nil {
		ti.IdleTimeout = t.IdleTimeout.String()
	}
	return ti, nil
}

// sleep waits d or until ctx is done. It times measurement windows; it is
// never used to wait for a condition.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// targetsText lists the traffic's targets for the log.
func targetsText(ts []traffic.Target) string {
	var parts []string
	for _, t := range ts {
		if t.Node != "" {
			parts = append(parts, fmt.Sprintf("%s (%s)", t.URL, t.Node))
		} else {
			parts = append(parts, t.URL)
		}
	}
	return strings.Join(parts, ", ")
}
