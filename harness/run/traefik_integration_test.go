package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/frontlog"
	"github.com/droprun/droprun/harness/jsonl"
	"github.com/droprun/droprun/harness/testbed"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

// TestIntegrationRunTraefik: through Traefik Proxy (an ingress controller
// that sends to pod IPs from its own endpoint list, built from the Go
// module proxy once and kept in the user's cache), both control windows
// are clean, no-prestop's drops show as 502s, and graceful-drain, which
// serves until it is out of every endpoint list, drops none beyond the
// rig's floor. Traefik's access log (frontlog.jsonl) holds a line for
// nearly every request, joined to the client's record by its ID, and
// every 502 the client got is one Traefik logged. Traefik's API shows it
// stop sending to every web pod the rollouts deleted (front.removed), each
// placed to within half a second.
func TestIntegrationRunTraefik(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	needCluster(t, ctx)
	sc := itScenario(t, `metadata: {name: e2e-traefik}
variants:
  - variant: no-prestop
  - variant: graceful-drain
rollouts: 2
traffic: {rate: 300, control: 5s, between: 3s, settle: 3s, target: traefik}
`)
	dir := runDir(t)
	a, err := Run(ctx, sc, Options{Dir: dir, Log: testWriter{t}, Keep: true,
		Testbed: testbed.Options{ModuleDir: moduleDir(), ImageDir: t.TempDir()}})
	if a != nil {
		itCreated = true
	}
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]frontlog.Line{}
	f, err := os.Open(filepath.Join(dir, frontlog.File))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := jsonl.Read(f, frontlog.File, func(l frontlog.Line) error { lines[l.RequestID] = l; return nil }); err != nil {
		t.Fatal(err)
	}
	ef, err := os.Open(filepath.Join(dir, analysis.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	deleted := map[string]time.Time{} // web pod IP → deletion requested
	removed := map[string]time.Time{} // web pod IP → Traefik stopped sending to it
	var worst time.Duration           // the widest a removal was placed
	err = jsonl.Read(ef, analysis.EventsFile, func(e timeline.Event) error {
		switch e.Kind {
		case timeline.KindPodDeletionRequested:
			if strings.HasPrefix(e.Pod, "web-") && e.IP != "" {
				deleted[e.IP] = e.Time
			}
		case timeline.KindFrontRemoved:
			if _, ok := removed[e.IP]; !ok {
				removed[e.IP] = e.Time
			}
			if last, err := time.Parse(time.RFC3339Nano, e.Detail["last_seen"]); err == nil {
				worst = max(worst, e.Time.Sub(last))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) == 0 {
		t.Fatal("no web pod deletion in the timeline")
	}
	for ip, d := range deleted {
		r, ok := removed[ip]
		if !ok {
			t.Errorf("web pod %s, deleted at %s: Traefik's API never showed it stop sending to it", ip, d.Format("15:04:05.000"))
			continue
		}
		t.Logf("web pod %s: Traefik stopped sending to it %s after its deletion", ip, r.Sub(d).Round(time.Millisecond))
	}
	t.Logf("Traefik's stops placed to within %s", worst.Round(time.Millisecond))
	if worst <= 0 || worst > 500*time.Millisecond {
		t.Errorf("a stop of sending placed to within %s; want a reading at least every half second", worst)
	}
	const floor = 5 // the rig's own drops on a used cluster (see TestIntegrationStarvedRig)
	for _, v := range a.Summary.Variants {
		t.Logf("traefik %s: %d drops of %d, classes %v, control %d/%d", v.Variant, v.Drops, v.WindowRequests, v.Classes, v.Control.Failures, v.Control.Requests)
		if v.Control.Failures > 0 || v.Control.Requests == 0 {
			t.Errorf("%s through traefik: control %d failures in %d requests, want a clean control window", v.Variant, v.Control.Failures, v.Control.Requests)
		}
		rf, err := os.Open(filepath.Join(dir, analysis.ResultsFileOf(v.Variant, traffic.HostOrigin)))
		if err != nil {
			t.Fatal(err)
		}
		var n, joined, bad502 int
		upstreams := map[string]int{}
		err = traffic.ReadResults(rf, func(rec traffic.Record) error {
			n++
			l, ok := lines[rec.RequestID()]
			if ok {
				joined++
			}
			if rec.Code == 502 && (!ok || l.Status != 502) {
				bad502++
			}
			if ok && rec.Class.Failed() {
				upstreams[fmt.Sprintf("%s %d", l.Upstream, l.Status)]++
			}
			return nil
		})
		rf.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("traefik %s: %d of %d requests in Traefik's access log; failures by upstream and status: %v", v.Variant, joined, n, upstreams)
		if n == 0 || float64(joined) < 0.95*float64(n) || bad502 > 0 {
			t.Errorf("%s: %d of %d requests joined to Traefik's access log, %d 502s it did not log as 502; want at least 95%% joined and every 502 logged", v.Variant, joined, n, bad502)
		}
		switch v.Variant {
		case "no-prestop":
			if v.Drops == 0 || v.Classes[traffic.Class502] == 0 {
				t.Errorf("no-prestop through traefik: %d drops, classes %v; want drops, 502s among them", v.Drops, v.Classes)
			}
		case "graceful-drain":
			if v.Drops > floor {
				t.Errorf("graceful-drain through traefik: %d drops, classes %v; want at most %d", v.Drops, v.Classes, floor)
			}
		}
	}
}
