package testbed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/droprun/droprun/harness/cluster"
	"github.com/droprun/droprun/harness/image"
	"github.com/droprun/droprun/harness/kube"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/variant"
)

// customScenario writes and loads a custom-app scenario on an existing
// cluster, with service as app.custom.service ("" for none) and the
// given image archive ("" for none).
func customScenario(t *testing.T, service, archive string) *scenario.Scenario {
	t.Helper()
	dir := t.TempDir()
	custom := "{images: [a:1, a:2], container: app"
	if service != "" {
		custom += ", service: " + service
	}
	if archive != "" {
		custom += ", imageArchives: [" + archive + "]"
	}
	files := map[string]string{
		"d.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: shop}\nspec:\n  selector: {matchLabels: {app: shop}}\n  template:\n    metadata: {labels: {app: shop}}\n    spec: {containers: [{name: app, image: a:1}]}\n",
		"s.yaml": "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: own}\n" +
			"cluster: {existing: {kubeconfig: " + filepath.Join(dir, "no-kubeconfig") + ", url: \"http://127.0.0.1:31000\"}}\n" +
			"app: {custom: " + custom + "}}\nvariants: [{name: a, manifest: d.yaml}, {name: b, manifest: d.yaml}]\n",
		"bad.tar": "not a tar at all",
	}
	for n, body := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sc, err := scenario.Load(filepath.Join(dir, "s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// teardownCluster is droprun's namespace (created by an earlier run)
// holding the user's Service, the variants' Deployment (droprun's) and a
// Deployment droprun did not apply.
func teardownCluster() *fake.Clientset {
	ours := map[string]string{variant.LabelManagedBy: variant.ManagedBy}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "droprun", Labels: ours, Annotations: map[string]string{kube.AnnotationCreated: "earlier"}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "droprun"}}
	shop := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "droprun", Labels: ours, UID: "shop-uid"}}
	theirs := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "droprun"}}
	return fake.NewClientset(ns, svc, shop, theirs)
}

// TestTeardownKeepsNamespaceWithOwnService: with app.custom.service the
// namespace and the user's Service stay for the next run, the variants'
// Deployment goes, and the log says so; without it the namespace goes.
func TestTeardownKeepsNamespaceWithOwnService(t *testing.T) {
	c := teardownCluster()
	var log strings.Builder
	tb := &Testbed{Scenario: customScenario(t, "shop", ""), Cluster: &cluster.Cluster{Client: c}, log: &log, nsCreated: true}
	if err := tb.Teardown(t.Context()); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	ctx := t.Context()
	if _, err := c.CoreV1().Namespaces().Get(ctx, "droprun", metav1.GetOptions{}); err != nil {
		t.Errorf("namespace droprun: %v, want it kept", err)
	}
	if _, err := c.CoreV1().Services("droprun").Get(ctx, "shop", metav1.GetOptions{}); err != nil {
		t.Errorf("the user's Service: %v, want it kept", err)
	}
	if _, err := c.AppsV1().Deployments("droprun").Get(ctx, "shop", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the variants' Deployment shop: err = %v, want it deleted", err)
	}
	if _, err := c.AppsV1().Deployments("droprun").Get(ctx, "theirs", metav1.GetOptions{}); err != nil {
		t.Errorf("Deployment theirs, which no variant names: %v, want it kept", err)
	}
	if want := `namespace droprun kept: it holds your app.custom.service "shop", which the next run needs; deleted droprun's objects there: deployment droprun/shop`; !strings.Contains(log.String(), want) {
		t.Errorf("log %q lacks %q", log.String(), want)
	}

	c = teardownCluster()
	tb = &Testbed{Scenario: customScenario(t, "", ""), Cluster: &cluster.Cluster{Client: c}, log: &log, nsCreated: true}
	if err := tb.Teardown(t.Context()); err != nil {
		t.Fatalf("Teardown without app.custom.service: %v", err)
	}
	if _, err := c.CoreV1().Namespaces().Get(ctx, "droprun", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("without app.custom.service: namespace droprun: err = %v, want it deleted", err)
	}
}

// TestTeardownTouchesOnlyOurs: in a namespace droprun did not create (the
// user labelled it), Teardown deletes only what droprun applied there and
// keeps the namespace; a Deployment of the variants' name without
// droprun's label is left alone.
func TestTeardownTouchesOnlyOurs(t *testing.T) {
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "droprun", Labels: map[string]string{variant.LabelManagedBy: variant.ManagedBy}}}
	users := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "droprun", UID: "users"}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "droprun", UID: "svc-uid"}}
	c := fake.NewClientset(ns, users, svc)
	var log strings.Builder
	tb := &Testbed{Scenario: customScenario(t, "", ""), Cluster: &cluster.Cluster{Client: c}, log: &log,
		applied: []kube.Ref{{Kind: "Service", Namespace: "droprun", Name: "web", UID: "svc-uid"}}}
	if err := tb.Teardown(ctx); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	if _, err := c.CoreV1().Namespaces().Get(ctx, "droprun", metav1.GetOptions{}); err != nil {
		t.Errorf("a namespace droprun did not create: %v, want it kept", err)
	}
	if _, err := c.AppsV1().Deployments("droprun").Get(ctx, "shop", metav1.GetOptions{}); err != nil {
		t.Errorf("the user's Deployment shop: %v, want it kept", err)
	}
	if _, err := c.CoreV1().Services("droprun").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("droprun's Service web: err = %v, want it deleted", err)
	}
	if want := "namespace droprun kept: droprun did not create it"; !strings.Contains(log.String(), want) {
		t.Errorf("log %q lacks %q", log.String(), want)
	}
}

// TestCloseNeverDeletesExisting: closing a testbed on a cluster droprun
// did not create as a kind cluster (an existing one, even one marked
// Created) deletes droprun's namespace and never the cluster.
func TestCloseNeverDeletesExisting(t *testing.T) {
	c := teardownCluster()
	var log strings.Builder
	cl := &cluster.Cluster{Name: "prod", Client: c, Created: true}
	tb := &Testbed{Scenario: customScenario(t, "", ""), Cluster: cl, log: &log, nsCreated: true}
	if err := tb.Close(t.Context(), false); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if strings.Contains(log.String(), "deleting cluster") {
		t.Errorf("log %q: an existing cluster must never be deleted", log.String())
	}
	if err := cl.Down(t.Context()); err == nil || !strings.Contains(err.Error(), "not droprun's to delete") {
		t.Errorf("Down of an existing cluster: %v, want a refusal", err)
	}
	if _, err := c.CoreV1().Namespaces().Get(t.Context(), "droprun", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace droprun: err = %v, want it deleted", err)
	}
}

// TestPrepareUsesCheckedArchives: Prepare takes the archives Check read
// and never reads them again: given the checked input of a scenario whose
// archive is corrupt on disk, it gets past it to the cluster, whose
// kubeconfig does not exist; Check itself refuses the archive.
func TestPrepareUsesCheckedArchives(t *testing.T) {
	sc := customScenario(t, "", "bad.tar")
	if _, err := Check(sc, nil); err == nil || !strings.Contains(err.Error(), "is not a tar archive") {
		t.Fatalf("Check = %v, want the error about bad.tar", err)
	}
	_, err := Prepare(t.Context(), &Checked{Scenario: sc, Archives: []*image.Archive{{Path: "inspected.tar"}}}, Options{})
	if err == nil || strings.Contains(err.Error(), "bad.tar") || !strings.Contains(err.Error(), "no-kubeconfig") {
		t.Fatalf("Prepare of the checked input = %v, want the missing kubeconfig's error, not bad.tar's", err)
	}
}
