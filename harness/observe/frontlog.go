package observe

import (
	"bufio"
	"bytes"
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
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/timeline"
)

// maxLogLine bounds one line of a front's log; a longer one is an error.
const maxLogLine = 1 << 20

// FrontLog says what to read from a front's log.
type FrontLog struct {
	// Container is the front's container.
	Container string
	// AccessLog makes a reader of one front pod's log for the requests
	// it handled (frontlog.CaddyAccess).
	AccessLog func() frontlog.AccessLog
	// Servers, for a front whose log says which pods it sends to
	// (frontlog.CaddyServers), makes a reader for one pod's log; each
	// change is recorded through Record as front.* events, at the time
	// the front logged it. Nil for a front whose log does not.
	Servers func() frontlog.ServersLog
	Record  func(timeline.Event)
	// OpenFile, when set, reads a front pod's container log file where
	// the runtime writes it (PodLogFile, in the CRI format), from inside
	// its node, in place of the API server's log follow: the reader
	// gives the file's lines from its start until ctx ends, then those
	// written up to then, and ends (closeprobe.Prober.Follow).
	OpenFile func(ctx context.Context, pod *corev1.Pod, container string) (io.ReadCloser, error)
}

// FrontLogs follows the log of every front pod (those a label selector
// matches in a namespace) from its container's start, through the API
// server or from the node (FrontLog.OpenFile), and writes each access-log line as a frontlog.Line. Create it
// with StartFrontLogs.
type FrontLogs struct {
	client    kubernetes.Interface
	namespace string
	FrontLog
	w       *jsonl.Writer
	factory informers.SharedInformerFactory
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu   sync.Mutex
	seen map[types.UID]bool
	errs []error
}

// StartFrontLogs follows the logs of fl.Container in the pods selector
// matches in namespace, and writes their access-log lines to out
// (frontlog.jsonl) and their changes of servers to fl.Record, until Stop.
func StartFrontLogs(ctx context.Context, client kubernetes.Interface, namespace, selector string, fl FrontLog, out io.Writer) (*FrontLogs, error) {
	runCtx, cancel := context.WithCancel(ctx)
	f := &FrontLogs{client: client, namespace: namespace, FrontLog: fl,
		w: jsonl.NewWriter(out, runfile.FrontLogFile), ctx: runCtx, cancel: cancel, seen: map[types.UID]bool{}}
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
	if !ok || !containerRunning(pod, f.Container) {
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
		if err := f.follow(pod); err != nil && (f.ctx.Err() == nil || f.OpenFile != nil) {
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
// ends (the pod is gone) or Stop: from its file in the node when
// OpenFile is set (a file's reader ends with every line written before
// Stop, so its errors count even then), else through the API server.
func (f *FrontLogs) follow(pod *corev1.Pod) error {
	servers := f.servers(pod.Name, pod.Spec.NodeName)
	if f.OpenFile != nil {
		rc, err := f.OpenFile(f.ctx, pod, f.Container)
		if err != nil {
			return err
		}
		defer rc.Close()
		var cri criLines
		return copyLines(pod.Name, rc, cri.content, f.AccessLog(), f.w, servers)
	}
	rc, err := f.client.CoreV1().Pods(f.namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: f.Container, Follow: true}).Stream(f.ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	return copyLines(pod.Name, rc, nil, f.AccessLog(), f.w, servers)
}

// PodLogFile is where the kubelet has the runtime write a container's
// log in its node: /var/log/pods/NAMESPACE_NAME_UID/CONTAINER/N.log, N
// the container's restarts.
func PodLogFile(pod *corev1.Pod, container string) string {
	restarts := int32(0)
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container {
			restarts = s.RestartCount
		}
	}
	return fmt.Sprintf("/var/log/pods/%s_%s_%s/%s/%d.log", pod.Namespace, pod.Name, pod.UID, container, restarts)
}

// criLines reads a CRI log file's lines ("TIME STREAM TAG CONTENT", TAG
// P for part of a longer line, F for its end) back into the container's
// own lines.
type criLines struct{ part []byte }

// content is the container's line that line ends, if it ends one.
func (c *criLines) content(line []byte) ([]byte, bool) {
	f := bytes.SplitN(line, []byte(" "), 4)
	if len(f) < 3 {
		return nil, false
	}
	var content []byte
	if len(f) == 4 {
		content = f[3]
	}
	switch tag, _, _ := bytes.Cut(f[2], []byte(":")); string(tag) {
	case "P":
		if len(c.part)+len(content) <= maxLogLine {
			c.part = append(c.part, content...)
		}
		return nil, false
	case "F":
		if len(c.part) == 0 {
			return content, true
		}
		whole := append(c.part, content...)
		c.part = nil
		return whole, true
	}
	return nil, false
}

// servers returns what reads one front pod's log lines for the pods it
// sends to, recording each change; nil for a front whose log does not say.
func (fl FrontLog) servers(pod, node string) func([]byte) {
	if fl.Servers == nil {
		return nil
	}
	sl, fp := fl.Servers(), &frontPod{name: pod, node: node, via: "log"}
	return func(b []byte) {
		if s, ok := sl.Line(b); ok {
			fp.change(s.Start, s.At, s.IPs, s.Err, fl.Record)
		}
	}
}

// copyLines writes every line of r that access reads as an access-log line
// to w, as logged by pod, and gives every line to servers (when not nil).
// unwrap, when not nil, turns r's lines into the container's own (a CRI
// log file's).
func copyLines(pod string, r io.Reader, unwrap func([]byte) ([]byte, bool), access frontlog.AccessLog, w *jsonl.Writer, servers func([]byte)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLogLine)
	for sc.Scan() {
		line := sc.Bytes()
		if unwrap != nil {
			var ok bool
			if line, ok = unwrap(line); !ok {
				continue
			}
		}
		if l, ok := access.Line(pod, line); ok {
			w.Write(l)
			continue
		}
		if servers != nil {
			servers(line)
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
