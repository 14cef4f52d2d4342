package run

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/testbed"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

var dnsFailure = traffic.Record{Class: traffic.ClassOther, Origin: "pod-1", URL: "http://web.droprun.svc.cluster.local.:80/version",
	Error: `dial tcp: lookup web.droprun.svc.cluster.local. on 10.96.0.10:53: no such host`}

// TestUnreachable: a control window in which most requests failed stops
// the run before its rollouts, naming the first failure's target and
// error (a podinfo run once failed 2,415 of 2,415 control requests on a
// DNS error and went on for ten minutes); a window with a few failures, or
// too few requests to say, does not.
func TestUnreachable(t *testing.T) {
	r := newReach()
	r.note(traffic.Record{Class: traffic.Class2xx})
	r.note(dnsFailure)
	r.note(traffic.Record{Class: traffic.ClassTimeout, Error: "later"})
	err := unreachable(2415, 2415, r.first.Load())
	if err == nil || !strings.Contains(err.Error(), "2415 of 2415 requests failed in the control window") || !strings.Contains(err.Error(), dnsFailure.URL+": "+dnsFailure.Error) {
		t.Errorf("every control request failed: %v", err)
	}
	for _, tc := range []struct{ sent, failed uint64 }{{1000, 500}, {1000, 3}, {10, 10}} {
		if err := unreachable(tc.sent, tc.failed, r.first.Load()); err != nil {
			t.Errorf("%d of %d failed: %v, want the run to go on", tc.failed, tc.sent, err)
		}
	}
}

// TestProbeStopsAtOnce: a target whose first ProbeRequests answers all
// failed ends the control window at once, naming the target, the
// generator that sent to it and the error; a target that answered once
// among its first, a failure after its first answers, an idle-closed
// connection (its server answered) or answers after the window closed
// stop nothing, and the window runs its length.
func TestProbeStopsAtOnce(t *testing.T) {
	ok := traffic.Record{Class: traffic.Class2xx, Origin: "pod-1", URL: dnsFailure.URL}
	idle := traffic.Record{Class: traffic.ClassIdleClosed, Origin: "host", URL: "http://127.0.0.1:30080/"}
	other := traffic.Record{Class: traffic.ClassRefused, Origin: "host", URL: "http://127.0.0.1:30081/"}

	r := newReach()
	for range ProbeRequests - 1 {
		r.note(dnsFailure)
	}
	r.note(ok) // pod-1's target answered once among its first: reachable
	r.note(dnsFailure)
	for range 2 * ProbeRequests {
		r.note(idle)
	}
	r.note(traffic.Record{Class: traffic.Class2xx, Origin: "host", URL: other.URL})
	for range 2 * ProbeRequests {
		r.note(other) // failures after the target's first answer
	}
	start := time.Now()
	if err := r.control(context.Background(), 50*time.Millisecond); err != nil {
		t.Fatalf("no target broken: %v, want the whole window", err)
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("the window lasted %s, want its 50ms", took)
	}
	for range 2 * ProbeRequests {
		r.note(traffic.Record{Class: traffic.ClassRefused, Origin: "host", URL: "http://127.0.0.1:9/"})
	}
	select {
	case err := <-r.broken:
		t.Errorf("a target broken after the control window stopped the run: %v", err)
	default:
	}

	r = newReach()
	pod0 := dnsFailure
	pod0.Origin = "pod-0"
	for range ProbeRequests {
		r.note(ok)
		r.note(pod0)
	}
	start = time.Now()
	err := r.control(context.Background(), time.Hour)
	if err == nil {
		t.Fatal("a target failed its first answers, and the control window ran on")
	}
	if time.Since(start) > time.Minute {
		t.Errorf("stopped after %s, want at once", time.Since(start))
	}
	for _, want := range []string{"the first 5 requests to " + dnsFailure.URL + " from pod-0 all failed", "000:other: " + dnsFailure.Error, "what was recorded is kept"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nwant %q in it", err, want)
		}
	}
}

// TestIntegrationUnreachableStopsAtOnce: east-west from generator pods
// with the cluster's DNS gone (CoreDNS scaled to 0, put back after), so
// every request fails on the Service name's lookup while the host's
// NodePort path answers: the run stops within seconds of its control
// window (of 60 s) with the target and the lookup error, before any
// rollout, and keeps what it recorded (run.json says the error; the
// summary holds the control window's failures).
func TestIntegrationUnreachableStopsAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	needCluster(t, ctx)
	sc := itScenario(t, `metadata: {name: e2e-unreachable}
variants: [{variant: no-prestop}]
rollouts: 1
traffic: {rate: 60, target: clusterip, generators: {from: pods}, control: 60s}
`)
	k, err := testbed.NewKind(testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := k.Up(ctx, testbed.KindConfig(sc.Cluster.Kind))
	if err != nil {
		t.Fatal(err)
	}
	itCreated = itCreated || cl.Created
	dns := cl.Client.AppsV1().Deployments("kube-system")
	scale, err := dns.GetScale(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replicas := scale.Spec.Replicas
	setDNS := func(ctx context.Context, n int32) {
		s, err := dns.GetScale(ctx, "coredns", metav1.GetOptions{})
		if err == nil {
			s.Spec.Replicas = n
			_, err = dns.UpdateScale(ctx, "coredns", s, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatalf("scaling coredns to %d: %v", n, err)
		}
		// Until the Deployment has exactly n ready pods and no others.
		err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			d, err := dns.Get(ctx, "coredns", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			pods, err := cl.Client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
			return err == nil && d.Status.ReadyReplicas == n && len(pods.Items) == int(n), nil
		})
		if err != nil {
			t.Fatalf("coredns never reached %d ready pods: %v", n, err)
		}
	}
	// Put back after the test's own deadline too.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		setDNS(ctx, replicas)
	})
	setDNS(ctx, 0)

	dir := runDir(t)
	var log strings.Builder
	start := time.Now()
	_, err = Run(ctx, sc, Options{Dir: dir, Log: io.MultiWriter(testWriter{t}, &log), Keep: true, Version: "test",
		Testbed: testbed.Options{ModuleDir: moduleDir(), ImageDir: t.TempDir()}})
	took := time.Since(start)
	if err == nil {
		t.Fatal("the run went on with every request failing its lookup")
	}
	t.Logf("stopped after %s: %v", took.Round(time.Second), err)
	for _, want := range []string{"the first 5 requests to http://web.droprun-it.svc.cluster.local.:80/", "all failed", "lookup web.droprun-it.svc.cluster.local.", "before its rollouts"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q: want %q in it", err, want)
		}
	}
	if n := strings.Count(err.Error(), "variant no-prestop:"); n != 1 {
		t.Errorf("error %q names the variant %d times, want once", err, n)
	}
	if strings.Contains(log.String(), "rollout 1/1") {
		t.Error("a rollout began")
	}
	ri, rerr := analysis.ReadRunInfo(dir)
	if rerr != nil || ri.Error != err.Error() {
		t.Errorf("run.json: %v, error %q; want the run's error kept", rerr, ri.Error)
	}
	sum, serr := analysis.ReadSummary(dir)
	if serr != nil || len(sum.Variants) != 1 || sum.Variants[0].Control.Failures == 0 {
		t.Fatalf("summary %v: want the control window's failures kept", serr)
	}
	// The control window's start is the traffic.start mark; it must have
	// ended well before its 60 s.
	var started, closed time.Time
	for _, e := range readEvents(t, dir) {
		switch e.Kind {
		case timeline.KindTrafficStart:
			started = e.Time
		case timeline.KindTrafficStop:
			closed = e.Time
		}
	}
	if started.IsZero() || closed.IsZero() || closed.Sub(started) > 20*time.Second {
		t.Errorf("traffic from %s to %s: want it stopped within seconds of its start, not after the 60 s control window", started.Format(time.TimeOnly), closed.Format(time.TimeOnly))
	}
}
