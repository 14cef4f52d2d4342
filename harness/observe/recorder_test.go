package observe

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/droprun/droprun/harness/jsonl"

	"github.com/droprun/droprun/harness/timeline"
)

// waitUntil polls r.Events() until cond holds, failing after 10 s.
func waitUntil(t *testing.T, r *Recorder, what string, cond func([]timeline.Event) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond(r.Events()) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; events: %v", what, kinds(r.Events()))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func countKind(events []timeline.Event, k timeline.Kind) int {
	n := 0
	for _, e := range events {
		if e.Kind == k {
			n++
		}
	}
	return n
}

func equalKinds(a, b []timeline.Kind) bool { return slices.Equal(a, b) }

// clock is a settable clock, in a zone other than UTC so that the test sees
// stamps converted.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

var t0 = time.Date(2026, 11, 30, 2, 0, 0, 0, time.FixedZone("CET", 3600))

func TestRecorderFollowsARollout(t *testing.T) {
	two := int32(2)
	oldPod := pod(scheduled, withIP, containers(running), ready(corev1.ConditionTrue))
	oldPod.Name, oldPod.Namespace = "web-old-1", ns
	oldSlice := slice(ep("web-old-1", "10.244.1.7", yes, yes, no))
	oldSlice.Name, oldSlice.Namespace = "web-old", ns
	oldRS := rs(&two)
	oldRS.Name, oldRS.Namespace = "web-5bff69ccb", ns
	dep := deployment(nil)
	dep.Namespace = ns
	elsewhere := pod()
	elsewhere.Namespace = "default"
	client := fake.NewClientset(oldPod, oldSlice, oldRS, dep, elsewhere)

	clk := &clock{t: t0}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := StartRecorder(ctx, client, ns, &out, RecorderOptions{Now: clk.now, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()

	// Objects that existed before Start are snapshots, never created.
	snaps := r.Events()
	wantSnaps := map[string]timeline.Kind{
		"pod/web-old-1": timeline.KindPodSnapshot, "endpointslice/web-old": timeline.KindEndpointSnapshot,
		"replicaset/web-5bff69ccb": timeline.KindReplicaSetSnapshot, "deployment/web": timeline.KindDeploymentSnapshot,
	}
	if len(snaps) != len(wantSnaps) {
		t.Fatalf("at Start: %d events %v, want the %d snapshots", len(snaps), kinds(snaps), len(wantSnaps))
	}
	for _, e := range snaps {
		if wantSnaps[e.Object] != e.Kind || !e.Time.Equal(t0) || e.Time.Location() != time.UTC {
			t.Errorf("at Start: %s %s at %v, want %s at %v in UTC", e.Kind, e.Object, e.Time, wantSnaps[e.Object], t0)
		}
	}

	pods := client.CoreV1().Pods(ns)
	epSlices := client.DiscoveryV1().EndpointSlices(ns)
	rsets := client.AppsV1().ReplicaSets(ns)
	newPod := pod()
	newPod.Name, newPod.Namespace = "web-new-1", ns
	newSlice := slice()
	newSlice.Name, newSlice.Namespace = "web-new", ns
	newRS := rs(ptrTo[int32](0))
	newRS.Name, newRS.Namespace = "web-7d4f9c8b6", ns

	scaleRS := func(n int32) func() error {
		return func() error {
			newRS.Spec.Replicas = &n
			_, err := rsets.Update(ctx, newRS, metav1.UpdateOptions{})
			return err
		}
	}
	updatePod := func(muts ...func(*corev1.Pod)) func() error {
		return func() error {
			for _, m := range muts {
				m(newPod)
			}
			_, err := pods.Update(ctx, newPod, metav1.UpdateOptions{})
			return err
		}
	}
	updatePodStatus := func(muts ...func(*corev1.Pod)) func() error {
		return func() error {
			for _, m := range muts {
				m(newPod)
			}
			_, err := pods.UpdateStatus(ctx, newPod, metav1.UpdateOptions{})
			return err
		}
	}
	updateSlice := func(eps ...discoveryv1.Endpoint) func() error {
		return func() error {
			newSlice.Endpoints = eps
			_, err := epSlices.Update(ctx, newSlice, metav1.UpdateOptions{})
			return err
		}
	}
	warnings := func() error {
		for _, typ := range []string{corev1.EventTypeNormal, corev1.EventTypeWarning} {
			e := &corev1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: "web-new-1." + strings.ToLower(typ), Namespace: ns}, Type: typ,
				Reason: "Unhealthy", Message: "Readiness probe failed", Count: 1,
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-new-1", Namespace: ns},
			}
			if _, err := client.CoreV1().Events(ns).Create(ctx, e, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		return nil
	}
	mark := func(k timeline.Kind) func() error {
		return func() error { r.Mark(k, map[string]string{"rollout": "1"}); return nil }
	}

	// Each step happens one second after the previous on the injected clock,
	// and must produce exactly these events, stamped with that second.
	steps := []step{
		{"new ReplicaSet", func() error { _, err := rsets.Create(ctx, newRS, metav1.CreateOptions{}); return err }, []timeline.Kind{timeline.KindReplicaSetCreated}},
		{"scaled to 1", scaleRS(1), []timeline.Kind{timeline.KindReplicaSetScaled}},
		{"new pod", func() error { _, err := pods.Create(ctx, newPod, metav1.CreateOptions{}); return err }, []timeline.Kind{timeline.KindPodCreated}},
		{"scaled to 2", scaleRS(2), []timeline.Kind{timeline.KindReplicaSetScaled}},
		{"scheduled", updatePod(scheduled), []timeline.Kind{timeline.KindPodScheduled}},
		{"started", updatePodStatus(withIP, containers(running)), []timeline.Kind{timeline.KindPodStarted}},
		{"endpoint added, not ready yet", func() error {
			newSlice.Endpoints = []discoveryv1.Endpoint{ep("web-new-1", "10.244.1.7", no, no, no)}
			_, err := epSlices.Create(ctx, newSlice, metav1.CreateOptions{})
			return err
		}, []timeline.Kind{timeline.KindEndpointAdded}},
		{"ready", updatePodStatus(ready(corev1.ConditionTrue)), []timeline.Kind{timeline.KindPodReady}},
		{"endpoint ready", updateSlice(ep("web-new-1", "10.244.1.7", yes, yes, no)), []timeline.Kind{timeline.KindEndpointReady, timeline.KindEndpointServing}},
		{"a Normal event is not recorded, a Warning is", warnings, []timeline.Kind{timeline.KindPodEvent}},
		{"rollout start", mark(timeline.KindRolloutStart), []timeline.Kind{timeline.KindRolloutStart}},
		{"new generation", func() error {
			dep.Generation = 2
			_, err := client.AppsV1().Deployments(ns).Update(ctx, dep, metav1.UpdateOptions{})
			return err
		}, []timeline.Kind{timeline.KindDeploymentUpdated}},
		{"deletion requested", updatePod(deleting), []timeline.Kind{timeline.KindPodDeletionRequested}},
		{"endpoint unready and terminating", updateSlice(ep("web-new-1", "10.244.1.7", no, yes, yes)), []timeline.Kind{timeline.KindEndpointUnready, timeline.KindEndpointTerminating}},
		{"containers exit", updatePodStatus(ready(corev1.ConditionFalse), containers(exited0)), []timeline.Kind{timeline.KindPodUnready, timeline.KindPodContainersTerminated}},
		{"endpoint removed", updateSlice(), []timeline.Kind{timeline.KindEndpointRemoved}},
		{"pod gone", func() error { return pods.Delete(ctx, newPod.Name, metav1.DeleteOptions{}) }, []timeline.Kind{timeline.KindPodGone}},
		{"old slice deleted", func() error { return epSlices.Delete(ctx, oldSlice.Name, metav1.DeleteOptions{}) }, []timeline.Kind{timeline.KindEndpointRemoved}},
		{"old ReplicaSet deleted", func() error { return rsets.Delete(ctx, oldRS.Name, metav1.DeleteOptions{}) }, []timeline.Kind{timeline.KindReplicaSetDeleted}},
		{"a pod in another namespace is not seen, then rollout complete", func() error {
			elsewhere.Spec.NodeName = "droprun-worker"
			if _, err := client.CoreV1().Pods("default").Update(ctx, elsewhere, metav1.UpdateOptions{}); err != nil {
				return err
			}
			return mark(timeline.KindRolloutComplete)()
		}, []timeline.Kind{timeline.KindRolloutComplete}},
	}
	for i, s := range steps {
		at := t0.Add(time.Duration(i+1) * time.Second)
		clk.set(at)
		before := len(r.Events())
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		waitUntil(t, r, s.name, func(evs []timeline.Event) bool { return len(evs) >= before+len(s.want) })
		got := r.Events()[before:]
		if !equalKinds(kinds(got), s.want) {
			t.Fatalf("%s: got %v, want %v", s.name, kinds(got), s.want)
		}
		for _, e := range got {
			if !e.Time.Equal(at) {
				t.Errorf("%s: %s stamped %v, want %v", s.name, e.Kind, e.Time, at)
			}
		}
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	all := r.Events()
	if n := len(all); n != len(snaps)+countWant(steps) {
		t.Errorf("%d events after Stop, want %d: late or duplicate events: %v", n, len(snaps)+countWant(steps), kinds(all))
	}

	// Per object, the sequences the brief asks for.
	perObject := map[string][]timeline.Kind{}
	perPodEndpoint := map[string][]timeline.Kind{}
	var scaled []string
	for _, e := range all {
		perObject[e.Object] = append(perObject[e.Object], e.Kind)
		if strings.HasPrefix(string(e.Kind), "endpoint.") {
			perPodEndpoint[e.Pod] = append(perPodEndpoint[e.Pod], e.Kind)
		}
		if e.Kind == timeline.KindReplicaSetScaled {
			scaled = append(scaled, e.Detail["from"]+"→"+e.Detail["to"])
		}
	}
	wantSeq := map[string][]timeline.Kind{
		"pod/web-new-1": {timeline.KindPodCreated, timeline.KindPodScheduled, timeline.KindPodStarted, timeline.KindPodReady, timeline.KindPodEvent,
			timeline.KindPodDeletionRequested, timeline.KindPodUnready, timeline.KindPodContainersTerminated, timeline.KindPodGone},
		"replicaset/web-7d4f9c8b6": {timeline.KindReplicaSetCreated, timeline.KindReplicaSetScaled, timeline.KindReplicaSetScaled},
		"replicaset/web-5bff69ccb": {timeline.KindReplicaSetSnapshot, timeline.KindReplicaSetDeleted},
	}
	for obj, want := range wantSeq {
		if !equalKinds(perObject[obj], want) {
			t.Errorf("%s: %v, want %v", obj, perObject[obj], want)
		}
	}
	if want := []timeline.Kind{timeline.KindEndpointAdded, timeline.KindEndpointReady, timeline.KindEndpointServing, timeline.KindEndpointUnready, timeline.KindEndpointTerminating, timeline.KindEndpointRemoved}; !equalKinds(perPodEndpoint["web-new-1"], want) {
		t.Errorf("endpoint of web-new-1: %v, want %v", perPodEndpoint["web-new-1"], want)
	}
	if want := []timeline.Kind{timeline.KindEndpointSnapshot, timeline.KindEndpointRemoved}; !equalKinds(perPodEndpoint["web-old-1"], want) {
		t.Errorf("endpoint of web-old-1: %v, want %v", perPodEndpoint["web-old-1"], want)
	}
	if want := []string{"0→1", "1→2"}; !slices.Equal(scaled, want) {
		t.Errorf("scaled %v, want %v", scaled, want)
	}

	// What was written is what is in memory.
	if lines := strings.Count(out.String(), "\n"); lines != len(all) {
		t.Errorf("%d lines for %d events", lines, len(all))
	}
	read, err := timeline.ReadEvents(&out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(read, all) {
		t.Errorf("events.jsonl does not read back identically:\n read %v\n  mem %v", read, all)
	}

	r.Mark(timeline.KindWindowClose, nil)
	if len(r.Events()) != len(all) {
		t.Error("a Mark after Stop was recorded")
	}
}

// step is one change made through the fake client and the events it must
// produce.
type step struct {
	name string
	do   func() error
	want []timeline.Kind
}

func countWant(steps []step) int {
	n := 0
	for _, s := range steps {
		n += len(s.want)
	}
	return n
}

func TestRecorderFlushesWithinASecond(t *testing.T) {
	out := &lockedBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := StartRecorder(ctx, fake.NewClientset(), ns, out, RecorderOptions{Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	r.Mark(timeline.KindWindowClose, map[string]string{"window": "control"})
	deadline := time.Now().Add(3 * jsonl.FlushEvery)
	for !strings.Contains(out.String(), `"kind":"window.close"`) {
		if time.Now().After(deadline) {
			t.Fatalf("a mark was not flushed within %v", 3*jsonl.FlushEvery)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRecorderSpills: without Keep the recorder holds no event in
// memory; after Flush the file has every one recorded so far.
func TestRecorderSpills(t *testing.T) {
	out := &lockedBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := StartRecorder(ctx, fake.NewClientset(), ns, out, RecorderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	for i := range 1000 {
		r.Mark(timeline.KindWindowClose, map[string]string{"window": strconv.Itoa(i)})
	}
	if n := len(r.Events()); n != 0 {
		t.Errorf("%d events held in memory without Keep", n)
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	events, err := timeline.ReadEvents(strings.NewReader(out.String()))
	if err != nil || len(events) != 1000 || events[999].Detail["window"] != "999" {
		t.Errorf("the file after Flush: %d events (%v), want all 1000", len(events), err)
	}
}

// lockedBuffer is a bytes.Buffer safe to read while the Recorder writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var errDiskFull = errors.New("disk full")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errDiskFull }

func TestRecorderReportsWriteErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := StartRecorder(ctx, fake.NewClientset(), ns, failingWriter{}, RecorderOptions{Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	r.Mark(timeline.KindRolloutStart, nil)
	if err := r.Stop(); !errors.Is(err, errDiskFull) {
		t.Errorf("Stop = %v, want %v", err, errDiskFull)
	}
	if err := r.Stop(); !errors.Is(err, errDiskFull) {
		t.Errorf("second Stop = %v, want the same error", err)
	}
	if n := len(r.Events()); n != 1 {
		t.Errorf("%d events in memory, want the mark", n)
	}
}

func TestStartGivesUpWhenCachesCannotSync(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r, err := StartRecorder(ctx, client, ns, &bytes.Buffer{}, RecorderOptions{Keep: true})
	if err == nil {
		r.Stop()
		t.Fatal("Start succeeded without listing pods")
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), ns) {
		t.Errorf("err = %v, want a deadline error naming the namespace", err)
	}
}

func TestReadEvents(t *testing.T) {
	in := `{"t":"2026-11-30T01:00:00.123456789Z","kind":"pod.ready","object":"pod/web-1","pod":"web-1","node":"droprun-worker","ip":"10.244.1.7","detail":{"droprun.dev/variant":"no-prestop"}}

{"t":"2026-11-30T01:00:01Z","kind":"rollout.start"}
`
	got, err := timeline.ReadEvents(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []timeline.Event{
		{Time: time.Date(2026, 11, 30, 1, 0, 0, 123456789, time.UTC), Kind: timeline.KindPodReady, Object: "pod/web-1", Pod: "web-1",
			Node: "droprun-worker", IP: "10.244.1.7", Detail: map[string]string{"droprun.dev/variant": "no-prestop"}},
		{Time: time.Date(2026, 11, 30, 1, 0, 1, 0, time.UTC), Kind: timeline.KindRolloutStart},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if _, err := timeline.ReadEvents(strings.NewReader(in + "{not json\n")); err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("a broken line: err = %v, want one naming line 4", err)
	}
}
