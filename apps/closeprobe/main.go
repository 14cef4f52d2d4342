// Command closeprobe watches listeners close, from outside the app: droprun
// runs it inside a kind node and, as each pod's deletion is seen, names the
// pod's IP and port on its stdin. It connects to each named address every
// few milliseconds (a TCP connect, closed at once: no request) until a
// connect fails, then prints one line:
//
//	ID OPEN_NS FAIL_NS HOW
//
// OPEN_NS is when the last connect that succeeded started and FAIL_NS when
// the failed one returned (Unix nanoseconds; OPEN_NS 0 when the first one
// failed); the listener closed between them. Not when the failed one
// started: on a busy node its SYN can leave long after, and the listener
// may close in between. HOW is refused (connection
// refused: the socket is gone), timeout (no answer: the pod or its network
// is gone) or error (errorsToClose connects in a row failed otherwise;
// FAIL_NS is when the first of them returned). An address still open after the probe's limit prints
// "ID OPEN_NS 0 open". It exits when its stdin closes, printing nothing for
// the addresses it was still watching.
//
// Input lines are "ID ADDRESS", e.g. "web-7f9c-x2 10.244.1.7:8080". Its
// first output line is "ready", once it reads its input.
//
// It also reads a front's API, with input lines "poll ID URL" (and
// "unpoll ID" to stop): it GETs URL every 20 ms while a pod terminates
// (an address is watched, and for 10 s after the last watch began or
// ended), every 500 ms otherwise, and prints, at the first answer and at
// every change of the answer's body,
//
//	poll ID BEFORE_NS AT_NS BODY
//
// BODY is the new body, base64; AT_NS is when the read that first returned
// it ended, and BEFORE_NS when the last read that returned the previous
// body started (0 at the first answer): the change happened between them.
// When reads start failing it prints "pollerr ID AT_NS MESSAGE", and at the
// first answer after, the body again, changed or not.
//
// It follows a file (a container's log, read where the runtime writes
// it, with no kubelet or API server between), with input lines "follow
// ID PATH" (and "unfollow ID" to end): it reads PATH from its start and
// every followedEvery reads what was appended, across the kubelet's
// rotations (a new file at PATH), and prints each whole line as
//
//	log ID LINE
//
// a read's lines at once. At "unfollow ID", or when its stdin closes, it
// reads PATH to its end once more and prints "logend ID SKIPPED [ERROR]":
// SKIPPED counts lines over maxLogLine it left out, ERROR why it stopped
// early.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	every   = 5 * time.Millisecond   // between connects to one address
	timeout = 200 * time.Millisecond // a connect that long is a timeout
	limit   = 2 * time.Minute        // stop watching an address still open

	pollEvery   = 20 * time.Millisecond  // between reads of one URL while a pod terminates
	pollIdle    = 500 * time.Millisecond // between reads while none does
	pollLinger  = 10 * time.Second       // reads stay fast this long after a watch began or ended
	pollTimeout = 500 * time.Millisecond // a read that long failed
	maxBody     = 1 << 20                // the most of a body read

	followEvery = 100 * time.Millisecond // between reads of a followed file at its end
	maxLogLine  = 1 << 20                // a longer line of a followed file is left out
)

// pace is how often polls read: fast while a pod terminates (an address
// is watched) and for pollLinger after, slow otherwise, so that the front
// is read often only when its choice of pods can change under a drop.
type pace struct {
	mu     sync.Mutex
	active int
	until  time.Time
	wake   chan struct{} // closed when reads turn fast
	now    func() time.Time
}

func newPace() *pace { return &pace{wake: make(chan struct{}), now: time.Now} }

// watching notes a watch beginning (+1) or ending (-1); a beginning wakes
// every poll to read at once.
func (p *pace) watching(delta int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active += delta
	p.until = p.now().Add(pollLinger)
	if delta > 0 {
		close(p.wake)
		p.wake = make(chan struct{})
	}
}

// next is how long after a read's start the next one is due, and a
// channel closed if reads turn fast before then.
func (p *pace) next() (time.Duration, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.active > 0 || p.now().Before(p.until) {
		return pollEvery, p.wake
	}
	return pollIdle, p.wake
}

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	out := bufio.NewWriter(os.Stdout)
	emit := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(out, line)
		out.Flush()
	}
	emitAll := func(prefix string, lines [][]byte) {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			out.WriteString(prefix)
			out.Write(l)
			out.WriteByte('\n')
		}
		out.Flush()
	}
	emit("ready")
	polls := map[string]context.CancelFunc{}
	follows := map[string]context.CancelFunc{}
	pc := newPace()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		switch {
		case len(f) == 3 && f[0] == "poll":
			if polls[f[1]] == nil {
				pctx, stop := context.WithCancel(ctx)
				polls[f[1]] = stop
				wg.Go(func() { poll(pctx, f[1], f[2], pc, emit) })
			}
			continue
		case len(f) == 2 && f[0] == "unpoll":
			if stop := polls[f[1]]; stop != nil {
				stop()
			}
			continue
		case len(f) == 3 && f[0] == "follow":
			if follows[f[1]] == nil {
				fctx, stop := context.WithCancel(ctx)
				follows[f[1]] = stop
				wg.Go(func() {
					skipped, err := follow(fctx, f[2], followEvery, func(lines [][]byte) { emitAll("log "+f[1]+" ", lines) })
					end := fmt.Sprintf("logend %s %d", f[1], skipped)
					if err != nil {
						end += " " + strings.ReplaceAll(err.Error(), "\n", " ")
					}
					emit(end)
				})
			}
			continue
		case len(f) == 2 && f[0] == "unfollow":
			if stop := follows[f[1]]; stop != nil {
				stop()
			}
			continue
		case len(f) != 2:
			continue
		}
		id, addr := f[0], f[1]
		wg.Add(1)
		pc.watching(+1)
		go func() {
			defer wg.Done()
			defer pc.watching(-1)
			if seen := watch(ctx, addr, dial); seen != "" {
				emit(id + " " + seen)
			}
		}()
	}
	cancel()
	wg.Wait()
}

// errorsToClose is how many connects in a row must fail with an error
// other than a refusal or a timeout before the listener counts as closed:
// such an error (no local port free, an interrupted call) may be the
// prober's own, not the listener's.
const errorsToClose = 3

// dial connects to a TCP address, failing after timeout.
func dial(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	return d.DialContext(ctx, "tcp", addr)
}

// watch connects to addr with dial until a connect fails or the limit
// passes, and says what it saw; "" when ctx ended first (droprun stopped
// the watch).
func watch(ctx context.Context, addr string, dial func(context.Context, string) (net.Conn, error)) string {
	var (
		open     int64
		failedAt int64 // when the first of the errors in a row returned
		errs     int
	)
	end := time.Now().Add(limit)
	for ctx.Err() == nil && time.Now().Before(end) {
		start := time.Now()
		c, err := dial(ctx, addr)
		if err == nil {
			c.Close()
			open, errs = start.UnixNano(), 0
			time.Sleep(every)
			continue
		}
		if ctx.Err() != nil {
			return ""
		}
		var ne net.Error
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			return fmt.Sprintf("%d %d refused", open, time.Now().UnixNano())
		case errors.As(err, &ne) && ne.Timeout():
			return fmt.Sprintf("%d %d timeout", open, time.Now().UnixNano())
		}
		if errs == 0 {
			failedAt = time.Now().UnixNano()
		}
		if errs++; errs == errorsToClose {
			return fmt.Sprintf("%d %d error", open, failedAt)
		}
		time.Sleep(every)
	}
	if ctx.Err() != nil {
		return ""
	}
	return fmt.Sprintf("%d 0 open", open)
}

// poll reads url at pc's pace until ctx ends, and prints its first
// answer, every change of it, and each start of failing reads (see the
// package comment).
func poll(ctx context.Context, id, url string, pc *pace, emit func(string)) {
	c := &http.Client{Timeout: pollTimeout}
	var (
		last     []byte
		answered bool
		failing  bool
		before   int64 // the start of the last read that returned last
	)
	for ctx.Err() == nil {
		start := time.Now()
		body, err := get(ctx, c, url)
		end := time.Now()
		switch {
		case ctx.Err() != nil:
		case err != nil:
			if !failing {
				emit(fmt.Sprintf("pollerr %s %d %s", id, end.UnixNano(), strings.ReplaceAll(err.Error(), "\n", " ")))
			}
			failing = true
		default:
			if !answered || failing || string(body) != string(last) {
				if !answered {
					before = 0
				}
				emit(fmt.Sprintf("poll %s %d %d %s", id, before, end.UnixNano(), base64.StdEncoding.EncodeToString(body)))
			}
			answered, failing, last, before = true, false, body, start.UnixNano()
		}
		every, fast := pc.next()
		select {
		case <-ctx.Done():
		case <-fast:
		case <-time.After(time.Until(start.Add(every))):
		}
	}
}

// get reads url's body; an answer other than 200 is an error.
func get(ctx context.Context, c *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return body, err
}

// follow reads the file at path from its start, giving each read's whole
// lines to lines, and reads what is appended every "every" until ctx
// ends; then it reads to the end once more, so that every line written
// before ctx ended is given. When the kubelet rotates the file (renames
// it, and the runtime opens a new one at path), it reads the old one to
// its end and goes on with the new one. Lines over maxLogLine are left
// out and counted.
func follow(ctx context.Context, path string, every time.Duration, lines func([][]byte)) (skipped int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { f.Close() }()
	var (
		buf      = make([]byte, 64<<10)
		part     []byte // the start of a line not yet ended
		skipping bool   // within a line over maxLogLine
	)
	// drain reads f to its end and gives its whole lines.
	drain := func() error {
		for {
			n, rerr := f.Read(buf)
			var whole [][]byte
			for b := buf[:n]; len(b) > 0; {
				i := bytes.IndexByte(b, '\n')
				if i < 0 {
					i = len(b)
				}
				if !skipping && len(part)+i > maxLogLine {
					part, skipping = nil, true
				}
				if !skipping {
					part = append(part, b[:i]...)
				}
				if i == len(b) {
					break
				}
				if skipping {
					skipped++
				} else {
					whole = append(whole, part)
				}
				part, skipping, b = nil, false, b[i+1:]
			}
			if len(whole) > 0 {
				lines(whole)
			}
			switch {
			case rerr == io.EOF:
				return nil
			case rerr != nil:
				return rerr
			}
		}
	}
	for {
		last := ctx.Err() != nil // ended before this read: it is the last
		if err := drain(); err != nil {
			return skipped, err
		}
		if now, serr := os.Stat(path); serr == nil {
			if cur, ferr := f.Stat(); ferr == nil && !os.SameFile(now, cur) {
				next, oerr := os.Open(path)
				if oerr != nil {
					return skipped, oerr
				}
				if err := drain(); err != nil {
					next.Close()
					return skipped, err
				}
				f.Close()
				f, part, skipping = next, nil, false
				continue
			}
		}
		if last {
			return skipped, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(every):
		}
	}
}
