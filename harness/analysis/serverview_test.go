package analysis

import (
	"testing"

	"github.com/droprun/droprun/harness/analysis/analysistest"
	"github.com/droprun/droprun/harness/appmetrics"
	"github.com/droprun/droprun/harness/traffic"
)

// A killed pod's requests in flight make the pods' view uncertain only
// when its exit totals are not sealed: a sealed count cut them unanswered.
func TestServerViewSealedExitIsExact(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sealed     bool
		inFlight   int
		openConns  int
		wantExact  bool
		wantAtExit int
	}{
		{"sealed with requests cut", true, 3, 0, true, 0},
		{"unsealed with requests in flight", false, 3, 0, false, 3},
		{"unsealed with connections open", false, 0, 2, false, 2},
		{"unsealed, nothing in flight", false, 0, 0, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &input{app: []appmetrics.Record{{
				Time: analysistest.At(5), Started: analysistest.At(1), Pod: "web-a", Source: appmetrics.SourceTermination,
				Requests: 10, ByHandler: appmetrics.Counts{"version": {"200": 10}},
				InFlight: tc.inFlight, OpenConns: tc.openConns, Sealed: tc.sealed, Exit: "killed",
			}}}
			p := &plan{attackStart: analysistest.At(0), appScraped: analysistest.At(10)}
			tl := &Timeline{Outside: Tally{Requests: 12, Classes: map[traffic.Class]uint64{traffic.Class2xx: 10, traffic.ClassRefused: 2}}}
			v := in.serverView(p, tl)
			if v == nil {
				t.Fatal("no pods' view")
			}
			if v.PodsAnswered2xx != 10 || v.ClientGot2xx != 10 || v.ClientSent != 12 || v.PodsFinal != 1 {
				t.Errorf("view %+v; want 10 answered, 10 got, 12 sent, 1 final", *v)
			}
			if v.Exact() != tc.wantExact || v.InFlightAtExit != tc.wantAtExit {
				t.Errorf("exact %v, in flight at exit %d; want %v, %d", v.Exact(), v.InFlightAtExit, tc.wantExact, tc.wantAtExit)
			}
		})
	}
}

// A failed scrape of a pod that was read, or that left its exit totals,
// costs the count nothing; one of a pod never read leaves its answers out.
func TestServerViewFailedScrapes(t *testing.T) {
	final := appmetrics.Record{Time: analysistest.At(5), Started: analysistest.At(1), Pod: "web-a", Source: appmetrics.SourceTermination,
		Requests: 10, ByHandler: appmetrics.Counts{"version": {"200": 10}}, Sealed: true, Exit: "killed"}
	failed := func(pod string) appmetrics.Record {
		return appmetrics.Record{Time: analysistest.At(3), Pod: pod, Source: appmetrics.SourceScrapeErrors, Errors: 1}
	}
	p := &plan{attackStart: analysistest.At(0), appScraped: analysistest.At(10)}
	tl := &Timeline{Outside: Tally{Requests: 10, Classes: map[traffic.Class]uint64{traffic.Class2xx: 10}}}
	read := (&input{app: []appmetrics.Record{final, failed("web-a")}}).serverView(p, tl)
	if !read.Exact() || read.ScrapeErrors != 1 || read.Unread != 0 {
		t.Errorf("a failed scrape of a pod with exit totals: %+v, want exact", *read)
	}
	unread := (&input{app: []appmetrics.Record{final, failed("web-b")}}).serverView(p, tl)
	if unread.Exact() || unread.Unread != 1 {
		t.Errorf("a failed scrape of a pod never read: %+v, want not exact, 1 unread", *unread)
	}
}

// Answers the pods sent that the client never received flag the row only
// beyond the timeouts, resets and EOFs a race window explains or a tail
// holds: a request the race delayed or cut may have been answered as the
// client gave up, and one in a tail counts toward no drop, but a surplus
// beyond those is the client's own (a starved rig) inside a window.
func TestLostAnswersBeyondTheRace(t *testing.T) {
	in := &input{app: []appmetrics.Record{{
		Time: analysistest.At(5), Started: analysistest.At(1), Pod: "web-a", Source: appmetrics.SourceTermination,
		Requests: 15, ByHandler: appmetrics.Counts{"version": {"200": 15}}, Sealed: true, Exit: "killed",
	}}}
	p := &plan{attackStart: analysistest.At(0), appScraped: analysistest.At(10)}
	tl := &Timeline{Outside: Tally{Requests: 15, Classes: map[traffic.Class]uint64{traffic.Class2xx: 10, traffic.ClassTimeout: 5}}}
	for _, tc := range []struct {
		answerable  []uint64 // per row of the variant
		tail        uint64   // the first row's tail timeouts
		wantSuspect bool
		unreceived  uint64 // the lost answers beyond those, on every row
	}{
		{[]uint64{5}, 0, false, 0},
		{[]uint64{3, 2}, 0, false, 0},
		{[]uint64{4}, 0, true, 1},
		{[]uint64{4}, 1, false, 0},
		{[]uint64{0}, 4, true, 1},
		{nil, 0, true, 5},
	} {
		var rows []VariantSummary
		for i, a := range tc.answerable {
			row := VariantSummary{Variant: "v", Explained: &Explained{Answerable: a}}
			if i == 0 {
				row.Tail = Tally{Failures: tc.tail, Classes: map[traffic.Class]uint64{traffic.ClassTimeout: tc.tail, traffic.ClassRefused: 3}}
			}
			rows = append(rows, row)
		}
		if rows == nil {
			rows = []VariantSummary{{Variant: "v"}}
		}
		in.addServerView(rows, p, tl)
		if rows[0].Server == nil || rows[0].Server.Lost != 5 {
			t.Fatalf("pods' view %+v, want 5 lost", rows[0].Server)
		}
		for _, row := range rows {
			if got := len(row.Suspect) > 0; got != tc.wantSuspect {
				t.Errorf("race-explained %v, tail %d: suspect %q, want suspect %v", tc.answerable, tc.tail, row.Suspect, tc.wantSuspect)
			}
			if row.Unreceived != tc.unreceived {
				t.Errorf("race-explained %v, tail %d: %d unreceived, want %d", tc.answerable, tc.tail, row.Unreceived, tc.unreceived)
			}
		}
	}
	// A client that failed no request had nothing to give up on: the
	// surplus is answers counted twice, not drops, and flags nothing.
	clean := &Timeline{Outside: Tally{Requests: 10, Classes: map[traffic.Class]uint64{traffic.Class2xx: 10}}}
	rows := []VariantSummary{{Variant: "v"}}
	in.addServerView(rows, p, clean)
	if sv := rows[0].Server; sv == nil || sv.Lost != 5 || sv.Unhidden != 5 || len(rows[0].Suspect) > 0 || rows[0].Unreceived != 0 {
		t.Errorf("no failure to hide behind: pods' view %+v, suspect %q, unreceived %d; want 5 lost, all 5 unhidden, nothing suspect", sv, rows[0].Suspect, rows[0].Unreceived)
	}
	// One timeout hides one of them; the other four are unhidden.
	one := &Timeline{Outside: Tally{Requests: 11, Classes: map[traffic.Class]uint64{traffic.Class2xx: 10, traffic.ClassTimeout: 1}}}
	rows = []VariantSummary{{Variant: "v"}}
	in.addServerView(rows, p, one)
	if sv := rows[0].Server; sv == nil || sv.Unhidden != 4 || len(rows[0].Suspect) != 1 || rows[0].Unreceived != 1 {
		t.Errorf("one timeout: pods' view %+v, suspect %q, unreceived %d; want 4 unhidden, suspect for 1", sv, rows[0].Suspect, rows[0].Unreceived)
	}
}
