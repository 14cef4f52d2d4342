package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/variant"
)

func TestRolloutComplete(t *testing.T) {
	two := int32(2)
	one := int32(1)
	base := func(mut func(*appsv1.Deployment)) *appsv1.Deployment {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: 3},
			Spec:       appsv1.DeploymentSpec{Replicas: &two},
			Status:     appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2},
		}
		mut(d)
		return d
	}
	tests := []struct {
		name string
		d    *appsv1.Deployment
		done bool
		why  string
	}{
		{"complete", base(func(*appsv1.Deployment) {}), true, ""},
		{"generation not observed", base(func(d *appsv1.Deployment) { d.Status.ObservedGeneration = 2 }), false, "spec update to be observed"},
		{"one of two updated", base(func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 1; d.Status.Replicas = 3 }), false, "1 out of 2 new replicas"},
		{"old replica left", base(func(d *appsv1.Deployment) { d.Status.Replicas = 3 }), false, "1 old replicas are pending termination"},
		{"not available", base(func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 1 }), false, "1 of 2 updated replicas are available"},
		// kubectl would say "successfully rolled out" here; the old pod is
		// still in its preStop hook and may still receive traffic.
		{"old pod terminating", base(func(d *appsv1.Deployment) { d.Status.TerminatingReplicas = &one }), false, "1 old pods are still terminating"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			done, why := RolloutComplete(tc.d)
			if done != tc.done || !strings.Contains(why, tc.why) {
				t.Errorf("got (%v, %q), want (%v, %q)", done, why, tc.done, tc.why)
			}
		})
	}
}

func TestEnsureNamespace(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}})
	if err := EnsureNamespace(ctx, c, "theirs"); err == nil || !strings.Contains(err.Error(), "is not droprun's") {
		t.Errorf("foreign namespace adopted: %v", err)
	}
	if err := DeleteNamespace(ctx, c, "theirs", 0); err == nil {
		t.Error("foreign namespace deleted")
	}
	if err := EnsureNamespace(ctx, c, "droprun"); err != nil {
		t.Fatal(err)
	}
	ns, err := c.CoreV1().Namespaces().Get(ctx, "droprun", metav1.GetOptions{})
	if err != nil || ns.Labels[variant.LabelManagedBy] != variant.ManagedBy {
		t.Fatalf("namespace %v %v", ns, err)
	}
	if err := EnsureNamespace(ctx, c, "droprun"); err != nil {
		t.Errorf("own namespace not adopted: %v", err)
	}
}

func TestApply(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	d, err := render.Deployment(render.Params{Namespace: "ns", Name: "x", Info: mustLookup(t, variant.PreStopSleep), Image: "bookshop:v1", Replicas: 2, PreStopSeconds: 5, TerminationGracePeriodSeconds: 30})
	if err != nil {
		t.Fatal(err)
	}
	deps, err := Apply(ctx, c, d, render.WebService("ns"))
	if err != nil {
		t.Fatal(err)
	}
	if deps["web"] == nil || deps["web"].Spec.Template.Spec.Containers[0].Lifecycle == nil {
		t.Fatalf("applied deployment %+v", deps)
	}
	if _, err := c.CoreV1().Services("ns").Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Errorf("service not applied: %v", err)
	}
	if _, err := Apply(ctx, c, "not an object"); err == nil {
		t.Error("applied a string")
	}
}

func mustLookup(t *testing.T, name string) variant.Info {
	i, ok := variant.Lookup(name)
	if !ok {
		t.Fatal(name)
	}
	return i
}

func TestDiagnose(t *testing.T) {
	pod := func(name, node string, waiting string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "web"}}, Spec: corev1.PodSpec{NodeName: node}}
		if waiting != "" {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waiting, Message: "image not present"}}}}
		}
		return p
	}
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"}, Type: corev1.EventTypeWarning, Reason: "FailedScheduling", Message: "Insufficient cpu",
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "a"}}
	c := fake.NewClientset(pod("a", "", ""), pod("b", "", ""), pod("c", "w1", "ErrImageNeverPull"), ev)
	got := Diagnose(context.Background(), c, "ns", map[string]string{"app": "web"})
	for _, want := range []string{"1 pod(s) not scheduled (Pending): FailedScheduling: Insufficient cpu", "1 pod(s) not scheduled (Pending)\n", "image not available (ErrImageNeverPull"} {
		if !strings.Contains(got+"\n", want) {
			t.Errorf("diagnosis lacks %q:\n%s", want, got)
		}
	}
}

// TestOldPods: the pods of an older ReplicaSet count as old whatever the
// Deployment's status says (terminatingReplicas left unset), and the
// rollout is over only when they are gone.
func TestOldPods(t *testing.T) {
	const ns = "droprun"
	sel := map[string]string{"app": "web"}
	labels := func(hash string) map[string]string {
		return map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash}
	}
	rev := func(r string) map[string]string { return map[string]string{revisionAnnotation: r} }
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Annotations: rev("2")},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}}}
	rs := func(name, hash, r string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels(hash), Annotations: rev(r)}}
	}
	pod := func(name, hash string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels(hash)}}
	}
	c := fake.NewClientset(d, rs("web-old", "old", "1"), rs("web-new", "new", "2"),
		pod("web-new-a", "new"), pod("web-new-b", "new"), pod("web-old-a", "old"))
	ctx := context.Background()
	old, err := OldPods(ctx, c, ns, "web")
	if err != nil || len(old) != 1 || old[0] != "web-old-a" {
		t.Fatalf("OldPods = %v, %v; want [web-old-a]", old, err)
	}
	if err := WaitOldPodsGone(ctx, c, ns, "web", 300*time.Millisecond); err == nil || !strings.Contains(err.Error(), "web-old-a") {
		t.Errorf("WaitOldPodsGone with an old pod left: %v", err)
	}
	if err := c.CoreV1().Pods(ns).Delete(ctx, "web-old-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WaitOldPodsGone(ctx, c, ns, "web", time.Second); err != nil {
		t.Errorf("WaitOldPodsGone once it is gone: %v", err)
	}
	// No ReplicaSet of the current revision yet: not done, and said so.
	d.Annotations = rev("3")
	if _, err := c.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := OldPods(ctx, c, ns, "web"); err == nil || !strings.Contains(err.Error(), `revision "3"`) {
		t.Errorf("OldPods without the new ReplicaSet: %v", err)
	}
}

// TestLivePod: the pod read is of the current ReplicaSet, running, not
// being deleted, and ready if one is; none such is a nil pod, not an
// error.
func TestLivePod(t *testing.T) {
	const ns = "droprun"
	labels := func(hash string) map[string]string {
		return map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash}
	}
	rev := func(r string) map[string]string { return map[string]string{revisionAnnotation: r} }
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Annotations: rev("2")},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	rs := func(name, hash, r string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels(hash), Annotations: rev(r)}}
	}
	pod := func(name, hash string, phase corev1.PodPhase, ready, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels(hash)}, Status: corev1.PodStatus{Phase: phase}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		if deleting {
			now := metav1.Now()
			p.DeletionTimestamp = &now
		}
		return p
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want string // "": no pod
	}{
		{"ready one first", []*corev1.Pod{
			pod("web-old-a", "old", corev1.PodRunning, true, false), // older ReplicaSet
			pod("web-new-a", "new", corev1.PodRunning, false, false),
			pod("web-new-b", "new", corev1.PodRunning, true, true), // being deleted
			pod("web-new-c", "new", corev1.PodRunning, true, false),
			pod("web-new-d", "new", corev1.PodRunning, true, false),
		}, "web-new-c"},
		{"running, not ready", []*corev1.Pod{pod("web-new-b", "new", corev1.PodRunning, false, false), pod("web-new-a", "new", corev1.PodPending, false, false)}, "web-new-b"},
		{"none live", []*corev1.Pod{pod("web-old-a", "old", corev1.PodRunning, true, false), pod("web-new-a", "new", corev1.PodPending, false, false)}, ""},
	} {
		objs := []runtime.Object{d, rs("web-old", "old", "1"), rs("web-new", "new", "2")}
		for _, p := range tc.pods {
			objs = append(objs, p)
		}
		got, p, err := LivePod(ctx, fake.NewClientset(objs...), ns, "web")
		if err != nil || got == nil || got.Name != "web" {
			t.Fatalf("%s: LivePod: deployment %v, %v", tc.name, got, err)
		}
		name := "" // no pod
		if p != nil {
			name = p.Name
		}
		if name != tc.want {
			t.Errorf("%s: LivePod = pod %q, want %q", tc.name, name, tc.want)
		}
	}
	if _, _, err := LivePod(ctx, fake.NewClientset(), ns, "web"); err == nil {
		t.Error("LivePod without the Deployment: no error")
	}
}
