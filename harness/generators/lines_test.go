package generators

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/droprun/droprun/harness/traffic"
)

// TestLineDecoder: JSON result lines decode one at a time, with one
// decoder, into the records traffic.ReadResults gives for the same
// results; what is not one line ending in a newline, or not a result, is
// an error.
func TestLineDecoder(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	results := []vegeta.Result{
		{Seq: 0, Code: 200, Timestamp: t0, Latency: time.Millisecond, Headers: http.Header{traffic.PodHeader: {"pod-a"}}, Body: []byte("ok"), URL: "http://127.0.0.1:30080/version"},
		{Seq: 1, Timestamp: t0.Add(time.Millisecond), Latency: 2 * time.Millisecond, Error: "dial tcp 127.0.0.1:30082: connect: connection refused", URL: "http://127.0.0.1:30082/version"},
		{Seq: 2, Code: 502, Timestamp: t0.Add(2 * time.Millisecond), Latency: time.Millisecond, Error: "502 Bad Gateway", Headers: http.Header{traffic.PodHeader: {"gw"}}},
	}
	var lines bytes.Buffer
	enc := vegeta.NewJSONEncoder(&lines)
	for i := range results {
		if err := enc.Encode(&results[i]); err != nil {
			t.Fatal(err)
		}
	}
	var want []traffic.Record
	if err := traffic.ReadResults(bytes.NewReader(lines.Bytes()), func(r traffic.Record) error { want = append(want, r); return nil }); err != nil || len(want) != len(results) {
		t.Fatalf("ReadResults: %d records, %v", len(want), err)
	}
	d := newLineDecoder()
	for i, line := range bytes.SplitAfter(lines.Bytes(), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		got, err := d.decode(line)
		if err != nil || got != want[i] {
			t.Errorf("line %d: %+v (%v), want %+v", i, got, err, want[i])
		}
	}
	first, _, _ := bytes.Cut(lines.Bytes(), []byte("\n"))
	for _, bad := range [][]byte{first, lines.Bytes(), []byte("{\"attack\":\n")} {
		if _, err := d.decode(bad); err == nil {
			t.Errorf("decode(%.40q…) = nil error", bad)
		}
	}
}
