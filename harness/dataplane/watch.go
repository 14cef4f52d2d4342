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
	nodes  []string

	mu     sync.Mutex
	errs   []error
	routes map[string][]string // node → the pod IPs it routes to now, once listed
	failed map[string]bool     // nodes whose watch ended in error
	change chan struct{}       // closed, and replaced, on every change above
}

// Watch starts one watch per node and returns at once; record receives
// every route event (a observe.Recorder's Record stamps it). A node whose
// watch fails writes route.watch_error and is not retried: its routes are
// then unknown, which the analysis says. Stop ends every watch.
func Watch(ctx context.Context, nodes []string, exec Exec, svc Service, record func(timeline.Event)) *Watcher {
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher{cancel: cancel, nodes: nodes, routes: map[string][]string{}, failed: map[string]bool{}, change: make(chan struct{})}
	for _, node := range nodes {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			seen := func(routes []string) { w.update(func() { w.routes[node] = routes }) }
			if err := watchNode(ctx, node, exec, svc, record, seen); err != nil && ctx.Err() == nil {
				w.update(func() {
					w.errs = append(w.errs, fmt.Errorf("node %s: %w", node, err))
					w.failed[node] = true
				})
				record(event(timeline.KindRouteWatchError, node, "", svc, map[string]string{"error": err.Error()}))
			}
		}()
	}
	return w
}

// update changes the watcher's state under its lock and wakes Await.
func (w *Watcher) update(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f()
	close(w.change)
	w.change = make(chan struct{})
}

// Await waits until ok holds for every watched node's routes now, or ctx
// ends. It then returns the nodes ok does not hold for, with their routes
// (nil for a node whose rules are not listed yet). A node whose watch
// failed is left out: its routes are unknown.
func (w *Watcher) Await(ctx context.Context, ok func(routes []string) bool) (map[string][]string, error) {
	for {
		w.mu.Lock()
		bad := map[string][]string{}
		for _, n := range w.nodes {
			if routes, listed := w.routes[n]; !w.failed[n] && (!listed || !ok(routes)) {
				bad[n] = routes
			}
		}
		change := w.change
		w.mu.Unlock()
		if len(bad) == 0 {
			return nil, nil
		}
		select {
		case <-change:
		case <-ctx.Done():
			return bad, ctx.Err()
		}
	}
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

// monitorScript runs `nft -a monitor` for as long as nft lives, or until
// droprun closes its stdin: docker does not stop an exec'd process whose
// client went away, so the monitor must end with droprun by itself. The
// watchdog reads stdin through fd 3: sh gives a background job /dev/null
// as stdin unless it is redirected explicitly.
const monitorScript = `exec 3<&0; nft -a monitor <&- & pid=$!; (cat <&3 >/dev/null; kill $pid 2>/dev/null) >/dev/null 2>&1 & exec 3<&-; wait $pid`

// probeTable is a table droprun adds and deletes until the monitor reports
// it: nft says nothing when it has subscribed, and only a change it
// reports proves that no later change can be missed. The modelled tables
// never include it.
const probeTable = "droprun_probe"

// probeEvery and probeFor pace and bound the wait for the monitor.
const (
	probeEvery = 200 * time.Millisecond
	probeFor   = 20 * time.Second
)

// watchNode follows one node's routes to svc: it starts `nft -a monitor`,
// waits until the monitor is seen to report, lists kube-proxy's tables,
// records the routes found, then every change the monitor reports, until
// the monitor ends (an error) or ctx does. seen receives the routes each
// time they are known anew.
func watchNode(ctx context.Context, node string, exec Exec, svc Service, record func(timeline.Event), seen func([]string)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stdinR, stdinW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := exec(ctx, node, stdinR, outW, "sh", "-c", monitorScript)
		outW.CloseWithError(fmt.Errorf("nft monitor ended: %w", errOrEOF(err)))
		done <- err
	}()
	// On every way out: droprun's end of stdin closes (the script kills
	// nft), and its stdout is no longer read (docker exec's copy fails).
	defer outR.Close()
	defer stdinW.Close()
	stop := context.AfterFunc(ctx, func() { stdinW.Close() })
	defer stop()

	lines := make(chan string, 1024)
	readErr := make(chan error, 1)
	go scanLines(ctx, outR, lines, readErr)
	ended := func() error { return monitorEnded(ctx, readErr, done) }

	// Until the monitor reports a probe, changes may pass unseen; what it
	// reports before that is kept and applied after the list (the model
	// takes changes by handle, so one also in the list is harmless).
	var early []string
	if err := awaitMonitor(ctx, node, exec, lines, &early); err != nil {
		if errors.Is(err, errMonitorEnded) {
			return ended()
		}
		return err
	}
	rules, err := listRules(ctx, node, exec)
	if err != nil {
		return err
	}
	followRoutes(node, svc, rules, early, lines, record, seen)
	return ended()
}

// scanLines sends the monitor's output to lines, a line at a time, until
// it ends or ctx does; then it closes lines. At the output's end it also
// sends the reading error (nil at EOF) to readErr.
func scanLines(ctx context.Context, out io.Reader, lines chan<- string, readErr chan<- error) {
	defer close(lines)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		select {
		case lines <- sc.Text():
		case <-ctx.Done():
			return
		}
	}
	readErr <- sc.Err()
}

// monitorEnded is watchNode's outcome once the monitor's output has
// ended: nil when ctx ended it, else why (a reading error, or how the
// monitor's exec ended, which it waits for on done).
func monitorEnded(ctx context.Context, readErr, done <-chan error) error {
	if ctx.Err() != nil {
		return nil
	}
	select {
	case err := <-readErr:
		if err != nil {
			return fmt.Errorf("reading nft monitor: %w", err)
		}
	default:
	}
	return fmt.Errorf("nft monitor ended: %w", errOrEOF(<-done))
}

// listRules reads the node's kube-proxy tables (nft -a list table) into a
// ruleset. Only one of the tables exists, by kube-proxy's mode; neither
// is an error.
func listRules(ctx context.Context, node string, exec Exec) (ruleset, error) {
	rules := ruleset{}
	listed := 0
	for _, table := range tables {
		var out bytes.Buffer
		err := exec(ctx, node, nil, &out, "nft", "-a", "list", "table", table)
		switch {
		case err != nil && strings.Contains(err.Error(), "No such file or directory"):
			continue // the other mode's table
		case err != nil:
			return nil, fmt.Errorf("listing nft table %s: %w", table, err)
		}
		if err := rules.readList(table, &out); err != nil {
			return nil, fmt.Errorf("reading nft list table %s: %w", table, err)
		}
		listed++
	}
	if listed == 0 {
		return nil, fmt.Errorf("neither of kube-proxy's nf_tables tables (%s) exists: kube-proxy is not in iptables (nft backend) or nftables mode", strings.Join(tables, ", "))
	}
	return rules, nil
}

// followRoutes records the routes to svc that rules has (route.watching
// and a snapshot per route), then applies the monitor's lines, the early
// ones first, recording each route removed or added, until lines closes.
// seen receives the routes listed, then the routes after each change,
// before they are recorded.
func followRoutes(node string, svc Service, rules ruleset, early []string, lines <-chan string, record func(timeline.Event), seen func([]string)) {
	routes := rules.routed(svc)
	seen(routes)
	record(event(timeline.KindRouteWatching, node, "", svc, map[string]string{"routes": strings.Join(routes, " ")}))
	for _, ip := range routes {
		record(event(timeline.KindRouteSnapshot, node, ip, svc, nil))
	}
	apply := func(line string) {
		if !rules.apply(line) {
			return
		}
		now := rules.routed(svc)
		added, removed := diff(routes, now)
		if len(added)+len(removed) > 0 {
			seen(now)
		}
		for _, ip := range removed {
			record(event(timeline.KindRouteRemoved, node, ip, svc, nil))
		}
		for _, ip := range added {
			record(event(timeline.KindRouteAdded, node, ip, svc, nil))
		}
		routes = now
	}
	for _, line := range early {
		apply(line)
	}
	for line := range lines {
		apply(line)
	}
}

var errMonitorEnded = errors.New("nft monitor ended")

// awaitMonitor adds and deletes probeTable until the monitor's output
// shows it, keeping the lines before it in early.
func awaitMonitor(ctx context.Context, node string, exec Exec, lines <-chan string, early *[]string) error {
	deadline := time.Now().Add(probeFor)
	probe := "nft add table ip " + probeTable + " && nft delete table ip " + probeTable
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for {
		var out bytes.Buffer
		if err := exec(ctx, node, nil, &out, "sh", "-c", probe); err != nil {
			return fmt.Errorf("probing nft monitor: %w", err)
		}
		for waiting := true; waiting; {
			select {
			case line, ok := <-lines:
				if !ok {
					return errMonitorEnded
				}
				if strings.Contains(line, "table ip "+probeTable) {
					return nil
				}
				*early = append(*early, line)
			case <-tick.C:
				waiting = false
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nft monitor reported none of its probes in %s", probeFor)
		}
	}
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
	return timeline.Event{Kind: kind, Object: "node/" + node, Node: node, IP: ip, Detail: d}
}
