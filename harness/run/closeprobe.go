package run

import (
	"context"
	"fmt"
	"runtime"
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
	if r.tb.Cluster.Nodes == nil {
		fmt.Fprintf(r.log, "listener close: not a kind cluster, so droprun cannot probe from a node; only an app's own record gives it\n")
		return noStop, nil
	}
	nodes, exec, err := r.tb.Cluster.Nodes.Exec()
	if err != nil || len(nodes) == 0 {
		fmt.Fprintf(r.log, "warning: not probing listener closes: no node to run in (%v)\n", err)
		return noStop, nil
	}
	bin, err := image.BuildCloseProbe(ctx, runtime.GOARCH)
	if err != nil {
		fmt.Fprintf(r.log, "warning: not probing listener closes: %v\n", err)
		return noStop, nil
	}
	p, err := closeprobe.Start(ctx, nodes[0], closeprobe.Exec(exec), bin, r.rec.Record)
	if err != nil {
		fmt.Fprintf(r.log, "warning: not probing listener closes: %v\n", err)
		return noStop, nil
	}
	r.prober = p
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
		if err := p.Stop(sctx); err != nil {
			fmt.Fprintf(r.log, "warning: %v\n", err)
		}
		return nil
	}, nil
}
