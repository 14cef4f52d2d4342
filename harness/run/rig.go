package run

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/droprun/droprun/harness/rig"
	"github.com/droprun/droprun/harness/timeline"
)

// progressEvery is how often a run prints requests and failures so far.
const progressEvery = 5 * time.Second

// startRigSampler samples the rig (host CPU, CPU pressure, the client's
// and each kind node's CPU, how long each node got none, the client's
// pacing) into the timeline every
// 250 ms until the returned stop is called.
func (r *runner) startRigSampler(ctx context.Context) (stop func() error, err error) {
	o := rig.Options{Client: func() rig.ClientState {
		a := r.load.Load()
		if a == nil {
			return rig.ClientState{}
		}
		lag, n := a.Pacing()
		return rig.ClientState{Lag: lag, InFlight: n}
	}}
	if nodes := r.tb.Cluster.Containers(); nodes != nil {
		ids, err := nodes.ContainerIDs(ctx)
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
		for name, id := range ids {
			path, err := rig.CgroupPressureFile("/sys/fs/cgroup", id)
			if err != nil {
				fmt.Fprintf(r.log, "warning: a node short of CPU will not be seen, only the client: %v\n", err)
				break
			}
			if o.Pressure == nil {
				o.Pressure = map[string]string{}
			}
			o.Pressure[name] = path
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		rig.New(o).Run(ctx, func(s rig.Sample) { r.rec.Record(timeline.Event{Kind: timeline.KindRigSample, Rig: &s}) })
	})
	return func() error { cancel(); wg.Wait(); return nil }, nil
}

// favorClient lowers the CPU weight of docker's containers (the kind
// nodes) to Options.ClusterShares while the run lasts, so that a node
// starting a pod does not starve the client (see rig.DefaultClusterShares),
// and returns the function that puts the weight back. A weight left lowered
// by a killed run (its marker, rig.DefaultMarker) is restored first. Where
// it cannot, it says so and the run goes on: rollouts the client could not
// keep up with are flagged anyway.
func (r *runner) favorClient() (restore func()) {
	const keeps = "warning: the cluster keeps its CPU weight, so a pod start may starve the client: %v\n"
	l, err := rig.RestoreLeftover(rig.DefaultMarker)
	if err != nil {
		// Lowering now would record a lowered value as the original.
		fmt.Fprintf(r.log, keeps, err)
		return func() {}
	}
	if l.Found {
		fmt.Fprintf(r.log, "rig: %s\n", l)
	}
	d, err := rig.FindDockerCPU("/sys/fs/cgroup")
	if err != nil {
		fmt.Fprintf(r.log, keeps, err)
		return func() {}
	}
	v, err := d.SetMarked(r.o.ClusterShares, rig.DefaultMarker)
	if err != nil {
		fmt.Fprintf(r.log, keeps, err)
		return func() {}
	}
	r.cpuWeight = fmt.Sprintf("%s %d→%d", d.File, d.Old, v)
	fmt.Fprintf(r.log, "rig: the kind nodes' CPU weight is %d instead of %d while the run lasts (%s), so a node starting a pod does not starve the client\n", v, d.Old, d.File)
	return func() {
		if err := d.RestoreMarked(rig.DefaultMarker, v); err != nil {
			fmt.Fprintf(r.log, "warning: %v\n", err)
			return
		}
		r.info.Rig.Restored = true
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
