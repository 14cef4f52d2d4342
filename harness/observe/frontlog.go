package observe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/droprun/droprun/harness/frontlog"
	"github.com/droprun/droprun/harness/jsonl"
)

// maxLogLine bounds one line of a front's log; a longer one is an error.
const maxLogLine = 1 << 20

// FrontLogs follows the log of every front pod (those a label selector
// matches in a namespace) from its container's start, through the API
// server, and writes each access-log line as a frontlog.Line. Create it
// with StartFrontLogs.
type FrontLogs struct {
	client    kubernetes.Interface
	namespace string
	container string
	parse     func(pod string, line []byte) (frontlog.Line, bool)
	w         *jsonl.Writer
	factory   informers.SharedInformerFactory
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup

	mu   sync.Mutex
	seen map[types.UID]bool
	errs []error
}

// StartFrontLogs follows the logs of container in the pods selector
// matches in namespace, parses each line with parse (frontlog.ParseTraefik)
// and writes the access-log lines to out (frontlog.jsonl) until Stop.
func StartFrontLogs(ctx context.Context, client kubernetes.Interface, namespace, selector, container string,
	parse func(pod string, line []byte) (frontlog.Line, bool), out io.Writer) (*FrontLogs, error) {
	runCtx, cancel := context.WithCancel(ctx)
	f := &FrontLogs{client: client, namespace: namespace, container: container, parse: parse,
		w: jsonl.NewWriter(out, frontlog.File), ctx: runCtx, cancel: cancel, seen: map[types.UID]bool{}}
	f.factory = podInformers(client, namespace, selector)
	inf := f.factory.Core().V1().Pods().Informer()
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    f.podSeen,
		UpdateFunc: func(_, obj any) { f.podSeen(obj) },
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("front logs: registering the pod handler: %w", err)
	}
	f.factory.StartWithContext(runCtx)
	if !cache.WaitForCacheSync(runCtx.Done(), reg.HasSynced) {
		err := context.Cause(runCtx)
		_ = f.Stop()
		return nil, fmt.Errorf("front logs: listing the pods of namespace %s: %w", namespace, err)
	}
	return f, nil
}

// podSeen starts following a pod's log once its container runs, once per
// pod.
func (f *FrontLogs) podSeen(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !containerRunning(pod, f.container) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen[pod.UID] {
		return
	}
	f.seen[pod.UID] = true
	name := pod.Name
	f.wg.Go(func() {
		if err := f.follow(name); err != nil && f.ctx.Err() == nil {
			f.mu.Lock()
			f.errs = append(f.errs, fmt.Errorf("front pod %s's log: %w", name, err))
			f.mu.Unlock()
		}
	})
}

func containerRunning(pod *corev1.Pod, container string) bool {
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container {
			return s.State.Running != nil
		}
	}
	return false
}

// follow streams pod's log from its container's start until the stream
// ends (the pod is gone) or Stop.
func (f *FrontLogs) follow(pod string) error {
	rc, err := f.client.CoreV1().Pods(f.namespace).GetLogs(pod, &corev1.PodLogOptions{Container: f.container, Follow: true}).Stream(f.ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	return copyLines(pod, rc, f.parse, f.w)
}

// copyLines writes every line of r that parse reads as an access-log line
// to w, as logged by pod.
func copyLines(pod string, r io.Reader, parse func(string, []byte) (frontlog.Line, bool), w *jsonl.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLogLine)
	for sc.Scan() {
		if l, ok := parse(pod, sc.Bytes()); ok {
			w.Write(l)
		}
	}
	return sc.Err()
}

// Stop ends every stream, writes what is buffered and reports what went
// wrong while following.
func (f *FrontLogs) Stop() error {
	f.cancel()
	f.factory.Shutdown()
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return errors.Join(append(f.errs, f.w.Close())...)
}
