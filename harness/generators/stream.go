package generators

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
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
// CPU cores since its previous beat, its goroutines waiting up to Sched
// for a core.
type Beat struct {
	At       time.Time
	Results  uint64
	Lag      time.Duration
	InFlight uint64
	CPU      float64
	Sched    time.Duration
}

// StallLag is the lag, or wait for a core, from which a generator's beats
// mark it stalled, as analysis.SaturationLag marks the host client: the
// analysis excuses the generator's own timeouts in flight then (its
// share, not the variant's).
const StallLag = time.Second

// Stall is a stretch in which a generator sent StallLag or more behind
// schedule, or its goroutines waited that long for a core: from its first
// such beat's time less that beat's lag to the next beat back on time
// (or the last one), with the worst lag or wait.
type Stall struct {
	From, To time.Time
	Lag      time.Duration
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

	read    uint64 // lines of the current container's log consumed
	buf     []byte // a result line with its newline
	dec     *lineDecoder
	restart *Gap   // open from a restart to the new container's first beat
	Results uint64 // result lines written, over every container
	// ByClass counts the results written by class: with Results, the
	// generator's account as droprun holds it, record by record.
	ByClass map[traffic.Class]uint64
	// current counts the results of the current container, which its end
	// line's totals must match.
	current uint64
	// Missing is how many results a container's end line counts that
	// droprun never read of its log (lost to a log rotated or cut under
	// the stream): never silently thinner.
	Missing  uint64
	Other    uint64 // lines that were none of a generator's own
	TooLong  uint64 // lines over MaxLine, skipped unread
	Restarts int
	// LastBeat is the latest beat (Latest reads it while Consume runs),
	// MaxLag the furthest behind schedule any beat said, PeakCPU the most
	// cores a beat said it used.
	LastBeat Beat
	beatMu   sync.Mutex
	MaxLag   time.Duration
	PeakCPU  float64
	End      *End
	Gaps     []Gap
	// Stalls are the stretches it sent StallLag or more behind schedule;
	// stalling says the latest is still open.
	Stalls   []Stall
	stalling bool
}

// NewStream returns the account of the generator origin, whose result
// lines go to out and, as records, to observe (nil for none).
func NewStream(origin string, out io.Writer, observe func(traffic.Record)) *Stream {
	return &Stream{Origin: origin, out: out, observe: observe}
}

// Consume reads the current container's log from its start until r ends,
// skipping the lines an earlier Consume of the same container read. A
// line longer than MaxLine is skipped and counted (TooLong), never read
// whole; a result line that does not decode is an error: the stream is not
// what a generator writes.
func (s *Stream) Consume(r io.Reader) error {
	var n uint64
	var lineErr error
	err := eachLine(r, MaxLine, func(b []byte, tooLong bool) bool {
		n++
		if n <= s.read {
			return true
		}
		s.read = n
		if tooLong {
			s.TooLong++
			return true
		}
		if err := s.line(b); err != nil {
			lineErr = fmt.Errorf("generator %s, line %d of its log: %w", s.Origin, n, err)
			return false
		}
		return true
	})
	if lineErr != nil {
		return lineErr
	}
	if err != nil {
		return fmt.Errorf("generator %s: reading its log: %w", s.Origin, err)
	}
	return nil
}

// eachLine calls fn with each line of r, without its newline (a last line
// without one too), until fn returns false. A line longer than limit is not
// kept: fn gets it as tooLong, with no bytes, and the read goes on after
// it, holding at most limit plus a buffer of it at any time.
func eachLine(r io.Reader, limit int, fn func(b []byte, tooLong bool) bool) error {
	br := bufio.NewReaderSize(r, 4096)
	var line []byte
	long := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			line = append(line, chunk...)
			if len(bytes.TrimSuffix(line, newline)) > limit {
				long, line = true, line[:0]
			}
		}
		ended := len(chunk) > 0 && chunk[len(chunk)-1] == '\n'
		if ended || (err == io.EOF && (len(line) > 0 || long)) {
			if !fn(bytes.TrimSuffix(line, newline), long) {
				return nil
			}
			line, long = line[:0], false
		}
		switch {
		case err == io.EOF:
			return nil
		case err != nil && err != bufio.ErrBufferFull:
			return err
		}
	}
}

var newline = []byte("\n")

// Latest is the latest beat; safe to call while another goroutine runs
// Consume, unlike reading the other fields.
func (s *Stream) Latest() Beat {
	s.beatMu.Lock()
	defer s.beatMu.Unlock()
	return s.LastBeat
}

// Restarted says the generator's container was replaced: its next log is
// a new one, and the time from its last beat to the new container's first
// is a gap.
func (s *Stream) Restarted() {
	s.Restarts++
	s.read, s.current, s.stalling = 0, 0, false
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
		bt := Beat{At: time.Unix(0, l.At), Results: l.Results, Lag: time.Duration(l.LagNs), InFlight: l.InFlight, CPU: l.CPU, Sched: time.Duration(l.SchedNs)}
		switch {
		case s.restart != nil:
			s.restart.To = bt.At
			s.Gaps = append(s.Gaps, *s.restart)
			s.restart = nil
		case !s.LastBeat.At.IsZero() && bt.At.Sub(s.LastBeat.At) > SilenceAfter:
			s.Gaps = append(s.Gaps, Gap{From: s.LastBeat.At, To: bt.At, Why: "silent"})
		}
		s.beatMu.Lock()
		s.LastBeat = bt
		s.beatMu.Unlock()
		s.MaxLag = max(s.MaxLag, bt.Lag)
		s.PeakCPU = max(s.PeakCPU, bt.CPU)
		s.stall(bt)
	case bytes.HasPrefix(b, endPrefix):
		var v map[string]End
		if err := json.Unmarshal(b, &v); err != nil {
			return fmt.Errorf("the end line: %w", err)
		}
		e := v[EndKey]
		s.End = &e
		if e.Results > s.current {
			s.Missing += e.Results - s.current
		}
	default:
		s.Other++
	}
	return nil
}

// stall adds beat bt to the generator's stalls: one that lags or waited
// for a core StallLag or more opens a stall or extends the open one; the
// first back on time ends it.
func (s *Stream) stall(bt Beat) {
	n := len(s.Stalls)
	worst := max(bt.Lag, bt.Sched)
	switch {
	case worst >= StallLag && s.stalling:
		st := &s.Stalls[n-1]
		st.From = minTime(st.From, bt.At.Add(-worst))
		st.To, st.Lag = bt.At, max(st.Lag, worst)
	case worst >= StallLag:
		s.Stalls = append(s.Stalls, Stall{From: bt.At.Add(-worst), To: bt.At, Lag: worst})
		s.stalling = true
	case s.stalling:
		s.Stalls[n-1].To = bt.At
		s.stalling = false
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// result writes a result line to out and hands its record to observe.
func (s *Stream) result(b []byte) error {
	s.buf = append(append(s.buf[:0], b...), '\n') // a result line ends in its newline
	if s.dec == nil {
		s.dec = newLineDecoder()
	}
	rec, err := s.dec.decode(s.buf)
	if err != nil {
		return fmt.Errorf("a result line that is not one vegeta JSON result: %w", err)
	}
	if _, err := s.out.Write(s.buf); err != nil {
		return err
	}
	s.Results++
	s.current++
	if s.ByClass == nil {
		s.ByClass = map[traffic.Class]uint64{}
	}
	s.ByClass[rec.Class]++
	if s.observe != nil {
		rec.Origin = s.Origin
		s.observe(rec)
	}
	return nil
}
