package observe

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/droprun/droprun/harness/timeline"
)

// ptrTo returns a pointer to v.
func ptrTo[T any](v T) *T { return &v }

func kinds(events []timeline.Event) []timeline.Kind {
	var ks []timeline.Kind
	for _, e := range events {
		ks = append(ks, e.Kind)
	}
	return ks
}

// pod builds a pod named web-1 of variant no-prestop, changed by muts.
func pod(muts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "droprun", Labels: map[string]string{
		"app": "web", "droprun.dev/variant": "no-prestop", "pod-template-hash": "5bff69ccb",
	}}}
	for _, m := range muts {
		m(p)
	}
	return p
}

func scheduled(p *corev1.Pod) { p.Spec.NodeName = "droprun-worker" }

func withIP(p *corev1.Pod) { p.Status.PodIP = "10.244.1.7" }

func ready(status corev1.ConditionStatus) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	}
}

func containers(states ...corev1.ContainerState) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = nil
		for i, s := range states {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: []string{"web", "sidecar"}[i], State: s})
		}
	}
}

var (
	running  = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waiting  = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	exited0  = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
	killed   = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}}
	deleting = func(p *corev1.Pod) {
		p.DeletionTimestamp = &metav1.Time{}
		p.DeletionGracePeriodSeconds = ptrTo[int64](30)
	}
)

func TestPodUpdated(t *testing.T) {
	tests := []struct {
		name     string
		old, cur *corev1.Pod
		want     []timeline.Kind
	}{
		{"nothing changed", pod(scheduled), pod(scheduled), nil},
		{"bound to a node", pod(), pod(scheduled), []timeline.Kind{timeline.KindPodScheduled}},
		{"PodScheduled condition without nodeName", pod(), pod(func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
		}), []timeline.Kind{timeline.KindPodScheduled}},
		{"one of two containers running", pod(scheduled), pod(scheduled, containers(running, waiting)), nil},
		{"every container running", pod(scheduled, containers(running, waiting)), pod(scheduled, containers(running, running)), []timeline.Kind{timeline.KindPodStarted}},
		{"ready", pod(scheduled, ready(corev1.ConditionFalse)), pod(scheduled, ready(corev1.ConditionTrue)), []timeline.Kind{timeline.KindPodReady}},
		{"unready", pod(scheduled, ready(corev1.ConditionTrue)), pod(scheduled, ready(corev1.ConditionFalse)), []timeline.Kind{timeline.KindPodUnready}},
		{"Ready condition disappears", pod(ready(corev1.ConditionTrue)), pod(), []timeline.Kind{timeline.KindPodUnready}},
		{"deletion then unready in one update, in lifecycle order",
			pod(scheduled, ready(corev1.ConditionTrue)), pod(scheduled, ready(corev1.ConditionFalse), deleting),
			[]timeline.Kind{timeline.KindPodDeletionRequested, timeline.KindPodUnready}},
		{"deletion is recorded once", pod(deleting), pod(deleting, withIP), nil},
		{"one container of two terminated", pod(containers(running, running)), pod(containers(exited0, running)), nil},
		{"all containers terminated", pod(containers(exited0, running)), pod(containers(exited0, killed)), []timeline.Kind{timeline.KindPodContainersTerminated}},
		{"from nothing to ready at once (a relist)", &corev1.Pod{}, pod(scheduled, containers(running), ready(corev1.ConditionTrue)),
			[]timeline.Kind{timeline.KindPodScheduled, timeline.KindPodStarted, timeline.KindPodReady}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := kinds(podUpdated(tt.old, tt.cur))
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("podUpdated = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPodEventDetail(t *testing.T) {
	evs := podUpdated(pod(scheduled, withIP, containers(running, running)), pod(scheduled, withIP, deleting, containers(exited0, killed)))
	want := []timeline.Event{
		{Kind: timeline.KindPodDeletionRequested, Object: "pod/web-1", Pod: "web-1", Node: "droprun-worker", IP: "10.244.1.7", Detail: map[string]string{
			"droprun.dev/variant": "no-prestop", "pod-template-hash": "5bff69ccb", "grace_period_seconds": "30",
		}},
		{Kind: timeline.KindPodContainersTerminated, Object: "pod/web-1", Pod: "web-1", Node: "droprun-worker", IP: "10.244.1.7", Detail: map[string]string{
			"droprun.dev/variant": "no-prestop", "pod-template-hash": "5bff69ccb", "exit_codes": "web=0,sidecar=137", "reasons": "web=Completed,sidecar=Error",
		}},
	}
	if !reflect.DeepEqual(evs, want) {
		t.Errorf("events:\n got %+v\nwant %+v", evs, want)
	}
}

func TestPodAdded(t *testing.T) {
	if got, want := kinds(podAdded(pod(), false)), []timeline.Kind{timeline.KindPodCreated}; !reflect.DeepEqual(got, want) {
		t.Errorf("a new pending pod: %v, want %v", got, want)
	}
	if got, want := kinds(podAdded(pod(scheduled, ready(corev1.ConditionTrue)), false)), []timeline.Kind{timeline.KindPodCreated, timeline.KindPodScheduled, timeline.KindPodReady}; !reflect.DeepEqual(got, want) {
		t.Errorf("a pod first seen ready: %v, want %v", got, want)
	}
	snap := podAdded(pod(scheduled, deleting, ready(corev1.ConditionTrue), func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }), true)
	if len(snap) != 1 || snap[0].Kind != timeline.KindPodSnapshot {
		t.Fatalf("initial list: %v, want one %s", kinds(snap), timeline.KindPodSnapshot)
	}
	for k, v := range map[string]string{"phase": "Running", "ready": "true", "deleting": "true", "droprun.dev/variant": "no-prestop"} {
		if snap[0].Detail[k] != v {
			t.Errorf("snapshot detail %s = %q, want %q", k, snap[0].Detail[k], v)
		}
	}
}

func TestContainerRestarted(t *testing.T) {
	old := pod(containers(running))
	cur := pod(containers(running))
	cur.Status.ContainerStatuses[0].RestartCount = 1
	cur.Status.ContainerStatuses[0].LastTerminationState = killed
	evs := podUpdated(old, cur)
	if len(evs) != 1 || evs[0].Kind != timeline.KindPodContainerRestarted {
		t.Fatalf("got %v, want one %s", kinds(evs), timeline.KindPodContainerRestarted)
	}
	for k, v := range map[string]string{"container": "web", "restart_count": "1", "last_exit_code": "137", "last_reason": "Error"} {
		if evs[0].Detail[k] != v {
			t.Errorf("detail %s = %q, want %q", k, evs[0].Detail[k], v)
		}
	}
}

// ep is an endpoint of pod name at ip with the given conditions (nil =
// unset).
func ep(name, ip string, ready, serving, terminating *bool) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{
		Addresses:  []string{ip},
		Conditions: discoveryv1.EndpointConditions{Ready: ready, Serving: serving, Terminating: terminating},
		NodeName:   ptrTo("droprun-worker2"),
	}
	if name != "" {
		e.TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: name, Namespace: "droprun"}
	}
	return e
}

func slice(eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-abcde", Namespace: "droprun", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   eps,
	}
}

var (
	yes = ptrTo(true)
	no  = ptrTo(false)
)

func TestSliceUpdated(t *testing.T) {
	tests := []struct {
		name     string
		old, cur *discoveryv1.EndpointSlice
		want     []timeline.Kind
		pods     []string
	}{
		{"unchanged", slice(ep("a", "10.0.0.1", yes, yes, no)), slice(ep("a", "10.0.0.1", yes, yes, no)), nil, nil},
		{"endpoint added not ready", slice(), slice(ep("a", "10.0.0.1", no, no, no)), []timeline.Kind{timeline.KindEndpointAdded}, []string{"a"}},
		{"ready and serving", slice(ep("a", "10.0.0.1", no, no, no)), slice(ep("a", "10.0.0.1", yes, yes, no)),
			[]timeline.Kind{timeline.KindEndpointReady, timeline.KindEndpointServing}, []string{"a", "a"}},
		{"deleted pod: unready and terminating, still serving", slice(ep("a", "10.0.0.1", yes, yes, no)), slice(ep("a", "10.0.0.1", no, yes, yes)),
			[]timeline.Kind{timeline.KindEndpointUnready, timeline.KindEndpointTerminating}, []string{"a", "a"}},
		{"nil ready means ready", slice(ep("a", "10.0.0.1", nil, nil, nil)), slice(ep("a", "10.0.0.1", no, nil, nil)),
			[]timeline.Kind{timeline.KindEndpointUnready}, []string{"a"}},
		{"terminating does not flip back", slice(ep("a", "10.0.0.1", no, no, yes)), slice(ep("a", "10.0.0.1", no, no, no)), nil, nil},
		{"serving lost while terminating", slice(ep("a", "10.0.0.1", no, yes, yes)), slice(ep("a", "10.0.0.1", no, no, yes)),
			[]timeline.Kind{timeline.KindEndpointNotServing}, []string{"a"}},
		{"removed", slice(ep("a", "10.0.0.1", no, yes, yes), ep("b", "10.0.0.2", yes, yes, no)), slice(ep("b", "10.0.0.2", yes, yes, no)),
			[]timeline.Kind{timeline.KindEndpointRemoved}, []string{"a"}},
		{"one added, one removed: adds and flips first", slice(ep("a", "10.0.0.1", yes, yes, no)), slice(ep("b", "10.0.0.2", yes, yes, no)),
			[]timeline.Kind{timeline.KindEndpointAdded, timeline.KindEndpointRemoved}, []string{"b", "a"}},
		{"endpoint without a pod is keyed by address", slice(ep("", "10.0.0.9", yes, yes, no)), slice(ep("", "10.0.0.9", no, yes, no)),
			[]timeline.Kind{timeline.KindEndpointUnready}, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := sliceUpdated(tt.old, tt.cur)
			if got := kinds(evs); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("kinds = %v, want %v", got, tt.want)
			}
			for i, e := range evs {
				if e.Pod != tt.pods[i] {
					t.Errorf("event %d pod = %q, want %q", i, e.Pod, tt.pods[i])
				}
				if e.Object != "endpointslice/web-abcde" || e.Detail["slice"] != "web-abcde" || e.Detail["service"] != "web" || e.Node != "droprun-worker2" {
					t.Errorf("event %d identity: %+v", i, e)
				}
			}
		})
	}
}

func TestSliceAddedAndDeleted(t *testing.T) {
	s := slice(ep("a", "10.0.0.1", yes, yes, no), ep("b", "10.0.0.2", no, yes, yes))
	if got, want := kinds(sliceAdded(s, true)), []timeline.Kind{timeline.KindEndpointSnapshot, timeline.KindEndpointSnapshot}; !reflect.DeepEqual(got, want) {
		t.Errorf("initial: %v, want %v", got, want)
	}
	added := sliceAdded(s, false)
	if got, want := kinds(added), []timeline.Kind{timeline.KindEndpointAdded, timeline.KindEndpointAdded}; !reflect.DeepEqual(got, want) {
		t.Errorf("added: %v, want %v", got, want)
	}
	if d := added[1].Detail; d["ready"] != "false" || d["serving"] != "true" || d["terminating"] != "true" || added[1].IP != "10.0.0.2" {
		t.Errorf("added endpoint b carries its conditions: %+v", added[1])
	}
	gone := sliceDeleted(s)
	if got, want := kinds(gone), []timeline.Kind{timeline.KindEndpointRemoved, timeline.KindEndpointRemoved}; !reflect.DeepEqual(got, want) {
		t.Errorf("deleted: %v, want %v", got, want)
	}
	if gone[0].Detail["reason"] != "slice_deleted" || gone[0].Pod != "a" {
		t.Errorf("deleted slice event: %+v", gone[0])
	}
}

func rs(replicas *int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-5bff69ccb", Labels: map[string]string{"pod-template-hash": "5bff69ccb"}},
		Spec: appsv1.ReplicaSetSpec{Replicas: replicas, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"droprun.dev/variant": "prestop-sleep"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "bookshop:v2"}}},
		}},
	}
}

func TestReplicaSetUpdated(t *testing.T) {
	tests := []struct {
		name     string
		old, cur *appsv1.ReplicaSet
		want     map[string]string // nil = no event
	}{
		{"unchanged", rs(ptrTo[int32](2)), rs(ptrTo[int32](2)), nil},
		{"scaled down", rs(ptrTo[int32](2)), rs(ptrTo[int32](1)), map[string]string{"from": "2", "to": "1"}},
		{"unset means 1", rs(nil), rs(ptrTo[int32](1)), nil},
		{"scaled from unset", rs(nil), rs(ptrTo[int32](0)), map[string]string{"from": "1", "to": "0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := rsUpdated(tt.old, tt.cur)
			if tt.want == nil {
				if len(evs) != 0 {
					t.Fatalf("got %v, want nothing", evs)
				}
				return
			}
			if len(evs) != 1 || evs[0].Kind != timeline.KindReplicaSetScaled || evs[0].Object != "replicaset/web-5bff69ccb" {
				t.Fatalf("got %+v, want one %s", evs, timeline.KindReplicaSetScaled)
			}
			want := map[string]string{"pod-template-hash": "5bff69ccb", "droprun.dev/variant": "prestop-sleep", "image": "bookshop:v2", "replicas": tt.want["to"]}
			for k, v := range tt.want {
				want[k] = v
			}
			if !reflect.DeepEqual(evs[0].Detail, want) {
				t.Errorf("detail = %v, want %v", evs[0].Detail, want)
			}
		})
	}
}

func deployment(mut func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1},
		Spec: appsv1.DeploymentSpec{Replicas: ptrTo[int32](2), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"droprun.dev/variant": "no-prestop"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "bookshop:v1"}}},
		}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2},
	}
	if mut != nil {
		mut(d)
	}
	return d
}

func TestDeploymentUpdated(t *testing.T) {
	tests := []struct {
		name    string
		mut     func(*appsv1.Deployment)
		changed string // "" = no event
	}{
		{"unchanged", nil, ""},
		{"only an annotation", func(d *appsv1.Deployment) { d.Annotations = map[string]string{"x": "y"} }, ""},
		{"new image", func(d *appsv1.Deployment) {
			d.Generation = 2
			d.Spec.Template.Spec.Containers[0].Image = "bookshop:v2"
		}, "generation,image"},
		{"controller progress", func(d *appsv1.Deployment) {
			d.Status.ObservedGeneration = 2
			d.Status.Replicas = 3
			d.Status.UpdatedReplicas = 1
			d.Status.TerminatingReplicas = ptrTo[int32](1)
		}, "observed_generation,status_replicas,updated,terminating"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := deploymentUpdated(deployment(nil), deployment(tt.mut))
			if tt.changed == "" {
				if len(evs) != 0 {
					t.Fatalf("got %+v, want nothing", evs)
				}
				return
			}
			if len(evs) != 1 || evs[0].Kind != timeline.KindDeploymentUpdated || evs[0].Object != "deployment/web" {
				t.Fatalf("got %+v, want one %s", evs, timeline.KindDeploymentUpdated)
			}
			if got := evs[0].Detail["changed"]; got != tt.changed {
				t.Errorf("changed = %q, want %q", got, tt.changed)
			}
		})
	}
	d := deploymentUpdated(deployment(nil), deployment(func(d *appsv1.Deployment) { d.Status.TerminatingReplicas = ptrTo[int32](2) }))[0].Detail
	want := map[string]string{
		"generation": "1", "observed_generation": "1", "replicas": "2", "status_replicas": "2", "updated": "2", "ready": "2",
		"available": "2", "unavailable": "0", "terminating": "2", "image": "bookshop:v1", "droprun.dev/variant": "no-prestop",
		"changed": "terminating",
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("detail = %v\nwant %v", d, want)
	}
}

func TestWarningEvent(t *testing.T) {
	ev := func(typ, kind string) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "web-1.18a2b"},
			Type:           typ,
			Reason:         "FailedPreStopHook",
			Message:        `PreStopHook failed: exec: "sleep": executable file not found in $PATH`,
			Count:          1,
			InvolvedObject: corev1.ObjectReference{Kind: kind, Name: "web-1"},
			Source:         corev1.EventSource{Component: "kubelet", Host: "droprun-worker"},
		}
	}
	if _, ok := warningEvent(ev(corev1.EventTypeNormal, "Pod")); ok {
		t.Error("a Normal event was recorded")
	}
	if _, ok := warningEvent(ev(corev1.EventTypeWarning, "ReplicaSet")); ok {
		t.Error("a Warning about a ReplicaSet was recorded")
	}
	got, ok := warningEvent(ev(corev1.EventTypeWarning, "Pod"))
	want := timeline.Event{Kind: timeline.KindPodEvent, Object: "pod/web-1", Pod: "web-1", Node: "droprun-worker", Detail: map[string]string{
		"reason": "FailedPreStopHook", "message": `PreStopHook failed: exec: "sleep": executable file not found in $PATH`,
		"count": "1", "event": "web-1.18a2b", "source": "kubelet",
	}}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("warningEvent = %+v, %v\nwant %+v", got, ok, want)
	}
	again := ev(corev1.EventTypeWarning, "Pod")
	again.Count = 2
	if !warningRepeated(ev(corev1.EventTypeWarning, "Pod"), again) {
		t.Error("count 1 → 2 is not a repetition")
	}
	if warningRepeated(again, again) {
		t.Error("an unchanged event is a repetition")
	}
	if got := kinds(warningAdded(again, true)); len(got) != 0 {
		t.Errorf("a Warning listed at Start was replayed: %v", got)
	}
}
