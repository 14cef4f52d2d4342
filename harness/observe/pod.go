package observe

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/droprun/droprun/harness/variant"

	"github.com/droprun/droprun/harness/timeline"
)

// podLabels are the pod labels copied into the Detail of pod events.
var podLabels = []string{variant.LabelVariant, variant.LabelRow, appsv1.DefaultDeploymentUniqueLabelKey}

// podTransitions are the pod changes the timeline records, in the order
// they are written when one update carries several (a pod's lifecycle
// order, so that deletion_requested precedes the unready it causes).
var podTransitions = []struct {
	kind   timeline.Kind
	when   func(old, cur *corev1.Pod) bool
	detail func(p *corev1.Pod) map[string]string // extra Detail, may be nil
}{
	{timeline.KindPodScheduled, became(isScheduled), nil},
	{timeline.KindPodStarted, became(allRunning), nil},
	{timeline.KindPodReady, became(isReady), nil},
	{timeline.KindPodDeletionRequested, became(isDeleting), deletionDetail},
	{timeline.KindPodUnready, ceased(isReady), nil},
	{timeline.KindPodContainersTerminated, became(allTerminated), terminatedDetail},
}

// became reports a predicate turning true between old and cur.
func became(f func(*corev1.Pod) bool) func(old, cur *corev1.Pod) bool {
	return func(old, cur *corev1.Pod) bool { return !f(old) && f(cur) }
}

// ceased reports a predicate turning false between old and cur.
func ceased(f func(*corev1.Pod) bool) func(old, cur *corev1.Pod) bool {
	return func(old, cur *corev1.Pod) bool { return f(old) && !f(cur) }
}

func isScheduled(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" || podCondition(p, corev1.PodScheduled) == corev1.ConditionTrue
}

func isReady(p *corev1.Pod) bool { return podCondition(p, corev1.PodReady) == corev1.ConditionTrue }

func isDeleting(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }

func allRunning(p *corev1.Pod) bool {
	return allContainers(p, func(s corev1.ContainerStatus) bool { return s.State.Running != nil })
}

func allTerminated(p *corev1.Pod) bool {
	return allContainers(p, func(s corev1.ContainerStatus) bool { return s.State.Terminated != nil })
}

// allContainers reports whether the pod has container statuses and f holds
// for every one of them.
func allContainers(p *corev1.Pod, f func(corev1.ContainerStatus) bool) bool {
	if len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, s := range p.Status.ContainerStatuses {
		if !f(s) {
			return false
		}
	}
	return true
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func deletionDetail(p *corev1.Pod) map[string]string {
	if p.DeletionGracePeriodSeconds == nil {
		return nil
	}
	return map[string]string{"grace_period_seconds": strconv.FormatInt(*p.DeletionGracePeriodSeconds, 10)}
}

func terminatedDetail(p *corev1.Pod) map[string]string {
	var codes, reasons []string
	for _, s := range p.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil {
			codes = append(codes, s.Name+"="+strconv.Itoa(int(t.ExitCode)))
			reasons = append(reasons, s.Name+"="+t.Reason)
		}
	}
	return map[string]string{"exit_codes": strings.Join(codes, ","), "reasons": strings.Join(reasons, ",")}
}

// podEvent is an timeline.Event about p with the pod's identity filled in.
func podEvent(kind timeline.Kind, p *corev1.Pod, extra map[string]string) timeline.Event {
	d := map[string]string{}
	for _, l := range podLabels {
		if v, ok := p.Labels[l]; ok {
			d[l] = v
		}
	}
	for k, v := range extra {
		d[k] = v
	}
	if len(d) == 0 {
		d = nil
	}
	return timeline.Event{Kind: kind, Object: "pod/" + p.Name, Pod: p.Name, Node: p.Spec.NodeName, IP: p.Status.PodIP, Detail: d}
}

// podAdded turns a pod seen by the informer's add into events: a snapshot
// for a pod listed at Start, else pod.created and whatever its state
// already implies.
func podAdded(p *corev1.Pod, initial bool) []timeline.Event {
	if initial {
		return []timeline.Event{podEvent(timeline.KindPodSnapshot, p, map[string]string{
			"phase":    string(p.Status.Phase),
			"ready":    strconv.FormatBool(isReady(p)),
			"deleting": strconv.FormatBool(isDeleting(p)),
		})}
	}
	return append([]timeline.Event{podEvent(timeline.KindPodCreated, p, nil)}, podUpdated(&corev1.Pod{}, p)...)
}

// podUpdated returns the transitions from old to cur, in lifecycle order,
// followed by one event per container whose restart count grew.
func podUpdated(old, cur *corev1.Pod) []timeline.Event {
	var events []timeline.Event
	for _, t := range podTransitions {
		if !t.when(old, cur) {
			continue
		}
		var extra map[string]string
		if t.detail != nil {
			extra = t.detail(cur)
		}
		events = append(events, podEvent(t.kind, cur, extra))
	}
	return append(events, containerRestarts(old, cur)...)
}

func containerRestarts(old, cur *corev1.Pod) []timeline.Event {
	before := map[string]int32{}
	for _, s := range old.Status.ContainerStatuses {
		before[s.Name] = s.RestartCount
	}
	var events []timeline.Event
	for _, s := range cur.Status.ContainerStatuses {
		if s.RestartCount <= before[s.Name] {
			continue
		}
		d := map[string]string{"container": s.Name, "restart_count": strconv.Itoa(int(s.RestartCount))}
		if t := s.LastTerminationState.Terminated; t != nil {
			d["last_exit_code"] = strconv.Itoa(int(t.ExitCode))
			d["last_reason"] = t.Reason
		}
		events = append(events, podEvent(timeline.KindPodContainerRestarted, cur, d))
	}
	return events
}

// podDeleted is the pod object leaving the API.
func podDeleted(p *corev1.Pod) []timeline.Event {
	return []timeline.Event{podEvent(timeline.KindPodGone, p, nil)}
}

// warningEvent turns a core/v1 timeline.Event into pod.event when it is a Warning
// about a pod, and reports false otherwise.
func warningEvent(e *corev1.Event) (timeline.Event, bool) {
	if e.Type != corev1.EventTypeWarning || e.InvolvedObject.Kind != "Pod" {
		return timeline.Event{}, false
	}
	d := map[string]string{
		"reason":  e.Reason,
		"message": e.Message,
		"count":   strconv.Itoa(int(eventCount(e))),
		"event":   e.Name,
	}
	if src := eventSource(e); src != "" {
		d["source"] = src
	}
	return timeline.Event{Kind: timeline.KindPodEvent, Object: "pod/" + e.InvolvedObject.Name, Pod: e.InvolvedObject.Name, Node: e.Source.Host, Detail: d}, true
}

// warningRepeated reports a Warning event being emitted again: its count
// grew or its last occurrence moved.
func warningRepeated(old, cur *corev1.Event) bool {
	return eventCount(cur) != eventCount(old) || !cur.LastTimestamp.Equal(&old.LastTimestamp)
}

func eventCount(e *corev1.Event) int32 {
	if e.Series != nil && e.Series.Count > e.Count {
		return e.Series.Count
	}
	return e.Count
}

func eventSource(e *corev1.Event) string {
	if e.ReportingController != "" {
		return e.ReportingController
	}
	return e.Source.Component
}

// podInformers is an informer factory for the pods selector matches in
// namespace (and the objects of nothing else), as the pod watchers use it.
func podInformers(client kubernetes.Interface, namespace, selector string) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
}
