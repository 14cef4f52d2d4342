package analysis

import (
	"testing"
	"time"

	"github.com/droprun/droprun/harness/traffic"
)

func TestBinOf(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		d    time.Duration
		want int
	}{
		{0, 0}, {99 * ms, 0}, {100*ms - 1, 0}, {100 * ms, 1}, {250 * ms, 2},
		{-1, -1}, {-100 * ms, -1}, {-100*ms - 1, -2}, {-2 * time.Second, -20},
	} {
		if got := BinOf(c.d); got != c.want {
			t.Errorf("BinOf(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}

func TestHistCountsWhatItIsGiven(t *testing.T) {
	h := NewHist(-2*time.Second, 3*time.Second)
	if h.First != -20 || len(h.Bins) != 50 {
		t.Fatalf("range: first bin %d, %d bins; want -20, 50", h.First, len(h.Bins))
	}
	add := func(d time.Duration, c traffic.Class, n int) {
		for range n {
			if !h.Add(d, c) {
				t.Fatalf("Add(%v) refused inside the range", d)
			}
		}
	}
	add(-2*time.Second, traffic.Class2xx, 3)            // first bin
	add(1050*time.Millisecond, traffic.ClassRefused, 7) // bin 10
	add(1099*time.Millisecond, traffic.ClassTimeout, 2) // bin 10 too
	add(2999*time.Millisecond, traffic.Class2xx, 1)     // last bin
	if h.Add(3*time.Second, traffic.Class2xx) || h.Add(-2*time.Second-1, traffic.Class2xx) {
		t.Error("Add accepted an offset outside the range")
	}
	b := h.Bins[10-h.First]
	if b[IndexOf(traffic.ClassRefused)] != 7 || b[IndexOf(traffic.ClassTimeout)] != 2 || b.Total(false) != 9 || b.Total(true) != 9 {
		t.Errorf("bin 10 = %v, want 7 refused and 2 timeouts", b)
	}
	if h.Bins[0][IndexOf(traffic.Class2xx)] != 3 || h.Bins[49][IndexOf(traffic.Class2xx)] != 1 {
		t.Error("the edge bins did not count their requests")
	}
	s := h.Sum()
	if s.Total(false) != 13 || s.Total(true) != 9 {
		t.Errorf("sum: %d requests, %d failures; want 13, 9", s.Total(false), s.Total(true))
	}
	if h.Max(false) != 9 || h.Max(true) != 9 {
		t.Errorf("max: %d, %d; want 9, 9", h.Max(false), h.Max(true))
	}
}

func TestSparse(t *testing.T) {
	s := Sparse{}
	s.Add(1234*time.Millisecond, traffic.ClassEOF)
	s.Add(1299*time.Millisecond, traffic.ClassEOF)
	s.Add(-50*time.Millisecond, traffic.ClassReset)
	o := Sparse{}
	o.Add(1200*time.Millisecond, traffic.Class503)
	s.Merge(o)
	h := s.Dense(0, 0)
	if h.First != -1 || len(h.Bins) != 14 {
		t.Fatalf("dense: first %d, %d bins; want -1, 14", h.First, len(h.Bins))
	}
	b := h.Bins[12-h.First]
	if b[IndexOf(traffic.ClassEOF)] != 2 || b[IndexOf(traffic.Class503)] != 1 {
		t.Errorf("bin 12 = %v", b)
	}
	if h.Bins[0][IndexOf(traffic.ClassReset)] != 1 {
		t.Errorf("bin -1 = %v", h.Bins[0])
	}
	if (Sparse{}).Dense(0, 0) != nil {
		t.Error("an empty sparse histogram should have no dense form")
	}
}
