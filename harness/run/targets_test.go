package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/droprun/droprun/harness/cluster"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed"
)

// TestInsideTargetsNameTheAppsService: generator pods sent east-west
// (target clusterip) aim at the Service in front of the app the scenario
// names: bookshop's web, the Service droprun renders for a custom app
// (named after its Deployment: a podinfo run once aimed at web and failed
// every request), or the user's own Service at the port that targets the
// app.
func TestInsideTargetsNameTheAppsService(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("podinfo.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: podinfo}\nspec:\n  selector: {matchLabels: {app: podinfo}}\n  template:\n    metadata: {labels: {app: podinfo}}\n    spec: {containers: [{name: app, image: a:1}]}\n")
	head := "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: east-west}\n"
	pods := "traffic: {target: clusterip, path: /version, generators: {from: pods}}\n"
	shop := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "droprun"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "metrics", Port: 9000, TargetPort: intstr.FromInt32(9797)}, {Name: "web", Port: 8080, TargetPort: intstr.FromInt32(9898)}}}}
	for _, tc := range []struct {
		name, yaml string
		want       string
	}{
		{"bookshop", head + "variants: [{variant: no-prestop}]\n" + pods, "http://web.droprun.svc.cluster.local.:80/version"},
		{"custom", head + "app: {custom: {images: [a:1, a:2], container: app, port: 9898}}\nvariants: [{name: mine, manifest: podinfo.yaml}]\n" + pods,
			"http://podinfo.droprun.svc.cluster.local.:80/version"},
		{"the user's Service", head + "cluster: {existing: {kubeconfig: /nonexistent, url: \"http://127.0.0.1:30080\"}}\napp: {custom: {images: [a:1, a:2], container: app, port: 9898, service: shop}}\nvariants: [{name: mine, manifest: podinfo.yaml}]\n" +
			"traffic: {target: clusterip, path: /version, generators: {from: pods, count: 2, image: reg.example/gen:v1}}\n", "http://shop.droprun.svc.cluster.local.:8080/version"},
	} {
		sc, err := scenario.Load(write(tc.name+".yaml", tc.yaml))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		r := &runner{sc: sc, tb: &testbed.Testbed{Cluster: &cluster.Cluster{Client: fake.NewClientset(shop)}}}
		got, err := insideTargets(context.Background(), r)
		if err != nil || len(got) != 1 || got[0].URL != tc.want {
			t.Errorf("%s: targets %+v (%v), want %s", tc.name, got, err, tc.want)
		}
	}
	// A Service of several ports, none targeting the app's, is an error
	// that says so, not a guess.
	sc, err := scenario.Load(write("other.yaml", head+"cluster: {existing: {kubeconfig: /nonexistent, url: \"http://127.0.0.1:30080\"}}\napp: {custom: {images: [a:1, a:2], container: app, port: 7000, service: shop}}\nvariants: [{name: mine, manifest: podinfo.yaml}]\n"+
		"traffic: {target: clusterip, generators: {from: pods, count: 2, image: reg.example/gen:v1}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{sc: sc, tb: &testbed.Testbed{Cluster: &cluster.Cluster{Client: fake.NewClientset(shop)}}}
	if _, err := insideTargets(context.Background(), r); err == nil || !strings.Contains(err.Error(), "none targets app.custom.port 7000") {
		t.Errorf("no port targets the app: %v", err)
	}
}
