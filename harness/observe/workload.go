package observe

import (
	"maps"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/droprun/droprun/harness/variant"

	"github.com/droprun/droprun/harness/timeline"
)

// templateDetail is what a pod template says about the variant it runs.
func templateDetail(t *corev1.PodTemplateSpec, d map[string]string) {
	if v := t.Labels[variant.LabelVariant]; v != "" {
		d[variant.LabelVariant] = v
	}
	if v := t.Labels[variant.LabelRow]; v != "" {
		d[variant.LabelRow] = v
	}
	if len(t.Spec.Containers) > 0 {
		d["image"] = t.Spec.Containers[0].Image
	}
}

func replicas(r *int32) string {
	if r == nil {
		return "1" // the API's default for Deployments and ReplicaSets
	}
	return strconv.Itoa(int(*r))
}

func optional(r *int32) string {
	if r == nil {
		return ""
	}
	return strconv.Itoa(int(*r))
}

// rsEvent is an timeline.Event about ReplicaSet rs.
func rsEvent(kind timeline.Kind, rs *appsv1.ReplicaSet, extra map[string]string) timeline.Event {
	d := map[string]string{"replicas": replicas(rs.Spec.Replicas)}
	if h := rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; h != "" {
		d[appsv1.DefaultDeploymentUniqueLabelKey] = h
	}
	templateDetail(&rs.Spec.Template, d)
	maps.Copy(d, extra)
	return timeline.Event{Kind: kind, Object: "replicaset/" + rs.Name, Detail: d}
}

func rsAdded(rs *appsv1.ReplicaSet, initial bool) []timeline.Event {
	if initial {
		return []timeline.Event{rsEvent(timeline.KindReplicaSetSnapshot, rs, nil)}
	}
	return []timeline.Event{rsEvent(timeline.KindReplicaSetCreated, rs, nil)}
}

// rsUpdated records spec.replicas changing.
func rsUpdated(old, cur *appsv1.ReplicaSet) []timeline.Event {
	from, to := replicas(old.Spec.Replicas), replicas(cur.Spec.Replicas)
	if from == to {
		return nil
	}
	return []timeline.Event{rsEvent(timeline.KindReplicaSetScaled, cur, map[string]string{"from": from, "to": to})}
}

func rsDeleted(rs *appsv1.ReplicaSet) []timeline.Event {
	return []timeline.Event{rsEvent(timeline.KindReplicaSetDeleted, rs, nil)}
}

// deploymentFields are the Deployment facts the timeline follows; a change
// of any of them is one deployment.updated event. An empty value is left
// out of Detail (terminating when the API does not report it).
var deploymentFields = []struct {
	key string
	get func(*appsv1.Deployment) string
}{
	{"generation", func(d *appsv1.Deployment) string { return strconv.FormatInt(d.Generation, 10) }},
	{"observed_generation", func(d *appsv1.Deployment) string { return strconv.FormatInt(d.Status.ObservedGeneration, 10) }},
	{"replicas", func(d *appsv1.Deployment) string { return replicas(d.Spec.Replicas) }},
	{"status_replicas", func(d *appsv1.Deployment) string { return strconv.Itoa(int(d.Status.Replicas)) }},
	{"updated", func(d *appsv1.Deployment) string { return strconv.Itoa(int(d.Status.UpdatedReplicas)) }},
	{"ready", func(d *appsv1.Deployment) string { return strconv.Itoa(int(d.Status.ReadyReplicas)) }},
	{"available", func(d *appsv1.Deployment) string { return strconv.Itoa(int(d.Status.AvailableReplicas)) }},
	{"unavailable", func(d *appsv1.Deployment) string { return strconv.Itoa(int(d.Status.UnavailableReplicas)) }},
	{"terminating", func(d *appsv1.Deployment) string { return optional(d.Status.TerminatingReplicas) }},
	{"image", func(d *appsv1.Deployment) string { return templateValue(d, "image") }},
	{variant.LabelVariant, func(d *appsv1.Deployment) string { return templateValue(d, variant.LabelVariant) }},
	{variant.LabelRow, func(d *appsv1.Deployment) string { return templateValue(d, variant.LabelRow) }},
}

func templateValue(d *appsv1.Deployment, key string) string {
	m := map[string]string{}
	templateDetail(&d.Spec.Template, m)
	return m[key]
}

// deploymentState is d's followed facts, empty values left out.
func deploymentState(d *appsv1.Deployment) map[string]string {
	s := map[string]string{}
	for _, f := range deploymentFields {
		if v := f.get(d); v != "" {
			s[f.key] = v
		}
	}
	return s
}

func deploymentEvent(kind timeline.Kind, d *appsv1.Deployment, state map[string]string) timeline.Event {
	return timeline.Event{Kind: kind, Object: "deployment/" + d.Name, Detail: state}
}

func deploymentAdded(d *appsv1.Deployment, initial bool) []timeline.Event {
	if initial {
		return []timeline.Event{deploymentEvent(timeline.KindDeploymentSnapshot, d, deploymentState(d))}
	}
	return []timeline.Event{deploymentEvent(timeline.KindDeploymentCreated, d, deploymentState(d))}
}

// deploymentUpdated writes one deployment.updated with the new state and,
// in changed, the keys that changed (comma-separated, in deploymentFields
// order), when any did.
func deploymentUpdated(old, cur *appsv1.Deployment) []timeline.Event {
	before, now := deploymentState(old), deploymentState(cur)
	var changed []string
	for _, f := range deploymentFields {
		if before[f.key] != now[f.key] {
			changed = append(changed, f.key)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	now["changed"] = strings.Join(changed, ",")
	return []timeline.Event{deploymentEvent(timeline.KindDeploymentUpdated, cur, now)}
}

func deploymentDeleted(d *appsv1.Deployment) []timeline.Event {
	return []timeline.Event{deploymentEvent(timeline.KindDeploymentDeleted, d, deploymentState(d))}
}
