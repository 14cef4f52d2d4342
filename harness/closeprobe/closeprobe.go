package closeprobe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"slices"
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
	polls   map[string]func(Reading)
	follows map[string]*follow
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
	p := &Prober{node: node, record: record, watched: map[string]bool{}, ips: map[string]string{}, polls: map[string]func(Reading){},
		follows: map[string]*follow{}, queue: make(chan string, queueLen), done: make(chan error, 1)}
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
	p.send(fmt.Sprintf("%s %s:%d\n", pod, ip, port))
}

// Reading is one change in what a polled URL answered, read from inside
// the node: Body, first returned by a read that ended At, and Before, the
// start of the last read that returned the previous body (zero at the
// first answer). The change happened between them. When reads start
// failing, Err says why instead.
type Reading struct {
	Before, At time.Time
	Body       []byte
	Err        string
}

// PollEvery is how often the prober reads a polled URL while a pod
// terminates (it watches an address, and for PollLinger after the last
// watch began or ended), and PollIdle otherwise (apps/closeprobe's
// pollEvery, pollLinger, pollIdle): a front is read often only when its
// choice of pods can change under a drop.
const (
	PollEvery  = 20 * time.Millisecond
	PollIdle   = 500 * time.Millisecond
	PollLinger = 10 * time.Second
)

// Node is the node the prober runs in.
func (p *Prober) Node() string { return p.node }

// Poll starts reading url from inside the node (a front's API
// at its pod IP, with no API server between), at PollEvery while a pod
// terminates and PollIdle otherwise, calling on, from one
// goroutine, with the first answer, each change of it, and each start of
// failing reads. An id already polled is ignored.
func (p *Prober) Poll(id, url string, on func(Reading)) {
	if id == "" || strings.ContainsAny(id+url, " \n") {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.polls[id] != nil {
		return
	}
	p.polls[id] = on
	p.send("poll " + id + " " + url + "\n")
}

// Unpoll stops polling id: on is not called again.
func (p *Prober) Unpoll(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.polls[id] == nil {
		return
	}
	delete(p.polls, id)
	p.send("unpoll " + id + "\n")
}

// send queues a line for the prober's stdin, never blocking; p.mu held.
func (p *Prober) send(line string) {
	select {
	case p.queue <- line:
	default:
		p.dropped++ // never block the recorder
	}
}

// maxLine bounds one line of the prober's output: a polled body, base64.
const maxLine = 2 << 20

// read closes ready at the prober's first line, "ready", and records every
// line after it.
func (p *Prober) read(out io.Reader, ready chan<- struct{}) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	if sc.Scan() && sc.Text() == "ready" {
		close(ready)
	}
	for sc.Scan() {
		if p.followed(sc.Bytes()) {
			continue
		}
		if id, r, ok := parseReading(sc.Text()); ok {
			p.mu.Lock()
			on := p.polls[id]
			p.mu.Unlock()
			if on != nil {
				on(r)
				continue
			}
		}
		e, ok := p.parse(sc.Text())
		if ok {
			p.record(e)
		}
	}
	// The prober ended: no follow gets another line.
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, fw := range p.follows {
		fw.end(fmt.Errorf("the prober in node %s ended before the end of %s", p.node, fw.path))
		delete(p.follows, id)
	}
}

// parseReading reads a poll line, "poll ID BEFORE_NS AT_NS BODY" or
// "pollerr ID AT_NS MESSAGE".
func parseReading(line string) (id string, r Reading, ok bool) {
	f := strings.SplitN(line, " ", 5)
	switch {
	case len(f) == 5 && f[0] == "poll":
		before, err1 := strconv.ParseInt(f[2], 10, 64)
		at, err2 := strconv.ParseInt(f[3], 10, 64)
		body, err3 := base64.StdEncoding.DecodeString(f[4])
		if err1 != nil || err2 != nil || err3 != nil {
			return "", Reading{}, false
		}
		r = Reading{At: time.Unix(0, at), Body: body}
		if before > 0 {
			r.Before = time.Unix(0, before)
		}
		return f[1], r, true
	case len(f) >= 4 && f[0] == "pollerr":
		at, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return "", Reading{}, false
		}
		return f[1], Reading{At: time.Unix(0, at), Err: strings.Join(f[3:], " ")}, true
	}
	return "", Reading{}, false
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
			return fmt.Errorf("the listener-close prober in node %s: %d pods were not watched or polled (its queue was full)", p.node, dropped)
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

// follow is one file the prober follows: its lines go to w until the
// prober's "logend", and ended is closed then.
type follow struct {
	path  string
	w     *io.PipeWriter
	ended chan struct{}
	once  sync.Once
}

func (fw *follow) end(err error) {
	fw.once.Do(func() {
		fw.w.CloseWithError(err)
		close(fw.ended)
	})
}

// FollowDrain bounds how long a follow's reader waits, after its ctx
// ended, for the prober to read the file to its end.
const FollowDrain = 10 * time.Second

// Follow reads the file at path inside the node, a container's log where
// the runtime writes it, with no kubelet or API server between: its lines
// from its start, then each line appended (read every 100 ms, across the
// kubelet's rotations), until ctx ends; then the lines written up to
// then, and the reader ends (or fails, if the prober does not finish
// within FollowDrain). Lines over 1 MiB are left out, and the reader's
// error at its end counts them. id names the follow (no spaces); the
// prober must not be stopped before the reader ends. The kubelet, by
// contrast, asks the runtime for the container's state at each write it
// is woken for: for a log of hundreds of lines a second, that costs the
// node more than the front that writes them.
func (p *Prober) Follow(ctx context.Context, id, path string) io.ReadCloser {
	r, w := io.Pipe()
	fw := &follow{path: path, w: w, ended: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case id == "" || path == "" || strings.ContainsAny(id+path, " \n"):
		fw.end(fmt.Errorf("following %q in node %s: not a name and path the prober reads", path, p.node))
		return r
	case p.closed:
		fw.end(fmt.Errorf("following %s in node %s: the prober is stopped", path, p.node))
		return r
	case p.follows[id] != nil:
		fw.end(fmt.Errorf("following %s in node %s: %s is followed already", path, p.node, id))
		return r
	}
	p.follows[id] = fw
	p.send("follow " + id + " " + path + "\n")
	go func() {
		select {
		case <-fw.ended:
			return
		case <-ctx.Done():
		}
		p.mu.Lock()
		if !p.closed {
			p.send("unfollow " + id + "\n")
		}
		p.mu.Unlock()
		select {
		case <-fw.ended:
		case <-time.After(FollowDrain):
			fw.end(fmt.Errorf("the prober in node %s did not finish reading %s within %s", p.node, path, FollowDrain))
		}
	}()
	return r
}

// followed gives a prober's "log ID LINE" line to its follow's reader and
// ends the follow at "logend ID SKIPPED [ERROR]"; false for other lines.
func (p *Prober) followed(line []byte) bool {
	kind, rest, _ := bytes.Cut(line, []byte(" "))
	if string(kind) != "log" && string(kind) != "logend" {
		return false
	}
	id, rest, _ := bytes.Cut(rest, []byte(" "))
	p.mu.Lock()
	fw := p.follows[string(id)]
	if fw != nil && string(kind) == "logend" {
		delete(p.follows, string(id))
	}
	p.mu.Unlock()
	switch {
	case fw == nil:
	case string(kind) == "log":
		// Blocks while the reader is behind; fails at once (and the
		// line is dropped) once the reader is closed.
		fw.w.Write(append(slices.Clip(rest), '\n'))
	default:
		n, why, _ := bytes.Cut(rest, []byte(" "))
		var err error
		if len(why) > 0 {
			err = fmt.Errorf("following %s in node %s: %s", fw.path, p.node, why)
		} else if k, _ := strconv.Atoi(string(n)); k > 0 {
			err = fmt.Errorf("following %s in node %s: %d lines over 1 MiB left out", fw.path, p.node, k)
		}
		fw.end(err)
	}
	return true
}
