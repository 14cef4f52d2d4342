package analysis

import (
	"errors"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/droprun/droprun/harness/frontlog"
	"github.com/droprun/droprun/harness/jsonl"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

// frontHop is what a front's access log says of one request: the front
// pod that handled it and the IP of the pod it sent it to ("" for none);
// for a request it failed with an error it logged, what the pod did to
// the front's request (the error classified as the client's are).
type frontHop struct {
	pod, ip string
	class   traffic.Class
}

// frontLog is what the analysis keeps of frontlog.jsonl, bounded by the
// failures, the resent requests and 4 bytes per request: the lines in
// which the front did not answer 2xx, by request ID (the client's
// failures are joined to them), the requests it resent, and when the
// front ended each 2xx answer. A request the client failed
// and the front answered 2xx was no shutdown's refusal: the front
// answered it after the client's request had failed (WhyFrontLate), or
// before, and the answer was lost on the way back (WhyFrontLost).
type frontLog struct {
	failed   map[string]frontHop
	answered answerTimes
	// resent is how many times the front resent each request it resent
	// at all (frontlog.Line.Retries), by request ID.
	resent map[string]int
	// sent is, per front stop (a front.removed event), the latest send
	// to that pod the front pod logged within the stop's bracket; and,
	// through a front that picks its pods in turn, stopped is when its
	// picks of the other pods show it had stopped (roundRobin).
	sent    map[frontStop]time.Time
	stopped map[frontStop]time.Time
	// inBracket is, per front stop, the starts of the front pod's
	// requests to any pod inside the stop's bracket, at most maxPicks:
	// those it might have sent to the stopped pod (startedIn).
	inBracket map[frontStop][]time.Time
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

// stoppedBy is when the front's picks of its other pods show it had
// stopped sending to the pod of stop (roundRobin). Zero when they do not.
func (f *frontLog) stoppedBy(front, ip string, at time.Time) time.Time {
	if f == nil {
		return time.Time{}
	}
	return f.stopped[frontStop{front, ip, at.UnixNano()}]
}

// startedIn is how many requests (at most maxPicks) the front pod
// started after from and by by, within the bracket its readings gave the
// stop at at: those it might have sent to the stopped pod. -1 without an
// access log.
func (f *frontLog) startedIn(front, ip string, at, from, by time.Time) int {
	if f == nil {
		return -1
	}
	n := 0
	for _, s := range f.inBracket[frontStop{front, ip, at.UnixNano()}] {
		if s.After(from) && !s.After(by) {
			n++
		}
	}
	return n
}

// hop is the failed line of request id, if the front logged one.
func (f *frontLog) hop(id string) (frontHop, bool) {
	if f == nil {
		return frontHop{}, false
	}
	h, ok := f.failed[id]
	return h, ok
}

// resends is how many times the front resent request id
// (0: it sent it once, or logged no line for it).
func (f *frontLog) resends(id string) int {
	if f == nil {
		return 0
	}
	return f.resent[id]
}

// anyResent reports whether the front resent any request: only then is a
// request's ID worth looking up for it.
func (f *frontLog) anyResent() bool { return f != nil && len(f.resent) > 0 }

// answeredOK reports whether the front answered request id 2xx.
func (f *frontLog) answeredOK(id string) bool {
	_, ok := f.answeredAt(id)
	return ok
}

// answeredAt is when the front ended its 2xx answer to request id, on
// the front pod's node's clock; false when it did not answer it 2xx.
func (f *frontLog) answeredAt(id string) (time.Time, bool) {
	if f == nil || id == "" {
		return time.Time{}, false
	}
	return f.answered.end(id)
}

// readFrontLog reads frontlog.jsonl; nil without the file. Besides the
// failures and answers, it finds for each front stop among events the
// front's last logged send to the pod within the stop's bracket: a front
// that sent a request to a pod at T had not stopped sending to it before
// T, so the stop is placed from the later of that send and the last
// reading that still had the pod (a read that stalls while the front
// applies a change widens the readings' bracket, not the sends'). With
// rotation set (path.Proxy.RoundRobin), the front's picks of its other
// pods place the stop's late end too (roundRobin).
func readFrontLog(dir string, sum *Summary, events []timeline.Event, rotation time.Duration) (*frontLog, error) {
	f, err := runfile.OpenRaw(dir, runfile.FrontLogFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fl := &frontLog{failed: map[string]frontHop{}, resent: map[string]int{}, sent: map[frontStop]time.Time{}, inBracket: map[frontStop][]time.Time{}}
	brackets := map[string][]frontBracket{} // front pod → its stops
	for k, steps := range frontStops(events) {
		for _, st := range steps {
			brackets[k.pod] = append(brackets[k.pod], frontBracket{frontStop{k.pod, k.ip, st.t.UnixNano()}, st.lastSeen, st.t})
		}
	}
	var rr *roundRobin
	if rotation > 0 {
		rr = newRoundRobin(events, rotation)
	}
	err = jsonl.Read(f, runfile.FrontLogFile, func(l frontlog.Line) error {
		host, _, _ := net.SplitHostPort(l.Upstream)
		for _, b := range brackets[l.Pod] {
			if !l.Start.After(b.from) || l.Start.After(b.to) {
				continue
			}
			if len(fl.inBracket[b.key]) < maxPicks {
				fl.inBracket[b.key] = append(fl.inBracket[b.key], l.Start)
			}
			if b.key.ip == host && l.Start.Before(b.to) && l.Start.After(fl.sent[b.key]) {
				fl.sent[b.key] = l.Start
			}
		}
		rr.pick(l, host)
		if l.RequestID == "" {
			return nil
		}
		if l.Retries > 0 {
			fl.resent[l.RequestID] = l.Retries
		}
		if l.Status >= 200 && l.Status < 300 {
			fl.answered.add(l.RequestID, l.Start.Add(l.Duration))
			return nil
		}
		h := frontHop{pod: l.Pod, ip: host}
		if l.UpstreamError != "" {
			h.class = traffic.Classify(0, l.UpstreamError)
		}
		fl.failed[l.RequestID] = h
		return nil
	})
	if err := warnTruncated(err, sum); err != nil {
		return nil, err
	}
	fl.stopped = rr.stops()
	return fl, nil
}

// roundRobin places the late end of a front's stops from its picks, for a
// front that picks its pods in turn (Traefik's weighted round robin, every
// weight 1): each pod it can send to once a round, in an order that may
// change from round to round, and a new first round whenever it applies a
// new list of pods, at most once per rotation. Between two picks of a pod
// it still had, it picked at most 2(n-1) others, n the most pods it had at
// once (or picked within the bracket), and at most 3(n-1) across one new
// list; so within a rotation, 3n-2 picks of others after its last pick of
// the pod show it had stopped by the last of them. A line's pick lies
// between its start, when the front read the request, and
// frontlog.Line.Picked (its end, when the log does not say when its
// upstream part began); only lines started after every pick of the pod
// (the latest Picked of its sends) and after the last reading that still
// had it count: the pod could be picked then (a pod once stopped is never
// picked again).
type roundRobin struct {
	rotation time.Duration
	most     map[string]int      // front pod → the most pods it had at once
	stopsOf  map[string][]rrStop // front pod → its stops
	// last is the latest Picked of a send to the stop's pod within its
	// bracket; others the front pod's sends to other pods there, at most
	// maxPicks.
	last   map[frontStop]time.Time
	others map[frontStop][]rrPick
}

// rrPick is one send to another pod: its line's start, Picked and pod IP.
type rrPick struct {
	start, picked time.Time
	ip            string
}

// rrStop is one front stop and its readings' bracket.
type rrStop struct {
	key          frontStop
	lastSeen, at time.Time
}

// maxPicks bounds the picks kept per stop (a bracket is at most a second
// or two of one front pod's requests).
const maxPicks = 1 << 14

// newRoundRobin indexes the front stops among events by front pod, and
// each front pod's most pods at once from its readings.
func newRoundRobin(events []timeline.Event, rotation time.Duration) *roundRobin {
	rr := &roundRobin{rotation: rotation, most: map[string]int{}, stopsOf: map[string][]rrStop{},
		last: map[frontStop]time.Time{}, others: map[frontStop][]rrPick{}}
	sets := map[string]map[string]bool{}
	for _, e := range events {
		switch e.Kind {
		case timeline.KindFrontWatching:
			sets[e.Pod] = map[string]bool{}
			for ip := range strings.FieldsSeq(e.Detail["servers"]) {
				sets[e.Pod][ip] = true
			}
		case timeline.KindFrontAdded:
			if sets[e.Pod] == nil {
				sets[e.Pod] = map[string]bool{}
			}
			sets[e.Pod][e.IP] = true
		case timeline.KindFrontRemoved:
			delete(sets[e.Pod], e.IP)
			at, last := e.FrontChange()
			rr.stopsOf[e.Pod] = append(rr.stopsOf[e.Pod], rrStop{frontStop{e.Pod, e.IP, at.UnixNano()}, last, at})
			continue
		default:
			continue
		}
		rr.most[e.Pod] = max(rr.most[e.Pod], len(sets[e.Pod]))
	}
	return rr
}

// pick adds one line of the front's log, sent to host.
func (rr *roundRobin) pick(l frontlog.Line, host string) {
	if rr == nil || host == "" {
		return
	}
	end := l.Picked()
	for _, st := range rr.stopsOf[l.Pod] {
		switch {
		case !l.Start.Before(st.at):
		case host == st.key.ip || l.Retries > 0:
			// Picked between its start and Picked: maybe after
			// lastSeen even if it started before. A resent request's
			// earlier tries went to pods its line does not name: the
			// stop's pod may be one of them.
			if end.After(st.lastSeen) {
				rr.last[st.key] = later(rr.last[st.key], end)
			}
		case l.Start.After(st.lastSeen) && len(rr.others[st.key]) < maxPicks:
			rr.others[st.key] = append(rr.others[st.key], rrPick{l.Start, end, host})
		}
	}
}

// stops returns, per stop, when the picks show it had stopped: the
// (3n-2)-th Picked of the picks of other pods that started after the last pick of its
// pod (or after its last reading), within a rotation of it and before the
// readings' own late end.
func (rr *roundRobin) stops() map[frontStop]time.Time {
	if rr == nil {
		return nil
	}
	out := map[frontStop]time.Time{}
	for _, stops := range rr.stopsOf {
		for _, st := range stops {
			from := later(st.lastSeen, rr.last[st.key])
			var ends []time.Time
			ips := map[string]bool{st.key.ip: true} // a pod missed by the readings still counts
			for _, p := range rr.others[st.key] {
				ips[p.ip] = true
				if p.start.After(from) {
					ends = append(ends, p.picked)
				}
			}
			n := 3*max(rr.most[st.key.front], len(ips)) - 2
			if n <= 0 || len(ends) < n {
				continue
			}
			slices.SortFunc(ends, time.Time.Compare)
			if by := ends[n-1]; by.Before(st.at) && by.Sub(from) < rr.rotation {
				out[st.key] = by
			}
		}
	}
	return out
}

// frontPodIP is one front pod's sends to one pod IP.
type frontPodIP struct{ pod, ip string }

// frontBracket is one front stop and its readings' bracket.
type frontBracket struct {
	key      frontStop
	from, to time.Time
}

// frontStops is every front stop among events with its bracket, by
// (front pod, pod IP).
func frontStops(events []timeline.Event) map[frontPodIP][]routeStep {
	out := map[frontPodIP][]routeStep{}
	for _, e := range events {
		if e.Kind != timeline.KindFrontRemoved {
			continue
		}
		at, last := e.FrontChange()
		k := frontPodIP{e.Pod, e.IP}
		out[k] = append(out[k], routeStep{t: at, removed: true, lastSeen: last})
	}
	return out
}

// answerTimes is when the front ended its 2xx answer to each request it
// answered, by request ID. droprun's IDs are prefix-N, N counting from 1
// in base 36 (traffic's withRequestIDs), so each prefix keeps its Ns'
// ends in pages of answerPage, allocated as they are used: 4 bytes a
// request, milliseconds after base plus one (0: not answered). A page of
// 64 costs 256 bytes, so a log of scattered IDs costs no more a line than
// a map entry would, and a dense one about 4 bytes a request. Any other
// ID, an N past maxID, or an end outside the span of the pages' base, is
// kept in a map, as many as the log holds.
type answerTimes struct {
	base  time.Time
	pages map[string]map[uint64]*[answerPage]uint32
	other map[string]time.Time
}

const (
	answerPage = 64
	// answerSpan is what a page's uint32 of milliseconds spans: an end
	// outside it is kept in the map.
	answerSpan = math.MaxUint32 * time.Millisecond
	// maxID bounds the Ns kept in pages: a stray line's N beyond it is
	// kept in the map, so it cannot make the pages' index grow without
	// bound.
	maxID = 1 << 40
)

func splitID(id string) (string, uint64, bool) {
	i := strings.LastIndexByte(id, '-')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.ParseUint(id[i+1:], 36, 64)
	if err != nil || n >= maxID {
		return "", 0, false
	}
	return id[:i], n, true
}

// add records that the front answered id 2xx, ending at end.
func (a *answerTimes) add(id string, end time.Time) {
	if a.pages == nil {
		// Half the 49 days a uint32 of milliseconds spans, either side
		// of the first: a run's lines come within hours of each other.
		a.base, a.pages = end.Truncate(time.Millisecond).Add(-(answerSpan / 2).Truncate(time.Millisecond)), map[string]map[uint64]*[answerPage]uint32{}
	}
	prefix, n, ok := splitID(id)
	ms := end.Sub(a.base).Milliseconds() + 1
	if !ok || ms < 1 || ms > math.MaxUint32 {
		if a.other == nil {
			a.other = map[string]time.Time{}
		}
		a.other[id] = end
		return
	}
	byPage := a.pages[prefix]
	if byPage == nil {
		byPage = map[uint64]*[answerPage]uint32{}
		a.pages[prefix] = byPage
	}
	page := byPage[n/answerPage]
	if page == nil {
		page = new([answerPage]uint32)
		byPage[n/answerPage] = page
	}
	page[n%answerPage] = uint32(ms)
}

// end is when the front ended its 2xx answer to id (to the millisecond),
// and whether it answered it 2xx.
func (a *answerTimes) end(id string) (time.Time, bool) {
	if prefix, n, ok := splitID(id); ok {
		if page := a.pages[prefix][n/answerPage]; page != nil && page[n%answerPage] != 0 {
			return a.base.Add(time.Duration(page[n%answerPage]-1) * time.Millisecond), true
		}
	}
	t, ok := a.other[id]
	return t, ok
}
