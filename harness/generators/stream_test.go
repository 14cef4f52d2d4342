package generators

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/droprun/droprun/harness/traffic"
)

var t0 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

// resultLine is a generator's result line: vegeta's JSON encoding.
func resultLine(t *testing.T, seq uint64, code uint16, errText string) string {
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
