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
// is gone) or error. An address still open after the probe's limit prints
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
package main

import (
	"bufio"
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
	emit("ready")
	polls := map[string]context.CancelFunc{}
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
		case len(f) != 2:
			continue
		}
		id, addr := f[0], f[1]
		wg.Add(1)
		pc.watching(+1)
		go func() {
			defer wg.Done()
			defer pc.watching(-1)
			if seen := watch(ctx, addr); seen != "" {
				emit(id + " " + seen)
			}
		}()
	}
	cancel()
	wg.Wait()
}

// watch connects to addr until a connect fails or the limit passes, and
// says what it saw; "" when ctx ended first (droprun stopped the watch).
func watch(ctx context.Context, addr string) string {
	var open int64
	d := net.Dialer{Timeout: timeout}
	end := time.Now().Add(limit)
	for ctx.Err() == nil && time.Now().Before(end) {
		start := time.Now()
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			open = start.UnixNano()
			time.Sleep(every)
			continue
		}
		if ctx.Err() != nil {
			return ""
		}
		how := "error"
		var ne net.Error
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			how = "refused"
		case errors.As(err, &ne) && ne.Timeout():
			how = "timeout"
		}
		return fmt.Sprintf("%d %d %s", open, time.Now().UnixNano(), how)
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
