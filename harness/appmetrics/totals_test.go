package appmetrics

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)

// at is t0 plus sec seconds.
func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

// rec is a record of pod's instance id at sec seconds, started at started.
func rec(sec float64, src Source, pod, id string, started float64, c Counts) Record {
	return Record{Time: at(sec), Source: src, Pod: pod, Row: "row-" + pod, Container: "web", ContainerID: id,
		Started: at(started), Requests: c.Total(), ByCode: c.ByCode(), ByHandler: c}
}

// history is a run seen by the collector, out of order as a file may be:
//
//   - old-1 runs from before the start, is scraped at 1, 2, 3 and exits
//     at 3.5 with its termination message; a late-stamped scrape (3.6)
//     must not override that message.
//   - new-1 starts at 2.2 and is scraped at 2.5, 3, 4.
//   - gone-1 is scraped at 1 and 2, then disappears without a message.
//   - rst-1's first container (r1) ends at 1.5 with a message, its
//     second (r2) starts at 1.6 and counts from zero again.
func history() []Record {
	return []Record{
		rec(3, SourceScrape, "old-1", "o1", -100, Counts{"version": {"200": 120}, "healthz": {"200": 4}}),
		rec(1, SourceScrape, "old-1", "o1", -100, Counts{"version": {"200": 100}, "healthz": {"200": 3}}),
		rec(2, SourceScrape, "old-1", "o1", -100, Counts{"version": {"200": 110}, "healthz": {"200": 3}}),
		rec(3.5, SourceTermination, "old-1", "o1", -100, Counts{"version": {"200": 125}, "healthz": {"200": 5}}),
		rec(3.6, SourceScrape, "old-1", "o1", -100, Counts{"version": {"200": 124}, "healthz": {"200": 5}}),
		{Time: at(3.4), Since: at(3.2), Source: SourceScrapeErrors, Pod: "old-1", Errors: 3, Error: "connection refused"},

		rec(2.5, SourceScrape, "new-1", "n1", 2.2, Counts{"readyz": {"200": 1}}),
		rec(3, SourceScrape, "new-1", "n1", 2.2, Counts{"version": {"200": 5}, "readyz": {"200": 1}}),
		rec(4, SourceScrape, "new-1", "n1", 2.2, Counts{"version": {"200": 19, "500": 1}, "readyz": {"200": 2}, "metrics": {"200": 3}}),

		rec(1, SourceScrape, "gone-1", "g1", -100, Counts{"version": {"200": 50}}),
		rec(2, SourceScrape, "gone-1", "g1", -100, Counts{"version": {"200": 60}}),

		rec(1.5, SourceTermination, "rst-1", "r1", -50, Counts{"version": {"200": 30}}),
		rec(2, SourceScrape, "rst-1", "r2", 1.6, Counts{"version": {"200": 4}}),
		rec(3, SourceScrape, "rst-1", "r2", 1.6, Counts{"version": {"200": 9}}),

		// Not bookshop's message: no counts, ignored.
		{Time: at(3), Source: SourceTermination, Pod: "other", ContainerID: "x1", Error: "not bookshop's"},
	}
}

func TestTotalsWholeRun(t *testing.T) {
	s := Totals(history(), time.Time{}, time.Time{})
	p := s.ByPod()
	want := map[string]struct {
		requests, answered, instances int
		final                         bool
	}{
		"old-1":  {130, 125, 1, true}, // the termination message wins over every scrape
		"new-1":  {25, 20, 1, false},
		"gone-1": {60, 60, 1, false}, // keeps its last value
		"rst-1":  {39, 39, 2, false}, // 30 from the first container, 9 from the second
	}
	if len(p) != len(want) {
		t.Fatalf("pods %v, want %d", s.Pods, len(want))
	}
	for name, w := range want {
		got := p[name]
		if got.Requests != w.requests || got.Answered != w.answered || got.Instances != w.instances || got.Final != w.final || got.Uncertain {
			t.Errorf("%s: %+v; want requests %d, answered %d, instances %d, final %v, certain", name, got, w.requests, w.answered, w.instances, w.final)
		}
		if got.Row != "row-"+name {
			t.Errorf("%s: row %q", name, got.Row)
		}
	}
	if s.Requests != 254 || s.Answered != 244 || s.Answered2xx != 243 || s.Uncertain != 0 {
		t.Errorf("requests %d, answered %d, 2xx %d, uncertain %d; want 254, 244, 243, 0", s.Requests, s.Answered, s.Answered2xx, s.Uncertain)
	}
	if !maps.Equal(s.ByCode, map[string]int{"200": 243, "500": 1}) {
		t.Errorf("by code %v", s.ByCode)
	}
	if s.ByHandler["healthz"]["200"] != 5 || s.ByHandler["metrics"]["200"] != 3 || s.ByHandler["readyz"]["200"] != 2 {
		t.Errorf("by handler %v", s.ByHandler)
	}
	if s.ScrapeErrors != 3 || p["old-1"].ScrapeErrors != 3 || !p["old-1"].Last.Equal(at(3.5)) {
		t.Errorf("scrape errors %d (old-1: %d), old-1 last %v; want 3, 3, %v", s.ScrapeErrors, p["old-1"].ScrapeErrors, p["old-1"].Last, at(3.5))
	}
	if names := []string{s.Pods[0].Pod, s.Pods[1].Pod, s.Pods[2].Pod, s.Pods[3].Pod}; strings.Join(names, " ") != "gone-1 new-1 old-1 rst-1" {
		t.Errorf("pods in order %v", names)
	}
}

func TestTotalsRange(t *testing.T) {
	// From 2 to 3: each instance's value at 3 less its value at 2.
	s := Totals(history(), at(2), at(3))
	p := s.ByPod()
	for name, want := range map[string]int{
		"old-1":  10, // 120 - 110
		"new-1":  5,  // started at 2.2: from zero
		"gone-1": 0,  // last seen at 2
		"rst-1":  5,  // r1 ended before 2; r2: 9 - 4
	} {
		if got := p[name]; got.Answered != want || got.Uncertain {
			t.Errorf("%s answered %d (uncertain %v), want %d", name, got.Answered, got.Uncertain, want)
		}
	}
	if s.Answered != 20 || s.Requests != 22 || s.ScrapeErrors != 0 {
		t.Errorf("answered %d, requests %d, errors %d; want 20, 22 (old-1 and new-1 probes), 0", s.Answered, s.Requests, s.ScrapeErrors)
	}

	// From 3 on: old-1 ends with its message, 125 - 120 (not the late 124).
	if got := Totals(history(), at(3), time.Time{}).ByPod()["old-1"]; got.Answered != 5 || !got.Final {
		t.Errorf("old-1 from 3: %+v; want 5 answered, final", got)
	}
	// Before anything started: nothing.
	if s := Totals(history(), at(-200), at(0)); s.Requests != 0 || len(s.Pods) != 0 {
		t.Errorf("before the first record: %+v", s)
	}
}

func TestTotalsUncertain(t *testing.T) {
	// At 0.5 old-1 had been running for a while but was first read at 1:
	// counted from that read, and flagged.
	s := Totals(history(), at(0.5), at(2))
	p := s.ByPod()
	if got := p["old-1"]; got.Answered != 10 || !got.Uncertain {
		t.Errorf("old-1: %+v; want 10 from its first read, uncertain", got)
	}
	if s.Uncertain != 3 { // old-1, gone-1 and rst-1 (r1)
		t.Errorf("uncertain pods %d, want 3: %+v", s.Uncertain, s.Pods)
	}

	// A counter that went down (a scrape stamped against a stale container
	// ID) is not a negative count.
	recs := []Record{
		rec(1, SourceScrape, "p", "i", 0, Counts{"version": {"200": 10}}),
		rec(2, SourceScrape, "p", "i", 0, Counts{"version": {"200": 3}}),
	}
	if got := Totals(recs, at(1), at(2)).ByPod()["p"]; got.Answered != 0 || !got.Uncertain {
		t.Errorf("decreasing counter: %+v; want 0, uncertain", got)
	}
}

func TestRead(t *testing.T) {
	var buf bytes.Buffer
	for _, r := range history() {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(b, '\n'))
	}
	buf.WriteString("\n")
	got, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(history()) {
		t.Fatalf("read %d records, want %d", len(got), len(history()))
	}
	if a, b := Totals(got, at(2), at(3)), Totals(history(), at(2), at(3)); a.Answered != b.Answered || a.Requests != b.Requests {
		t.Errorf("totals after a round trip %d/%d, before %d/%d", a.Answered, a.Requests, b.Answered, b.Requests)
	}
	if _, err := Read(strings.NewReader("{\"time\":\"x\"}\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad line: %v, want an error naming line 1", err)
	}
}
