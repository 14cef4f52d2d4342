package analysis

import (
	"time"

	"github.com/droprun/droprun/harness/traffic"
)

// BinWidth is the width of every histogram bin: timelines count requests
// per BinWidth, the since-deletion histograms failures per BinWidth.
const BinWidth = 100 * time.Millisecond

// ClassOrder is the order classes are stacked in, from the bottom: the
// failures first, in the catalogue's order (so they stand on the axis,
// where their height reads directly), 2xx last.
var ClassOrder = func() []traffic.Class {
	var failed, served []traffic.Class
	for _, ci := range traffic.Catalogue() {
		if ci.Class.Failed() {
			failed = append(failed, ci.Class)
		} else {
			served = append(served, ci.Class)
		}
	}
	return append(failed, served...)
}()

// classIndex maps a class to its place in classes.
var classIndex = func() map[traffic.Class]int {
	m := map[traffic.Class]int{}
	for i, c := range ClassOrder {
		m[c] = i
	}
	return m
}()

// IndexOf returns c's index in classes. A class droprun does not know
// (never produced by traffic.Classify) counts as traffic.ClassOther.
func IndexOf(c traffic.Class) int {
	if i, ok := classIndex[c]; ok {
		return i
	}
	return classIndex[traffic.ClassOther]
}

// NClasses is the number of outcome classes droprun knows.
const NClasses = traffic.NClasses

// Counts is one bin: requests per class, indexed like classes.
type Counts [NClasses]uint64

// Total returns the bin's requests; failures only when failedOnly.
func (c *Counts) Total(failedOnly bool) uint64 {
	var n uint64
	for i, v := range c {
		if failedOnly && !ClassOrder[i].Failed() {
			continue
		}
		n += v
	}
	return n
}

// BinOf returns the index of the BinWidth bin holding d: bin k holds
// [k·BinWidth, (k+1)·BinWidth). It floors, so negative offsets work.
func BinOf(d time.Duration) int {
	k := d / BinWidth
	if d%BinWidth < 0 {
		k--
	}
	return int(k)
}

// Hist is a histogram of requests by class over consecutive BinWidth bins
// of time offsets: Bins[i] holds [(First+i)·BinWidth, (First+i+1)·BinWidth).
type Hist struct {
	First int
	Bins  []Counts
}

// NewHist returns an empty histogram covering offsets [from, to).
func NewHist(from, to time.Duration) *Hist {
	first, last := BinOf(from), BinOf(to-1)
	if last < first {
		last = first
	}
	return &Hist{First: first, Bins: make([]Counts, last-first+1)}
}

// Add counts a request of class c at offset d and reports whether d was
// inside the histogram's range.
func (h *Hist) Add(d time.Duration, c traffic.Class) bool {
	k := BinOf(d) - h.First
	if k < 0 || k >= len(h.Bins) {
		return false
	}
	h.Bins[k][IndexOf(c)]++
	return true
}

// Max returns the tallest bin, all classes or failures only.
func (h *Hist) Max(failedOnly bool) uint64 {
	var m uint64
	for i := range h.Bins {
		m = max(m, h.Bins[i].Total(failedOnly))
	}
	return m
}

// Sum returns the requests of each class over all bins.
func (h *Hist) Sum() Counts {
	var s Counts
	for i := range h.Bins {
		for j, v := range h.Bins[i] {
			s[j] += v
		}
	}
	return s
}

// Sparse is a histogram whose range is not known in advance: bins are
// created as values arrive. Memory grows with the number of distinct
// bins, never with the number of values.
type Sparse map[int]*Counts

// Add counts one value of class c at offset d.
func (s Sparse) Add(d time.Duration, c traffic.Class) {
	k := BinOf(d)
	b := s[k]
	if b == nil {
		b = &Counts{}
		s[k] = b
	}
	b[IndexOf(c)]++
}

// Merge adds o's counts to s.
func (s Sparse) Merge(o Sparse) {
	for k, b := range o {
		for j, v := range b {
			if v == 0 {
				continue
			}
			if s[k] == nil {
				s[k] = &Counts{}
			}
			s[k][j] += v
		}
	}
}

// Dense returns s as a hist covering at least [from, to), or nil when
// s is empty and from >= to.
func (s Sparse) Dense(from, to time.Duration) *Hist {
	lo, hi := BinOf(from), BinOf(to-1)
	if from >= to {
		lo, hi = 0, -1
	}
	for k := range s {
		lo, hi = min(lo, k), max(hi, k)
	}
	if hi < lo {
		return nil
	}
	h := &Hist{First: lo, Bins: make([]Counts, hi-lo+1)}
	for k, b := range s {
		h.Bins[k-lo] = *b
	}
	return h
}
