package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

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

var testOwner = Owner{RunID: "20261202-130000-test", Host: "h", PID: 7}

// TestEnsureNamespace: a namespace without droprun's label is refused;
// one droprun creates carries the run that created it and enforces the
// Pod Security level the run asks for (set again by a later run), and
// only such a namespace is deleted; one the user labelled is used but
// never relabelled or deleted.
func TestEnsureNamespace(t *testing.T) {
	ctx := context.Background()
	lent := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lent", Labels: map[string]string{variant.LabelManagedBy: variant.ManagedBy}}}
	c := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}}, lent)
	if _, err := EnsureNamespace(ctx, c, "theirs", testOwner, PodSecurityBaseline); !errors.Is(err, ErrNotOurs) {
		t.Errorf("foreign namespace adopted: %v", err)
	}
	if err := DeleteNamespace(ctx, c, "theirs", 0); err == nil {
		t.Error("foreign namespace deleted")
	}
	created, err := EnsureNamespace(ctx, c, "droprun", testOwner, PodSecurityBaseline)
	if err != nil || !created {
		t.Fatalf("EnsureNamespace of a new namespace = %v, %v; want created", created, err)
	}
	ns, err := c.CoreV1().Namespaces().Get(ctx, "droprun", metav1.GetOptions{})
	if err != nil || !Ours(ns.Labels) || ns.Labels[LabelRun] != testOwner.RunID || ns.Labels[LabelPodSecurity] != "baseline" || ns.Annotations[AnnotationCreated] != testOwner.RunID ||
		ns.Annotations[AnnotationOwner] != "droprun run 20261202-130000-test on h (pid 7)" {
		t.Fatalf("namespace %+v %v", ns.ObjectMeta, err)
	}
	if created, err := EnsureNamespace(ctx, c, "droprun", Owner{RunID: "later"}, PodSecurityPrivileged); err != nil || !created {
		t.Errorf("droprun's namespace from an earlier run = %v, %v; want created", created, err)
	}
	if ns, err := c.CoreV1().Namespaces().Get(ctx, "droprun", metav1.GetOptions{}); err != nil || ns.Labels[LabelPodSecurity] != "privileged" {
		t.Errorf("a later run allowing privileged pods left the namespace's labels %v (%v)", ns.Labels, err)
	}
	if created, err := EnsureNamespace(ctx, c, "lent", testOwner, PodSecurityBaseline); err != nil || created {
		t.Errorf("a namespace the user labelled = %v, %v; want used, not created", created, err)
	}
	if ns, err := c.CoreV1().Namespaces().Get(ctx, "lent", metav1.GetOptions{}); err != nil || ns.Labels[LabelPodSecurity] != "" {
		t.Errorf("the user's namespace was relabelled: %v (%v)", ns.Labels, err)
	}
	if err := DeleteNamespace(ctx, c, "lent", 0); err == nil || !strings.Contains(err.Error(), "did not create it") {
		t.Errorf("a namespace droprun did not create was deleted: %v", err)
	}
	enforceUID(c)
	if err := DeleteNamespace(ctx, c, "droprun", time.Second); err != nil {
		t.Errorf("deleting droprun's namespace: %v", err)
	}
}

// enforceUID makes the fake API server honour a delete's UID
// precondition, as a real one does.
func enforceUID(c *fake.Clientset) {
	c.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		p := d.GetDeleteOptions().Preconditions
		if p == nil || p.UID == nil {
			return false, nil, nil
		}
		o, err := c.Tracker().Get(d.GetResource(), d.GetNamespace(), d.GetName())
		if err != nil {
			return false, nil, nil
		}
		if m, err := meta.Accessor(o); err == nil && m.GetUID() != *p.UID {
			return true, nil, apierrors.NewConflict(d.GetResource().GroupResource(), d.GetName(), fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", *p.UID, m.GetUID()))
		}
		return false, nil, nil
	})
}

func TestApply(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	d, err := render.Deployment(render.Params{Namespace: "ns", Name: "x", Info: mustLookup(t, variant.PreStopSleep), Image: "bookshop:v1", Replicas: 2, PreStopSeconds: 5, TerminationGracePeriodSeconds: 30})
	if err != nil {
		t.Fatal(err)
	}
	deps, refs, err := Apply(ctx, c, testOwner, d, render.WebService("ns", "http"))
	if err != nil {
		t.Fatal(err)
	}
	if deps["web"] == nil || deps["web"].Spec.Template.Spec.Containers[0].Lifecycle == nil {
		t.Fatalf("applied deployment %+v", deps)
	}
	if len(refs) != 2 || refs[0].String() != "deployment ns/web" || refs[1].String() != "service ns/web" {
		t.Errorf("refs %v", refs)
	}
	svc, err := c.CoreV1().Services("ns").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("service not applied: %v", err)
	}
	for _, m := range []metav1.ObjectMeta{deps["web"].ObjectMeta, svc.ObjectMeta} {
		if !Ours(m.Labels) || m.Labels[LabelRun] != testOwner.RunID || m.Annotations[AnnotationOwner] != testOwner.Identity() {
			t.Errorf("%s: labels %v, annotations %v: want droprun's, the run's and the owner's", m.Name, m.Labels, m.Annotations)
		}
	}
	if _, _, err := Apply(ctx, c, testOwner, "not an object"); err == nil {
		t.Error("applied a string")
	}
}

// TestApplyFront: the Traefik front's objects (its API token's Secret,
// ServiceAccount, Role, RoleBinding, the API's ConfigMap, Deployment,
// Service, Ingress) and Caddy's are applied as droprun's, each refused
// over a same-named object droprun did not create, and deleted by UID.
// The token, once made, is kept by every later apply.
func TestApplyFront(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	objs := render.Traefik("ns", "droprun/traefik:v3.6.12", "web")
	deps, refs, err := Apply(ctx, c, testOwner, objs...)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range refs {
		kinds = append(kinds, r.Kind)
	}
	if want := "Secret ServiceAccount Role RoleBinding ConfigMap Deployment Service Ingress"; strings.Join(kinds, " ") != want || deps["traefik"] == nil {
		t.Fatalf("applied %v (deployments %v), want %s", kinds, deps, want)
	}
	token, err := SecretValue(ctx, c, "ns", variant.FrontTokenSecret, variant.FrontTokenKey)
	if err != nil || len(token) < 20 {
		t.Fatalf("front token %q, %v: want a random one", token, err)
	}
	if _, _, err := Apply(ctx, c, testOwner, render.Traefik("ns", "droprun/traefik:v3.6.12", "web")...); err != nil {
		t.Fatal(err)
	}
	if again, err := SecretValue(ctx, c, "ns", variant.FrontTokenSecret, variant.FrontTokenKey); again != token || err != nil {
		t.Errorf("a second apply changed the front token %q to %q (%v)", token, again, err)
	}
	theirSecret := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: variant.FrontTokenSecret, Namespace: "ns"}})
	if _, _, err := Apply(ctx, theirSecret, testOwner, objs...); !errors.Is(err, ErrNotOurs) {
		t.Errorf("applied over the user's Secret %s: %v", variant.FrontTokenSecret, err)
	}
	role, err := c.RbacV1().Roles("ns").Get(ctx, "traefik", metav1.GetOptions{})
	if err != nil || !Ours(role.Labels) || role.Annotations[AnnotationOwner] != testOwner.Identity() {
		t.Fatalf("role %+v, %v: want droprun's", role, err)
	}
	ing, err := c.NetworkingV1().Ingresses("ns").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name != "web" {
		t.Fatalf("ingress %+v, %v: want one to the web Service", ing, err)
	}
	// Someone else's Ingress of the same name elsewhere is refused.
	theirs := fake.NewClientset(&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}})
	if _, _, err := Apply(ctx, theirs, testOwner, objs...); !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "Ingress ns/web") {
		t.Errorf("applied over the user's Ingress: %v", err)
	}
	enforceUID(c)
	if err := DeleteOurs(ctx, c, refs, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RbacV1().RoleBindings("ns").Get(ctx, "traefik", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("role binding not deleted: %v", err)
	}
	if _, err := c.CoreV1().Secrets("ns").Get(ctx, variant.FrontTokenSecret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("front token not deleted: %v", err)
	}
	if err := DeleteOurs(ctx, c, []Ref{{"Pod", "ns", "x", "u"}}, time.Second); err == nil {
		t.Error("deleted a kind Apply never applies")
	}

	// Caddy's: its headless Service, its config as a ConfigMap.
	c = fake.NewClientset()
	web := render.Service("ns", "web", map[string]string{"app": "web"}, intstr.FromInt32(8080), 30080)
	_, refs, err = Apply(ctx, c, testOwner, render.Caddy("ns", "droprun/caddy:v2.11.9", web, 8080, 0)...)
	if err != nil {
		t.Fatal(err)
	}
	kinds = kinds[:0]
	for _, r := range refs {
		kinds = append(kinds, r.Kind)
	}
	if want := "Service ConfigMap Deployment Service"; strings.Join(kinds, " ") != want {
		t.Fatalf("applied %v, want %s", kinds, want)
	}
	cm, err := c.CoreV1().ConfigMaps("ns").Get(ctx, "caddy", metav1.GetOptions{})
	if err != nil || !Ours(cm.Labels) || cm.Data["caddy.json"] == "" {
		t.Fatalf("config map %+v, %v: want droprun's, with Caddy's config", cm, err)
	}
	enforceUID(c)
	if err := DeleteOurs(ctx, c, refs, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().ConfigMaps("ns").Get(ctx, "caddy", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("config map not deleted: %v", err)
	}
}

// TestApplyRefusesTheirs: a Deployment or Service of the same name that
// droprun did not create is refused, named, and left as it was.
func TestApplyRefusesTheirs(t *testing.T) {
	ctx := context.Background()
	theirs := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"app": "shop"}},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "shop", Image: "shop:1"}}}}}}
	theirSvc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "other"}}
	c := fake.NewClientset(theirs, theirSvc)
	d, err := render.Deployment(render.Params{Namespace: "ns", Name: "x", Info: mustLookup(t, variant.PreStopSleep), Image: "bookshop:v1", Replicas: 2, PreStopSeconds: 5, TerminationGracePeriodSeconds: 30})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Apply(ctx, c, testOwner, d); !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "Deployment ns/web") {
		t.Errorf("applied over the user's Deployment: %v", err)
	}
	got, err := c.AppsV1().Deployments("ns").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || got.Spec.Template.Spec.Containers[0].Image != "shop:1" || Ours(got.Labels) {
		t.Errorf("the user's Deployment changed: %+v, %v", got, err)
	}
	if _, _, err := Apply(ctx, c, testOwner, render.WebService("other", "http")); !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "Service other/web") {
		t.Errorf("applied over the user's Service: %v", err)
	}
}

// TestDeleteOurs: deletes carry the UID droprun applied with, so an object
// recreated under the same name (someone else's now) survives.
func TestDeleteOurs(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "ours"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "recreated"}})
	enforceUID(c)
	refs := []Ref{{"Deployment", "ns", "web", "ours"}, {"Service", "ns", "web", "ours-too"}}
	if err := DeleteOurs(ctx, c, refs, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppsV1().Deployments("ns").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("droprun's Deployment not deleted: %v", err)
	}
	if _, err := c.CoreV1().Services("ns").Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Errorf("a Service recreated under droprun's name was deleted: %v", err)
	}
}

// TestLease: a second run in a namespace is refused with the first's
// identity; a Lease left unrenewed by a run that died is taken over; a
// released Lease lets the next run in.
func TestLease(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	first, err := AcquireLease(ctx, c, "ns", testOwner)
	if err != nil {
		t.Fatal(err)
	}
	second := Owner{RunID: "second", Host: "h", PID: 8}
	if _, err := AcquireLease(ctx, c, "ns", second); !errors.Is(err, ErrNamespaceBusy) || !strings.Contains(err.Error(), testOwner.Identity()) {
		t.Errorf("second run in the namespace: %v; want refused naming %q", err, testOwner.Identity())
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := AcquireLease(ctx, c, "ns", second)
	if err != nil {
		t.Fatalf("after the first released it: %v", err)
	}
	defer l.Release(ctx)
	// A holder that stopped renewing two minutes ago has died.
	dead := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName, Namespace: "ns2"}}
	old := metav1.NewMicroTime(time.Now().Add(-2 * time.Minute))
	holder, secs := "droprun run gone on h (pid 1)", int32(60)
	dead.Spec = coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &old}
	if _, err := c.CoordinationV1().Leases("ns2").Create(ctx, dead, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l2, err := AcquireLease(ctx, c, "ns2", testOwner)
	if err != nil {
		t.Fatalf("an expired lease was not taken over: %v", err)
	}
	defer l2.Release(ctx)
	got, err := c.CoordinationV1().Leases("ns2").Get(ctx, LeaseName, metav1.GetOptions{})
	if err != nil || *got.Spec.HolderIdentity != testOwner.Identity() {
		t.Errorf("lease after the take-over: %+v, %v", got, err)
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

// TestDiagnoseGivesUp: an API server that never answers holds Diagnose
// no longer than DiagnoseTimeout, even on a context without a deadline
// (a wait's diagnosis after Ctrl-C).
func TestDiagnoseGivesUp(t *testing.T) {
	hung := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hung:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hung)
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer func(d time.Duration) { DiagnoseTimeout = d }(DiagnoseTimeout)
	DiagnoseTimeout = 100 * time.Millisecond
	done := make(chan string)
	go func() { done <- Diagnose(context.Background(), c, "ns", map[string]string{"app": "web"}) }()
	select {
	case got := <-done:
		if got != "" {
			t.Errorf("Diagnose against a hung API server = %q, want nothing", got)
		}
	case <-time.After(time.Minute):
		t.Fatal("Diagnose still waiting on a hung API server a minute later")
	}
}
