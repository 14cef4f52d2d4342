package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/droprun/droprun/harness/report"
	"github.com/droprun/droprun/harness/rig"
	"github.com/droprun/droprun/harness/run"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed"
	"github.com/droprun/droprun/harness/traffic"
)

func newRunCmd(s streams) *cobra.Command {
	var (
		o                   run.Options
		kubeconfig, context string
		allowed             consent
	)
	cmd := &cobra.Command{
		Use:   "run SCENARIO",
		Short: "Measure the requests each variant's rollouts drop",
		Long: `Run a scenario: for each variant, deploy it, start constant-rate vegeta traffic
to 127.0.0.1, hold a control window, drive the rollouts (v1→v2→v1… by
server-side apply), and record every request's outcome and every rollout event.
SCENARIO is a file, or the name of a shipped scenario (droprun scenarios lists
them): droprun run demo works from any directory.

Every request is one of: 2xx, 000:refused, 000:reset, 000:eof, 000:idle-closed,
000:goaway, 000:stream-reset, 000:unavailable, 000:timeout, 000:other, 502, 503,
5xx:other, 4xx (idle-closed, a kept-alive connection reused from the idle pool
and closed before an answer, with keepAlive only; goaway and stream-reset over
HTTP/2 only: traffic.protocol h2c or grpc; unavailable, a gRPC UNAVAILABLE
with no cause on the wire, with grpc only). A failure counts against a rollout only
inside that rollout's window (its start until its old pods are gone, plus the
settle time). Failures in the control window are the rig's own floor, and
failures after a window closes (stale conntrack entries) are reported apart.
Between rollouts droprun clears stale conntrack entries in the kind nodes and
waits for a clean baseline; before each rollout it reads the live pod template
back and records the variant it actually measured.

The run directory (results/<timestamp>-<scenario>/ by default) holds:
  results-<variant>.bin   every result, in vegeta's encoding (vegeta report < file)
  events.jsonl            the timeline: pods, endpoints, ReplicaSets, kube-proxy syncs
  failures.jsonl          every failed request with its rollout and nearest pod deletion
  summary.json            per variant: requests, drops, classes, rollouts, suspect flags
  metrics.prom            the live metrics' final values (Prometheus text format)
  scenario.yaml, run.log
  report/                 report.html, plots and the other formats (droprun report)

While it runs, droprun samples the rig itself every 250 ms (host CPU, CPU
pressure, the client's and each node's CPU, how far behind schedule the client
is) into events.jsonl. A rollout during which the client fell more than 1 s
(half the request timeout) behind schedule, or its goroutines waited more than
1 s for a core, is flagged as saturated: its drops may be the machine's, not
the variant's, and the summary keeps them apart.

The client and the cluster share the machine's cores. So that a node starting
a pod does not starve the client, the run lowers the CPU weight of docker's
containers (the kind nodes) to 256 while it lasts and puts it back at the end
(--cluster-cpu-shares; -1 leaves it alone), and the client runs with
GOMAXPROCS=1 unless GOMAXPROCS is set.

With --metrics-addr, droprun serves its live view on /metrics (requests by
variant and outcome class, latency, rollouts and their durations, the current
phase); --pushgateway pushes the final values at the end, grouped by run id.

The kind cluster is reused when it exists (and then kept), or created and
deleted afterwards unless --keep.
With --kubeconfig (and --context) the run uses an existing cluster instead,
keeping the scenario's cluster.existing.url if it has one; droprun works only
in its own namespace there and refuses a non-kind context unless
--allow-context names it (a cluster is kind when its nodes say so, whatever the
context is called). Load goes to 127.0.0.1 only, unless cluster.existing.url
is a load balancer's or ingress's URL and --allow-target names its HOST[:PORT]
exactly: droprun sends load nowhere else.

Exit status: 0 when the run completed, 1 on error (the results recorded so far
are kept), 2 on bad usage or bad input (a scenario that does not validate, an
image archive that is missing, cut short or without the images named: found
before any cluster work), 130 when interrupted (Ctrl-C, SIGTERM or SIGHUP: traffic
stops, everything recorded so far is flushed and reported, the cluster is
cleaned up as without the interruption).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := loadScenario(args[0])
			if err != nil {
				return badInput(err)
			}
			if kubeconfig != "" {
				overrideCluster(sc, kubeconfig, context)
			} else if context != "" {
				return usageError("--context needs --kubeconfig")
			}
			if o.AllowTargets, err = allowed.apply(sc); err != nil {
				return err
			}
			o.Log = s.Err
			o.Version = version
			if o.Dir == "" {
				if err := sc.CheckOutput(); err != nil {
					return badInput(err)
				}
				o.Dir = run.DefaultDir(sc)
			}
			a, err := run.Run(cmd.Context(), sc, o)
			if a == nil {
				return badInput(err)
			}
			// The report files, from the same analysis the summary came
			// from; an interrupted run gets one too.
			dir := o.Dir
			if rerr := report.Write(a, dir, report.DefaultDir(dir), s.Err); rerr != nil {
				fmt.Fprintf(s.Err, "warning: writing the report: %v (retry with `droprun report %s`)\n", rerr, dir)
			}
			if rerr := report.Table(s.Out, a.Summary); rerr != nil && err == nil {
				err = rerr
			}
			return interrupted(cmd.Context(), err, dir)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "output-dir", "", "the run directory (default <scenario output>/<timestamp>-<name>); must not exist or be empty")
	f.BoolVar(&o.Keep, "keep", false, "keep the kind cluster after the run when the run created it (a cluster that existed before is always kept)")
	f.StringVar(&kubeconfig, "kubeconfig", "", "use the existing cluster of this kubeconfig instead of the scenario's (its cluster.existing.url is kept)")
	f.StringVar(&context, "context", "", "the kubeconfig context (default: its current context)")
	f.StringVar(&o.Testbed.AllowContext, "allow-context", "", "allow this non-kind context")
	allowed.flags(f)
	f.BoolVar(&o.Testbed.AllowGenerators, "allow-generators", false, "on an existing cluster, allow traffic.generators.from: pods: generator pods that send the load from inside it (deleted after each variant)")
	f.StringVar(&o.MetricsAddr, "metrics-addr", "", "serve live Prometheus metrics on this address during the run, e.g. 127.0.0.1:9464")
	f.IntVar(&o.ClusterShares, "cluster-cpu-shares", 0, fmt.Sprintf("CPU weight of the kind nodes while the run lasts, in cgroup v1 cpu.shares units (a thread weighs 1024); 0 means %d, so a node starting a pod does not starve the client; -1 leaves it alone", rig.DefaultClusterShares))
	f.StringVar(&o.Pushgateway, "pushgateway", "", "push the final metrics to this Pushgateway base URL, e.g. http://127.0.0.1:9091")
	return cmd
}

// trustKubeconfigUsage is --trust-kubeconfig's help.
const trustKubeconfigUsage = "let the kubeconfig the scenario names run its credential plugin (users[].user.exec) and send a token file from outside its directory; a kubeconfig given with --kubeconfig is trusted already"

// trustKubeconfig marks the scenario's existing cluster's kubeconfig as
// vouched for (--trust-kubeconfig).
func trustKubeconfig(sc *scenario.Scenario, trust bool) {
	if e := sc.Cluster.Existing; e != nil && trust {
		e.Trusted = true
	}
}

// allowNodeImageUsage is --allow-node-image's help.
const allowNodeImageUsage = "let the scenario's cluster.kind.nodeImage be this image, though it is neither droprun's node image nor kind's (a node image runs privileged on this host)"

// allowNodeImage records --allow-node-image ref as the user's consent to
// the scenario's node image, which it must name exactly.
func allowNodeImage(sc *scenario.Scenario, ref string) error {
	if ref == "" {
		return nil
	}
	k := sc.Cluster.Kind
	if k == nil || k.NodeImage != ref {
		have := "no kind cluster"
		if k != nil {
			have = "cluster.kind.nodeImage " + k.NodeImage
		}
		return usageError("--allow-node-image %s does not name the scenario's node image (%s): name exactly the image it uses, or leave it out", ref, have)
	}
	k.NodeImageAllowed = true
	return nil
}

// overrideCluster points sc at the existing cluster of --kubeconfig and
// --context, which the user named and so vouches for. The scenario's
// cluster.existing.url is kept: the flags choose the cluster, not where
// its traffic enters.
func overrideCluster(sc *scenario.Scenario, kubeconfig, context string) {
	e := &scenario.ExistingCluster{Kubeconfig: kubeconfig, Context: context, Trusted: true}
	if old := sc.Cluster.Existing; old != nil {
		e.URL = old.URL
	}
	sc.Cluster = scenario.Cluster{Existing: e}
}

// badInput makes a scenario's problems (scenario.Errors, from Load or
// the run's preflight) exit 2 as bad input; other errors pass as they are.
func badInput(err error) error {
	if _, ok := scenario.AsErrors(err); ok {
		return &exitError{code: exitUsage, err: err}
	}
	if ae := (*testbed.AllowError)(nil); errors.As(err, &ae) {
		return usageError("%w", err)
	}
	return err
}

// exitInterrupted is the exit status of a run ended by a stop signal,
// as a shell reports a command killed by SIGINT.
const exitInterrupted = 130

// interrupted turns the error of a run that ctx's cancellation ended into
// exit status 130 and says where its results are; other errors pass as they
// are.
func interrupted(ctx context.Context, err error, dir string) error {
	if err == nil || ctx.Err() == nil || !errors.Is(err, context.Canceled) {
		return err
	}
	return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted: what was recorded until then is in %s (droprun report %s rebuilds the report)", dir, dir)}
}

// parseAllowTargets reads the --allow-target values: a bad one is a usage
// error. Whether they fit the scenario's cluster (one on kind, or a load
// balancer URL that no value names) is testbed.Check's, before anything
// runs, and a usage error too (badInput).
func parseAllowTargets(values []string) ([]traffic.AllowTarget, error) {
	var allow []traffic.AllowTarget
	for _, v := range values {
		a, err := traffic.ParseAllowTarget(v)
		if err != nil {
			return nil, usageError("%w", err)
		}
		allow = append(allow, a)
	}
	return allow, nil
}
