package run

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/testbed"
)

var cleanRates = flag.String("run.rates", "1000,1500,2000,2500,3000", "BenchmarkCleanRate: the rates to try, in req/s, lowest first")

// BenchmarkCleanRate finds the highest rate at which this machine still
// measures clean: at each rate, no-prestop and graceful-drain, one rollout
// each, on the integration cluster. A rate is clean when both control
// windows have no failure, the client held 95% of the rate, no rollout ran
// short of CPU, no timeout had to be excused, no-prestop dropped (the race
// is reproduced), graceful-drain dropped at most 3, and the pods answered
// the 2xx the client received (more only by answers the client saw fail,
// fewer only by the requests in flight when pods died). It prints one line
// per rate, with why a rate was not clean, and reports the highest clean
// one as clean-req/s (0: none; when the last rate tried is clean, it says
// the ceiling is higher). It stops at the first rate that is not clean. `make bench` runs it; it needs an engine
// and the node image, like the integration tests.
func BenchmarkCleanRate(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	needCluster(b, ctx)
	var rates []int
	for _, f := range strings.Split(*cleanRates, ",") {
		r, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || r <= 0 {
			b.Fatalf("-run.rates %q: %q is not a rate", *cleanRates, f)
		}
		rates = append(rates, r)
	}
	for range b.N {
		best := 0
		for _, rate := range rates {
			sc := itScenario(b, fmt.Sprintf(`metadata: {name: clean-rate-%d}
variants:
  - variant: no-prestop
  - variant: graceful-drain
rollouts: 1
traffic: {rate: %d, control: 10s, between: 5s, settle: 5s, balance: 10s}
`, rate, rate))
			dir := filepath.Join(b.TempDir(), "run")
			a, err := Run(ctx, sc, Options{Dir: dir, Log: testWriter{b}, Keep: true,
				Testbed: testbed.Options{ModuleDir: moduleDir(), ImageDir: b.TempDir()}})
			if a != nil {
				itCreated = true
			}
			if err != nil {
				b.Fatal(err)
			}
			why := unclean(a.Summary)
			verdict := "clean"
			if len(why) > 0 {
				verdict = "not clean: " + strings.Join(why, "; ")
			}
			fmt.Fprintf(os.Stdout, "clean rate: %5d req/s: %s\n", rate, verdict)
			fmt.Fprintf(os.Stdout, "  host conntrack after it: %s\n", hostConntrack())
			for _, v := range a.Summary.Variants {
				fmt.Fprintf(os.Stdout, "  %-15s drops %d / %d, control %d/%d, excused %d, saturated %d, rate %.0f/%.0f\n",
					v.Variant, v.Drops, v.WindowRequests, v.Control.Failures, v.Control.Requests, v.Excused, v.SaturatedRollouts, v.Client.AchievedRate, v.Client.AskedRate)
			}
			if len(why) > 0 {
				break
			}
			best = rate
		}
		if best == rates[len(rates)-1] {
			fmt.Fprintf(os.Stdout, "clean rate: every rate tried was clean: the highest clean rate is %d req/s or more (try higher with -args -run.rates)\n", best)
		}
		b.ReportMetric(float64(best), "clean-req/s")
	}
}

// hostConntrack says how full the host's conntrack table is, and how
// many entries it dropped or evicted (the clean rate's known ceiling: every
// request leaves a TIME_WAIT entry for 120 s).
func hostConntrack() string {
	read := func(name string) string {
		b, err := os.ReadFile("/proc/sys/net/netfilter/" + name)
		if err != nil {
			return "?"
		}
		return strings.TrimSpace(string(b))
	}
	s := fmt.Sprintf("%s of %s entries", read("nf_conntrack_count"), read("nf_conntrack_max"))
	if fs, err := procfs.NewFS("/proc"); err == nil {
		if st, err := fs.ConntrackStat(); err == nil {
			var drop, early, full uint64
			for _, c := range st {
				drop, early, full = drop+c.Drop, early+c.EarlyDrop, full+c.InsertFailed
			}
			s += fmt.Sprintf(", since boot %d dropped, %d early-dropped, %d inserts failed", drop, early, full)
		}
	}
	return s
}

// unclean lists why a no-prestop/graceful-drain run did not measure clean.
func unclean(sum *analysis.Summary) []string {
	var why []string
	for _, v := range sum.Variants {
		if v.Control.Failures > 0 {
			why = append(why, fmt.Sprintf("%s control %d failures", v.Variant, v.Control.Failures))
		}
		if v.Client.AchievedRate < 0.95*v.Client.AskedRate {
			why = append(why, fmt.Sprintf("%s client %.0f of %.0f req/s", v.Variant, v.Client.AchievedRate, v.Client.AskedRate))
		}
		if v.SaturatedRollouts > 0 || v.Excused > 0 {
			why = append(why, fmt.Sprintf("%s short of CPU in %d rollouts, %d timeouts excused", v.Variant, v.SaturatedRollouts, v.Excused))
		}
		// The pods' 2xx equal the client's, exceed them only by answers
		// hidden behind the client's own failures (a pod killed mid-answer),
		// or fall short only by what the pods had in flight as they died.
		sv := v.Server
		if sv == nil {
			why = append(why, v.Variant+" has no pods' view")
		} else if got := uint64(max(sv.PodsAnswered2xx, 0)); got+uint64(sv.InFlightAtExit) < sv.ClientGot2xx || got > sv.ClientGot2xx+v.Drops+v.Tail.Failures {
			why = append(why, fmt.Sprintf("%s: the pods answered %d 2xx, the client got %d", v.Variant, got, sv.ClientGot2xx))
		}
		switch v.Builtin {
		case "no-prestop":
			if v.RolloutsWithDrops != len(v.Rollouts) {
				why = append(why, "no-prestop did not drop in every rollout")
			}
		case "graceful-drain":
			if v.Drops > 3 {
				why = append(why, fmt.Sprintf("graceful-drain dropped %d", v.Drops))
			}
		}
	}
	return why
}

var observerCells = flag.String("run.observers", "nodeport/host,gateway/host,traefik/host,caddy/host,nodeport/pods,gateway/pods,traefik/pods,caddy/pods",
	"BenchmarkObserverShare: the target/source cells to measure")

// BenchmarkObserverShare measures what droprun's observers cost the
// machine: for each target and load source (-run.observers), a control
// window of 20 s at 500 req/s (graceful-drain, one rollout) run bare
// (Options.Bare: only the timeline's informers and the rig sampler) and
// with every observer, and the host's mean busy share over each control
// window (the rig's samples). Each cell runs bare, full, full, bare: two
// differences, whose mean is the observers' share of the machine outside
// rollouts (issue 37's target: 10 % or less) and whose spread says how
// much the control windows' own noise moves it. One unmeasured run first
// lets a new cluster settle (a bare arm right after the cluster's
// creation read 8 points busier than the full one after it). `make bench`
// runs it; it needs an engine and the node image, like the integration
// tests, and a quiet machine.
func BenchmarkObserverShare(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
	defer cancel()
	needCluster(b, ctx)
	busy := func(target, source string, bare bool) float64 {
		gen := ""
		if source == "pods" {
			gen = ", generators: {from: pods}"
		}
		sc := itScenario(b, fmt.Sprintf(`metadata: {name: observers-%s-%s}
variants:
  - variant: graceful-drain
rollouts: 1
traffic: {rate: 500, target: %s, control: 20s, between: 3s, settle: 3s%s}
`, target, source, target, gen))
		a, err := Run(ctx, sc, Options{Dir: filepath.Join(b.TempDir(), "run"), Log: testWriter{b}, Keep: true, Bare: bare,
			Testbed: testbed.Options{ModuleDir: moduleDir(), ImageDir: b.TempDir()}})
		if a != nil {
			itCreated = true
		}
		if err != nil {
			b.Fatal(err)
		}
		v := a.Summary.Variants[0]
		if v.ControlRig == nil || v.ControlRig.Samples == 0 {
			b.Fatalf("%s/%s: no rig sample in the control window", target, source)
		}
		return v.ControlRig.HostBusyMean
	}
	var cells [][2]string
	for _, cell := range strings.Split(*observerCells, ",") {
		target, source, ok := strings.Cut(strings.TrimSpace(cell), "/")
		if !ok || (source != "host" && source != "pods") {
			b.Fatalf("-run.observers: %q is not TARGET/host or TARGET/pods", cell)
		}
		cells = append(cells, [2]string{target, source})
	}
	var worst float64
	for range b.N {
		busy(cells[0][0], cells[0][1], false) // the settling run
		for _, c := range cells {
			bare1, full1, full2, bare2 := busy(c[0], c[1], true), busy(c[0], c[1], false), busy(c[0], c[1], false), busy(c[0], c[1], true)
			d1, d2 := full1-bare1, full2-bare2
			share := (d1 + d2) / 2
			worst = max(worst, share)
			fmt.Fprintf(os.Stdout, "observers: %-9s from %-4s at 500 req/s: host busy bare %4.1f %% and %4.1f %%, with every observer %4.1f %% and %4.1f %%: the observers' share %+5.1f %% of the machine (the two pairs: %+.1f, %+.1f)\n",
				c[0], c[1], 100*bare1, 100*bare2, 100*full1, 100*full2, 100*share, 100*d1, 100*d2)
		}
	}
	b.ReportMetric(100*worst, "worst-observer-%")
}
