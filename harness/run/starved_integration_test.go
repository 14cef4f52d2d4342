package run

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/gate"
	"github.com/droprun/droprun/harness/testbed"
)

// TestIntegrationStarvedRig starves the rig on purpose: graceful-drain
// (which drops nothing) at 1000 req/s, 3 rollouts, with a CPU hog (four
// busy loops per core) for 10 s from 2 s into rollout 2. That rollout must
// come out short of CPU (or its drops behind the pods' answers the client
// never received), the row suspect, and `droprun check
// --max-drops-per-rollout 5` inconclusive, not failed or passed, counting
// the drops the table shows; the rollouts without the hog stay clean. The
// hog starves the kind nodes too, so their kube-proxy can fall behind
// graceful-drain's drain and open race windows of its own: drops inside
// them must not fail the gate either. (Measured: one run's starved
// rollout dropped 4,795, every one an excused timeout; a CI run's 9,351,
// 2,353 of them inside race windows; another CI run's 9,208 timeouts with
// the client only 0.25 s behind, and the pods answered all of them.)
func TestIntegrationStarvedRig(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	needCluster(t, ctx)
	sc := itScenario(t, "metadata: {name: starved}\nvariants: [{variant: graceful-drain}]\nrollouts: 3\ntraffic: {rate: 1000}\n")
	hog := &hogAt{w: testWriter{t}, at: "rollout 2/3:", delay: 2 * time.Second, length: 10 * time.Second, t: t}
	defer hog.wait()
	a, err := Run(ctx, sc, Options{Dir: runDir(t), Log: hog, Keep: true,
		Testbed: testbed.Options{ModuleDir: moduleDir(), ImageDir: t.TempDir()}})
	if a != nil {
		itCreated = true
	}
	if err != nil {
		t.Fatal(err)
	}
	if !hog.started() {
		t.Fatal("the hog never started: the run never logged rollout 2")
	}
	v := a.Summary.Variants[0]
	if len(v.Rollouts) != 3 {
		t.Fatalf("%d rollouts, want 3", len(v.Rollouts))
	}
	for _, ro := range v.Rollouts {
		t.Logf("rollout %d: %d dropped of %d (excused %d, %s), rig %s, explained %+v", ro.N, ro.Window.Failures, ro.Window.Requests, ro.Excused, ro.ExcusedWhy, ro.Rig, ro.Explained)
	}
	starved := v.Rollouts[1]
	// The hog shows as the client short of CPU, or, when it starves the
	// nodes more than the client (their CPU weight is lowered), as the
	// pods' answers the client never received behind the drops.
	if short := starved.Rig != nil && starved.Rig.Saturated; !short && (starved.Window.Failures == 0 || v.Unreceived == 0) {
		t.Errorf("rollout 2, with the hog on every core: rig %s, %d dropped, %d of the pods' answers never received; want it short of CPU, or its drops behind lost answers", starved.Rig, starved.Window.Failures, v.Unreceived)
	}
	raced := uint64(0)
	if e := starved.Explained; e != nil {
		raced = e.Explained + e.Cut
	}
	// A cluster that has run many tests drops a few requests of its own
	// at 1000 req/s (3-6 in 15,000 measured here): the limit allows them.
	const floor = 5
	for _, k := range []int{0, 2} {
		if ro := v.Rollouts[k]; ro.Window.Failures > floor || (ro.Rig != nil && ro.Rig.Saturated) {
			t.Errorf("rollout %d, without the hog: %d dropped, rig %s; want clean (at most %d, the rig's floor)", ro.N, ro.Window.Failures, ro.Rig, floor)
		}
	}
	if starved.Window.Failures > 0 && len(v.Suspect) == 0 {
		t.Errorf("graceful-drain dropped %d in a rollout short of CPU and is not suspect", starved.Window.Failures)
	}
	limit := int64(floor)
	r, err := gate.Check(a, gate.Limits{Confidence: 0.95, MaxDropsPerRollout: &limit})
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range r.Results {
		t.Logf("check: %s %s %s: %s", res.Row, res.Check, res.Verdict, res.Message)
		if res.Check != gate.CheckPerRollout || starved.Window.Failures <= floor {
			continue
		}
		// The gate counts what the table shows: the window's failures
		// and those connection reuse masked.
		m := regexp.MustCompile(`rollout 2 dropped ([0-9,]+)`).FindStringSubmatch(res.Message)
		if want := starved.Window.Failures + starved.Window.Masked; m == nil || parseCount(m[1]) != want {
			t.Errorf("the gate's count for rollout 2 (%v) is not the table's %d", m, want)
		}
		if raced > 0 && !strings.Contains(res.Message, "the kind nodes share the rig's CPU") {
			t.Errorf("rollout 2 dropped %d inside race windows and the gate does not say why they decide nothing: %q", raced, res.Message)
		}
	}
	switch got := r.Verdict(); {
	case starved.Window.Failures > floor && got != gate.Inconclusive:
		t.Errorf("check --max-drops-per-rollout %d on the starved run: %s, want inconclusive", floor, got)
	case got == gate.Fail:
		t.Errorf("check --max-drops-per-rollout %d failed graceful-drain, which dropped nothing of its own", floor)
	}
}

func parseCount(s string) uint64 {
	n, _ := strconv.ParseUint(string(bytes.ReplaceAll([]byte(s), []byte(","), nil)), 10, 64)
	return n
}

// hogAt passes a run's log through to w and, delay after the first line
// containing at, keeps every core busy for length with four busy-looping
// processes per core (one per core left the client a third of a core: its
// goroutines waited up to 0.34 s, not starved).
type hogAt struct {
	w             io.Writer
	at            string
	delay, length time.Duration
	t             *testing.T
	once          sync.Once
	mu            sync.Mutex
	cmds          []*exec.Cmd
}

func (h *hogAt) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(h.at)) {
		h.once.Do(func() { time.AfterFunc(h.delay, h.start) })
	}
	return h.w.Write(p)
}

func (h *hogAt) start() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for range 4 * runtime.NumCPU() {
		cmd := exec.Command("timeout", fmt.Sprint(int(h.length.Seconds())), "sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			h.t.Errorf("starting the hog: %v", err)
			return
		}
		h.cmds = append(h.cmds, cmd)
	}
	h.t.Logf("hog: %d busy loops for %s", len(h.cmds), h.length)
}

func (h *hogAt) started() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.cmds) > 0
}

// wait waits for the hog's processes to end (they end by themselves).
func (h *hogAt) wait() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.cmds {
		c.Wait()
	}
}
