package traffic

import "time"

// MaxLagTolerance is how far behind schedule the pacer may fall before the
// attack is called suspect.
const MaxLagTolerance = 250 * time.Millisecond

// Stats summarises an attack.
type Stats struct {
	// Requests is the number of requests sent, each with exactly one result.
	Requests uint64
	// ByClass counts the requests of each class; every class of Classes is
	// present, zero or not, and the counts sum to Requests.
	ByClass map[Class]uint64
	// Start is when the attack began; End is when it was told to stop (by
	// Stop, by its context or by a write error). Requests in flight at End
	// finished later and are counted.
	Start, End time.Time
	// AskedRate is Config.Rate; AchievedRate is Requests / (End − Start).
	AskedRate, AchievedRate float64
	// MaxWorkers is the worker bound the attack ran with (after defaults).
	MaxWorkers uint64
	// Retried counts the requests net/http retried on another connection
	// after they failed on a reused one, without telling the client (see
	// Record.Hidden); Masked counts those of them that then got a 2xx:
	// failures the client would have seen without the retry. A retried
	// request that failed anyway is in ByClass as its last failure. Both
	// are 0 without ProtocolKeepAlive: net/http never retries on a new connection.
	Retried, Masked uint64
	// PeakInFlight is the most requests in flight at once, sampled each time
	// a request was sent (exact to within one).
	PeakInFlight uint64
	// WorkersExhausted reports that at some moment every one of MaxWorkers
	// workers was busy while the next request was already due, so requests
	// went out late. vegeta itself does not report this (its pacing loop
	// just blocks handing out the next request), so the attack watches from
	// its pacer: requests handed out minus results received is the number
	// of busy workers.
	WorkersExhausted bool
	// MaxLag is the furthest behind schedule a request was sent: how late
	// the pacer handed out a request that was due.
	MaxLag time.Duration
	// ClientCPU is the CPU this whole process used from Start to End (user +
	// system, from getrusage RUSAGE_SELF) divided by the wall time: 1.0 is
	// one core busy. It includes every goroutine of the process, not only
	// the attack's. Zero where it cannot be measured.
	ClientCPU float64
	// Suspect lists, in words, why the client may not have held its rate:
	// a rate shortfall over 5%, exhausted workers, a lag over 250ms, or a
	// client using more than 90% of the machine's cores. Empty when none.
	// Numbers from a suspect attack measure the client, not the target.
	Suspect []string
}

// LagSuspect starts the Suspect reason about requests sent late, so that a
// caller with a finer view of when the client lagged can replace it.
const LagSuspect = "requests went out up to"

// The request ID's header and query parameter (Config.RequestIDs).
const (
	RequestIDHeader = "X-Request-Id"
	RequestIDParam  = "droprun-id"
)
