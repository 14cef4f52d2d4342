package observe

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/droprun/droprun/harness/timeline"
)

// FrontPollEvery is how often FrontServers reads each front pod's servers:
// a front's stop of sending to a pod is placed to within it (plus one
// read's latency).
const FrontPollEvery = 100 * time.Millisecond

// FrontAPI says how to read the pod IPs a front pod sends new requests to.
type FrontAPI struct {
	// Port and Path are the front's API, read through the API server's
	// pod proxy (http://POD:Port/Path).
	Port int
	Path string
	// Servers reads the API's answer as the IPs chosen now
	// (frontlog.TraefikServers).
	Servers func(body []byte) ([]string, error)
}

// frontPod is one front pod's last reading.
type frontPod struct {
	node    string
	servers []string
	seen    time.Time // the last successful read
	failing bool
}

// StartFrontServers reads, every FrontPollEvery, the servers of every
// running front pod (those selector matches in namespace) from its API and
// records each change through rec: KindFrontWatching at the first read,
// then KindFrontAdded and KindFrontRemoved, and KindFrontPollError when
// reads start failing. The stop it returns ends the polling.
func StartFrontServers(ctx context.Context, client kubernetes.Interface, namespace, selector string, api FrontAPI, rec func(timeline.Event)) (stop func() error, err error) {
	runCtx, cancel := context.WithCancel(ctx)
	factory := podInformers(client, namespace, selector)
	inf := factory.Core().V1().Pods().Informer()
	factory.StartWithContext(runCtx)
	if !cache.WaitForCacheSync(runCtx.Done(), inf.HasSynced) {
		cancel()
		factory.Shutdown()
		return nil, fmt.Errorf("front servers: listing the pods of namespace %s: %w", namespace, context.Cause(runCtx))
	}
	pods := map[string]*frontPod{}
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(FrontPollEvery)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
			}
			for _, obj := range inf.GetStore().List() {
				pod, ok := obj.(*corev1.Pod)
				if !ok || pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
					continue
				}
				fp := pods[pod.Name]
				if fp == nil {
					fp = &frontPod{node: pod.Spec.NodeName}
					pods[pod.Name] = fp
				}
				pollFront(runCtx, client, namespace, pod.Name, api, fp, rec)
			}
		}
	})
	return func() error { cancel(); wg.Wait(); factory.Shutdown(); return nil }, nil
}

// pollFront reads one front pod's servers and records what changed since
// its last reading.
func pollFront(ctx context.Context, client kubernetes.Interface, namespace, name string, api FrontAPI, fp *frontPod, rec func(timeline.Event)) {
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	body, err := client.CoreV1().Pods(namespace).ProxyGet("http", name, strconv.Itoa(api.Port), api.Path, nil).DoRaw(rctx)
	var servers []string
	if err == nil {
		servers, err = api.Servers(body)
	}
	now := time.Now()
	ev := func(kind timeline.Kind, ip string, detail map[string]string) {
		rec(timeline.Event{Time: now, Kind: kind, Object: "pod/" + name, Pod: name, Node: fp.node, IP: ip, Detail: detail})
	}
	if err != nil {
		if !fp.failing && ctx.Err() == nil {
			ev(timeline.KindFrontPollError, "", map[string]string{"error": err.Error()})
		}
		fp.failing = true
		return
	}
	fp.failing = false
	if fp.seen.IsZero() {
		ev(timeline.KindFrontWatching, "", map[string]string{"servers": strings.Join(servers, " ")})
	} else {
		last := map[string]string{"last_seen": fp.seen.Format(time.RFC3339Nano)}
		for _, ip := range fp.servers {
			if !slices.Contains(servers, ip) {
				ev(timeline.KindFrontRemoved, ip, last)
			}
		}
		for _, ip := range servers {
			if !slices.Contains(fp.servers, ip) {
				ev(timeline.KindFrontAdded, ip, nil)
			}
		}
	}
	fp.servers, fp.seen = servers, now
}
