package appmetrics

import (
	"io"
	"time"

	"github.com/droprun/droprun/harness/jsonl"
)

// File is the conventional name of the collector's output in a run
// directory.
const File = "app-metrics.jsonl"

// Source says where a Record comes from.
type Source string

// Record sources.
const (
	// SourceScrape is one successful read of a pod's /metrics.
	SourceScrape Source = "scrape"
	// SourceTermination is a container's termination message: its final
	// totals, written by the app as it exited.
	SourceTermination Source = "termination-message"
	// SourceScrapeErrors counts the failed scrapes of a pod since the
	// previous such record.
	SourceScrapeErrors Source = "scrape-errors"
)

// ProbeHandlers are the bookshop handlers that answer the cluster rather
// than the client: the kubelet's liveness and readiness probes and the
// collector's own scrapes.
var ProbeHandlers = []string{"healthz", "readyz", "metrics"}

// Counts is bookshop_http_requests_total as the app's registry holds it:
// handler, then status code, then the count. A message that only had
// counts by code is held under the handler "".
type Counts map[string]map[string]int

// Total is the sum of every count.
func (c Counts) Total() int {
	n := 0
	for _, codes := range c {
		for _, v := range codes {
			n += v
		}
	}
	return n
}

// ByCode sums the counts of every handler by status code.
func (c Counts) ByCode() map[string]int {
	out := map[string]int{}
	for _, codes := range c {
		for code, v := range codes {
			out[code] += v
		}
	}
	return out
}

// Class sums the counts whose status code is in class hundreds: Class(2)
// is the 2xx responses.
func (c Counts) Class(hundreds int) int {
	n := 0
	for _, codes := range c {
		for code, v := range codes {
			if len(code) == 3 && int(code[0]-'0') == hundreds {
				n += v
			}
		}
	}
	return n
}

// Without returns a copy of c without the given handlers.
func (c Counts) Without(handlers ...string) Counts {
	out := Counts{}
	for h, codes := range c {
		skip := false
		for _, x := range handlers {
			skip = skip || h == x
		}
		if !skip {
			for code, v := range codes {
				out.Add(h, code, v)
			}
		}
	}
	return out
}

func (c Counts) Add(handler, code string, v int) {
	if c[handler] == nil {
		c[handler] = map[string]int{}
	}
	c[handler][code] += v
}

// plus adds o to c.
func (c Counts) plus(o Counts) {
	for h, codes := range o {
		for code, v := range codes {
			c.Add(h, code, v)
		}
	}
}

// minus returns c less o, cell by cell, with a cell that would go
// negative set to 0 and reported by ok=false (a counter cannot go down
// within one container instance).
func (c Counts) minus(o Counts) (out Counts, ok bool) {
	out, ok = Counts{}, true
	for h, codes := range c {
		for code, v := range codes {
			d := v - o[h][code]
			if d < 0 {
				d, ok = 0, false
			}
			if d > 0 {
				out.Add(h, code, d)
			}
		}
	}
	for h, codes := range o {
		for code, v := range codes {
			if _, seen := c[h][code]; !seen && v > 0 {
				ok = false
			}
		}
	}
	return out, ok
}

// Record is one line of the collector's output.
type Record struct {
	// Time is when the counts were known: when a scrape's answer arrived,
	// when the container finished (a termination message), or when the
	// last failed scrape of the batch ended (scrape errors). UTC.
	Time   time.Time `json:"time"`
	Source Source    `json:"source"`
	Pod    string    `json:"pod"`
	// Variant and Row are the pod's droprun.dev/variant and droprun.dev/row
	// labels, when it has them.
	Variant string `json:"variant,omitempty"`
	Row     string `json:"row,omitempty"`
	// Container, ContainerID and Started identify the container instance
	// the counts belong to; Started is when it started running.
	Container   string    `json:"container,omitempty"`
	ContainerID string    `json:"containerID,omitempty"`
	Started     time.Time `json:"started,omitzero"`

	// Requests is every response the instance counted, probes and scrapes
	// included; ByCode and ByHandler break it down.
	Requests  int            `json:"requests"`
	ByCode    map[string]int `json:"byCode,omitempty"`
	ByHandler Counts         `json:"byHandler,omitempty"`
	// InFlight is bookshop_http_requests_in_flight: for a termination
	// message of a killed app, the requests it cut unanswered.
	InFlight int `json:"inFlight,omitempty"`
	// OpenConns is, for a termination message of an app that did not seal
	// its totals (bookshop before sealing), the connections still open when
	// it read them: requests on them may have been answered uncounted.
	OpenConns int `json:"openConns,omitempty"`
	// Sealed is, for a termination message, the app's word that its totals
	// are exact: every response it sent is counted, and the requests in
	// flight were cut unanswered.
	Sealed bool `json:"sealed,omitempty"`

	// Exit and Signal are the app's own account of its exit (killed, clean
	// or error; SIGTERM), ExitCode and Reason the kubelet's (termination
	// messages only).
	Exit     string `json:"exit,omitempty"`
	Signal   string `json:"signal,omitempty"`
	ExitCode int32  `json:"exitCode,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// SignalAt and ListenerClosedAt are, for a termination message, when
	// the app received its signal and when it closed its listening socket
	// (new connections refused from then on), by the pod's clock, UTC;
	// zero when the app did not say (no signal, a listener never closed, an
	// app or bookshop build that does not record them).
	SignalAt         time.Time `json:"signalAt,omitzero"`
	ListenerClosedAt time.Time `json:"listenerClosedAt,omitzero"`

	// Scheduled is when a scrape was due: its tick of Options.Interval,
	// or the ScrapeNow call. LateSeconds is how long after that its
	// request started (a busy collector or host), TookSeconds how long the
	// request took until its answer arrived at Time, the API client's
	// rate limit and the pod proxy included: the pod read its counters
	// between Time-TookSeconds and Time (see ReadBetween). Scrapes only;
	// absent from files written before droprun recorded them.
	Scheduled   time.Time `json:"scheduled,omitzero"`
	LateSeconds float64   `json:"lateSeconds,omitempty"`
	TookSeconds float64   `json:"tookSeconds,omitempty"`

	// NoCounter is, for a scrape of a custom app, that its metrics lacked
	// the counter named (Counter.Name): zero counts.
	NoCounter bool `json:"noCounter,omitempty"`

	// Errors is the number of failed scrapes since Since (scrape errors
	// only).
	Errors int       `json:"errors,omitempty"`
	Since  time.Time `json:"since,omitzero"`
	// Error is the last scrape error, or why a termination message could
	// not be read (such a record carries no counts).
	Error string `json:"error,omitempty"`
}

// counts is what r says the instance had answered: by handler if known,
// else by code, else the bare total.
func (r *Record) counts() Counts {
	switch {
	case r.ByHandler != nil:
		return r.ByHandler
	case r.ByCode != nil:
		return Counts{"": r.ByCode}
	case r.Requests > 0:
		return Counts{"": {"": r.Requests}}
	}
	return Counts{}
}

// ReadBetween is the span within which a scrape's counts were read in the
// pod: from when its request started to when the answer arrived (Time).
// ok is false for other records and for scrapes written without timing.
func (r *Record) ReadBetween() (from, to time.Time, ok bool) {
	if r.Source != SourceScrape || r.Scheduled.IsZero() {
		return time.Time{}, time.Time{}, false
	}
	return r.Time.Add(-time.Duration(r.TookSeconds * float64(time.Second))), r.Time, true
}

// Instance names the container instance r's counts belong to.
func (r *Record) Instance() string {
	return r.Pod + "/" + r.Container + "/" + r.ContainerID
}

// Read parses the collector's output. Blank lines are skipped; a line that
// is not a record is an error naming it, and a last line cut off by a
// crash returns every whole record with a *jsonl.Truncated warning.
func Read(in io.Reader) ([]Record, error) {
	return jsonl.ReadAll[Record](in, File)
}
