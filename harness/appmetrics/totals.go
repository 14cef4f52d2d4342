package appmetrics

import (
	"slices"
	"sort"
	"time"
)

// Summary is what the pods answered in a time range, from their own
// counters.
type Summary struct {
	// From and To are the range asked for.
	From, To time.Time
	// Requests is every response counted, probes and scrapes included;
	// ByHandler breaks it down.
	Requests  int
	ByHandler Counts
	// Answered is Requests less the ProbeHandlers' responses: the pods'
	// count of what they answered the client. ByCode breaks it down by
	// status code and Answered2xx is its 2xx part, to set beside "the
	// client got 2xx".
	Answered    int
	Answered2xx int
	ByCode      map[string]int
	// Pods has one entry per pod counted, sorted by name.
	Pods []PodSummary
	// ScrapeErrors is the number of failed scrapes recorded in the range;
	// LastError the error of the latest of them.
	ScrapeErrors int
	LastError    string
	// Scrapes is the number of successful scrapes in the range; NoCounter
	// those whose metrics lacked a custom app's counter (Record.NoCounter).
	Scrapes, NoCounter int
	// Uncertain is the number of pods whose count is not exact (see
	// PodSummary.Uncertain).
	Uncertain int
}

// PodSummary is one pod's share of a Summary.
type PodSummary struct {
	Pod, Variant, Row string
	// Requests, Answered and ByHandler are as in Summary, for this pod.
	Requests, Answered int
	ByHandler          Counts
	// Instances is the number of container instances counted (more than
	// one if the container restarted).
	Instances int
	// Final reports that every instance's count ends with its termination
	// message, the app's exact final totals.
	Final bool
	// Last is the time of the latest record used for the end of the range.
	Last time.Time
	// Uncertain reports a count that is not exact: an instance that was
	// running before From but first read after it (counted from that
	// read, so requests before it are missed), or whose counters went
	// down between the two ends.
	Uncertain bool
	// ScrapeErrors is the number of failed scrapes of the pod recorded in
	// the range.
	ScrapeErrors int
}

// instanceRecords are the count-bearing records of one container instance.
type instanceRecords struct {
	pod, variant, row string
	started           time.Time
	scrapes           []*Record // sorted by time
	final             *Record   // the termination message, if any
}

// valueAt is the instance's latest known counts at t: its termination
// message if it had ended by t, else its last scrape at or before t.
func (in *instanceRecords) valueAt(t time.Time) *Record {
	if in.final != nil && !in.final.Time.After(t) {
		return in.final
	}
	var last *Record
	for _, r := range in.scrapes {
		if r.Time.After(t) {
			break
		}
		last = r
	}
	return last
}

// firstAfter is the instance's first record after t, nil if none.
func (in *instanceRecords) firstAfter(t time.Time) *Record {
	for _, r := range in.scrapes {
		if r.Time.After(t) {
			return r
		}
	}
	if in.final != nil && in.final.Time.After(t) {
		return in.final
	}
	return nil
}

// Totals says how many requests the pods answered between from and to,
// from records in any order. A zero from counts from each container's
// start, a zero to up to the last record.
//
// For each container instance, the count is its value at to less its
// value at from, where an instance's value at t is its termination
// message if it had ended by t (the exact final count), else its last
// scrape at or before t; so a pod that has gone keeps its last value. An
// instance with no record by to is not counted; one with no record by from
// counts from zero if it started after from (to the second: the kubelet's
// start times are whole seconds, so a container that started less than a
// second before from counts from zero too), and otherwise from its first
// record (and is marked Uncertain). Records with an Error carry no counts
// and are ignored.
func Totals(records []Record, from, to time.Time) Summary {
	end := to
	if end.IsZero() {
		end = time.Unix(1<<62, 0) // all of them
	}
	g := gather(records, from, end)
	pods := podSummaries(g.instances, from, end)
	for pod, n := range g.errs {
		if p := pods[pod]; p != nil {
			p.ScrapeErrors = n
		}
	}

	s := Summary{From: from, To: to, ByHandler: Counts{}, ByCode: map[string]int{}, Scrapes: g.scrapes, NoCounter: g.noCounter}
	if g.lastErr != nil {
		s.LastError = g.lastErr.Error
	}
	for _, n := range g.errs {
		s.ScrapeErrors += n
	}
	for _, p := range pods {
		answered := p.ByHandler.Without(ProbeHandlers...)
		p.Requests, p.Answered = p.ByHandler.Total(), answered.Total()
		s.Requests += p.Requests
		s.Answered += p.Answered
		s.Answered2xx += answered.Class(2)
		s.ByHandler.plus(p.ByHandler)
		for code, v := range answered.ByCode() {
			s.ByCode[code] += v
		}
		if p.Uncertain {
			s.Uncertain++
		}
		s.Pods = append(s.Pods, *p)
	}
	slices.SortFunc(s.Pods, func(a, b PodSummary) int {
		switch {
		case a.Pod < b.Pod:
			return -1
		case a.Pod > b.Pod:
			return 1
		}
		return 0
	})
	return s
}

// gathered is what gather sorts the records into.
type gathered struct {
	// instances holds the count-bearing records by container instance
	// (Record.Instance), each instance's scrapes in any order.
	instances map[string]*instanceRecords
	// errs counts the failed scrapes in the range by pod; lastErr is the
	// latest record of them.
	errs    map[string]int
	lastErr *Record
	// scrapes and noCounter count the successful scrapes in the range,
	// and those that lacked a custom app's counter.
	scrapes, noCounter int
}

// gather sorts records into their container instances, and counts the
// scrapes and failed scrapes between from and end.
func gather(records []Record, from, end time.Time) gathered {
	g := gathered{instances: map[string]*instanceRecords{}, errs: map[string]int{}}
	for i := range records {
		r := &records[i]
		inRange := !r.Time.Before(from) && !r.Time.After(end)
		if r.Source == SourceScrapeErrors {
			if inRange {
				g.errs[r.Pod] += r.Errors
				if g.lastErr == nil || r.Time.After(g.lastErr.Time) {
					g.lastErr = r
				}
			}
			continue
		}
		if r.Source == SourceScrape && r.Error == "" && inRange {
			g.scrapes++
			if r.NoCounter {
				g.noCounter++
			}
		}
		if r.Error != "" || (r.Source != SourceScrape && r.Source != SourceTermination) {
			continue
		}
		in := g.instances[r.Instance()]
		if in == nil {
			in = &instanceRecords{pod: r.Pod}
			g.instances[r.Instance()] = in
		}
		in.variant, in.row = or(in.variant, r.Variant), or(in.row, r.Row)
		if in.started.IsZero() {
			in.started = r.Started
		}
		if r.Source == SourceTermination {
			in.final = r
		} else {
			in.scrapes = append(in.scrapes, r)
		}
	}
	return g
}

// podSummaries adds up each pod's instances' counts between from and end
// (countBetween), by pod name; ScrapeErrors, Requests and Answered are
// left to the caller.
func podSummaries(instances map[string]*instanceRecords, from, end time.Time) map[string]*PodSummary {
	pods := map[string]*PodSummary{}
	for _, in := range instances {
		counts, last, uncertain := in.countBetween(from, end)
		if last == nil {
			continue
		}
		p := pods[in.pod]
		if p == nil {
			p = &PodSummary{Pod: in.pod, ByHandler: Counts{}, Final: true}
			pods[in.pod] = p
		}
		p.Variant, p.Row = or(p.Variant, in.variant), or(p.Row, in.row)
		p.Instances++
		p.ByHandler.plus(counts)
		p.Final = p.Final && last.Source == SourceTermination
		p.Uncertain = p.Uncertain || uncertain
		if last.Time.After(p.Last) {
			p.Last = last.Time
		}
	}
	return pods
}

// countBetween is what the instance answered between from and end, as
// Totals counts it: its value at end less its value at from. last is the
// record of its value at end, nil when it has none (then it counts
// nothing); uncertain says the count is not exact. It sorts the
// instance's scrapes.
func (in *instanceRecords) countBetween(from, end time.Time) (counts Counts, last *Record, uncertain bool) {
	sort.SliceStable(in.scrapes, func(i, j int) bool { return in.scrapes[i].Time.Before(in.scrapes[j].Time) })
	last = in.valueAt(end)
	if last == nil {
		return nil, nil, false
	}
	var base *Record
	switch {
	case from.IsZero():
	case in.valueAt(from) != nil:
		base = in.valueAt(from)
	case !in.started.IsZero() && in.started.Add(time.Second).After(from):
		// Started after from, to the second the kubelet reports it.
	default:
		base, uncertain = in.firstAfter(from), true
	}
	counts = last.counts()
	if base != nil {
		var ok bool
		counts, ok = counts.minus(base.counts())
		uncertain = uncertain || !ok
	}
	return counts, last, uncertain
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ByPod indexes s.Pods by pod name.
func (s Summary) ByPod() map[string]PodSummary {
	m := make(map[string]PodSummary, len(s.Pods))
	for _, p := range s.Pods {
		m[p.Pod] = p
	}
	return m
}
