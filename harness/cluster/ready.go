package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// WaitNodesReady waits until want nodes exist and every one is Ready.
// kind's own wait covers only the control plane and returns nil on
// timeout; this one covers every node and fails on timeout, naming the
// nodes that are not Ready and why.
func WaitNodesReady(ctx context.Context, client kubernetes.Interface, want int, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err.Error()
			return false, nil // the API server may still be starting
		}
		var notReady []string
		for _, n := range nodes.Items {
			if ok, why := nodeReady(&n); !ok {
				notReady = append(notReady, n.Name+" ("+why+")")
			}
		}
		switch {
		case len(nodes.Items) < want:
			last = fmt.Sprintf("%d of %d nodes registered", len(nodes.Items), want)
		case len(notReady) > 0:
			last = "not Ready: " + strings.Join(notReady, "; ")
		default:
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("nodes not Ready after %s: %s", timeout, last)
	}
	return nil
}
