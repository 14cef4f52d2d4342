package attack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/droprun/droprun/harness/traffic"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// flushEvery bounds how stale the results file is on disk while an attack
// runs: a crash loses at most this much of the stream.
const flushEvery = time.Second

// Attack is a running constant-rate attack. Create it with Start, end it
// with Stop.
type Attack struct {
	cfg     traffic.Config
	atk     *vegeta.Attacker
	watch   *watch
	pacer   *pacer
	buf     *bufio.Writer
	pipe    pipeline
	observe func(traffic.Record)
	stopCtx func() bool

	start time.Time
	cpu0  time.Duration
	cpuOK bool

	haltOnce sync.Once
	end      time.Time
	cpu1     time.Duration

	// received counts results taken off vegeta's channel; the pacer reads it.
	received atomic.Uint64
	// done is closed when the results stream has ended and everything is
	// flushed to out. The fields below belong to the consumer goroutine
	// until then.
	done     chan struct{}
	requests uint64
	byClass  map[traffic.Class]uint64
	masked   uint64
	err      error

	stopOnce sync.Once
	stats    traffic.Stats
}

// Start begins a constant-rate attack on cfg.URL, or round robin on
// cfg.Targets, that runs until Stop is called or ctx is done, whichever
// comes first.
//
// Every result is (1) encoded to out with vegeta's own gob encoder
// (vegeta.NewEncoder), so `vegeta report` and `vegeta plot` read the file
// and traffic.ReadResults rebuilds every traffic.Record from it, and (2) classified and
// passed to observe (which may be nil), called from one goroutine in arrival
// order. observe must be quick: while it runs, results queue up in busy
// workers. Before encoding, a result is trimmed: response headers other than
// X-Bookshop-* are dropped, and so is the body of a 2xx response (failures
// keep up to traffic.MaxBody bytes of body).
//
// out is written through a bufio.Writer, flushed every second and when the
// attack ends; nothing is kept in memory per result, so memory stays flat
// however long the attack runs. If writing fails, the attack stops (a
// measurement that is not on disk is lost) and Stop returns the error.
//
// The client sends only to the target URLs: redirects are not followed (a
// 3xx is a result of class traffic.ClassOther), no proxy is used, and its dialer
// refuses any address but theirs. Each result keeps the URL it was sent to
// (vegeta's Result.URL, traffic.Record.URL). A request that net/http retried
// behind the client's back carries the failures it hid (traffic.Record.Hidden,
// traffic.HiddenHeader in the file).
func Start(ctx context.Context, cfg traffic.Config, out io.Writer, observe func(traffic.Record)) (*Attack, error) {
	return start(ctx, cfg, out, observe, (&net.Dialer{}).DialContext)
}

// start is Start with the dialer the client's connections come from.
func start(ctx context.Context, cfg traffic.Config, out io.Writer, observe func(traffic.Record), dial dialFunc) (*Attack, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if out == nil {
		return nil, errors.New("traffic: Start: out is nil")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("traffic: Start: %w", err)
	}
	cfg = cfg.WithDefaults()
	addrs, err := cfg.Addrs()
	if err != nil {
		return nil, err
	}

	a := &Attack{
		cfg:     cfg,
		buf:     bufio.NewWriterSize(out, 64<<10),
		observe: observe,
		done:    make(chan struct{}),
		byClass: make(map[traffic.Class]uint64, traffic.NClasses),
	}
	a.pipe.enc = vegeta.NewEncoder(a.buf)
	if cfg.Encoding == traffic.EncodingJSON {
		a.pipe.enc = vegeta.NewJSONEncoder(a.buf)
	}
	a.pacer = newPacer(cfg.Rate, cfg.Arrivals, cfg.MaxWorkers, &a.received)
	client, w, err := newClient(cfg, addrs, dial)
	if err != nil {
		return nil, err
	}
	a.watch = w
	a.atk = vegeta.NewAttacker(
		// Client must come first: the options below modify the client it copies.
		vegeta.Client(client),
		vegeta.Redirects(vegeta.NoFollow),
		vegeta.MaxWorkers(cfg.MaxWorkers),
		vegeta.MaxBody(traffic.MaxBody),
	)
	targeter := roundRobin(cfg.RequestMethod(), cfg.TargetList())
	if cfg.RequestIDs {
		prefix := cfg.RequestIDPrefix
		if prefix == "" {
			prefix = cfg.Name
		}
		targeter = withRequestIDs(targeter, prefix)
	}

	a.start = time.Now()
	a.cpu0, a.cpuOK = processCPU()
	results := a.atk.Attack(targeter, a.pacer, 0, cfg.Name)
	a.stopCtx = context.AfterFunc(ctx, a.halt)
	go a.consume(results)
	return a, nil
}

// roundRobin returns a targeter that hands out targets in turn, safe for
// vegeta's concurrent workers: vegeta's static targeter, which cycles
// with one atomic counter and never allocates.
func roundRobin(method string, targets []traffic.Target) vegeta.Targeter {
	tgts := make([]vegeta.Target, len(targets))
	for i, t := range targets {
		tgts[i] = vegeta.Target{Method: method, URL: t.URL}
	}
	return vegeta.NewStaticTargeter(tgts...)
}

// withRequestIDs gives every target tr hands out a unique ID, prefix-N
// (N counting from 1 in base 36), in its traffic.RequestIDHeader header and its
// URL's traffic.RequestIDParam query parameter.
func withRequestIDs(tr vegeta.Targeter, prefix string) vegeta.Targeter {
	var n atomic.Uint64
	return func(t *vegeta.Target) error {
		if err := tr(t); err != nil {
			return err
		}
		id := prefix + "-" + strconv.FormatUint(n.Add(1), 36)
		sep := "?"
		if strings.Contains(t.URL, "?") {
			sep = "&"
		}
		t.URL += sep + traffic.RequestIDParam + "=" + id
		h := make(http.Header, len(t.Header)+1)
		maps.Copy(h, t.Header) // the static targeter's header is shared
		h.Set(traffic.RequestIDHeader, id)
		t.Header = h
		return nil
	}
}

// newClient returns the HTTP client of an attack on addrs, connecting
// with dial, and its watch. It is what vegeta's own options KeepAlive,
// Timeout and Proxy would build, plus a dialer that refuses every address
// but addrs (vegeta's KeepAlive option would replace a guarded dialer with
// its own, so the client is built here), and the watch that bounds each
// request and sees net/http's hidden retries. For h2c it is a fleet of
// cfg.Connections HTTP/2 transports, each holding one connection per
// target; for kept-alive HTTP/1.1 with cfg.Connections as many
// transports, each with its own pool; for gRPC a fleet of as many
// grpc-go channels (grpcFleet).
func newClient(cfg traffic.Config, addrs []string, dial dialFunc) (*http.Client, *watch, error) {
	workers := int(min(cfg.MaxWorkers, 1<<20))
	newTransport := func() *http.Transport {
		return &http.Transport{
			Proxy:              nil, // never a proxy: the load goes to addrs and nowhere else
			DialContext:        noteErrors(guardDial(dial, addrs)),
			DisableKeepAlives:  !cfg.Protocol.ReusesConnections(),
			DisableCompression: true,
			MaxIdleConns:       workers,
			// Enough idle connections that a kept-alive attack reuses them
			// instead of churning: one per worker.
			MaxIdleConnsPerHost: workers,
			IdleConnTimeout:     cfg.IdleTimeout,
		}
	}
	var next http.RoundTripper = newTransport()
	switch {
	case cfg.Protocol == traffic.ProtocolGRPC:
		f, err := newGRPCFleet(addrs, cfg.Connections, guardDial(dial, addrs), cfg.OnChannel)
		if err != nil {
			return nil, nil, err
		}
		next = f
	case cfg.Connections > 0:
		// HTTP/2 or kept-alive HTTP/1.1 clients, each with its own pool.
		f := &fleet{}
		for range cfg.Connections {
			tr := newTransport()
			if cfg.Protocol == traffic.ProtocolH2C {
				tr.Protocols = new(http.Protocols)
				// Prior knowledge: http:// URLs speak HTTP/2 at once.
				// net/http opens a second connection to a target only
				// when the first is full (the server's stream limit) or
				// going away (GOAWAY).
				tr.Protocols.SetUnencryptedHTTP2(true)
			}
			f.clients = append(f.clients, tr)
		}
		next = f
	}
	w := &watch{next: next, timeout: cfg.Timeout, idleReuse: cfg.Protocol.ReusesConnections() && !cfg.Protocol.Multiplexed()}
	if cfg.Protocol.Multiplexed() {
		w.unseen = traffic.RefusedStream
	}
	return &http.Client{Transport: w}, w, nil
}

// fleet spreads requests round robin over its clients, each a transport
// with its own connections, as many HTTP/2 clients behind one service
// would.
type fleet struct {
	clients []http.RoundTripper
	n       atomic.Uint64
}

// RoundTrip implements http.RoundTripper.
func (f *fleet) RoundTrip(req *http.Request) (*http.Response, error) {
	return f.clients[(f.n.Add(1)-1)%uint64(len(f.clients))].RoundTrip(req)
}

// Done returns a channel that is closed when the attack has ended (by Stop,
// by its context, or by a write error) and every result has been observed
// and flushed to out. Call Stop for the stats.
func (a *Attack) Done() <-chan struct{} { return a.done }

// Stop ends the attack, waits for the requests in flight (at most one
// traffic.Config.Timeout), flushes out and returns the stats. The error is the first
// failure to write the results; the stats are complete even then. Calling
// Stop again returns the same stats.
func (a *Attack) Stop() (traffic.Stats, error) {
	a.halt()
	<-a.done
	a.stopOnce.Do(func() {
		a.stopCtx()
		if c, ok := a.watch.next.(closer); ok {
			c.close()
		}
		a.stats = a.summarise(runtime.NumCPU())
	})
	s := a.stats
	s.ByClass = maps.Clone(s.ByClass)
	s.Suspect = append([]string(nil), s.Suspect...)
	return s, a.err
}

// halt tells vegeta to stop handing out requests, once, and notes when.
func (a *Attack) halt() {
	a.haltOnce.Do(func() {
		a.end = time.Now()
		a.cpu1, _ = processCPU()
		a.atk.Stop()
	})
}

// consume is the only reader of vegeta's results: it classifies, encodes
// and observes each result in arrival order, until vegeta closes the channel
// (after Stop, once the requests in flight are done).
func (a *Attack) consume(results <-chan *vegeta.Result) {
	defer close(a.done)
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	for {
		select {
		case res, ok := <-results:
			if !ok {
				a.halt()
				a.fail(a.buf.Flush())
				return
			}
			a.received.Add(1)
			rec, err := a.pipe.process(res)
			a.fail(err)
			a.requests++
			a.byClass[rec.Class]++
			if rec.Masked() {
				a.masked++
			}
			if a.observe != nil {
				rec.Origin = traffic.HostOrigin
				a.observe(rec)
			}
		case <-tick.C:
			a.fail(a.buf.Flush())
		}
	}
}

// fail records the first write error, stops writing and stops the attack.
// Results still in flight are classified and observed.
func (a *Attack) fail(err error) {
	if err == nil || a.err != nil {
		return
	}
	a.err = fmt.Errorf("traffic: writing results: %w", err)
	a.pipe.enc = nil
	a.halt()
}

// summarise builds the stats once the attack has ended.
func (a *Attack) summarise(numCPU int) traffic.Stats {
	s := traffic.Stats{
		Requests:         a.requests,
		ByClass:          make(map[traffic.Class]uint64, traffic.NClasses),
		Start:            a.start,
		End:              a.end,
		AskedRate:        float64(a.cfg.Rate),
		MaxWorkers:       a.cfg.MaxWorkers,
		PeakInFlight:     a.pacer.peak,
		WorkersExhausted: a.pacer.exhausted,
		MaxLag:           a.pacer.maxLag,
		Retried:          a.watch.retried.Load(),
		Masked:           a.masked,
	}
	for _, c := range traffic.Classes() {
		s.ByClass[c] = a.byClass[c]
	}
	if wall := a.end.Sub(a.start); wall > 0 {
		s.AchievedRate = float64(a.requests) / wall.Seconds()
		if a.cpuOK {
			s.ClientCPU = float64(a.cpu1-a.cpu0) / float64(wall)
		}
	}
	s.Suspect = suspects(s, numCPU)
	return s
}

// suspects explains, in words, why s may measure the client rather than the
// target.
func suspects(s traffic.Stats, numCPU int) []string {
	var why []string
	if s.AchievedRate < 0.95*s.AskedRate {
		why = append(why, fmt.Sprintf("achieved %.0f req/s of %.0f asked (%.1f%% short): the client could not hold its rate",
			s.AchievedRate, s.AskedRate, 100*(1-s.AchievedRate/s.AskedRate)))
	}
	if s.WorkersExhausted {
		fix := "raise MaxWorkers or lower the rate"
		if s.MaxWorkers >= traffic.WorkerCap {
			fix = "that is droprun's cap (traffic.WorkerCap): lower the rate or the timeout"
		}
		why = append(why, fmt.Sprintf("all %d workers were busy while requests were due (peak %d in flight): requests went out late; %s",
			s.MaxWorkers, s.PeakInFlight, fix))
	}
	if s.MaxLag > traffic.MaxLagTolerance {
		why = append(why, fmt.Sprintf(traffic.LagSuspect+" %s behind schedule (tolerance %s)",
			s.MaxLag.Round(time.Millisecond), traffic.MaxLagTolerance))
	}
	if numCPU > 0 && s.ClientCPU > 0.9*float64(numCPU) {
		why = append(why, fmt.Sprintf("the client process used %.2f of %d cores: a saturated client is not a measurement",
			s.ClientCPU, numCPU))
	}
	return why
}

// Pacing is the attack's state as of the latest request sent: how far
// behind schedule it went out (negative: early) and how many requests were
// in flight. It is safe to call while the attack runs.
func (a *Attack) Pacing() (lag time.Duration, inFlight uint64) {
	return time.Duration(a.pacer.lag.Load()), a.pacer.busy.Load()
}

// pacer is vegeta's constant pacer, watched: vegeta calls Pace (from one
// goroutine) right after each request is handed to a worker, with the number
// handed out so far. That is where the attack sees how many workers are busy
// and how late it runs. Its fields are read only after vegeta has closed the
// results channel, which happens after its pacing goroutine has returned.
type pacer struct {
	vegeta.ConstantPacer
	interval time.Duration
	// poisson, when set, spaces the requests instead (traffic.ArrivalsPoisson).
	poisson    *poissonArrivals
	maxWorkers uint64
	received   *atomic.Uint64

	peak      uint64
	exhausted bool
	maxLag    time.Duration

	// lag and busy are the latest values, for Pacing, read while the
	// attack runs.
	lag  atomic.Int64
	busy atomic.Uint64
}

func newPacer(rate int, arrivals traffic.Arrivals, maxWorkers uint64, received *atomic.Uint64) *pacer {
	p := &pacer{
		ConstantPacer: vegeta.ConstantPacer{Freq: rate, Per: time.Second},
		interval:      time.Second / time.Duration(rate),
		maxWorkers:    maxWorkers,
		received:      received,
	}
	if arrivals == traffic.ArrivalsPoisson {
		p.poisson = newPoissonArrivals(float64(rate))
	}
	return p
}

// due returns when hit hits+1 (1-based) is due: vegeta's constant pacer
// sends hit n at n × interval.
func (p *pacer) due(hits uint64) time.Duration {
	if p.poisson != nil {
		return p.poisson.at(hits)
	}
	return time.Duration(hits+1) * p.interval
}

// Pace implements vegeta.Pacer.
func (p *pacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	// Busy workers: handed out minus received. A result can be received just
	// before vegeta counts its hit, so guard the subtraction.
	var busy uint64
	if got := p.received.Load(); got < hits {
		busy = hits - got
	}
	p.peak = max(p.peak, busy)
	due := p.due(hits)
	lag := elapsed - due
	p.maxLag = max(p.maxLag, lag)
	p.lag.Store(int64(lag))
	p.busy.Store(busy)
	if busy >= p.maxWorkers && lag > 0 {
		p.exhausted = true
	}
	if p.poisson != nil {
		return max(due-elapsed, 0), false
	}
	return p.ConstantPacer.Pace(elapsed, hits)
}

// poissonArrivals are the due times of a Poisson process's requests:
// exponentially distributed gaps with mean 1/rate, from a fixed seed, so
// two attacks at one rate space their requests alike. vegeta asks for
// them in order (hits only grows), so each is drawn once.
type poissonArrivals struct {
	rate float64
	rng  *rand.Rand
	n    uint64        // hits whose due time has been drawn
	next time.Duration // the due time of hit n (1-based)
}

func newPoissonArrivals(rate float64) *poissonArrivals {
	return &poissonArrivals{rate: rate, rng: rand.New(rand.NewPCG(1, 2))}
}

// at returns when hit hits+1 is due; hits never decreases from one call
// to the next (vegeta asks again, for the same hit, after a wait).
func (a *poissonArrivals) at(hits uint64) time.Duration {
	for a.n <= hits {
		a.next += time.Duration(a.rng.ExpFloat64() / a.rate * float64(time.Second))
		a.n++
	}
	return a.next
}
