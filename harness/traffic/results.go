package traffic

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// PodHeader is the response header that names the pod that answered.
const PodHeader = "X-Bookshop-Pod"

// ViaHeader is the response header in which an in-cluster proxy (bookshop's
// gateway mode) names its own pod, on every response it sends, its 502s
// included.
const ViaHeader = "X-Bookshop-Gateway"

// Record is one request's outcome.
type Record struct {
	// Seq is vegeta's sequence number, unique within an attack, in order of
	// request start.
	Seq uint64
	// Time is when the request started.
	Time time.Time
	// Latency is how long the request took, until it failed or its body was read.
	Latency time.Duration
	// Code is the HTTP status code, 0 when there was no response.
	Code uint16
	// Class is the outcome class, Classify(Code, Error).
	Class Class
	// Error is the raw error text: the Go error for a transport failure, the
	// status line ("502 Bad Gateway") for a code < 200 or >= 400, else empty.
	Error string
	// Pod is the X-Bookshop-Pod response header, empty when absent.
	Pod string
	// Origin is the load source that sent the request (Source.Origin):
	// HostOrigin for the host client. Results files do not hold it: the
	// reader of a file knows whose it is (harness/analysis, by its name).
	Origin string
	// Via is the ViaHeader response header: the proxy pod the request went
	// through, empty on a direct path or without a response.
	Via string
	// URL is the target the request was sent to (vegeta's Result.URL): with
	// Config.Targets it says which entry, hence which node, it went through.
	URL string
	// Hidden is the class of the failure net/http hid from the client: the
	// request failed on a reused connection and net/http retried it on
	// another without a word, so Code, Class and Error are the retry's.
	// HiddenError is that failure's error text, as the first connection
	// returned it (e.g. "EOF", "read tcp ...: connection reset by peer"),
	// and Retries how many times net/http retried (usually 1). Empty and 0
	// when nothing was retried, and in files recorded before droprun saw
	// hidden retries. A retry that ended in a response leaves them in the
	// file (HiddenHeader); one that ended in a transport error leaves only
	// its own error, and is counted in Stats.Retried.
	Hidden      Class
	HiddenError string
	Retries     int
}

// End returns when the request ended.
func (r Record) End() time.Time { return r.Time.Add(r.Latency) }

// RequestID is the ID the request carried (Config.RequestIDs), read back
// from its URL's query; "" when it carried none.
func (r Record) RequestID() string {
	_, q, ok := strings.Cut(r.URL, "?")
	if !ok {
		return ""
	}
	for kv := range strings.SplitSeq(q, "&") {
		if v, ok := strings.CutPrefix(kv, RequestIDParam+"="); ok {
			return v
		}
	}
	return ""
}

// Masked reports whether the request was served (a 2xx) only because
// net/http retried it after a failure the client never saw: not a drop to
// the client, but a failure it would have seen without the retry.
func (r Record) Masked() bool { return r.Hidden != "" && !r.Class.Failed() }

// Result is one request's result as vegeta writes it to a results file:
// vegeta.Result's fields, names and JSON keys, so that a vegeta.Result
// converts to it (traffic.Result(res)) and reading a file needs no vegeta
// (ReadResults decodes vegeta's gob, JSON and CSV encodings itself).
type Result struct {
	Attack    string        `json:"attack"`
	Seq       uint64        `json:"seq"`
	Code      uint16        `json:"code"`
	Timestamp time.Time     `json:"timestamp"`
	Latency   time.Duration `json:"latency"`
	BytesOut  uint64        `json:"bytes_out"`
	BytesIn   uint64        `json:"bytes_in"`
	Error     string        `json:"error"`
	Body      []byte        `json:"body"`
	Method    string        `json:"method"`
	URL       string        `json:"url"`
	Headers   http.Header   `json:"headers"`
}

// FromResult classifies res.
func FromResult(res *Result) Record {
	rec := Record{
		Seq:     res.Seq,
		Time:    res.Timestamp,
		Latency: res.Latency,
		Code:    res.Code,
		Class:   Classify(res.Code, res.Error),
		Error:   res.Error,
		Pod:     res.Headers.Get(PodHeader),
		Via:     res.Headers.Get(ViaHeader),
		URL:     res.URL,
	}
	if hidden := res.Headers.Values(HiddenHeader); len(hidden) > 0 {
		// A hidden failure is a transport error: classify it as code 0.
		rec.Hidden, rec.HiddenError, rec.Retries = Classify(0, hidden[0]), hidden[0], len(hidden)
	}
	return rec
}

// ReadResults decodes a results file written by an Attack and calls fn for
// every result, in file order (arrival order). It also reads vegeta's JSON
// and CSV encodings (resultDecoder detects which, as vegeta.DecoderFor
// does). An empty input holds no results and is not an error. Record.Pod
// and Record.Hidden come from the response headers and Record.URL from the
// result's URL, which vegeta's gob, JSON and CSV encodings all keep.
//
// A truncated file (a crash mid-write) delivers every complete result and
// then returns an error wrapping io.ErrUnexpectedEOF. An error from fn stops
// the reading and is returned as is.
func ReadResults(r io.Reader, fn func(Record) error) error {
	br := bufio.NewReader(r)
	if _, err := br.Peek(1); err == io.EOF {
		return nil
	} else if err != nil {
		return fmt.Errorf("traffic: reading results: %w", err)
	}
	dec := resultDecoder(br)
	if dec == nil {
		return errors.New("traffic: reading results: not a vegeta results stream (gob, JSON or CSV)")
	}
	for n := 0; ; n++ {
		// Decode into a fresh Result: gob leaves fields that are zero in the
		// stream untouched, so a reused one would keep the previous Error.
		var res Result
		if err := dec(&res); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("traffic: reading results: after %d results: %w", n, err)
		}
		if err := fn(FromResult(&res)); err != nil {
			return err
		}
	}
}
