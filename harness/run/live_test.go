package run

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/droprun/droprun/harness/cluster"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed"
	"github.com/droprun/droprun/harness/variant"
)

// TestLiveVariantReadsThePod: the live pods' settings come from a running
// pod of the current ReplicaSet, not from the Deployment's template (which
// can differ from what the pods run), and from the template only when no
// such pod runs, which the facts say.
func TestLiveVariantReadsThePod(t *testing.T) {
	sc, err := scenario.Parse("live", []byte("apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: live}\nvariants: [{variant: no-prestop}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	ns := sc.Namespace
	labels := map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "h1"}
	rev := map[string]string{"deployment.kubernetes.io/revision": "1"}
	grace := func(s int64) *int64 { return &s }
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Annotations: rev},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: grace(45), Containers: []corev1.Container{{
				Name: variant.ContainerName, Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}}}}}}}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-h1", Namespace: ns, Labels: labels, Annotations: rev}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-h1-a", Namespace: ns, Labels: labels},
		Spec:   corev1.PodSpec{TerminationGracePeriodSeconds: grace(30), Containers: []corev1.Container{{Name: variant.ContainerName}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	ctx := context.Background()
	for _, tc := range []struct {
		name, want string
		pods       bool
	}{
		{"from the pod", "no preStop, grace 30s, no readiness probe (read from pod web-h1-a)", true},
		{"from the template", "preStop sleep 5s, grace 45s, no readiness probe (read from the Deployment's pod template: no live pod found)", false},
	} {
		client := fake.NewClientset(d, rs)
		if tc.pods {
			client = fake.NewClientset(d, rs, pod)
		}
		r := &runner{sc: sc, tb: &testbed.Testbed{Cluster: &cluster.Cluster{Client: client}}}
		_, _, facts, err := r.liveVariant(ctx, "web")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := facts.String(); got != tc.want {
			t.Errorf("%s: live pods %q, want %q", tc.name, got, tc.want)
		}
	}
	r := &runner{sc: sc, tb: &testbed.Testbed{Cluster: &cluster.Cluster{Client: fake.NewClientset()}}}
	if _, _, _, err := r.liveVariant(ctx, "web"); err == nil || !strings.Contains(err.Error(), "reading the live deployment") {
		t.Errorf("without the Deployment: %v", err)
	}
}
