package kube

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/droprun/droprun/harness/variant"
)

// FieldManager is the one field manager droprun applies with.
const FieldManager = "droprun"

// applyOpts force droprun's field manager over others' on droprun's own
// objects (a field someone set with kubectl is taken back); Apply never
// reaches an object droprun did not create.
var applyOpts = metav1.ApplyOptions{FieldManager: FieldManager, Force: true}

// Pod Security admission levels a namespace droprun creates enforces
// (LabelPodSecurity): the baseline, or privileged when the user allowed a
// custom app beyond it (--allow-privileged).
const (
	PodSecurityBaseline   = "baseline"
	PodSecurityPrivileged = "privileged"
	// LabelPodSecurity is Pod Security admission's enforce label.
	LabelPodSecurity = "pod-security.kubernetes.io/enforce"
)

// EnsureNamespace creates droprun's namespace, marked as created by
// owner's run and enforcing Pod Security level podSecurity, or uses it
// when it carries droprun's managed-by label (one droprun created is set
// to podSecurity again). created reports whether droprun created it (now
// or in an earlier run): only such a namespace is ever deleted
// (DeleteNamespace) or relabelled. A namespace without the label is
// someone else's and an error.
func EnsureNamespace(ctx context.Context, c kubernetes.Interface, name string, owner Owner, podSecurity string) (created bool, err error) {
	ns, err := c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, fmt.Errorf("reading namespace %s: %w", name, err)
	case !Ours(ns.Labels):
		return false, fmt.Errorf("namespace %q exists and %w (no %s=%s label): droprun works only in a namespace of its own, so choose another one with namespace: in the scenario", name, ErrNotOurs, variant.LabelManagedBy, variant.ManagedBy)
	case ns.DeletionTimestamp != nil:
		if err := WaitNamespaceGone(ctx, c, name, 2*time.Minute); err != nil {
			return false, err
		}
	case ns.Annotations[AnnotationCreated] == "":
		return false, nil // the user's, lent to droprun: left as it is
	default:
		if ns.Labels[LabelPodSecurity] != podSecurity {
			ns.Labels[LabelPodSecurity] = podSecurity
			if _, err := c.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
				return true, fmt.Errorf("setting namespace %s's Pod Security level to %s: %w", name, podSecurity, err)
			}
		}
		return true, nil
	}
	annotations := owner.ownAnnotations()
	annotations[AnnotationCreated] = owner.RunID
	labels := owner.ownLabels()
	labels[LabelPodSecurity] = podSecurity
	_, err = c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: name, Labels: labels, Annotations: annotations}}, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return EnsureNamespace(ctx, c, name, owner, podSecurity) // another run created it in between
	}
	if err != nil {
		return false, fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return true, nil
}

// DeleteNamespace deletes a namespace droprun created (AnnotationCreated)
// and waits until it is gone; the delete carries its UID as a
// precondition. Any other namespace is refused.
func DeleteNamespace(ctx context.Context, c kubernetes.Interface, name string, timeout time.Duration) error {
	ns, err := c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !Ours(ns.Labels) || ns.Annotations[AnnotationCreated] == "" {
		return fmt.Errorf("refusing to delete namespace %q: droprun did not create it (no %s annotation)", name, AnnotationCreated)
	}
	uid := ns.UID
	err = c.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
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

// Apply server-side applies objects in order (Deployments, Services,
// ConfigMaps, Secrets (created only where none is: ensureSecret), ServiceAccounts, Roles, RoleBindings, Ingresses and Jobs), each marked as
// owner's (managed-by and run labels, owner annotation), and returns the
// applied Deployments by name and every object applied. An object of the
// same name that droprun did not create is refused (ErrNotOurs), never
// overwritten.
func Apply(ctx context.Context, c kubernetes.Interface, owner Owner, objects ...any) (map[string]*appsv1.Deployment, []Ref, error) {
	deps := map[string]*appsv1.Deployment{}
	var refs []Ref
	for _, o := range objects {
		var ref Ref
		var err error
		switch o := o.(type) {
		case *appsv1ac.DeploymentApplyConfiguration:
			var d *appsv1.Deployment
			if d, ref, err = applyOne(ctx, c.AppsV1().Deployments(*o.GetNamespace()), "Deployment", o, owner); err == nil {
				deps[d.Name] = d
			}
		case *corev1ac.ServiceApplyConfiguration:
			_, ref, err = applyOne(ctx, c.CoreV1().Services(*o.GetNamespace()), "Service", o, owner)
		case *corev1ac.SecretApplyConfiguration:
			ref, err = ensureSecret(ctx, c, o, owner)
		case *corev1ac.ConfigMapApplyConfiguration:
			_, ref, err = applyOne(ctx, c.CoreV1().ConfigMaps(*o.GetNamespace()), "ConfigMap", o, owner)
		case *corev1ac.ServiceAccountApplyConfiguration:
			_, ref, err = applyOne(ctx, c.CoreV1().ServiceAccounts(*o.GetNamespace()), "ServiceAccount", o, owner)
		case *rbacv1ac.RoleApplyConfiguration:
			_, ref, err = applyOne(ctx, c.RbacV1().Roles(*o.GetNamespace()), "Role", o, owner)
		case *rbacv1ac.RoleBindingApplyConfiguration:
			_, ref, err = applyOne(ctx, c.RbacV1().RoleBindings(*o.GetNamespace()), "RoleBinding", o, owner)
		case *networkingv1ac.IngressApplyConfiguration:
			_, ref, err = applyOne(ctx, c.NetworkingV1().Ingresses(*o.GetNamespace()), "Ingress", o, owner)
		case *batchv1ac.JobApplyConfiguration:
			_, ref, err = applyOne(ctx, c.BatchV1().Jobs(*o.GetNamespace()), "Job", o, owner)
		default:
			return nil, nil, fmt.Errorf("cannot apply %T", o)
		}
		if err != nil {
			return nil, nil, err
		}
		refs = append(refs, ref)
	}
	return deps, refs, nil
}

// ensureSecret creates Secret o where there is none and keeps the one
// there when droprun made it: a token a run's front reads stays the same
// for every run in the namespace, so the pods that hold it need no
// restart. One droprun did not create is refused.
func ensureSecret(ctx context.Context, c kubernetes.Interface, o *corev1ac.SecretApplyConfiguration, owner Owner) (Ref, error) {
	ns, name := *o.GetNamespace(), *o.GetName()
	cl := c.CoreV1().Secrets(ns)
	cur, err := cl.Get(ctx, name, metav1.GetOptions{})
	if err := refuseTheirs("Secret", ns, name, cur, err); err != nil {
		return Ref{}, err
	}
	if err == nil {
		return Ref{"Secret", ns, name, cur.UID}, nil
	}
	_, ref, err := applyOne(ctx, cl, "Secret", o, owner)
	return ref, err
}

// SecretValue reads key of Secret name in namespace (a front's token).
func SecretValue(ctx context.Context, c kubernetes.Interface, namespace, name, key string) (string, error) {
	s, err := c.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading secret %s/%s: %w", namespace, name, err)
	}
	v := s.Data[key]
	if len(v) == 0 {
		return "", fmt.Errorf("secret %s/%s has no %q: delete it and run again, droprun makes a new one", namespace, name, key)
	}
	return string(v), nil
}

// kindClient is what Apply needs of one kind's typed client in a
// namespace (DeploymentInterface, ServiceInterface...).
type kindClient[T metav1.Object, AC any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Apply(ctx context.Context, ac AC, opts metav1.ApplyOptions) (T, error)
}

// ownable is an apply configuration droprun can name and mark as its own.
type ownable[AC any] interface {
	GetName() *string
	GetNamespace() *string
	WithLabels(map[string]string) AC
	WithAnnotations(map[string]string) AC
}

// applyOne applies o with cl, refusing an object of its name that droprun
// did not create.
func applyOne[T metav1.Object, AC ownable[AC]](ctx context.Context, cl kindClient[T, AC], kind string, o AC, owner Owner) (T, Ref, error) {
	var zero T
	ns, name := *o.GetNamespace(), *o.GetName()
	cur, err := cl.Get(ctx, name, metav1.GetOptions{})
	if err := refuseTheirs(kind, ns, name, cur, err); err != nil {
		return zero, Ref{}, err
	}
	o.WithLabels(owner.ownLabels())
	o.WithAnnotations(owner.ownAnnotations())
	got, err := cl.Apply(ctx, o, applyOpts)
	if err != nil {
		return zero, Ref{}, fmt.Errorf("applying %s %s: %w", strings.ToLower(kind), name, err)
	}
	return got, Ref{kind, ns, name, got.GetUID()}, nil
}

// refuseTheirs is Apply's check of what a Get of kind ns/name returned:
// nothing there, or droprun's own, is fine; an object droprun did not
// create is ErrNotOurs.
func refuseTheirs[T metav1.Object](kind, ns, name string, cur T, err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading %s %s/%s: %w", strings.ToLower(kind), ns, name, err)
	case !Ours(cur.GetLabels()):
		return notOurs(kind, ns, name)
	}
	return nil
}

// kindOps are the calls DeleteOurs makes on one kind in a namespace.
type kindOps struct {
	del func(ctx context.Context, name string, opts metav1.DeleteOptions) error
	uid func(ctx context.Context, name string) (types.UID, error)
}

func opsOf[T metav1.Object](get func(context.Context, string, metav1.GetOptions) (T, error), del func(context.Context, string, metav1.DeleteOptions) error) kindOps {
	return kindOps{del: del, uid: func(ctx context.Context, name string) (types.UID, error) {
		o, err := get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return o.GetUID(), nil
	}}
}

// opsFor returns the calls on r's kind, false for a kind Apply never
// applies.
func opsFor(c kubernetes.Interface, r Ref) (kindOps, bool) {
	ns := r.Namespace
	switch r.Kind {
	case "Deployment":
		d := c.AppsV1().Deployments(ns)
		return opsOf(d.Get, d.Delete), true
	case "Service":
		s := c.CoreV1().Services(ns)
		return opsOf(s.Get, s.Delete), true
	case "ConfigMap":
		s := c.CoreV1().ConfigMaps(ns)
		return opsOf(s.Get, s.Delete), true
	case "Secret":
		s := c.CoreV1().Secrets(ns)
		return opsOf(s.Get, s.Delete), true
	case "ServiceAccount":
		s := c.CoreV1().ServiceAccounts(ns)
		return opsOf(s.Get, s.Delete), true
	case "Role":
		s := c.RbacV1().Roles(ns)
		return opsOf(s.Get, s.Delete), true
	case "RoleBinding":
		s := c.RbacV1().RoleBindings(ns)
		return opsOf(s.Get, s.Delete), true
	case "Ingress":
		s := c.NetworkingV1().Ingresses(ns)
		return opsOf(s.Get, s.Delete), true
	case "Job":
		s := c.BatchV1().Jobs(ns)
		return opsOf(s.Get, s.Delete), true
	}
	return kindOps{}, false
}

// DeleteOurs deletes the objects refs names (Deployments with their
// ReplicaSets and pods, Jobs with their pods), each only while it still has the UID droprun
// applied it with, and waits until they are gone.
func DeleteOurs(ctx context.Context, c kubernetes.Interface, refs []Ref, timeout time.Duration) error {
	fg := metav1.DeletePropagationForeground
	for _, r := range refs {
		ops, ok := opsFor(c, r)
		if !ok {
			return fmt.Errorf("cannot delete a %s", r.Kind)
		}
		uid := r.UID
		opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
		if r.Kind == "Deployment" || r.Kind == "Job" {
			opts.PropagationPolicy = &fg // with their pods
		}
		if err := ops.del(ctx, r.Name, opts); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting %s: %w", r, err)
		}
	}
	for _, r := range refs {
		ops, _ := opsFor(c, r)
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			uid, err := ops.uid(ctx, r.Name)
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return err == nil && uid != r.UID, err // recreated by someone else: not droprun's to wait for
		})
		if err != nil {
			return fmt.Errorf("%s still there %s after deleting it: %w", r, timeout, err)
		}
	}
	return nil
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

// LiveIPs returns the IPs of the namespace's pods that run and are not
// being deleted: all a Service there may route to once every node's
// kube-proxy has caught up with the pods.
func LiveIPs(ctx context.Context, c kubernetes.Interface, namespace string) (map[string]bool, error) {
	pods, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	ips := map[string]bool{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			ips[p.Status.PodIP] = true
		}
	}
	return ips, nil
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
