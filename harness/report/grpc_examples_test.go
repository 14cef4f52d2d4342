package report

import (
	"math"
	"testing"
)

// TestShippedGRPC holds "Every gRPC drop accounted for, by measurement"
// of results/README.md (and the README's 99 %) to the shipped gRPC run
// (results/examples/grpc): per dropping row, what the race windows, the
// channels' measured backoff, the close and stale conntrack entries
// explain, the backoff far above its chance with the channels' attempts
// shifted, and the row's share explained by measurement: windows,
// backoff, close and the stale entries a channel's hung attempt shows.
func TestShippedGRPC(t *testing.T) {
	sum := shipped(t, "grpc")
	type split struct {
		drops, race, backoff, cut, conntrack, unexplained uint64
		chance                                            float64 // the backoff's, summed over rollouts
		measured                                          float64 // (race + backoff + cut + conntrack) / drops, in %
	}
	want := map[string]split{
		"no-prestop":         {745, 541, 194, 10, 0, 0, 24.5, 100},
		"grpc-stop":          {575, 435, 140, 0, 0, 0, 20.5, 100},
		"grpc-graceful-stop": {865, 516, 191, 0, 141, 17, 36.1, 98.0},
	}
	for _, v := range sum.Variants {
		w, ok := want[v.Variant]
		if !ok {
			if v.Drops != 0 {
				t.Errorf("%s: %d drops, want none", v.Variant, v.Drops)
			}
			continue
		}
		var got split
		got.drops = v.Drops
		for _, r := range v.Rollouts {
			e := r.Explained
			if e == nil || e.Chance == nil {
				t.Fatalf("%s rollout %d: no explanation with its chance baselines", v.Variant, r.N)
			}
			got.race += e.Explained
			got.backoff += e.Backoff
			got.cut += e.Cut
			got.conntrack += e.Conntrack
			got.unexplained += e.Unexplained
			got.chance += e.Chance.BackoffShifted
		}
		got.chance = math.Round(got.chance*10) / 10
		got.measured = math.Round(1000*float64(got.race+got.backoff+got.cut+got.conntrack)/float64(got.drops)) / 10
		if got != w {
			t.Errorf("%s: %+v, want %+v", v.Variant, got, w)
		}
		if got.race+got.backoff+got.cut+got.conntrack+got.unexplained != got.drops {
			t.Errorf("%s: the split %+v does not add up to its drops", v.Variant, got)
		}
		if got.chance*4 > float64(got.backoff) {
			t.Errorf("%s: backoff %d against %.1f by chance: want at least 4 times chance", v.Variant, got.backoff, got.chance)
		}
	}
}
