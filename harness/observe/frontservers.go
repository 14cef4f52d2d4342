package observe

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/droprun/droprun/harness/closeprobe"
	"github.com/droprun/droprun/harness/timeline"
)

// FrontPollEvery is how often FrontServers reads each front pod's servers
// through the API server, where no FrontPoller reads them from inside the
// cluster: a front's stop of sending to a pod is then placed to within it
// plus two reads' latency.
const FrontPollEvery = 100 * time.Millisecond

// FrontAPI says how to read the pod IPs a front pod sends new requests to.
type FrontAPI struct {
	// Port, Path and Query are the front's API: http://POD_IP:Port/Path?Query,
	// or through the API server's pod proxy.
	Port  int
	Path  string
	Query url.Values
	// Servers reads the API's answer as the IPs chosen now
	// (frontlog.TraefikServers).
	Servers func(body []byte) ([]string, error)
}

// params are api.Query as the API server's pod proxy takes them.
func (api FrontAPI) params() map[string]string {
	params := map[string]string{}
	for k := range api.Query {
		params[k] = api.Query.Get(k)
	}
	return params
}

// FrontPoller reads a URL from inside the cluster's network and reports
// its first answer and every change (closeprobe.Prober, inside a kind
// node): no API server between, so every few milliseconds.
type FrontPoller interface {
	Poll(id, url string, on func(closeprobe.Reading))
	Unpoll(id string)
}

// frontPod is one front pod's last reading.
type frontPod struct {
	// via says how the pod is read: "prober" (FrontPoller),
	// "api-server" or "log" (FrontLogs); front.watching's detail.
	name, node, via string
	servers         []string
	answered        bool
	failing         bool
	// last is when the latest read that returned servers began (the
	// API-server reads' Before).
	last time.Time
}

// StartFrontServers reads the servers of every running front pod (those
// selector matches in namespace) from its API and records each change
// through rec: KindFrontWatching at the first answer, then KindFrontAdded
// and KindFrontRemoved, and KindFrontPollError when reads start failing.
// With a poller the reads come from inside the cluster at each pod's IP;
// with none, every FrontPollEvery through the API server's pod proxy. The
// stop it returns ends the reading.
func StartFrontServers(ctx context.Context, client kubernetes.Interface, namespace, selector string, api FrontAPI, poller FrontPoller, rec func(timeline.Event)) (stop func() error, err error) {
	runCtx, cancel := context.WithCancel(ctx)
	factory := podInformers(client, namespace, selector)
	inf := factory.Core().V1().Pods().Informer()
	var wg sync.WaitGroup
	var stopPolls func()
	if poller != nil {
		stopPolls = pollFronts(inf, api, poller, rec)
	}
	factory.StartWithContext(runCtx)
	if !cache.WaitForCacheSync(runCtx.Done(), inf.HasSynced) {
		cancel()
		factory.Shutdown()
		return nil, fmt.Errorf("front servers: listing the pods of namespace %s: %w", namespace, context.Cause(runCtx))
	}
	if poller == nil {
		wg.Go(func() { proxyFronts(runCtx, client, namespace, inf, api, rec) })
	}
	return func() error {
		cancel()
		wg.Wait()
		if stopPolls != nil {
			stopPolls()
		}
		factory.Shutdown()
		return nil
	}, nil
}

// readable says whether a front pod is one to read: running, not being
// deleted, with an IP.
func readable(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil && pod.Status.PodIP != ""
}

// pollFronts has poller read each front pod's API from the moment the
// informer sees it running, until it is not; the func it returns stops
// every poll, after which nothing more is recorded.
func pollFronts(inf cache.SharedIndexInformer, api FrontAPI, poller FrontPoller, rec func(timeline.Event)) (stop func()) {
	var mu sync.Mutex
	pods := map[string]*frontPod{}
	stopped := false
	see := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fp := pods[pod.Name]
		switch {
		case stopped:
		case fp == nil && readable(pod):
			fp = &frontPod{name: pod.Name, node: pod.Spec.NodeName, via: "prober"}
			pods[pod.Name] = fp
			u := url.URL{Scheme: "http", Host: net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(api.Port)), Path: api.Path, RawQuery: api.Query.Encode()}
			poller.Poll(pod.Name, u.String(), func(r closeprobe.Reading) {
				mu.Lock()
				defer mu.Unlock()
				if !stopped {
					fp.update(r, api, rec)
				}
			})
		case fp != nil && !readable(pod):
			poller.Unpoll(pod.Name)
		}
	}
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    see,
		UpdateFunc: func(_, obj any) { see(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				pod = pod.DeepCopy()
				pod.DeletionTimestamp = &metav1.Time{}
				see(pod)
			}
		},
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		for name := range pods {
			poller.Unpoll(name)
		}
	}
}

// proxyFronts reads, every FrontPollEvery until ctx ends, every running
// front pod's API through the API server's pod proxy.
func proxyFronts(ctx context.Context, client kubernetes.Interface, namespace string, inf cache.SharedIndexInformer, api FrontAPI, rec func(timeline.Event)) {
	pods := map[string]*frontPod{}
	params := api.params()
	t := time.NewTicker(FrontPollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, obj := range inf.GetStore().List() {
			pod, ok := obj.(*corev1.Pod)
			if !ok || !readable(pod) {
				continue
			}
			fp := pods[pod.Name]
			if fp == nil {
				fp = &frontPod{name: pod.Name, node: pod.Spec.NodeName, via: "api-server"}
				pods[pod.Name] = fp
			}
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			start := time.Now()
			body, err := client.CoreV1().Pods(namespace).ProxyGet("http", pod.Name, strconv.Itoa(api.Port), api.Path, params).DoRaw(rctx)
			cancel()
			if ctx.Err() != nil {
				return
			}
			r := closeprobe.Reading{Before: fp.last, At: time.Now(), Body: body}
			if err != nil {
				r.Err = err.Error()
			}
			if fp.update(r, api, rec) {
				fp.last = start
			}
		}
	}
}

// update records what changed in fp's servers at reading r: the servers
// of r.Body, first returned by a read that ended r.At, after the previous
// ones, last returned by a read that began r.Before (the removals'
// last_seen). It says whether the reading had servers.
func (fp *frontPod) update(r closeprobe.Reading, api FrontAPI, rec func(timeline.Event)) bool {
	var servers []string
	why := r.Err
	if why == "" {
		var err error
		if servers, err = api.Servers(r.Body); err != nil {
			why = err.Error()
		}
	}
	return fp.change(r.Before, r.At, servers, why, rec)
}

// change records what changed in fp's servers: servers, the pods it sends
// to from at on (or why it could not be read), after the previous ones,
// last seen at before.
func (fp *frontPod) change(before, at time.Time, servers []string, why string, rec func(timeline.Event)) bool {
	ev := func(kind timeline.Kind, ip string, detail map[string]string) {
		if detail == nil {
			detail = map[string]string{}
		}
		detail[timeline.DetailFrontAt] = at.UTC().Format(time.RFC3339Nano)
		rec(timeline.Event{Kind: kind, Object: "pod/" + fp.name, Pod: fp.name, Node: fp.node, IP: ip, Detail: detail})
	}
	if why != "" {
		if !fp.failing {
			ev(timeline.KindFrontPollError, "", map[string]string{"error": why})
		}
		fp.failing = true
		return false
	}
	fp.failing = false
	if !fp.answered {
		ev(timeline.KindFrontWatching, "", map[string]string{"servers": strings.Join(servers, " "), "via": fp.via})
	} else {
		for _, ip := range fp.servers {
			if !slices.Contains(servers, ip) {
				ev(timeline.KindFrontRemoved, ip, map[string]string{timeline.DetailFrontLastSeen: before.UTC().Format(time.RFC3339Nano)})
			}
		}
		for _, ip := range servers {
			if !slices.Contains(fp.servers, ip) {
				ev(timeline.KindFrontAdded, ip, nil)
			}
		}
	}
	fp.servers, fp.answered = servers, true
	return true
}

// CheckFrontGuard checks that the front pods' API (those selector matches
// in namespace, read through the API server's pod proxy) answers with
// api.Query, its token, and refuses a read without it with 404: once
// with the token it answers (within timeout: the front loads the router
// that checks the token with its other providers), without it must not.
func CheckFrontGuard(ctx context.Context, client kubernetes.Interface, namespace, selector string, api FrontAPI, timeout time.Duration) error {
	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("listing the front's pods: %w", err)
	}
	params := api.params()
	checked := 0
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !readable(pod) {
			continue
		}
		get := func(params map[string]string) error {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			_, err := client.CoreV1().Pods(namespace).ProxyGet("http", pod.Name, strconv.Itoa(api.Port), api.Path, params).DoRaw(rctx)
			return err
		}
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
			return get(params) == nil, nil
		})
		if err != nil {
			return fmt.Errorf("front pod %s: its API (:%d%s) did not answer with the token in %s: %w", pod.Name, api.Port, api.Path, timeout, get(params))
		}
		if err := get(nil); !apierrors.IsNotFound(err) {
			return fmt.Errorf("front pod %s: its API (:%d%s) answered a read without the token (%v), want 404: any pod in the cluster could read it", pod.Name, api.Port, api.Path, err)
		}
		checked++
	}
	if checked == 0 {
		return fmt.Errorf("no running front pod (%s) in namespace %s to check", selector, namespace)
	}
	return nil
}
