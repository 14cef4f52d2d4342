package analysis

import (
	"testing"
	"time"

	"github.com/droprun/droprun/harness/frontlog"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

// TestAnswerTimes: droprun's IDs (prefix-N, N in base 36) keep their
// answers' ends in pages of their prefix, to the millisecond; any other
// ID, or an N past the bound, whole. What was never added is not there.
func TestAnswerTimes(t *testing.T) {
	var s answerTimes
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	in := map[string]time.Time{"no-prestop-1": at(5), "no-prestop-zz": at(7), "graceful-drain-1": at(0), "odd": at(3),
		"x-zzzzzzzzzzzz": at(9), "a-b-3": at(1), "late-1": at(40 * 86400 * 1000)}
	// In a fixed order: the first end sets the pages' base, and late-1,
	// 40 days after it, is outside their span.
	for _, id := range []string{"no-prestop-1", "late-1", "no-prestop-zz", "graceful-drain-1", "odd", "x-zzzzzzzzzzzz", "a-b-3"} {
		s.add(id, in[id])
	}
	for id, want := range in {
		if got, ok := s.end(id); !ok || !got.Equal(want) {
			t.Errorf("%q added ending %v: got %v, %v", id, want, got, ok)
		}
	}
	for _, id := range []string{"no-prestop-2", "graceful-drain-zz", "no-prestop", "a-b-4", "other-1", ""} {
		if _, ok := s.end(id); ok {
			t.Errorf("%q in the set, never added", id)
		}
	}
	if n := len(s.pages["no-prestop"]); n != 2 {
		t.Errorf("no-prestop has %d pages for Ns 1 and %d, want 2", n, 36*36-1)
	}
	if _, ok := s.other["x-zzzzzzzzzzzz"]; !ok || len(s.other) != 3 {
		t.Errorf("kept whole: %v, want odd, the N past the bound and the end past the span", s.other)
	}
}

// TestFrontAnswered: a request the front answered 2xx is late when the
// answer ended more than answerSlack after the client's request failed
// (its send time plus its latency), lost when it ended more than that
// before, and neither when within it or when the front's clock is not
// known to be droprun's.
func TestFrontAnswered(t *testing.T) {
	ms := func(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }
	log := &frontLog{}
	for id, end := range map[string]time.Time{"r-1": ms(2100), "r-2": ms(1900), "r-3": ms(2020)} {
		log.answered.add(id, end)
	}
	rec := func(id string) traffic.Record {
		return traffic.Record{Time: ms(0), Latency: 2 * time.Second, Class: traffic.ClassTimeout, URL: "http://x/version?" + traffic.RequestIDParam + "=" + id}
	}
	ex := &explainer{log: log, sharedClock: true}
	for id, want := range map[string]string{"r-1": WhyFrontLate, "r-2": WhyFrontLost, "r-3": WhyFrontAnswered} {
		if got := ex.frontAnswered(rec(id)); got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}
	ex.sharedClock = false
	if got := ex.frontAnswered(rec("r-1")); got != WhyFrontAnswered {
		t.Errorf("on a clock not droprun's: %q, want %q", got, WhyFrontAnswered)
	}
}

// TestRoundRobinStops: a front that picks its pods in turn (three at most:
// A, B, C) stopped sending to A between its readings at 0 and 500 ms. Its
// last pick of A ended at 101 ms; 3n-2 = 7 picks of B and C started
// after it, the 7th ended at 166 ms: A was gone by then (the same when A's
// last send waited 2 s on its upstream: Traefik logs when its upstream
// part began, after the pick). Fewer picks, picks by
// another front pod, picks that span a rotation, or a pick of A that
// started before the last reading and ended after the others started
// leave the stop where the readings put it. A request the front resent
// may have gone to A first, unlogged: it counts as a pick of A.
func TestRoundRobinStops(t *testing.T) {
	ms := func(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }
	events := []timeline.Event{
		{Kind: timeline.KindFrontWatching, Pod: "f1", Detail: map[string]string{"servers": "A B"}},
		{Kind: timeline.KindFrontAdded, Pod: "f1", IP: "C"},
		{Kind: timeline.KindFrontWatching, Pod: "f2", Detail: map[string]string{"servers": "A B C"}},
		{Kind: timeline.KindFrontRemoved, Pod: "f1", IP: "A", Detail: map[string]string{
			timeline.DetailFrontAt: ms(500).Format(time.RFC3339Nano), timeline.DetailFrontLastSeen: ms(0).Format(time.RFC3339Nano)}},
		{Kind: timeline.KindFrontAdded, Pod: "f1", IP: "D"},
	}
	send := func(pod, host string, start int) frontlog.Line {
		return frontlog.Line{Pod: pod, Start: ms(start), Duration: time.Millisecond, Upstream: host + ":8080"}
	}
	stop := frontStop{"f1", "A", ms(500).UnixNano()}
	for _, c := range []struct {
		name     string
		rotation time.Duration
		lines    []frontlog.Line
		want     time.Time
	}{
		{"seven picks of others", 2 * time.Second, []frontlog.Line{
			send("f1", "A", 100), send("f2", "B", 102), send("f1", "B", 105), send("f1", "C", 115), send("f1", "B", 125),
			send("f1", "C", 135), send("f1", "B", 145), send("f1", "C", 155), send("f1", "B", 165), send("f1", "C", 175)}, ms(166)},
		{"a pick of A whose upstream part took 2 s", 2 * time.Second, []frontlog.Line{
			{Pod: "f1", Start: ms(100), Duration: 2 * time.Second, Origin: 2*time.Second - time.Millisecond, Upstream: "A:8080"},
			send("f1", "B", 105), send("f1", "C", 115), send("f1", "B", 125),
			send("f1", "C", 135), send("f1", "B", 145), send("f1", "C", 155), send("f1", "B", 165)}, ms(166)},
		{"a resent request that may have tried A first", 2 * time.Second, []frontlog.Line{
			send("f1", "A", 100), {Pod: "f1", Start: ms(105), Duration: time.Millisecond, Upstream: "B:8080", Retries: 1}, send("f1", "C", 115), send("f1", "B", 125),
			send("f1", "C", 135), send("f1", "B", 145), send("f1", "C", 155), send("f1", "B", 165), send("f1", "C", 175)}, ms(176)},
		{"six", 2 * time.Second, []frontlog.Line{
			send("f1", "A", 100), send("f1", "B", 105), send("f1", "C", 115), send("f1", "B", 125),
			send("f1", "C", 135), send("f1", "B", 145), send("f1", "C", 155), send("f2", "C", 165)}, time.Time{}},
		{"past a rotation", 50 * time.Millisecond, []frontlog.Line{
			send("f1", "A", 100), send("f1", "B", 105), send("f1", "C", 115), send("f1", "B", 125),
			send("f1", "C", 135), send("f1", "B", 145), send("f1", "C", 155), send("f1", "B", 165)}, time.Time{}},
		{"a pick of A that ended late", 2 * time.Second, []frontlog.Line{
			{Pod: "f1", Start: ms(-5), Duration: 140 * time.Millisecond, Upstream: "A:8080"},
			send("f1", "B", 105), send("f1", "C", 115), send("f1", "B", 125),
			send("f1", "C", 135), send("f1", "B", 145), send("f1", "C", 155)}, time.Time{}},
	} {
		rr := newRoundRobin(events, c.rotation)
		if rr.most["f1"] != 3 {
			t.Fatalf("f1 had at most %d pods at once, want 3", rr.most["f1"])
		}
		for _, l := range c.lines {
			rr.pick(l, l.Upstream[:1])
		}
		if got := rr.stops()[stop]; !got.Equal(c.want) {
			t.Errorf("%s: stopped by %v, want %v", c.name, got.Sub(base), c.want.Sub(base))
		}
	}
}
