package schedlat

import (
	"math"
	"runtime/metrics"
	"time"
)

// Metric is the runtime histogram read.
const Metric = "/sched/latencies:seconds"

// Read returns the histogram now; nil when the runtime has none.
func Read() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: Metric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return s[0].Value.Float64Histogram()
}

// MaxSince bounds the longest wait h recorded since the bucket counts
// prev: the upper edge of the highest bucket whose count grew (its lower
// edge for the open last bucket); 0 when none grew or prev is not h's.
func MaxSince(prev []uint64, h *metrics.Float64Histogram) time.Duration {
	if h == nil || len(prev) != len(h.Counts) {
		return 0
	}
	for i := len(h.Counts) - 1; i >= 0; i-- {
		if h.Counts[i] > prev[i] {
			edge := h.Buckets[i+1]
			if math.IsInf(edge, 1) {
				edge = h.Buckets[i]
			}
			return time.Duration(edge * float64(time.Second))
		}
	}
	return 0
}

// Watch follows the histogram from one Max to the next.
type Watch struct{ prev []uint64 }

// New returns a Watch whose first Max covers the time since New.
func New() *Watch {
	w := &Watch{}
	w.Max()
	return w
}

// Max bounds the longest a runnable goroutine waited for a core since the
// previous Max (or New); 0 without the metric.
func (w *Watch) Max() time.Duration {
	h := Read()
	if h == nil {
		return 0
	}
	d := MaxSince(w.prev, h)
	w.prev = append(w.prev[:0], h.Counts...)
	return d
}
