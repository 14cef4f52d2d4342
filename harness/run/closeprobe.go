package run

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/droprun/droprun/harness/closeprobe"
	"github.com/droprun/droprun/harness/image"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/timeline"
)

// startCloseProbe starts the listener-close prober inside the first kind
// node (harness/closeprobe): as the timeline sees each pod's deletion, the
// prober watches the pod's app port until its listener closes. It gives
// the race window's start for an app that records none of its own (and,
// beside bookshop's own record, a check of it). On other clusters, or
// without the Go toolchain to build it, it says so and does nothing: the
// analysis then says the listener close is unknown.
func (r *runner) startCloseProbe(ctx context.Context) (func() error, error) {
	nodeExec := r.tb.Cluster.Exec()
	if nodeExec == nil {
		fmt.Fprintf(r.log, "listener close: not a kind cluster, so droprun cannot probe from a node; only an app's own record gives it\n")
		return noStop, nil
	}
	nodes, exec, err := nodeExec.Exec()
	if err != nil || len(nodes) == 0 {
		fmt.Fprintf(r.log, "warning: not probing listener closes: no node to run in (%v)\n", err)
		return noStop, nil
	}
	bin, err := image.BuildCloseProbe(ctx, runtime.GOARCH)
	if err != nil {
		fmt.Fprintf(r.log, "warning: not probing listener closes: %v\n", err)
		return noStop, nil
	}
	ps := &probers{exec: closeprobe.Exec(exec), bin: bin, record: r.rec.Record, nodes: nodes, byNode: map[string]*closeprobe.Prober{}}
	p, err := ps.in(ctx, nodes[0])
	if err != nil {
		fmt.Fprintf(r.log, "warning: not probing listener closes: %v\n", err)
		return noStop, nil
	}
	r.prober, r.probers = p, ps
	port := render.AppPort(r.sc)
	fmt.Fprintf(r.log, "listener close: probing each deleted pod's port %d from node %s every 5 ms\n", port, nodes[0])
	r.rec.OnEvent(func(e timeline.Event) {
		if e.Kind == timeline.KindPodDeletionRequested {
			p.Watch(e.Pod, e.IP, port)
		}
	})
	return func() error {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		for _, err := range ps.stop(sctx) {
			fmt.Fprintf(r.log, "warning: %v\n", err)
		}
		return nil
	}, nil
}

// probers are the probers droprun runs inside kind nodes, one per node
// at most: the close prober's, in the first node, and one in each node
// where a front pod's log file is read (Prober.Follow). Its methods are
// safe for concurrent use.
type probers struct {
	exec   closeprobe.Exec
	bin    []byte
	record func(timeline.Event)
	nodes  []string

	mu     sync.Mutex
	byNode map[string]*closeprobe.Prober
}

// in is the prober in node, started (and installed) at the first call.
func (ps *probers) in(ctx context.Context, node string) (*closeprobe.Prober, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p := ps.byNode[node]; p != nil {
		return p, nil
	}
	if !slices.Contains(ps.nodes, node) {
		return nil, fmt.Errorf("node %q is not one of the cluster's kind nodes %v", node, ps.nodes)
	}
	p, err := closeprobe.Start(ctx, node, ps.exec, ps.bin, ps.record)
	if err != nil {
		return nil, err
	}
	ps.byNode[node] = p
	return p, nil
}

// stop stops every prober, waiting at most until ctx ends.
func (ps *probers) stop(ctx context.Context) []error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var errs []error
	for _, p := range ps.byNode {
		if err := p.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
