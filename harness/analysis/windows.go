package analysis

import (
	"sort"
	"time"

	"github.com/droprun/droprun/harness/traffic"
)

// Phase says what a stretch of traffic time was for.
type Phase string

// The phases of one variant's traffic, in time order: control, then per
// rollout its window and its tail.
const (
	// PhaseControl is the steady state before the first rollout: any
	// failure here is the rig's own floor, not a rollout's.
	PhaseControl Phase = "control"
	// PhaseRollout runs from a rollout's start until its old pods are gone
	// plus the settle time. Failures here count against the rollout.
	PhaseRollout Phase = "rollout"
	// PhaseTail runs from a rollout window's end to the next rollout (or
	// the end of traffic). Failures here are the conntrack tail or
	// background noise, reported apart, never mixed into the next rollout.
	PhaseTail Phase = "tail"
)

// Window is one stretch of a variant's traffic. Rollout is 1-based for
// rollout and tail windows, 0 for control.
type Window struct {
	Phase   Phase     `json:"phase"`
	Rollout int       `json:"rollout,omitempty"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
}

// Tally counts requests by outcome class.
type Tally struct {
	Requests uint64                   `json:"requests"`
	Failures uint64                   `json:"failures"`
	Classes  map[traffic.Class]uint64 `json:"classes"`
	// Masked counts the requests served only because net/http retried
	// them on another connection after a failure the client never saw
	// (traffic.Record.Masked): they are 2xx in Classes and not Failures,
	// since the client was served, but they are failures it would have
	// seen without the retry. MaskedClasses counts them by the class of
	// the failure each retry hid. Absent in runs without hidden retries,
	// and in runs recorded before droprun saw them.
	Masked        uint64                   `json:"masked,omitempty"`
	MaskedClasses map[traffic.Class]uint64 `json:"maskedClasses,omitempty"`
	// FrontResent counts the requests a front resent after the pod it
	// picked did not take them (traffic.frontRetries, the retries in its
	// access log), and FrontMasked those of them the
	// client got a 2xx for: served, so not Failures, but refusals a client
	// would have seen without the front's retries. Absent without them.
	FrontResent uint64 `json:"frontResent,omitempty"`
	FrontMasked uint64 `json:"frontMasked,omitempty"`
}

// addResent counts one request the front resent, served or not.
func (t *Tally) addResent(served bool) {
	t.FrontResent++
	if served {
		t.FrontMasked++
	}
}

// Add counts one request.
func (t *Tally) Add(c traffic.Class) {
	if t.Classes == nil {
		t.Classes = map[traffic.Class]uint64{}
	}
	t.Requests++
	t.Classes[c]++
	if c.Failed() {
		t.Failures++
	}
}

// AddRecord counts one request, and whether it was masked.
func (t *Tally) AddRecord(r traffic.Record) {
	t.Add(r.Class)
	if r.Masked() {
		if t.MaskedClasses == nil {
			t.MaskedClasses = map[traffic.Class]uint64{}
		}
		t.Masked++
		t.MaskedClasses[r.Hidden]++
	}
}

// Merge adds o's counts to t.
func (t *Tally) Merge(o Tally) {
	t.Classes = addCounts(t.Classes, o.Classes)
	t.MaskedClasses = addCounts(t.MaskedClasses, o.MaskedClasses)
	t.Requests += o.Requests
	t.Failures += o.Failures
	t.Masked += o.Masked
	t.FrontResent += o.FrontResent
	t.FrontMasked += o.FrontMasked
}

// Timeline assigns requests to windows by the time they were sent.
// Windows must not overlap; requests outside every window are counted in
// Outside.
type Timeline struct {
	Windows []Window
	Tallies []Tally
	Outside Tally
}

// NewTimeline returns a Timeline over windows (sorted by start).
func NewTimeline(windows []Window) *Timeline {
	w := append([]Window(nil), windows...)
	sort.Slice(w, func(i, j int) bool { return w[i].Start.Before(w[j].Start) })
	return &Timeline{Windows: w, Tallies: make([]Tally, len(w))}
}

// Find returns the index of the window holding t, or -1.
func (tl *Timeline) Find(t time.Time) int {
	i := sort.Search(len(tl.Windows), func(i int) bool { return tl.Windows[i].End.After(t) })
	if i < len(tl.Windows) && !t.Before(tl.Windows[i].Start) {
		return i
	}
	return -1
}

// AddRecord counts r in the window it was sent in (Tally.AddRecord) and
// returns the window's index (-1 for none).
func (tl *Timeline) AddRecord(r traffic.Record) int {
	i := tl.Find(r.Time)
	if i < 0 {
		tl.Outside.AddRecord(r)
		return -1
	}
	tl.Tallies[i].AddRecord(r)
	return i
}

// addResent counts, in window i (-1: outside every window), a request
// the front resent; served when the client got a 2xx.
func (tl *Timeline) addResent(i int, served bool) {
	if i < 0 {
		tl.Outside.addResent(served)
		return
	}
	tl.Tallies[i].addResent(served)
}

// addCounts adds src's counts to dst and returns dst, made when it is nil
// and src counts anything (a map left nil stays absent from the JSON).
func addCounts[K comparable](dst, src map[K]uint64) map[K]uint64 {
	for k, n := range src {
		if dst == nil {
			dst = make(map[K]uint64, len(src))
		}
		dst[k] += n
	}
	return dst
}
