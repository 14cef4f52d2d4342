package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/droprun/droprun/harness/variant"
)

// What droprun writes on the objects it creates, so that on a shared
// cluster it touches only those.
const (
	// LabelRun is the ID of the run that last applied the object.
	LabelRun = "droprun.dev/run"
	// AnnotationOwner says who applied it (Owner.Identity).
	AnnotationOwner = "droprun.dev/owner"
	// AnnotationCreated is set on a namespace droprun created, to the run
	// that created it: only such a namespace is ever deleted.
	AnnotationCreated = "droprun.dev/created-by-run"
	// LeaseName is the Lease a run holds in its namespace while it uses it.
	LeaseName = "droprun"
)

// Lease timing: a run renews its Lease every leaseRenew; one not renewed
// for leaseDuration belongs to a run that died and is taken over.
const (
	leaseDuration = 60 * time.Second
	leaseRenew    = 15 * time.Second
)

// Owner is the run applying objects: its ID (the run directory's name)
// and the process.
type Owner struct {
	RunID string
	Host  string
	PID   int
}

// NewOwner names this process as the owner for runID.
func NewOwner(runID string) Owner {
	host, _ := os.Hostname()
	return Owner{RunID: runID, Host: host, PID: os.Getpid()}
}

// Identity is what the owner annotation and the Lease's holder say, e.g.
// "droprun run 20261202-101500-demo on ci-7 (pid 4242)".
func (o Owner) Identity() string {
	return fmt.Sprintf("droprun run %s on %s (pid %d)", o.RunID, o.Host, o.PID)
}

// labelValue is RunID as a label value (63 characters at most, of
// [A-Za-z0-9._-]).
func (o Owner) labelValue() string {
	v := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, o.RunID)
	if len(v) > 63 {
		v = v[len(v)-63:]
	}
	return strings.Trim(v, "._-")
}

// ownLabels and ownAnnotations are what Apply puts on every object.
func (o Owner) ownLabels() map[string]string {
	return map[string]string{variant.LabelManagedBy: variant.ManagedBy, LabelRun: o.labelValue()}
}

func (o Owner) ownAnnotations() map[string]string {
	return map[string]string{AnnotationOwner: o.Identity()}
}

// Ours reports whether an object's labels say droprun created it.
func Ours(labels map[string]string) bool {
	return labels[variant.LabelManagedBy] == variant.ManagedBy
}

// ErrNotOurs says an object of the name droprun would apply or delete
// exists and droprun did not create it.
var ErrNotOurs = errors.New("droprun did not create it")

// notOurs is the refusal to apply over a user's object.
func notOurs(kind, namespace, name string) error {
	return fmt.Errorf("%s %s/%s exists and %w (no %s=%s label): droprun never applies over an object of yours. "+
		"Run in a namespace of droprun's own (namespace: in the scenario), or rename your %s",
		kind, namespace, name, ErrNotOurs, variant.LabelManagedBy, variant.ManagedBy, kind)
}

// Ref names one object droprun applied, with the UID it got: deletes
// carry it as a precondition, so an object someone recreated under the
// same name is never deleted.
type Ref struct {
	Kind, Namespace, Name string
	UID                   types.UID
}

func (r Ref) String() string { return strings.ToLower(r.Kind) + " " + r.Namespace + "/" + r.Name }

// ErrNamespaceBusy says another run holds the namespace's Lease.
var ErrNamespaceBusy = errors.New("another droprun run is using this namespace")

// Lease is a run's hold on its namespace (coordination.k8s.io Lease
// LeaseName): a second run there is refused while the first renews it.
type Lease struct {
	c         kubernetes.Interface
	namespace string
	uid       types.UID
	stop      context.CancelFunc
	done      chan struct{}
}

// AcquireLease takes namespace's Lease for owner, or fails wrapping
// ErrNamespaceBusy with the holder's identity while another run renews it.
// A Lease left by a run that died (not renewed for a minute) is taken
// over. The Lease is renewed in the background until Release.
func AcquireLease(ctx context.Context, c kubernetes.Interface, namespace string, owner Owner) (*Lease, error) {
	leases := c.CoordinationV1().Leases(namespace)
	now := metav1.NewMicroTime(time.Now())
	holder, secs := owner.Identity(), int32(leaseDuration/time.Second)
	l, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: LeaseName, Labels: owner.ownLabels()},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		l, err = takeOver(ctx, c, namespace, owner)
	}
	if err != nil {
		if errors.Is(err, ErrNamespaceBusy) {
			return nil, err
		}
		return nil, fmt.Errorf("taking the lease %s/%s: %w", namespace, LeaseName, err)
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	lease := &Lease{c: c, namespace: namespace, uid: l.UID, stop: stop, done: make(chan struct{})}
	go lease.renew(rctx, l.Name)
	return lease, nil
}

// takeOver takes an expired Lease, or names the run that holds it.
func takeOver(ctx context.Context, c kubernetes.Interface, namespace string, owner Owner) (*coordinationv1.Lease, error) {
	l, err := c.CoordinationV1().Leases(namespace).Get(ctx, LeaseName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if held, by, ago := leaseHeld(l, time.Now()); held {
		return nil, fmt.Errorf("namespace %s: %w: %s, renewed %s ago (Lease %s): wait for it to end, or give this run another namespace (namespace: in the scenario)",
			namespace, ErrNamespaceBusy, by, ago.Round(time.Second), LeaseName)
	}
	holder, now := owner.Identity(), metav1.NewMicroTime(time.Now())
	secs := int32(leaseDuration / time.Second)
	l.Spec = coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now}
	l.Labels = owner.ownLabels()
	// The resourceVersion read above makes this fail if another run took
	// it in between.
	return c.CoordinationV1().Leases(namespace).Update(ctx, l, metav1.UpdateOptions{FieldManager: FieldManager})
}

// leaseHeld reports whether l is still held at now, by whom, and how long
// ago it was renewed.
func leaseHeld(l *coordinationv1.Lease, now time.Time) (bool, string, time.Duration) {
	by := "an unnamed holder"
	if h := l.Spec.HolderIdentity; h != nil && *h != "" {
		by = *h
	}
	last := l.CreationTimestamp.Time
	if r := l.Spec.RenewTime; r != nil {
		last = r.Time
	}
	d := leaseDuration
	if s := l.Spec.LeaseDurationSeconds; s != nil {
		d = time.Duration(*s) * time.Second
	}
	ago := now.Sub(last)
	return ago < d, by, ago
}

func (l *Lease) renew(ctx context.Context, name string) {
	defer close(l.done)
	t := time.NewTicker(leaseRenew)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		leases := l.c.CoordinationV1().Leases(l.namespace)
		cur, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil || cur.UID != l.uid {
			continue // a failed renewal is retried; the Lease lasts 4 renewals
		}
		now := metav1.NewMicroTime(time.Now())
		cur.Spec.RenewTime = &now
		_, _ = leases.Update(ctx, cur, metav1.UpdateOptions{FieldManager: FieldManager})
	}
}

// Release stops renewing and deletes the Lease (only the one this run
// created: a UID precondition).
func (l *Lease) Release(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.stop()
	<-l.done
	uid := l.uid
	err := l.c.CoordinationV1().Leases(l.namespace).Delete(ctx, LeaseName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("releasing the lease %s/%s: %w", l.namespace, LeaseName, err)
	}
	return nil
}
