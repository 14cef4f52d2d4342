package generators

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/droprun/droprun/harness/traffic"
)

var t0 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

// resultLine is a generator's result line: vegeta's JSON encoding.
func resultLine(t testing.TB, seq uint64, code uint16, errText string) string {
	t.Helper()
	var b bytes.Buffer
	enc := vegeta.NewJSONEncoder(&b)
	if err := enc.Encode(&vegeta.Result{Attack: "v", Seq: seq, Code: code, Error: errText, Timestamp: t0.Add(time.Duration(seq) * 10 * time.Millisecond), Latency: time.Millisecond, URL: "http://web.droprun.svc/version"}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func beatLine(at time.Time, results uint64, lag time.Duration) string {
	return fmt.Sprintf(`{"droprun-beat":{"at":%d,"results":%d,"lagNs":%d,"inFlight":2,"cpu":0.1}}`+"\n", at.UnixNano(), results, lag)
}

// TestStreamSorts: result lines go whole to the results file, which reads
// back as the same results, and to the observer with the generator's
// origin; beats and the end line to the account; the generator's own
// messages are counted apart.
func TestStreamSorts(t *testing.T) {
	log := resultLine(t, 0, 200, "") +
		`{"time":"2026-12-05T10:00:00Z","level":"INFO","msg":"generator 0 of 3"}` + "\n" +
		beatLine(t0.Add(time.Second), 1, 3*time.Millisecond) +
		resultLine(t, 1, 0, `Get "http://web.droprun.svc/version": dial tcp 10.96.0.10:80: connect: connection refused`) +
		beatLine(t0.Add(2*time.Second), 2, 40*time.Millisecond) +
		`{"droprun-end":{"results":2,"byClass":{"2xx":1,"000:refused":1},"askedRate":100,"achievedRate":99.5}}` + "\n"
	var file bytes.Buffer
	var got []traffic.Record
	s := NewStream("pod-0", &file, func(r traffic.Record) { got = append(got, r) })
	if err := s.Consume(strings.NewReader(log)); err != nil {
		t.Fatal(err)
	}
	s.Close(t0.Add(3 * time.Second))
	if s.Results != 2 || s.Other != 1 || s.End == nil || s.End.Results != 2 || len(s.Gaps) != 0 {
		t.Fatalf("account: %d results, %d other, end %+v, gaps %v; want 2, 1, the end line, none", s.Results, s.Other, s.End, s.Gaps)
	}
	if s.MaxLag != 40*time.Millisecond || !s.LastBeat.At.Equal(t0.Add(2*time.Second)) {
		t.Errorf("max lag %s, last beat %s", s.MaxLag, s.LastBeat.At)
	}
	if s.ByClass[traffic.Class2xx] != 1 || s.ByClass[traffic.ClassRefused] != 1 || s.Missing != 0 {
		t.Errorf("by class %v, %d missing; want one 200 and one refused, none missing", s.ByClass, s.Missing)
	}
	if len(got) != 2 || got[1].Class != traffic.ClassRefused || got[0].Origin != "pod-0" {
		t.Errorf("observed %+v: want 2 records of pod-0, the second refused", got)
	}
	var back []traffic.Record
	if err := traffic.ReadResults(&file, func(r traffic.Record) error { back = append(back, r); return nil }); err != nil || len(back) != 2 || back[1].Class != traffic.ClassRefused || !back[0].Time.Equal(t0) {
		t.Errorf("the results file reads back %d results (%v): %+v", len(back), err, back)
	}
}

// TestStreamOnce: reading a container's log again from its start (a
// broken stream followed anew) writes only the lines not read before; a
// restarted container's log is new lines, and the time it was down is a
// gap.
func TestStreamOnce(t *testing.T) {
	first := resultLine(t, 0, 200, "") + beatLine(t0.Add(time.Second), 1, 0)
	more := first + resultLine(t, 1, 200, "") + beatLine(t0.Add(2*time.Second), 2, 0)
	var file bytes.Buffer
	s := NewStream("pod-1", &file, nil)
	for _, log := range []string{first, more, more} {
		if err := s.Consume(strings.NewReader(log)); err != nil {
			t.Fatal(err)
		}
	}
	if s.Results != 2 {
		t.Fatalf("%d results after reading the log three times, want its 2", s.Results)
	}
	s.Restarted()
	if err := s.Consume(strings.NewReader(resultLine(t, 0, 200, "") + beatLine(t0.Add(11*time.Second), 1, 0))); err != nil {
		t.Fatal(err)
	}
	if s.Results != 3 || s.Restarts != 1 || len(s.Gaps) != 1 || !s.Gaps[0].From.Equal(t0.Add(2*time.Second)) || !s.Gaps[0].To.Equal(t0.Add(11*time.Second)) {
		t.Errorf("after a restart: %d results, %d restarts, gaps %+v; want 3, 1, one from the old container's last beat to the new one's first", s.Results, s.Restarts, s.Gaps)
	}
	if n := strings.Count(file.String(), "\n"); n != 3 {
		t.Errorf("the results file has %d lines, want 3", n)
	}
	// The new container's totals count its own results: it read them all.
	if err := s.Consume(strings.NewReader(resultLine(t, 0, 200, "") + beatLine(t0.Add(11*time.Second), 1, 0) + `{"droprun-end":{"results":1}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if s.End == nil || s.Missing != 0 {
		t.Errorf("end %+v, %d missing; want the end line, none missing", s.End, s.Missing)
	}
}

// TestStreamTooLong: a line over MaxLine is skipped and counted, the
// lines after it read as ever, and reading the log again from its start
// (a stream followed anew) counts it once and writes nothing twice: it no
// longer stops the read where it stands.
func TestStreamTooLong(t *testing.T) {
	long := `{"time":"x","msg":"` + strings.Repeat("a", MaxLine+10) + `"}` + "\n"
	log := resultLine(t, 0, 200, "") + long + resultLine(t, 1, 200, "") + beatLine(t0.Add(time.Second), 2, 0)
	var file bytes.Buffer
	s := NewStream("pod-2", &file, nil)
	for range 2 {
		if err := s.Consume(strings.NewReader(log)); err != nil {
			t.Fatal(err)
		}
	}
	if s.Results != 2 || s.TooLong != 1 || s.Other != 0 || strings.Count(file.String(), "\n") != 2 {
		t.Errorf("%d results, %d too long, %d other, %d lines written; want 2, 1, 0, 2", s.Results, s.TooLong, s.Other, strings.Count(file.String(), "\n"))
	}
	// A line of exactly MaxLine bytes is read; the last line needs no newline.
	var lines []int
	var longs int
	err := eachLine(strings.NewReader(strings.Repeat("b", MaxLine)+"\n"+strings.Repeat("c", MaxLine+1)+"\nend"), MaxLine, func(b []byte, tooLong bool) bool {
		if tooLong {
			longs++
		} else {
			lines = append(lines, len(b))
		}
		return true
	})
	if err != nil || !slices.Equal(lines, []int{MaxLine, 3}) || longs != 1 {
		t.Errorf("lines %v, %d too long (%v); want [%d 3] and 1", lines, longs, err, MaxLine)
	}
}

// TestStreamMissing: an end line that counts more results than droprun
// read of its container's log (lines lost to a rotated log) says how many.
func TestStreamMissing(t *testing.T) {
	s := NewStream("pod-4", &bytes.Buffer{}, nil)
	log := resultLine(t, 7, 200, "") + `{"droprun-end":{"results":8}}` + "\n"
	if err := s.Consume(strings.NewReader(log)); err != nil {
		t.Fatal(err)
	}
	if s.Results != 1 || s.Missing != 7 {
		t.Errorf("%d results read, %d missing; want 1 and 7", s.Results, s.Missing)
	}
}

// TestStreamGaps: beats further apart than SilenceAfter, and an end with
// no end line, leave gaps; a line that claims to be a result and is not
// is an error that names the line.
func TestStreamGaps(t *testing.T) {
	s := NewStream("pod-2", &bytes.Buffer{}, nil)
	log := beatLine(t0, 0, 0) + beatLine(t0.Add(time.Second), 0, 0) + beatLine(t0.Add(9*time.Second), 0, 0)
	if err := s.Consume(strings.NewReader(log)); err != nil {
		t.Fatal(err)
	}
	s.Close(t0.Add(20 * time.Second))
	if len(s.Gaps) != 2 || s.Gaps[0].Why != "silent" || !s.Gaps[0].To.Equal(t0.Add(9*time.Second)) || s.Gaps[1].Why != "it ended without its totals" {
		t.Errorf("gaps %+v: want a silence from 1 s to 9 s, then the end without totals", s.Gaps)
	}
	err := NewStream("pod-3", &bytes.Buffer{}, nil).Consume(strings.NewReader(`{"attack":"v","seq":`))
	if err == nil || !strings.Contains(err.Error(), "generator pod-3, line 1") {
		t.Errorf("a broken result line: %v, want an error naming it", err)
	}
}

// TestStreamStalls: beats StallLag or more behind schedule, or waiting
// that long for a core, make one stall per stretch, from the first such beat's time less its lag to the next
// beat back on time, with the worst lag; a restart closes an open stretch
// without ending it at the new container's first beat; shorter lags make
// none.
func TestStreamStalls(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	s := NewStream("pod-0", io.Discard, nil)
	var log strings.Builder
	for i, lag := range []time.Duration{0, 1200 * time.Millisecond, 3 * time.Second, 500 * time.Millisecond, StallLag - 1, StallLag} {
		log.WriteString(beatLine(at(10+i), uint64(i), lag))
	}
	if err := s.Consume(strings.NewReader(log.String())); err != nil {
		t.Fatal(err)
	}
	s.Restarted()
	// On time, but its goroutines waited 1.5 s for a core: a stall too.
	waited := fmt.Sprintf(`{"droprun-beat":{"at":%d,"results":1,"lagNs":0,"schedNs":%d}}`+"\n", at(31).UnixNano(), int64(1500*time.Millisecond))
	if err := s.Consume(strings.NewReader(beatLine(at(30), 0, 0) + waited + beatLine(at(32), 2, 0))); err != nil {
		t.Fatal(err)
	}
	want := []Stall{
		{From: at(9), To: at(13), Lag: 3 * time.Second},          // from beat 11 less 1.2 s, or beat 12 less 3 s: the earlier
		{From: at(15).Add(-StallLag), To: at(15), Lag: StallLag}, // open when the container restarted
		{From: at(31).Add(-1500 * time.Millisecond), To: at(32), Lag: 1500 * time.Millisecond},
	}
	if !slices.EqualFunc(s.Stalls, want, func(a, b Stall) bool { return a.From.Equal(b.From) && a.To.Equal(b.To) && a.Lag == b.Lag }) {
		t.Errorf("stalls %+v, want %+v", s.Stalls, want)
	}
}
