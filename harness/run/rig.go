package run

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/droprun/droprun/harness/rig"
)

// progressEvery is how often a run prints requests and failures so far.
const progressEvery = 5 * time.Second

// startRigSampler samples the rig (host CPU, CPU pressure, the client's
// and each kind node's CPU, the client's pacing) into the timeline every
// 250 ms until the returned stop is called.
func (r *runner) startRigSampler(ctx context.Context) (stop func()) {
	o := rig.Options{Client: func() rig.ClientState {
		a := r.attack.Load()
		if a == nil {
			return rig.ClientState{}
		}
		lag, n := a.Pacing()
		return rig.ClientState{Lag: lag, InFlight: n}
	}}
	if r.tb.Kind != nil {
		ids, err := r.tb.Kind.NodeContainerIDs(ctx, r.tb.Cluster.Name)
		if err != nil {
			fmt.Fprintf(r.log, "warning: node CPU will not be sampled: %v\n", err)
		}
		for name, id := range ids {
			path, err := rig.CgroupCPUFile("/sys/fs/cgroup", id)
			if err != nil {
				fmt.Fprintf(r.log, "warning: node %s CPU will not be sampled: %v\n", name, err)
				continue
			}
			if o.Cgroups == nil {
				o.Cgroups = map[string]string{}
			}
			o.Cgroups[name] = path
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		rig.New(o).Run(ctx, func(s rig.Sample) { r.rec.Mark(MarkRigSample, s.Detail()) })
	})
	return func() { cancel(); wg.Wait() }
}

// favorClient lowers the CPU weight of docker's containers (the kind
// nodes) to Options.ClusterShares while the run lasts, so that a node
// starting a pod does not starve the client (see rig.DefaultClusterShares),
// and returns the function that puts the weight back. Where it cannot, it
// says so and the run goes on: rollouts the client could not keep up with
// are flagged anyway.
func (r *runner) favorClient() (restore func()) {
	d, err := rig.FindDockerCPU("/sys/fs/cgroup")
	if err != nil {
		fmt.Fprintf(r.log, "warning: the cluster keeps its CPU weight, so a pod start may starve the client: %v\n", err)
		return func() {}
	}
	if d.Old == d.Units(r.o.ClusterShares) {
		// Left so by a run that was killed before it could restore it.
		fmt.Fprintf(r.log, "rig: %s is already %d (left by an interrupted run?); docker's default %d is restored after the run\n", d.File, d.Old, d.Default())
		d.Old = d.Default()
	}
	v, err := d.Set(r.o.ClusterShares)
	if err != nil {
		fmt.Fprintf(r.log, "warning: the cluster keeps its CPU weight, so a pod start may starve the client: %v\n", err)
		return func() {}
	}
	r.cpuWeight = fmt.Sprintf("%s %d→%d", d.File, d.Old, v)
	fmt.Fprintf(r.log, "rig: the kind nodes' CPU weight is %d instead of %d while the run lasts (%s), so a node starting a pod does not starve the client\n", v, d.Old, d.File)
	return func() {
		if err := d.Restore(); err != nil {
			fmt.Fprintf(r.log, "warning: %v\n", err)
		}
	}
}

// progress prints, every progressEvery, the requests and failures so far
// of the variant being measured, until the returned stop is called.
func (r *runner) progress(ctx context.Context, variant string, sent, failed *atomic.Uint64) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		var lastSent, lastFailed uint64
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			s, f := sent.Load(), failed.Load()
			fmt.Fprintf(r.log, "  %s: %d requests, %d failed (last %s: %d, %d failed)\n",
				variant, s, f, progressEvery, s-lastSent, f-lastFailed)
			lastSent, lastFailed = s, f
		}
	})
	return func() { cancel(); wg.Wait() }
}
