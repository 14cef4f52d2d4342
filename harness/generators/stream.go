package generators

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/droprun/droprun/harness/traffic"
)

// SilenceAfter is how long a generator may go without a beat (it beats
// every second) before the time since its last one is a Gap.
const SilenceAfter = 3 * time.Second

// MaxLine bounds one line of a generator's log: a result line holds at most
// traffic.MaxBody bytes of body (base64) and a few headers.
const MaxLine = 64 << 10

// Line prefixes of a generator's stdout (apps/generator).
var (
	resultPrefix = []byte(`{"attack":`)
	beatPrefix   = []byte(`{"` + BeatKey + `":`)
	endPrefix    = []byte(`{"` + EndKey + `":`)
)

// Beat is one beat of a generator: alive at At, with Results written so
// far, sending Lag behind schedule with InFlight requests in flight, using
// CPU cores since its previous beat.
type Beat struct {
	At       time.Time
	Results  uint64
	Lag      time.Duration
	InFlight uint64
	CPU      float64
}

// Gap is an interval in which a generator's requests may be missing: it
// beat last at From and next at To (zero: never again), and Why says how
// it was lost.
type Gap struct {
	From, To time.Time
	Why      string
}

// Stream is the account of one generator (one index) over its
// containers: what it wrote, its beats' evidence, and its gaps.
type Stream struct {
	// Origin names the generator in its records (traffic.Record.Origin)
	// and its results file, e.g. "pod-0".
	Origin  string
	out     io.Writer
	observe func(traffic.Record)

	read     uint64 // lines of the current container's log consumed
	buf      []byte // a result line with its newline
	restart  *Gap   // open from a restart to the new container's first beat
	Results  uint64 // result lines written, over every container
	Other    uint64 // lines that were none of a generator's own
	Restarts int
	// LastBeat is the latest beat, MaxLag the furthest behind schedule
	// any beat said, PeakCPU the most cores a beat said it used.
	LastBeat Beat
	MaxLag   time.Duration
	PeakCPU  float64
	End      *End
	Gaps     []Gap
}

// NewStream returns the account of the generator origin, whose result
// lines go to out and, as records, to observe (nil for none).
func NewStream(origin string, out io.Writer, observe func(traffic.Record)) *Stream {
	return &Stream{Origin: origin, out: out, observe: observe}
}

// Consume reads the current container's log from its start until r ends,
// skipping the lines an earlier Consume of the same container read. A
// line longer than MaxLine, or a result line that does not decode, is an
// error: the stream is not what a generator writes.
func (s *Stream) Consume(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLine)
	var n uint64
	for sc.Scan() {
		n++
		if n <= s.read {
			continue
		}
		s.read = n
		if err := s.line(sc.Bytes()); err != nil {
			return fmt.Errorf("generator %s, line %d of its log: %w", s.Origin, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("generator %s: reading its log: %w", s.Origin, err)
	}
	return nil
}

// Restarted says the generator's container was replaced: its next log is
// a new one, and the time from its last beat to the new container's first
// is a gap.
func (s *Stream) Restarted() {
	s.Restarts++
	s.read = 0
	s.restart = &Gap{From: s.LastBeat.At, Why: fmt.Sprintf("its container restarted (%d)", s.Restarts)}
}

// Close ends the account at now: a generator that never wrote its end
// line leaves a gap from its last beat to now (its totals, and whatever
// it sent after that beat, are unknown), as does a restart that never
// beat again.
func (s *Stream) Close(now time.Time) {
	switch {
	case s.restart != nil:
		s.restart.To = now
		s.Gaps = append(s.Gaps, *s.restart)
		s.restart = nil
	case s.End == nil:
		s.Gaps = append(s.Gaps, Gap{From: s.LastBeat.At, To: now, Why: "it ended without its totals"})
	}
}

func (s *Stream) line(b []byte) error {
	switch {
	case bytes.HasPrefix(b, resultPrefix):
		return s.result(b)
	case bytes.HasPrefix(b, beatPrefix):
		var v map[string]BeatLine
		if err := json.Unmarshal(b, &v); err != nil {
			return fmt.Errorf("a beat line: %w", err)
		}
		l := v[BeatKey]
		bt := Beat{At: time.Unix(0, l.At), Results: l.Results, Lag: time.Duration(l.LagNs), InFlight: l.InFlight, CPU: l.CPU}
		switch {
		case s.restart != nil:
			s.restart.To = bt.At
			s.Gaps = append(s.Gaps, *s.restart)
			s.restart = nil
		case !s.LastBeat.At.IsZero() && bt.At.Sub(s.LastBeat.At) > SilenceAfter:
			s.Gaps = append(s.Gaps, Gap{From: s.LastBeat.At, To: bt.At, Why: "silent"})
		}
		s.LastBeat = bt
		s.MaxLag = max(s.MaxLag, bt.Lag)
		s.PeakCPU = max(s.PeakCPU, bt.CPU)
	case bytes.HasPrefix(b, endPrefix):
		var v map[string]End
		if err := json.Unmarshal(b, &v); err != nil {
			return fmt.Errorf("the end line: %w", err)
		}
		e := v[EndKey]
		s.End = &e
	default:
		s.Other++
	}
	return nil
}

// result writes a result line to out and hands its record to observe.
func (s *Stream) result(b []byte) error {
	s.buf = append(append(s.buf[:0], b...), '\n') // vegeta's JSON decoder reads to the newline
	var rec traffic.Record
	n := 0
	err := traffic.ReadResults(bytes.NewReader(s.buf), func(r traffic.Record) error {
		rec = r
		n++
		return nil
	})
	if err != nil || n != 1 {
		return fmt.Errorf("a result line that is not one vegeta JSON result (%d, %v)", n, err)
	}
	if _, err := s.out.Write(s.buf); err != nil {
		return err
	}
	s.Results++
	if s.observe != nil {
		rec.Origin = s.Origin
		s.observe(rec)
	}
	return nil
}
