package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/image"
	"github.com/droprun/droprun/harness/kube"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/variant"
)

// TestIntegrationSharedCluster holds droprun to "it touches only what it
// created" on a cluster it takes as existing (the package's kind cluster,
// through its kubeconfig, as a user would name theirs): a user's own
// Deployment named like droprun's survives a run, which refuses to apply
// over it; generator pods run only with --allow-generators, from the image
// the scenario names (loaded beforehand, as a user pushes it to their
// registry), and every request they send comes home once; and while one
// run uses a namespace, a second run there is refused with the first's
// identity and the first completes.
func TestIntegrationSharedCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	needCluster(t, ctx)
	// The kind cluster up, with the bookshop images on its nodes (an
	// existing cluster's images are the user's to load).
	checked, err := testbed.Check(itScenario(t, "metadata: {name: shared}\nvariants: [{variant: no-prestop}]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	kind, err := testbed.Prepare(ctx, checked, testbed.Options{Log: testWriter{t}, ModuleDir: moduleDir(), ImageDir: t.TempDir(), CreateCluster: true})
	if err != nil {
		t.Fatal(err)
	}
	itCreated = itCreated || kind.Cluster.Created
	if err := kind.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	c, c0 := kind.Cluster.Client, kind.Cluster
	existing := func(namespace string) *scenario.Scenario {
		sc, err := scenario.Parse("shared", fmt.Appendf(nil, `apiVersion: droprun/v1alpha1
kind: Scenario
metadata: {name: shared}
cluster: {existing: {kubeconfig: %q, url: "http://127.0.0.1:31080"}}
namespace: %s
rollouts: 1
traffic: {rate: 100, balance: 10s}
variants: [{variant: no-prestop}]
`, kind.Cluster.Kubeconfig, namespace))
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}

	t.Run("a user's Deployment survives", func(t *testing.T) {
		// The user lent droprun a namespace (labelled it) that holds their
		// own Deployment "web", droprun's name.
		const ns = "droprun-it-lent"
		lent := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{variant.LabelManagedBy: variant.ManagedBy}}}
		if _, err := c.CoreV1().Namespaces().Create(ctx, lent, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		defer c.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns, metav1.DeleteOptions{})
		one := int32(1)
		sel := map[string]string{"app": "users-shop"}
		users, err := c.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: variant.WebName, Labels: sel},
			Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: sel},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "shop", Image: "bookshop:v1", ImagePullPolicy: corev1.PullNever}}}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Run(ctx, existing(ns), Options{Dir: filepath.Join(t.TempDir(), "run"), Log: testWriter{t}, HostLock: filepath.Join(t.TempDir(), "lock")})
		if !errors.Is(err, kube.ErrNotOurs) || !strings.Contains(err.Error(), "Deployment "+ns+"/web") {
			t.Fatalf("run over the user's Deployment: %v; want refused, naming it", err)
		}
		after, err := c.AppsV1().Deployments(ns).Get(ctx, variant.WebName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the user's Deployment is gone: %v", err)
		}
		if after.UID != users.UID || after.Generation != users.Generation || kube.Ours(after.Labels) || after.Spec.Template.Spec.Containers[0].Name != "shop" {
			t.Errorf("the user's Deployment changed: uid %s→%s, generation %d→%d, labels %v", users.UID, after.UID, users.Generation, after.Generation, after.Labels)
		}
		if _, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			t.Errorf("the user's namespace: %v, want it kept", err)
		}
	})

	t.Run("generator pods, with consent and an image loaded beforehand", func(t *testing.T) {
		// As a user pushes it to their registry: built with what `droprun
		// image generator` runs, loaded into the nodes, named in the scenario.
		im, archive, err := image.BuildGenerator(ctx, "", t.TempDir(), testWriter{t})
		if err != nil {
			t.Fatal(err)
		}
		if err := c0.Images().LoadImageArchive(ctx, archive); err != nil {
			t.Fatal(err)
		}
		const ns = "droprun-it-generators"
		sc, err := scenario.Parse("shared-generators", fmt.Appendf(nil, `apiVersion: droprun/v1alpha1
kind: Scenario
metadata: {name: shared-generators}
cluster: {existing: {kubeconfig: %q}}
namespace: %s
rollouts: 1
traffic: {rate: 150, target: clusterip, generators: {from: pods, count: 3, image: %q}, control: 5s, between: 5s, settle: 3s}
variants: [{variant: no-prestop}]
`, kind.Cluster.Kubeconfig, ns, im.Ref))
		if err != nil {
			t.Fatal(err)
		}
		opts := func(dir string, allow bool) Options {
			return Options{Dir: dir, Log: testWriter{t}, HostLock: filepath.Join(t.TempDir(), "lock"),
				Testbed: testbed.Options{AllowContext: kind.Cluster.Name, AllowGenerators: allow}}
		}
		// Without consent: refused before anything is made.
		_, err = Run(ctx, sc, opts(filepath.Join(t.TempDir(), "refused"), false))
		if err == nil || !strings.Contains(err.Error(), "--allow-generators") {
			t.Fatalf("generators on an existing cluster without --allow-generators: %v; want refused, naming the flag", err)
		}
		if _, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("namespace %s after the refused run: %v; want none made", ns, err)
		}
		dir := filepath.Join(t.TempDir(), "run")
		a, err := Run(ctx, sc, opts(dir, true))
		if err != nil {
			t.Fatal(err)
		}
		ri, err := analysis.ReadRunInfo(dir)
		if err != nil {
			t.Fatal(err)
		}
		if ri.Traffic.Generators != 3 {
			t.Errorf("run.json: %d generators, want one per node (3)", ri.Traffic.Generators)
		}
		// The image was the one named, and every request came home once.
		events := readEvents(t, dir)
		placed := 0
		for _, e := range events {
			if e.Kind == timeline.KindGeneratorPlaced {
				placed++
			}
		}
		if placed != 3 {
			t.Errorf("%d generators placed, want 3", placed)
		}
		v := a.Summary.Variants[0]
		checkGeneratorsAccount(t, dir, events, v, 3)
		if len(v.Rollouts) != 1 || v.Rollouts[0].Incomplete != "" {
			t.Errorf("rollouts %+v; want one, complete", v.Rollouts)
		}
		// Nothing of the generators left: their Job goes with the namespace
		// droprun made.
		if err := kube.WaitNamespaceGone(ctx, c, ns, 2*time.Minute); err != nil {
			t.Errorf("the run's namespace, which it created: %v", err)
		}
	})

	t.Run("a second run in the namespace is refused", func(t *testing.T) {
		const ns = "droprun-it-busy"
		firstDir := filepath.Join(t.TempDir(), "first")
		type result struct {
			a   *analysis.Analysis
			err error
		}
		first := make(chan result, 1)
		go func() {
			a, err := Run(ctx, existing(ns), Options{Dir: firstDir, Log: testWriter{t}, HostLock: filepath.Join(t.TempDir(), "lock")})
			first <- result{a, err}
		}()
		// The second starts once the first holds the namespace.
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			select {
			case r := <-first:
				return false, fmt.Errorf("the first run ended before the second started: %v", r.err)
			default:
			}
			_, err := c.CoordinationV1().Leases(ns).Get(ctx, kube.LeaseName, metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Run(ctx, existing(ns), Options{Dir: filepath.Join(t.TempDir(), "second"), Log: testWriter{t}, HostLock: filepath.Join(t.TempDir(), "lock")})
		if !errors.Is(err, kube.ErrNamespaceBusy) || !strings.Contains(err.Error(), "droprun run first on") {
			t.Errorf("second run in %s: %v; want refused, naming the first run", ns, err)
		}
		r := <-first
		if r.err != nil {
			t.Fatalf("the first run, while a second was refused: %v", r.err)
		}
		// The first measured undisturbed and cleaned up after itself.
		sum := r.a.Summary
		if len(sum.Variants) != 1 || len(sum.Variants[0].Rollouts) != 1 || sum.Variants[0].WindowRequests == 0 {
			t.Errorf("the first run's summary: %+v", sum.Variants)
		}
		if _, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
			if err := kube.WaitNamespaceGone(ctx, c, ns, 2*time.Minute); err != nil {
				t.Errorf("the first run's namespace, which it created: %v", err)
			}
		}
	})
}

// TestIntegrationFailedPrepareDeletesCluster: a kind cluster a run
// creates is deleted again when a later step of its preparation fails
// (here: the namespace is kube-system, which droprun refuses to use), so
// the next run does not take it for one that existed before.
func TestIntegrationFailedPrepareDeletesCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	needCluster(t, ctx)
	const name = "droprun-it-failed"
	sc, err := scenario.Parse("failed", []byte(`apiVersion: droprun/v1alpha1
kind: Scenario
metadata: {name: failed}
cluster: {kind: {name: `+name+`, nodes: 1, hostPort: 32080, gatewayHostPort: 32081}}
namespace: kube-system
variants: [{variant: no-prestop}]
`))
	if err != nil {
		t.Fatal(err)
	}
	checked, err := testbed.Check(sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	k, err := testbed.NewKind(testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	if nodes, _ := k.Status(ctx, name); len(nodes) > 0 {
		t.Fatalf("kind cluster %s exists before the test", name)
	}
	var log strings.Builder
	_, err = testbed.Prepare(ctx, checked, testbed.Options{Log: io.MultiWriter(&log, testWriter{t}), ModuleDir: moduleDir(), ImageDir: t.TempDir(), CreateCluster: true})
	if !errors.Is(err, kube.ErrNotOurs) {
		k.Down(context.WithoutCancel(ctx), name)
		t.Fatalf("Prepare in kube-system: %v; want refused", err)
	}
	if nodes, err := k.Status(ctx, name); len(nodes) > 0 {
		k.Down(context.WithoutCancel(ctx), name)
		t.Errorf("cluster %s left behind after its preparation failed (%v)", name, err)
	}
	if want := `deleting cluster "` + name + `": this run created it and preparing it failed`; !strings.Contains(log.String(), want) {
		t.Errorf("log lacks %q", want)
	}
}
