package traffic

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// TestDecodersMatchVegeta: ReadResults, which decodes vegeta's encodings
// itself, gives for every result vegeta writes (gob, JSON, CSV) the record
// vegeta's own decoder gives, over random results: codes, errors, bodies,
// URLs, pod and hidden-retry headers, times to the nanosecond.
func TestDecodersMatchVegeta(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 12, 7, 19, 0, 0, 123456789, time.UTC)
	errs := []string{"", "dial tcp 10.0.0.1:8080: connect: connection refused", "502 Bad Gateway", "EOF", "read tcp: connection reset by peer", `a "quoted", comma`}
	var results []vegeta.Result
	for i := range 300 {
		r := vegeta.Result{Attack: "a", Seq: uint64(i), Code: uint16([]int{0, 200, 502, 503}[rng.IntN(4)]),
			Timestamp: t0.Add(time.Duration(rng.Int64N(int64(time.Minute)))), Latency: time.Duration(rng.Int64N(int64(2 * time.Second))),
			BytesIn: rng.Uint64N(1000), BytesOut: rng.Uint64N(10), Error: errs[rng.IntN(len(errs))], Method: "GET",
			URL: fmt.Sprintf("http://127.0.0.1:%d/version?%s=%d", 31180+rng.IntN(3), RequestIDParam, i)}
		if rng.IntN(3) > 0 {
			r.Headers = http.Header{PodHeader: {fmt.Sprintf("web-%d", rng.IntN(5))}}
			if rng.IntN(4) == 0 {
				r.Headers[HiddenHeader] = []string{"EOF", "read: connection reset by peer"}[:1+rng.IntN(2)]
			}
		}
		if rng.IntN(2) == 0 {
			r.Body = []byte("ok\n")
		}
		results = append(results, r)
	}
	encoders := map[string]func(io.Writer) vegeta.Encoder{"gob": vegeta.NewEncoder, "JSON": vegeta.NewJSONEncoder, "CSV": vegeta.NewCSVEncoder}
	for name, newEnc := range encoders {
		var file bytes.Buffer
		enc := newEnc(&file)
		for i := range results {
			if err := enc.Encode(&results[i]); err != nil {
				t.Fatal(err)
			}
		}
		var want []Record
		if err := vegetaRead(file.Bytes(), func(r Record) { want = append(want, r) }); err != nil {
			t.Fatalf("%s: vegeta's decoder: %v", name, err)
		}
		var got []Record
		if err := ReadResults(bytes.NewReader(file.Bytes()), func(r Record) error { got = append(got, r); return nil }); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != len(results) || len(want) != len(results) {
			t.Fatalf("%s: %d records, vegeta %d, of %d results", name, len(got), len(want), len(results))
		}
		for i := range got {
			if got[i] != want[i] || !got[i].Time.Equal(results[i].Timestamp) {
				t.Fatalf("%s: result %d: %+v, vegeta's decoder %+v", name, i, got[i], want[i])
			}
		}
	}
}

// TestJSONResultsEdges: in vegeta's JSON encoding a blank line is skipped
// (no result is lost behind it), and a last line cut off before its
// newline ends the reading with io.ErrUnexpectedEOF after every whole
// result, as a cut gob stream does.
func TestJSONResultsEdges(t *testing.T) {
	var file bytes.Buffer
	enc := vegeta.NewJSONEncoder(&file)
	for i := range 3 {
		if err := enc.Encode(&vegeta.Result{Seq: uint64(i), Code: 200, Timestamp: time.Unix(int64(i), 0)}); err != nil {
			t.Fatal(err)
		}
	}
	lines := bytes.SplitAfter(file.Bytes(), []byte("\n"))
	read := func(in []byte) ([]uint64, error) {
		var seqs []uint64
		err := ReadResults(bytes.NewReader(in), func(r Record) error { seqs = append(seqs, r.Seq); return nil })
		return seqs, err
	}
	blank := bytes.Join([][]byte{lines[0], []byte("\n  \n"), lines[1], lines[2]}, nil)
	if seqs, err := read(blank); err != nil || len(seqs) != 3 {
		t.Errorf("a blank line among results: %v, %v; want all 3, no error", seqs, err)
	}
	cut := file.Bytes()[:file.Len()-10]
	if seqs, err := read(cut); !errors.Is(err, io.ErrUnexpectedEOF) || len(seqs) != 2 {
		t.Errorf("a cut last line: %v, %v; want the 2 whole results, then io.ErrUnexpectedEOF", seqs, err)
	}
}

// BenchmarkReadResults reads a file of 10,000 results in each of vegeta's
// encodings with ReadResults (droprun) and with vegeta's own decoder
// (vegeta), side by side: what decoding them without vegeta costs.
func BenchmarkReadResults(b *testing.B) {
	t0 := time.Date(2026, 12, 7, 19, 0, 0, 0, time.UTC)
	for _, enc := range []struct {
		name   string
		newEnc func(io.Writer) vegeta.Encoder
	}{{"gob", vegeta.NewEncoder}, {"JSON", vegeta.NewJSONEncoder}} {
		var file bytes.Buffer
		e := enc.newEnc(&file)
		for i := range 10000 {
			r := vegeta.Result{Seq: uint64(i), Code: 200, Timestamp: t0.Add(time.Duration(i) * time.Millisecond), Latency: time.Millisecond,
				URL: "http://127.0.0.1:31180/version", Headers: http.Header{PodHeader: {"web-1"}}}
			if err := e.Encode(&r); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(enc.name+"/droprun", func(b *testing.B) {
			for range b.N {
				if err := ReadResults(bytes.NewReader(file.Bytes()), func(Record) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(enc.name+"/vegeta", func(b *testing.B) {
			for range b.N {
				if err := vegetaRead(file.Bytes(), func(Record) {}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// vegetaRead reads file with vegeta's own decoder, each result as a Record.
func vegetaRead(file []byte, fn func(Record)) error {
	dec := vegeta.DecoderFor(bytes.NewReader(file))
	for {
		var res vegeta.Result
		if err := dec.Decode(&res); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		r := Result(res)
		fn(FromResult(&r))
	}
}
