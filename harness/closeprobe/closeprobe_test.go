package closeprobe

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/timeline"
)

// hostExec runs the real prober, built for this machine, on the host in
// place of a node: the install step only has its stdin read.
func hostExec(t *testing.T) Exec {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: builds the prober")
	}
	bin := filepath.Join(t.TempDir(), "closeprobe")
	build := exec.Command("go", "build", "-o", bin, "github.com/droprun/droprun/apps/closeprobe")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the prober: %v\n%s", err, out)
	}
	return func(ctx context.Context, node string, stdin io.Reader, stdout io.Writer, args ...string) error {
		if args[0] == "sh" {
			_, err := io.Copy(io.Discard, stdin)
			return err
		}
		cmd := exec.CommandContext(ctx, bin)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, os.Stderr
		return cmd.Run()
	}
}

// TestProberSeesTheClose: a listener closed at a known moment is reported
// closed between the last connect that succeeded and the first that
// failed, those within a few milliseconds of the close; a listener left
// open is not reported before Stop.
func TestProberSeesTheClose(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var events []timeline.Event
	got := make(chan timeline.Event, 4)
	p, err := Start(ctx, "node-0", hostExec(t), []byte("binary"), func(e timeline.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
		got <- e
	})
	if err != nil {
		t.Fatal(err)
	}
	closing, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	staying, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer staying.Close()
	for _, l := range []net.Listener{closing, staying} {
		go acceptAndClose(l)
	}
	port := func(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }
	p.Watch("web-1", "127.0.0.1", port(closing))
	p.Watch("web-1", "127.0.0.1", port(closing)) // a second deletion event of the same pod
	p.Watch("web-2", "127.0.0.1", port(staying))
	time.Sleep(100 * time.Millisecond) // let it see the listener open a while
	closedAt := time.Now()
	closing.Close()
	var e timeline.Event
	select {
	case e = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no close reported within 10 s")
	}
	open, closed, ok := e.ProbedClose()
	if !ok || e.Pod != "web-1" || e.IP != "127.0.0.1" || e.Detail["how"] != "refused" || e.Detail["prober"] != "node-0" {
		t.Fatalf("event %+v", e)
	}
	t.Logf("closed at %s; last open %s before, first refusal %s after", closedAt.Format("15:04:05.000000"), closedAt.Sub(open), closed.Sub(closedAt))
	if open.After(closedAt) || closed.Before(closedAt) || closed.Sub(open) > 100*time.Millisecond {
		t.Errorf("open %s, closed %s: want them around the close at %s, within 100 ms", open, closed, closedAt)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 1 {
		t.Errorf("events %+v: want only web-1's close (web-2 stayed open, web-1 watched once)", events)
	}
}

// TestProberPolls: the prober reports a URL's first answer, a change of
// its body between the last read of the old body and the first of the
// new (to within PollIdle while no pod terminates, to within a few
// PollEvery once one does: a watched address), a start of failing reads,
// the body again after them, and nothing after Unpoll.
func TestProberPolls(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	body, status := "one", http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	defer srv.Close()
	set := func(b string, code int) time.Time {
		mu.Lock()
		defer mu.Unlock()
		body, status = b, code
		return time.Now()
	}
	p, err := Start(ctx, "node-0", hostExec(t), []byte("binary"), func(timeline.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan Reading, 16)
	p.Poll("traefik-1", srv.URL+"/api", func(r Reading) { got <- r })
	next := func(what string) Reading {
		t.Helper()
		select {
		case r := <-got:
			return r
		case <-time.After(10 * time.Second):
			t.Fatalf("no reading (%s) within 10 s", what)
		}
		return Reading{}
	}
	if r := next("first"); string(r.Body) != "one" || !r.Before.IsZero() || r.Err != "" {
		t.Fatalf("first reading %+v, want body one, no before", r)
	}
	// No pod terminates: reads every PollIdle.
	time.Sleep(PollIdle + 100*time.Millisecond) // a read or two of the same body, none reported
	changed := set("idle", http.StatusOK)
	r := next("idle change")
	t.Logf("idle: changed at %s: last old read began %s before, first new read ended %s after", changed.Format("15:04:05.000"), changed.Sub(r.Before), r.At.Sub(changed))
	if string(r.Body) != "idle" || r.Before.After(changed) || r.At.Before(changed) || r.At.Sub(r.Before) > PollIdle+200*time.Millisecond {
		t.Errorf("idle change reading %+v: want body idle, from before to after %s, within %s", r, changed, PollIdle+200*time.Millisecond)
	}
	// A pod terminates (an open address watched): reads every PollEvery.
	open, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	go acceptAndClose(open)
	p.Watch("web-1", "127.0.0.1", open.Addr().(*net.TCPAddr).Port)
	time.Sleep(100 * time.Millisecond) // several reads of the same body, none reported
	changed = set("two", http.StatusOK)
	r = next("change")
	t.Logf("changed at %s: last old read began %s before, first new read ended %s after", changed.Format("15:04:05.000"), changed.Sub(r.Before), r.At.Sub(changed))
	if string(r.Body) != "two" || r.Before.After(changed) || r.At.Before(changed) || r.At.Sub(r.Before) > 200*time.Millisecond {
		t.Errorf("change reading %+v: want body two, from before to after %s, within 200 ms", r, changed)
	}
	set("two", http.StatusInternalServerError)
	if r := next("failing"); r.Err != "HTTP 500" {
		t.Errorf("failing reading %+v, want HTTP 500", r)
	}
	set("two", http.StatusOK)
	if r := next("recovered"); string(r.Body) != "two" || r.Err != "" {
		t.Errorf("recovered reading %+v, want body two again", r)
	}
	p.Unpoll("traefik-1")
	time.Sleep(50 * time.Millisecond) // let the unpoll reach the prober
	set("three", http.StatusOK)
	time.Sleep(100 * time.Millisecond)
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		t.Errorf("a reading after Unpoll: %+v", r)
	default:
	}
}

func TestParseReading(t *testing.T) {
	id, r, ok := parseReading("poll traefik-1 5000000000 6000000000 b25l")
	if !ok || id != "traefik-1" || !r.Before.Equal(time.Unix(5, 0)) || !r.At.Equal(time.Unix(6, 0)) || string(r.Body) != "one" {
		t.Errorf("%q %+v %v", id, r, ok)
	}
	if _, r, ok := parseReading("poll traefik-1 0 6000000000 b25l"); !ok || !r.Before.IsZero() {
		t.Errorf("a first reading: %+v %v, want no before", r, ok)
	}
	if id, r, ok := parseReading("pollerr traefik-1 6000000000 dial tcp: connection refused"); !ok || id != "traefik-1" || r.Err != "dial tcp: connection refused" {
		t.Errorf("%q %+v %v", id, r, ok)
	}
	for _, bad := range []string{"web-1 0 5 timeout", "poll traefik-1 x 6 b25l", "poll traefik-1 0 6 !!"} {
		if _, _, ok := parseReading(bad); ok {
			t.Errorf("%q parsed as a reading", bad)
		}
	}
}

func TestParse(t *testing.T) {
	p := &Prober{node: "n", ips: map[string]string{"web-1": "10.0.0.1"}}
	e, ok := p.parse("web-1 0 " + strconv.FormatInt(time.Unix(5, 0).UnixNano(), 10) + " timeout")
	open, closed, pok := e.ProbedClose()
	if !ok || !pok || !open.IsZero() || !closed.Equal(time.Unix(5, 0)) || e.IP != "10.0.0.1" || e.Detail["how"] != "timeout" {
		t.Errorf("%+v", e)
	}
	if e, ok := p.parse("web-1 7 0 open"); !ok {
		t.Error("an open line did not parse")
	} else if _, _, closedOK := e.ProbedClose(); closedOK {
		t.Errorf("a probe that never saw a close reads as closed: %+v", e)
	}
	if _, ok := p.parse("garbage"); ok {
		t.Error("garbage parsed")
	}
}

// A prober that cannot run (a node's /tmp that does not execute, say)
// fails Start with the node's error, at once.
func TestStartFailsWhenTheProberCannotRun(t *testing.T) {
	failing := func(ctx context.Context, node string, stdin io.Reader, stdout io.Writer, args ...string) error {
		if args[0] == "sh" {
			_, err := io.Copy(io.Discard, stdin)
			return err
		}
		return errors.New("exit status 126")
	}
	start := time.Now()
	_, err := Start(context.Background(), "node-0", failing, []byte("binary"), func(timeline.Event) {})
	if err == nil || !strings.Contains(err.Error(), "node-0 ended before it was ready: exit status 126") || time.Since(start) > readyWithin/2 {
		t.Errorf("Start = %v after %s", err, time.Since(start))
	}
}

// acceptAndClose accepts and closes connections on l until it closes: an
// open address for the prober's connects.
func acceptAndClose(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

// TestProberFollows: a followed file's lines come through the real prober
// whole and in order, those already there and those appended, until the
// follow's ctx ends; the lines written before it ended are read, and
// then the reader ends cleanly. A second follow of the same id fails.
func TestProberFollows(t *testing.T) {
	ctx := context.Background()
	p, err := Start(ctx, "node-0", hostExec(t), []byte("binary"), func(timeline.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(ctx)
	path := filepath.Join(t.TempDir(), "0.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	write := func(n int) {
		for range n {
			l := "2026-12-07T08:00:00.000000001Z stdout F {\"n\":" + strconv.Itoa(len(want)) + "}"
			want = append(want, l)
			if _, err := f.WriteString(l + "\n"); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(3)
	fctx, stop := context.WithCancel(ctx)
	r := p.Follow(fctx, "uid-1", path)
	if _, err := io.ReadAll(p.Follow(ctx, "uid-1", path)); err == nil || !strings.Contains(err.Error(), "followed already") {
		t.Errorf("a second follow of uid-1: %v, want it refused", err)
	}
	lines := make(chan string, 100)
	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		readErr <- sc.Err()
	}()
	var got []string
	for len(got) < 3 {
		select {
		case l := <-lines:
			got = append(got, l)
		case <-time.After(5 * time.Second):
			t.Fatalf("the file's first lines did not come: %q", got)
		}
	}
	write(500)
	stop()
	for l := range lines {
		got = append(got, l)
	}
	if err := <-readErr; err != nil {
		t.Errorf("the reader ended with %v", err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %d lines (first %.80q), want the %d written", len(got), got[:min(len(got), 1)], len(want))
	}
}
