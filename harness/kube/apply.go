package kube

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/droprun/droprun/harness/variant"
)

// FieldManager is the one field manager droprun applies with.
const FieldManager = "droprun"

var applyOpts = metav1.ApplyOptions{FieldManager: FieldManager, Force: true}

// EnsureNamespace creates droprun's namespace, or adopts it when droprun
// created it before. A namespace of that name that droprun does not manage
// is an error: droprun deletes its namespace afterwards and must never
// delete someone else's.
func EnsureNamespace(ctx context.Context, c kubernetes.Interface, name string) error {
	ns, err := c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading namespace %s: %w", name, err)
	case ns.Labels[variant.LabelManagedBy] != variant.ManagedBy:
		return fmt.Errorf("namespace %q exists and is not droprun's (no %s=%s label): droprun deletes its namespace after a run, so choose another one with namespace: in the scenario", name, variant.LabelManagedBy, variant.ManagedBy)
	case ns.DeletionTimestamp != nil:
		if err := WaitNamespaceGone(ctx, c, name, 2*time.Minute); err != nil {
			return err
		}
	}
	_, err = c.CoreV1().Namespaces().Apply(ctx, corev1ac.Namespace(name).
		WithLabels(map[string]string{variant.LabelManagedBy: variant.ManagedBy}), applyOpts)
	if err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// DeleteNamespace deletes droprun's namespace and waits until it is gone.
func DeleteNamespace(ctx context.Context, c kubernetes.Interface, name string, timeout time.Duration) error {
	ns, err := c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.Labels[variant.LabelManagedBy] != variant.ManagedBy {
		return fmt.Errorf("refusing to delete namespace %q: it is not droprun's", name)
	}
	if err := c.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting namespace %s: %w", name, err)
	}
	return WaitNamespaceGone(ctx, c, name, timeout)
}

// WaitNamespaceGone waits until namespace name no longer exists.
func WaitNamespaceGone(ctx context.Context, c kubernetes.Interface, name string, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("namespace %s still terminating after %s: %w", name, timeout, err)
	}
	return nil
}

// Apply server-side applies objects (Deployments and Services) in order and
// returns the applied Deployments by name.
func Apply(ctx context.Context, c kubernetes.Interface, objects ...any) (map[string]*appsv1.Deployment, error) {
	deps := map[string]*appsv1.Deployment{}
	for _, o := range objects {
		switch o := o.(type) {
		case *appsv1ac.DeploymentApplyConfiguration:
			d, err := c.AppsV1().Deployments(*o.Namespace).Apply(ctx, o, applyOpts)
			if err != nil {
				return nil, fmt.Errorf("applying deployment %s: %w", *o.Name, err)
			}
			deps[d.Name] = d
		case *corev1ac.ServiceApplyConfiguration:
			if _, err := c.CoreV1().Services(*o.Namespace).Apply(ctx, o, applyOpts); err != nil {
				return nil, fmt.Errorf("applying service %s: %w", *o.Name, err)
			}
		default:
			return nil, fmt.Errorf("cannot apply %T", o)
		}
	}
	return deps, nil
}

// RolloutComplete reports whether d's rollout is done the way `kubectl
// rollout status` decides it (observedGeneration caught up, every replica
// updated and available, no old replica left) and, beyond what kubectl
// checks, no pod still terminating: Status.Replicas excludes terminating
// pods, so "successfully rolled out" can arrive while old pods are still in
// their preStop hook. The string says what is still pending.
func RolloutComplete(d *appsv1.Deployment) (bool, string) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	switch {
	case s.ObservedGeneration < d.Generation:
		return false, "waiting for the deployment spec update to be observed"
	case s.UpdatedReplicas < want:
		return false, fmt.Sprintf("%d out of %d new replicas have been updated", s.UpdatedReplicas, want)
	case s.Replicas > s.UpdatedReplicas:
		return false, fmt.Sprintf("%d old replicas are pending termination", s.Replicas-s.UpdatedReplicas)
	case s.AvailableReplicas < s.UpdatedReplicas:
		return false, fmt.Sprintf("%d of %d updated replicas are available", s.AvailableReplicas, s.UpdatedReplicas)
	case s.TerminatingReplicas != nil && *s.TerminatingReplicas > 0:
		return false, fmt.Sprintf("%d old pods are still terminating", *s.TerminatingReplicas)
	}
	return true, ""
}

// WaitRolledOut waits until RolloutComplete holds for deployment name, or
// fails with what was still pending and, for pods that never became ready,
// why (see Diagnose).
func WaitRolledOut(ctx context.Context, c kubernetes.Interface, namespace, name string, timeout time.Duration) error {
	var pending string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		d, err := c.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range d.Status.Conditions {
			if cond.Type == appsv1.DeploymentProgressing && cond.Status == corev1.ConditionFalse && cond.Reason == "ProgressDeadlineExceeded" {
				return false, fmt.Errorf("deployment %s exceeded its progress deadline: %s", name, cond.Message)
			}
		}
		done, why := RolloutComplete(d)
		pending = why
		return done, nil
	})
	if err != nil {
		diag := Diagnose(context.WithoutCancel(ctx), c, namespace, map[string]string{"app": name})
		return fmt.Errorf("deployment %s/%s not rolled out after %s (%s): %w%s", namespace, name, timeout, pending, err, diag)
	}
	return nil
}

// revisionAnnotation is the Deployment controller's revision of a
// Deployment and of each of its ReplicaSets.
const revisionAnnotation = "deployment.kubernetes.io/revision"

// OldPods returns the pods of deployment name that belong to an older
// ReplicaSet than its current revision's, terminating or not: the pods a
// rollout replaces. It does not rely on Deployment status fields (which
// some clusters leave unset), only on the pods and their ReplicaSets.
func OldPods(ctx context.Context, c kubernetes.Interface, namespace, name string) ([]string, error) {
	d, current, pods, err := revisionPods(ctx, c, namespace, name)
	if err != nil {
		return nil, err
	}
	if current == "" {
		return nil, fmt.Errorf("deployment %s: no ReplicaSet of revision %q yet", name, d.Annotations[revisionAnnotation])
	}
	var old []string
	for _, p := range pods {
		if p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != current {
			old = append(old, p.Name)
		}
	}
	return old, nil
}

// LivePod returns deployment name and one pod of its current revision's
// ReplicaSet that runs and is not being deleted, a ready one if any (the
// first by name among equals): a pod the next rollout deletes. The pod is
// nil when there is none.
func LivePod(ctx context.Context, c kubernetes.Interface, namespace, name string) (*appsv1.Deployment, *corev1.Pod, error) {
	d, current, pods, err := revisionPods(ctx, c, namespace, name)
	if err != nil || current == "" {
		return d, nil, err
	}
	var best *corev1.Pod
	for i := range pods {
		p := &pods[i]
		if p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != current || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		switch {
		case best == nil, isReady(p) && !isReady(best), isReady(p) == isReady(best) && p.Name < best.Name:
			best = p
		}
	}
	return d, best, nil
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// revisionPods reads deployment name, the pod-template-hash of its
// current revision's ReplicaSet ("" when there is none yet) and the pods
// its selector matches.
func revisionPods(ctx context.Context, c kubernetes.Interface, namespace, name string) (*appsv1.Deployment, string, []corev1.Pod, error) {
	d, err := c.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, "", nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, "", nil, fmt.Errorf("deployment %s: %w", name, err)
	}
	rss, err := c.AppsV1().ReplicaSets(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, "", nil, err
	}
	current := ""
	for _, rs := range rss.Items {
		if rs.Annotations[revisionAnnotation] == d.Annotations[revisionAnnotation] {
			current = rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		}
	}
	pods, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, "", nil, err
	}
	return d, current, pods.Items, nil
}

// WaitOldPodsGone waits until deployment name has no pod of an older
// ReplicaSet left (OldPods): only then has a rollout stopped deleting pods
// that may still be routed to.
func WaitOldPodsGone(ctx context.Context, c kubernetes.Interface, namespace, name string, timeout time.Duration) error {
	var left []string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		old, err := OldPods(ctx, c, namespace, name)
		left = old
		return err == nil && len(old) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("deployment %s/%s: old pods %v still there after %s: %w", namespace, name, left, timeout, err)
	}
	return nil
}
