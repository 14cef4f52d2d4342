package analysis

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/droprun/droprun/harness/frontlog"
	"github.com/droprun/droprun/harness/jsonl"
	"github.com/droprun/droprun/harness/timeline"
)

// frontHop is what a front's access log says of one request: the front
// pod that handled it and the IP of the pod it sent it to ("" for none).
type frontHop struct{ pod, ip string }

// frontLog is what the analysis keeps of frontlog.jsonl, bounded by the
// failures and one bit per request: the lines in which the front did not
// answer 2xx, by request ID (the client's failures are joined to them),
// and which requests the front did answer 2xx. A request the client
// failed and the front answered 2xx was no shutdown's refusal: the front
// read it after the client gave up, or its answer was lost on the way
// back (WhyFrontAnswered).
type frontLog struct {
	failed   map[string]frontHop
	answered idSet
	// sent is, per front stop (a front.removed event), the latest send
	// to that pod the front pod logged within the stop's bracket.
	sent map[frontStop]time.Time
}

// frontStop is one front pod's stop of sending to one pod IP, as its
// readings (its API, or its DNS lookups) placed it: between lastSeen and
// at (timeline.Event.FrontChange).
type frontStop struct {
	front, ip string
	at        int64 // Unix ns: a time.Time is no map key
}

// sentBefore is the latest send the front logged to the pod of stop
// within its bracket: the stop came after it. Zero when none.
func (f *frontLog) sentBefore(front, ip string, at time.Time) time.Time {
	if f == nil {
		return time.Time{}
	}
	return f.sent[frontStop{front, ip, at.UnixNano()}]
}

// hop is the failed line of request id, if the front logged one.
func (f *frontLog) hop(id string) (frontHop, bool) {
	if f == nil {
		return frontHop{}, false
	}
	h, ok := f.failed[id]
	return h, ok
}

// answeredOK reports whether the front answered request id 2xx.
func (f *frontLog) answeredOK(id string) bool {
	return f != nil && id != "" && f.answered.has(id)
}

// readFrontLog reads frontlog.jsonl; nil without the file. Besides the
// failures and answers, it finds for each front stop among events the
// front's last logged send to the pod within the stop's bracket: a front
// that sent a request to a pod at T had not stopped sending to it before
// T, so the stop is placed from the later of that send and the last
// reading that still had the pod (a read that stalls while the front
// applies a change widens the readings' bracket, not the sends').
func readFrontLog(dir string, sum *Summary, events []timeline.Event) (*frontLog, error) {
	f, err := os.Open(filepath.Join(dir, frontlog.File))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fl := &frontLog{failed: map[string]frontHop{}, sent: map[frontStop]time.Time{}}
	stops := frontStops(events)
	err = jsonl.Read(f, frontlog.File, func(l frontlog.Line) error {
		host, _, _ := net.SplitHostPort(l.Upstream)
		for _, st := range stops[frontHop{l.Pod, host}] {
			key := frontStop{l.Pod, host, st.t.UnixNano()}
			if l.Start.After(st.lastSeen) && l.Start.Before(st.t) && l.Start.After(fl.sent[key]) {
				fl.sent[key] = l.Start
			}
		}
		if l.RequestID == "" {
			return nil
		}
		if l.Status >= 200 && l.Status < 300 {
			fl.answered.add(l.RequestID)
			return nil
		}
		fl.failed[l.RequestID] = frontHop{pod: l.Pod, ip: host}
		return nil
	})
	if err := warnTruncated(err, sum); err != nil {
		return nil, err
	}
	return fl, nil
}

// frontStops is every front stop among events with its bracket, by
// (front pod, pod IP).
func frontStops(events []timeline.Event) map[frontHop][]routeStep {
	out := map[frontHop][]routeStep{}
	for _, e := range events {
		if e.Kind != timeline.KindFrontRemoved {
			continue
		}
		at, last := e.FrontChange()
		k := frontHop{e.Pod, e.IP}
		out[k] = append(out[k], routeStep{t: at, removed: true, lastSeen: last})
	}
	return out
}

// idSet is a set of request IDs. droprun's IDs are prefix-N, N counting
// from 1 in base 36 (traffic's withRequestIDs), so each prefix keeps a
// bitset of its Ns: one bit per request. Any other ID is kept whole.
type idSet struct {
	bits  map[string][]uint64
	other map[string]bool
}

// maxIDBits bounds one prefix's bitset (16 MiB): an N beyond it is kept
// whole, so a stray line cannot make the set allocate without bound.
const maxIDBits = 1 << 27

func splitID(id string) (string, uint64, bool) {
	i := strings.LastIndexByte(id, '-')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.ParseUint(id[i+1:], 36, 64)
	if err != nil || n >= maxIDBits {
		return "", 0, false
	}
	return id[:i], n, true
}

func (s *idSet) add(id string) {
	prefix, n, ok := splitID(id)
	if !ok {
		if s.other == nil {
			s.other = map[string]bool{}
		}
		s.other[id] = true
		return
	}
	if s.bits == nil {
		s.bits = map[string][]uint64{}
	}
	b := s.bits[prefix]
	if w := int(n / 64); w >= len(b) {
		b = append(b, make([]uint64, w+1-len(b)+len(b)/2)...) // grow by half again
	}
	b[n/64] |= 1 << (n % 64)
	s.bits[prefix] = b
}

func (s *idSet) has(id string) bool {
	prefix, n, ok := splitID(id)
	if !ok {
		return s.other[id]
	}
	b := s.bits[prefix]
	return int(n/64) < len(b) && b[n/64]&(1<<(n%64)) != 0
}
