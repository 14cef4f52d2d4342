package attack

import (
	"bytes"
	"testing"

	"github.com/droprun/droprun/harness/traffic"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// TestLineDecoder: JSON result lines decode one at a time, with one
// decoder, into the records ReadResults gives for the same results; what
// is not one line ending in a newline, or not a result, is an error.
func TestLineDecoder(t *testing.T) {
	var lines bytes.Buffer
	enc := vegeta.NewJSONEncoder(&lines)
	results := sampleResults()
	for i := range results {
		if err := enc.Encode(&results[i]); err != nil {
			t.Fatal(err)
		}
	}
	var want []traffic.Record
	if err := traffic.ReadResults(bytes.NewReader(lines.Bytes()), func(r traffic.Record) error { want = append(want, r); return nil }); err != nil {
		t.Fatal(err)
	}
	d := traffic.NewLineDecoder()
	for i, line := range bytes.SplitAfter(lines.Bytes(), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		got, err := d.Decode(line)
		if err != nil || got.Class != want[i].Class || got.Seq != want[i].Seq || !got.Time.Equal(want[i].Time) || got.Error != want[i].Error {
			t.Errorf("line %d: %+v (%v), want %+v", i, got, err, want[i])
		}
	}
	first, _, _ := bytes.Cut(lines.Bytes(), []byte("\n"))
	for _, bad := range [][]byte{first, lines.Bytes(), []byte("{\"attack\":\n")} {
		if _, err := d.Decode(bad); err == nil {
			t.Errorf("Decode(%.40q…) = nil error", bad)
		}
	}
}
