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
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
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
)

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
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		id, addr, ok := strings.Cut(strings.TrimSpace(in.Text()), " ")
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
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
