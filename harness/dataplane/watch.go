package dataplane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/droprun/droprun/harness/timeline"
)

// Exec runs a command inside a node, with stdin (nil for none) and stdout
// connected, until it exits or ctx ends. harness/cluster provides one for
// kind nodes (docker exec).
type Exec func(ctx context.Context, node string, stdin io.Reader, stdout io.Writer, args ...string) error

// Source is the Detail "source" of the route events this package writes.
const Source = "nft-monitor"

// Watcher watches every node's routes to one Service.
type Watcher struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
}

// Watch starts one watch per node and returns at once; record receives
// every route event (a timeline.Recorder's Record stamps it). A node whose
// watch fails writes route.watch_error and is not retried: its routes are
// then unknown, which the analysis says. Stop ends every watch.
func Watch(ctx context.Context, nodes []string, exec Exec, svc Service, record func(timeline.Event)) *Watcher {
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher{cancel: cancel}
	for _, node := range nodes {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			if err := watchNode(ctx, node, exec, svc, record); err != nil && ctx.Err() == nil {
				record(event(timeline.KindRouteWatchError, node, "", svc, map[string]string{"error": err.Error()}))
				w.mu.Lock()
				w.errs = append(w.errs, fmt.Errorf("node %s: %w", node, err))
				w.mu.Unlock()
			}
		}()
	}
	return w
}

// Stop ends every watch and waits for them; it returns the nodes' watch
// failures, if any.
func (w *Watcher) Stop() error {
	w.cancel()
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return errors.Join(w.errs...)
}

// monitorScript runs `nft -a monitor` until droprun closes its stdin, so
// the monitor ends with droprun even when docker exec's client is killed
// (docker does not stop an exec'd process whose client went away).
const monitorScript = `nft -a monitor & pid=$!; cat >/dev/null; kill $pid`

func watchNode(ctx context.Context, node string, exec Exec, svc Service, record func(timeline.Event)) error {
	stdinR, stdinW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := exec(ctx, node, stdinR, outW, "sh", "-c", monitorScript)
		outW.CloseWithError(fmt.Errorf("nft monitor ended: %w", errOrEOF(err)))
		done <- err
	}()
	stop := context.AfterFunc(ctx, func() { stdinW.Close() })
	defer stop()
	defer stdinW.Close()

	lines := make(chan string, 1024)
	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
		for sc.Scan() {
			lines <- sc.Text()
		}
		readErr <- sc.Err()
		close(lines)
	}()

	// The monitor runs before the list, so no change falls between them;
	// the model takes changes by handle, so one seen twice is harmless.
	rules := ruleset{}
	for _, table := range tables {
		var out bytes.Buffer
		if err := exec(ctx, node, nil, &out, "nft", "-a", "list", "table", table); err != nil {
			continue // the other mode's table does not exist
		}
		if err := rules.readList(table, &out); err != nil {
			return fmt.Errorf("reading nft list table %s: %w", table, err)
		}
	}
	routes := rules.routed(svc)
	record(event(timeline.KindRouteWatching, node, "", svc, map[string]string{"routes": strings.Join(routes, " ")}))
	for _, ip := range routes {
		record(event(timeline.KindRouteSnapshot, node, ip, svc, nil))
	}
	for line := range lines {
		if !rules.apply(line) {
			continue
		}
		now := rules.routed(svc)
		added, removed := diff(routes, now)
		for _, ip := range removed {
			record(event(timeline.KindRouteRemoved, node, ip, svc, nil))
		}
		for _, ip := range added {
			record(event(timeline.KindRouteAdded, node, ip, svc, nil))
		}
		routes = now
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := <-readErr; err != nil {
		return err
	}
	return fmt.Errorf("nft monitor ended: %w", errOrEOF(<-done))
}

func errOrEOF(err error) error {
	if err == nil {
		return io.EOF
	}
	return err
}

// event is one route event of node for svc.
func event(kind timeline.Kind, node, ip string, svc Service, detail map[string]string) timeline.Event {
	d := map[string]string{"service": svc.Namespace + "/" + svc.Name, "source": Source}
	for k, v := range detail {
		d[k] = v
	}
	return timeline.Event{Time: time.Now(), Kind: kind, Object: "node/" + node, Node: node, IP: ip, Detail: d}
}
