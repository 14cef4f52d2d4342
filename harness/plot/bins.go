package plot

import (
	"time"

	"github.com/droprun/droprun/harness/traffic"
)

// BinWidth is the width of every histogram bin: timelines count requests
// per BinWidth, the since-deletion histograms failures per BinWidth.
const BinWidth = 100 * time.Millisecond

// classes is the order classes are stacked in, from the bottom: the
// failures first (so they stand on the axis, where their height reads
// directly), 2xx last.
var classes = append(traffic.Classes()[1:], traffic.Class2xx)

// classIndex maps a class to its place in classes.
var classIndex = func() map[traffic.Class]int {
	m := map[traffic.Class]int{}
	for i, c := range classes {
		m[c] = i
	}
	return m
}()

// indexOf returns c's index in classes. A class droprun does not know
// (never produced by traffic.Classify) counts as traffic.ClassOther.
func indexOf(c traffic.Class) int {
	if i, ok := classIndex[c]; ok {
		return i
	}
	return classIndex[traffic.ClassOther]
}

// nClasses is the number of outcome classes droprun knows.
const nClasses = 10

func init() {
	if len(classes) != nClasses {
		panic("plot: traffic has a class the figures do not know: update nClasses")
	}
}

// counts is one bin: requests per class, indexed like classes.
type counts [nClasses]uint64

// total returns the bin's requests; failures only when failedOnly.
func (c *counts) total(failedOnly bool) uint64 {
	var n uint64
	for i, v := range c {
		if failedOnly && !classes[i].Failed() {
			continue
		}
		n += v
	}
	return n
}

// binOf returns the index of the BinWidth bin holding d: bin k holds
// [k·BinWidth, (k+1)·BinWidth). It floors, so negative offsets work.
func binOf(d time.Duration) int {
	k := d / BinWidth
	if d%BinWidth < 0 {
		k--
	}
	return int(k)
}

// hist is a histogram of requests by class over consecutive BinWidth bins
// of time offsets: Bins[i] holds [(First+i)·BinWidth, (First+i+1)·BinWidth).
type hist struct {
	First int
	Bins  []counts
}

// newHist returns an empty histogram covering offsets [from, to).
func newHist(from, to time.Duration) *hist {
	first, last := binOf(from), binOf(to-1)
	if last < first {
		last = first
	}
	return &hist{First: first, Bins: make([]counts, last-first+1)}
}

// add counts a request of class c at offset d and reports whether d was
// inside the histogram's range.
func (h *hist) add(d time.Duration, c traffic.Class) bool {
	k := binOf(d) - h.First
	if k < 0 || k >= len(h.Bins) {
		return false
	}
	h.Bins[k][indexOf(c)]++
	return true
}

// max returns the tallest bin, all classes or failures only.
func (h *hist) max(failedOnly bool) uint64 {
	var m uint64
	for i := range h.Bins {
		m = max(m, h.Bins[i].total(failedOnly))
	}
	return m
}

// sum returns the requests of each class over all bins.
func (h *hist) sum() counts {
	var s counts
	for i := range h.Bins {
		for j, v := range h.Bins[i] {
			s[j] += v
		}
	}
	return s
}

// sparse is a histogram whose range is not known in advance: bins are
// created as values arrive. Memory grows with the number of distinct
// bins, never with the number of values.
type sparse map[int]*counts

// add counts one value of class c at offset d.
func (s sparse) add(d time.Duration, c traffic.Class) {
	k := binOf(d)
	b := s[k]
	if b == nil {
		b = &counts{}
		s[k] = b
	}
	b[indexOf(c)]++
}

// merge adds o's counts to s.
func (s sparse) merge(o sparse) {
	for k, b := range o {
		for j, v := range b {
			if v == 0 {
				continue
			}
			if s[k] == nil {
				s[k] = &counts{}
			}
			s[k][j] += v
		}
	}
}

// dense returns s as a hist covering at least [from, to), or nil when
// s is empty and from >= to.
func (s sparse) dense(from, to time.Duration) *hist {
	lo, hi := binOf(from), binOf(to-1)
	if from >= to {
		lo, hi = 0, -1
	}
	for k := range s {
		lo, hi = min(lo, k), max(hi, k)
	}
	if hi < lo {
		return nil
	}
	h := &hist{First: lo, Bins: make([]counts, hi-lo+1)}
	for k, b := range s {
		h.Bins[k-lo] = *b
	}
	return h
}
