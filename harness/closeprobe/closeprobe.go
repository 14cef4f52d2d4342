package closeprobe

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/droprun/droprun/harness/timeline"
)

// Exec runs a command inside a node, with stdin (nil for none) and stdout
// connected (cluster.ExecFunc).
type Exec func(ctx context.Context, node string, stdin io.Reader, stdout io.Writer, args ...string) error

// binPath is where the prober is installed inside the node: not /tmp, a
// kind node's tmpfs, which does not execute.
const binPath = "/usr/local/bin/droprun-closeprobe"

// readyWithin bounds the wait for the prober's first line.
const readyWithin = 10 * time.Second

// Prober watches listeners close from inside one node: Watch names a pod
// whose listener to watch, and every close it sees is recorded as a
// timeline.KindListenerProbed event. Its methods are safe for concurrent
// use.
type Prober struct {
	node   string
	record func(timeline.Event)

	mu      sync.Mutex
	watched map[string]bool
	ips     map[string]string // pod → IP, for the event
	closed  bool
	dropped int // Watch calls the queue had no room for

	queue chan string // lines for the prober's stdin
	done  chan error
}

// queueLen is how many Watch lines may wait for the prober's stdin.
const queueLen = 256

// Start installs bin (apps/closeprobe, built for the node: see
// image.BuildCloseProbe) in node, starts it and waits until it says it is
// ready; each close it reports goes to record. Stop ends it.
func Start(ctx context.Context, node string, exec Exec, bin []byte, record func(timeline.Event)) (*Prober, error) {
	install := fmt.Sprintf("cat > %s.new && chmod 0755 %s.new && mv %s.new %s", binPath, binPath, binPath, binPath)
	if err := exec(ctx, node, bytes.NewReader(bin), io.Discard, "sh", "-c", install); err != nil {
		return nil, fmt.Errorf("installing the listener-close prober in node %s: %w", node, err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &Prober{node: node, record: record, watched: map[string]bool{}, ips: map[string]string{},
		queue: make(chan string, queueLen), done: make(chan error, 1)}
	go func() {
		err := exec(context.WithoutCancel(ctx), node, inR, outW, binPath)
		ended := errOrEOF(err)
		outW.CloseWithError(ended)
		inR.CloseWithError(ended) // a write to a prober that ended fails, never blocks
		p.done <- err
	}()
	go func() {
		// The one writer of the prober's stdin; closing the queue (Stop)
		// closes it, and the prober exits.
		for line := range p.queue {
			if _, err := io.WriteString(inW, line); err != nil {
				break
			}
		}
		inW.Close()
		for range p.queue {
		}
	}()
	ready := make(chan struct{})
	go p.read(outR, ready)
	select {
	case <-ready:
		return p, nil
	case err := <-p.done:
		return nil, fmt.Errorf("the listener-close prober in node %s ended before it was ready: %w", node, errOrEOF(err))
	case <-time.After(readyWithin):
		p.stopWithin(ctx, 5*time.Second)
		return nil, fmt.Errorf("the listener-close prober in node %s was not ready within %s", node, readyWithin)
	case <-ctx.Done():
		p.stopWithin(ctx, 5*time.Second)
		return nil, ctx.Err()
	}
}

// stopWithin stops p, waiting at most d.
func (p *Prober) stopWithin(ctx context.Context, d time.Duration) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	p.Stop(sctx)
}

// Watch starts watching pod's listener at ip:port; a pod already watched,
// or one without an IP, is ignored.
func (p *Prober) Watch(pod, ip string, port int) {
	if pod == "" || ip == "" || port <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.watched[pod] {
		return
	}
	p.watched[pod], p.ips[pod] = true, ip
	select {
	case p.queue <- fmt.Sprintf("%s %s:%d\n", pod, ip, port):
	default:
		p.dropped++ // never block the recorder
	}
}

// read closes ready at the prober's first line, "ready", and records every
// line after it.
func (p *Prober) read(out io.Reader, ready chan<- struct{}) {
	sc := bufio.NewScanner(out)
	if sc.Scan() && sc.Text() == "ready" {
		close(ready)
	}
	for sc.Scan() {
		e, ok := p.parse(sc.Text())
		if ok {
			p.record(e)
		}
	}
}

// parse turns a line "ID OPEN_NS FAIL_NS HOW" into its event.
func (p *Prober) parse(line string) (timeline.Event, bool) {
	f := strings.Fields(line)
	if len(f) != 4 {
		return timeline.Event{}, false
	}
	open, err1 := strconv.ParseInt(f[1], 10, 64)
	fail, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return timeline.Event{}, false
	}
	p.mu.Lock()
	ip := p.ips[f[0]]
	p.mu.Unlock()
	d := map[string]string{timeline.DetailProbeHow: f[3], "prober": p.node}
	if open > 0 {
		d[timeline.DetailProbeOpen] = time.Unix(0, open).UTC().Format(time.RFC3339Nano)
	}
	if fail > 0 {
		d[timeline.DetailProbeClosed] = time.Unix(0, fail).UTC().Format(time.RFC3339Nano)
	}
	return timeline.Event{Kind: timeline.KindListenerProbed, Object: "pod/" + f[0], Pod: f[0], IP: ip, Detail: d}, true
}

// Stop closes the prober's stdin (it then exits, reporting nothing more)
// and waits for it, at most until ctx ends.
func (p *Prober) Stop(ctx context.Context) error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.queue)
	}
	dropped := p.dropped
	p.mu.Unlock()
	select {
	case err := <-p.done:
		if err != nil {
			return fmt.Errorf("the listener-close prober in node %s: %w", p.node, err)
		}
		if dropped > 0 {
			return fmt.Errorf("the listener-close prober in node %s: %d pods were not watched (its queue was full)", p.node, dropped)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func errOrEOF(err error) error {
	if err == nil {
		return io.EOF
	}
	return err
}
