package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// DiagnoseTimeout bounds one Diagnose.
var DiagnoseTimeout = 10 * time.Second

// Diagnose says, for the pods matching selector that are not Ready, at
// which stage from apply to routed they stopped (scheduled, pulled,
// started, ready) and why, in one line per group of pods, e.g.
// "2 pods Pending: FailedScheduling: Insufficient cpu". It returns "" when
// there is nothing to say, and never fails: it is used to explain errors.
// It gives up after DiagnoseTimeout (it runs after a cancel too, to say
// why a wait failed).
func Diagnose(ctx context.Context, c kubernetes.Interface, namespace string, selector map[string]string) string {
	ctx, cancel := context.WithTimeout(ctx, DiagnoseTimeout)
	defer cancel()
	pods, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(selector).String()})
	if err != nil {
		return ""
	}
	events, _ := c.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
	lastEvent := map[string]string{}
	if events != nil {
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Kind == "Pod" {
				lastEvent[e.InvolvedObject.Name] = e.Reason + ": " + e.Message
			}
		}
	}
	groups := map[string]int{}
	for _, p := range pods.Items {
		if stage := podStage(&p, lastEvent[p.Name]); stage != "" {
			groups[stage]++
		}
	}
	if len(groups) == 0 {
		return ""
	}
	var lines []string
	for stage, n := range groups {
		lines = append(lines, fmt.Sprintf("%d pod(s) %s", n, stage))
	}
	sort.Strings(lines)
	return "\n  " + strings.Join(lines, "\n  ")
}

// podStage names the first stage a pod has not passed, with the reason.
func podStage(p *corev1.Pod, event string) string {
	if p.DeletionTimestamp != nil {
		return ""
	}
	why := func(s string) string {
		if event != "" {
			return s + ": " + event
		}
		return s
	}
	if p.Spec.NodeName == "" {
		return why("not scheduled (Pending)")
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff", "InvalidImageName":
				return fmt.Sprintf("image not available (%s: %s): load it into the nodes", w.Reason, w.Message)
			case "CrashLoopBackOff", "CreateContainerError", "CreateContainerConfigError", "RunContainerError":
				return fmt.Sprintf("not started (%s: %s)", w.Reason, w.Message)
			}
			return why("not started (" + w.Reason + ")")
		}
		if !cs.Ready {
			return why("started but not Ready")
		}
	}
	return ""
}
