package variant_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/droprun/droprun/harness/variant"
)

// TestFacts reads the shutdown settings back from hand-made templates of a
// custom app (harness/testbed/render tests the rendered bookshop variants).
func TestFacts(t *testing.T) {
	grace := int64(45)
	spec := &corev1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: []corev1.Container{
		{Name: "sidecar"},
		{Name: "app", Ports: []corev1.ContainerPort{{Name: "admin", ContainerPort: 9000}},
			Lifecycle:      &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/drain", Port: intstr.FromString("admin")}}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9898)}}}},
	}}
	f, err := variant.Facts(spec, "app")
	if err != nil {
		t.Fatal(err)
	}
	// Unset timings read as Kubernetes defaults them.
	if got, want := f.String(), "preStop GET /drain :9000, grace 45s, readiness tcpSocket :9898 every 10s, unready after 3 failures"; got != want {
		t.Errorf("custom:\n got %s\nwant %s", got, want)
	}
	spec.Containers[1].Lifecycle.PreStop = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "sleep 5"}}}
	spec.Containers[1].ReadinessProbe = nil
	spec.TerminationGracePeriodSeconds = nil
	f, _ = variant.Facts(spec, "app")
	if got, want := f.String(), "preStop exec /bin/sh -c sleep 5, grace 30s, no readiness probe"; got != want || f.PreStopSeconds != nil {
		t.Errorf("exec through a shell: %s (seconds %v); want %s and no length", got, f.PreStopSeconds, want)
	}
	if _, err := variant.Facts(spec, "web"); err == nil || !strings.Contains(err.Error(), `no container named "web"`) {
		t.Errorf("missing container: err = %v", err)
	}
	// Where they were read from, when recorded.
	f.Pod = "app-7d9f-x2k4q"
	if got, want := f.String(), "preStop exec /bin/sh -c sleep 5, grace 30s, no readiness probe (read from pod app-7d9f-x2k4q)"; got != want {
		t.Errorf("from a pod:\n got %s\nwant %s", got, want)
	}
	f.Pod, f.FromTemplate = "", true
	if got := f.String(); !strings.HasSuffix(got, "(read from the Deployment's pod template: no live pod found)") {
		t.Errorf("from the template: %s", got)
	}
}
