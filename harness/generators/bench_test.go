package generators

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/traffic"
)

// BenchmarkStream is the merge's cost on one core: a generator's log of
// result lines (with a beat every 1,000) read into its results file and
// handed to an observer as records. It reports records per second and the
// bytes of log per record, the numbers docs/scale.md's cost model uses.
func BenchmarkStream(b *testing.B) {
	const lines = 10_000
	var log strings.Builder
	for i := range uint64(lines) {
		code, errText := uint16(200), ""
		if i%100 == 99 {
			code, errText = 0, `Get "http://web.droprun.svc.cluster.local:80/version": dial tcp 10.96.0.10:80: connect: connection refused`
		}
		log.WriteString(resultLine(b, i, code, errText))
		if i%1000 == 999 {
			log.WriteString(beatLine(t0.Add(time.Duration(i)*time.Millisecond), i+1, time.Millisecond))
		}
	}
	text := log.String()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		var seen int
		s := NewStream("pod-0", io.Discard, func(r traffic.Record) { seen++ })
		if err := s.Consume(bytes.NewReader([]byte(text))); err != nil || s.Results != lines || seen != lines {
			b.Fatalf("%d results, %d seen (%v)", s.Results, seen, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(len(text))/lines, "bytes/record")
}
