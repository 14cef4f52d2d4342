package dataplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/timeline"
)

// fakeNode plays one node for watchNode: its monitor stream, its tables,
// and the probe that the monitor reports.
type fakeNode struct {
	mu      sync.Mutex
	monitor io.Writer     // the monitor's stdout, once it runs
	started chan struct{} // closed when the monitor runs
	lists   map[string]string
	listErr error
	probes  int
}

func newFakeNode() *fakeNode {
	return &fakeNode{started: make(chan struct{}), lists: map[string]string{}}
}

func (f *fakeNode) exec(ctx context.Context, node string, stdin io.Reader, stdout io.Writer, args ...string) error {
	cmd := strings.Join(args, " ")
	switch {
	case strings.Contains(cmd, "nft -a monitor"):
		f.mu.Lock()
		f.monitor = stdout
		f.mu.Unlock()
		close(f.started)
		_, _ = io.Copy(io.Discard, stdin) // until droprun closes stdin
		return nil
	case strings.Contains(cmd, probeTable):
		<-f.started
		f.mu.Lock()
		defer f.mu.Unlock()
		f.probes++
		if f.probes < 2 {
			return nil // the first probe falls before the monitor subscribed
		}
		fmt.Fprintf(f.monitor, "add table ip %s\ndelete table ip %s\n# new generation 7 by process 1 (nft)\n", probeTable, probeTable)
		return nil
	case len(args) == 5 && args[1] == "-a" && args[2] == "list":
		table := args[4]
		if f.listErr != nil {
			return f.listErr
		}
		text, ok := f.lists[table]
		if !ok {
			return errors.New("nft -a list table " + table + ": exit status 1: Error: No such file or directory")
		}
		_, err := io.WriteString(stdout, text)
		return err
	}
	return fmt.Errorf("unexpected command %q", cmd)
}

func (f *fakeNode) send(lines string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, _ = io.WriteString(f.monitor, lines)
}

// events collects recorded events, safe for the watcher's goroutine.
type events struct {
	mu sync.Mutex
	ev []timeline.Event
	ch chan timeline.Event
}

func (e *events) record(ev timeline.Event) {
	e.mu.Lock()
	e.ev = append(e.ev, ev)
	e.mu.Unlock()
	e.ch <- ev
}

func (e *events) await(t *testing.T, kind timeline.Kind) timeline.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-e.ch:
			if ev.Kind == kind {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event; got %v", kind, e.ev)
		}
	}
}

func TestWatchNode(t *testing.T) {
	f := newFakeNode()
	f.lists["ip kube-proxy"] = "table ip kube-proxy {\n\tchain service-AAAAAAAA-ns/web/tcp/http {\n\t\tmeta l4proto tcp dnat ip to numgen random mod 2 map { 0 : 10.0.0.1 . 8080, 1 : 10.0.0.2 . 8080 } # handle 9\n\t}\n}\n"
	svc := Service{Namespace: "ns", Name: "web", Ports: []string{"http"}}
	got := &events{ch: make(chan timeline.Event, 100)}
	w := Watch(context.Background(), []string{"n1"}, f.exec, svc, got.record)
	watching := got.await(t, timeline.KindRouteWatching)
	if watching.Detail["routes"] != "10.0.0.1 10.0.0.2" || watching.Node != "n1" {
		t.Errorf("watching = %+v", watching)
	}
	f.send("delete rule ip kube-proxy service-AAAAAAAA-ns/web/tcp/http handle 9\n" +
		"add rule ip kube-proxy service-AAAAAAAA-ns/web/tcp/http meta l4proto tcp dnat to 10.0.0.2:8080 # handle 12\n")
	f.send("# new generation 8 by process 2 (nft)\n")
	removed := got.await(t, timeline.KindRouteRemoved)
	if removed.IP != "10.0.0.1" || removed.Detail["source"] != Source {
		t.Errorf("removed = %+v", removed)
	}
	if err := w.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if f.probes < 2 {
		t.Errorf("%d probes: the watch did not wait for the monitor to report one", f.probes)
	}
}

func TestWatchNodeFailures(t *testing.T) {
	svc := Service{Namespace: "ns", Name: "web"}
	for name, f := range map[string]*fakeNode{
		"no table":   newFakeNode(),
		"list fails": func() *fakeNode { f := newFakeNode(); f.listErr = errors.New("permission denied"); return f }(),
	} {
		t.Run(name, func(t *testing.T) {
			got := &events{ch: make(chan timeline.Event, 100)}
			w := Watch(context.Background(), []string{"n1"}, f.exec, svc, got.record)
			e := got.await(t, timeline.KindRouteWatchError)
			if e.Detail["error"] == "" {
				t.Errorf("watch error without its error: %+v", e)
			}
			if err := w.Stop(); err == nil {
				t.Error("Stop reports no failure")
			}
		})
	}
}

// TestWatcherAwait: Await holds until every node's routes satisfy the
// condition, names the nodes that do not when it gives up, and leaves out
// a node whose watch failed.
func TestWatcherAwait(t *testing.T) {
	f := newFakeNode()
	f.lists["ip kube-proxy"] = "table ip kube-proxy {\n\tchain service-AAAAAAAA-ns/web/tcp/http {\n\t\tmeta l4proto tcp dnat ip to numgen random mod 2 map { 0 : 10.0.0.1 . 8080, 1 : 10.0.0.2 . 8080 } # handle 9\n\t}\n}\n"
	broken := newFakeNode()
	broken.listErr = errors.New("permission denied")
	exec := func(ctx context.Context, node string, stdin io.Reader, stdout io.Writer, args ...string) error {
		if node == "n2" {
			return broken.exec(ctx, node, stdin, stdout, args...)
		}
		return f.exec(ctx, node, stdin, stdout, args...)
	}
	svc := Service{Namespace: "ns", Name: "web", Ports: []string{"http"}}
	got, gotBroken := &events{ch: make(chan timeline.Event, 100)}, &events{ch: make(chan timeline.Event, 100)}
	record := func(ev timeline.Event) {
		if ev.Node == "n2" {
			gotBroken.record(ev)
		} else {
			got.record(ev)
		}
	}
	w := Watch(context.Background(), []string{"n1", "n2"}, exec, svc, record)
	defer w.Stop()
	live := func(routes []string) bool { return !slices.Contains(routes, "10.0.0.1") }

	got.await(t, timeline.KindRouteWatching)
	gotBroken.await(t, timeline.KindRouteWatchError)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	bad, err := w.Await(done, live)
	if err == nil || !reflect.DeepEqual(bad, map[string][]string{"n1": {"10.0.0.1", "10.0.0.2"}}) {
		t.Fatalf("Await before the change = %v, %v; want n1 behind (and n2, whose watch failed, left out)", bad, err)
	}

	result := make(chan error, 1)
	go func() {
		_, err := w.Await(context.Background(), live)
		result <- err
	}()
	f.send("delete rule ip kube-proxy service-AAAAAAAA-ns/web/tcp/http handle 9\n" +
		"add rule ip kube-proxy service-AAAAAAAA-ns/web/tcp/http meta l4proto tcp dnat to 10.0.0.2:8080 # handle 12\n" +
		"# new generation 8 by process 2 (nft)\n")
	if err := <-result; err != nil {
		t.Errorf("Await after the change: %v", err)
	}
}
