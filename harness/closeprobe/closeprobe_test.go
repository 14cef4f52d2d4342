package closeprobe

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
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
