package schedlat

import (
	"math"
	"runtime/metrics"
	"testing"
	"time"
)

// TestMaxSince: the bound is the upper edge of the highest bucket that
// grew (the lower edge of the open last one); nothing grown, or counts of
// another shape, bound nothing.
func TestMaxSince(t *testing.T) {
	h := &metrics.Float64Histogram{Buckets: []float64{0, 0.001, 0.5, 2, math.Inf(1)}, Counts: []uint64{5, 3, 2, 1}}
	for _, tc := range []struct {
		name string
		prev []uint64
		want time.Duration
	}{
		{"grew up to 0.5-2 s", []uint64{4, 3, 1, 1}, 2 * time.Second},
		{"grew in the open bucket", []uint64{5, 3, 2, 0}, 2 * time.Second},
		{"grew under 1 ms only", []uint64{0, 3, 2, 1}, time.Millisecond},
		{"nothing grew", []uint64{5, 3, 2, 1}, 0},
		{"another shape", []uint64{5, 3}, 0},
	} {
		if got := MaxSince(tc.prev, h); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if Read() == nil {
		t.Fatalf("this runtime has no %s", Metric)
	}
}
