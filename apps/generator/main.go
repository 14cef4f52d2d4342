// Command generator sends one share of a droprun run's load from inside
// the cluster. droprun runs it as the pods of one Indexed Job, a pod per
// index (JOB_COMPLETION_INDEX): each sends its share of the rate to the
// targets with droprun's own client (harness/traffic), starts when droprun
// says and stops when droprun says.
//
// What to send is in its flags, which the Job's pod template holds, so it
// needs no access to the API. When is said on its control port:
//
//	POST /start?at=UNIX_NS   start at that time plus its phase
//	POST /stop               stop: requests in flight finish, then the end line
//	GET  /clock              its clock now, Unix nanoseconds (droprun's offset estimate)
//
// Its stdout is what droprun reads, as the pod's log, while it runs:
// every result in vegeta's JSON encoding, one a line, in the order they
// complete, and once a second a beat
//
//	{"droprun-beat":{"at":UNIX_NS,"results":N,"lagNs":L,"inFlight":K,"cpu":C,"schedNs":S}}
//
// (alive; N results written so far; how far behind schedule it sends, how
// many requests are in flight, the cores it used since the last beat and
// the longest its goroutines waited for a core since then),
// and at the end {"droprun-end":{...}} with its totals. Lines are written
// whole, never interleaved. Its own messages go to stderr, which the log
// interleaves: droprun reads only the lines above.
//
// Rate and phase come from its index: of a total rate R over G generators
// index i sends R/G (the remainder to the lowest indexes), starting i/R
// seconds after the start time, so the generators' requests interleave
// and add up to R.
package main

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/droprun/droprun/harness/attack"
	"github.com/droprun/droprun/harness/generators"
	"github.com/droprun/droprun/harness/schedlat"
	"github.com/droprun/droprun/harness/traffic"
)

// config is the parsed command line.
type config struct {
	targets     []string
	rate        int // the total rate over every generator
	generators  int
	index       int
	protocol    traffic.Protocol
	connections int
	method      string
	timeout     time.Duration
	idleTimeout time.Duration
	arrivals    traffic.Arrivals
	name        string
	// requestIDs gives every request an ID for a front's access log,
	// prefixed with the name and this pod's (pod: $POD_NAME, from the
	// Job's downward API), unique across the pods that replace one
	// another.
	requestIDs bool
	pod        string
	control    string
	// token must come with every start and stop ($DROPRUN_CONTROL_TOKEN,
	// the run's own).
	token string
	// wait bounds the wait for /start, and run the sending after it: a
	// generator droprun lost track of stops by itself.
	wait, run time.Duration
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is the whole program; it returns the exit status: 0 after a stop,
// 1 when sending failed or no start came, 2 on a bad command line.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, getenv, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "generator: %v\n", err)
		return 2
	}
	l, err := net.Listen("tcp", cfg.control)
	if err != nil {
		fmt.Fprintf(stderr, "generator: control port: %v\n", err)
		return 1
	}
	g := &generator{cfg: cfg, out: &lines{w: stdout}, start: make(chan time.Time, 1), stop: make(chan struct{})}
	srv := &http.Server{Handler: g.handler(), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	defer srv.Close()
	fmt.Fprintf(stderr, "generator %d of %d: %d req/s to %s; control on %s\n", cfg.index, cfg.generators, share(cfg.rate, cfg.generators, cfg.index), strings.Join(cfg.targets, ", "), l.Addr())
	if err := g.send(ctx); err != nil {
		fmt.Fprintf(stderr, "generator: %v\n", err)
		return 1
	}
	return 0
}

// share is index's part of rate over n generators: rate/n, and one more
// for each of the first rate%n indexes.
func share(rate, n, index int) int {
	s := rate / n
	if index < rate%n {
		s++
	}
	return s
}

// phase is when index starts after the common start: index/rate seconds,
// its place in the interleaved schedule.
func phase(rate, index int) time.Duration {
	return time.Duration(index) * time.Second / time.Duration(rate)
}

// generator is one running generator: its control server hands the start
// time and the stop to send.
type generator struct {
	cfg   config
	out   *lines
	start chan time.Time
	stop  chan struct{}
	once  sync.Once
}

func (g *generator) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /start", g.authorized(func(w http.ResponseWriter, r *http.Request) {
		ns, err := strconv.ParseInt(r.URL.Query().Get("at"), 10, 64)
		if err != nil {
			http.Error(w, "start?at=UNIX_NS: "+err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case g.start <- time.Unix(0, ns):
			fmt.Fprintln(w, "starting")
		default:
			http.Error(w, "already started", http.StatusConflict)
		}
	}))
	mux.HandleFunc("POST /stop", g.authorized(func(w http.ResponseWriter, r *http.Request) {
		g.once.Do(func() { close(g.stop) })
		fmt.Fprintln(w, "stopping")
	}))
	mux.HandleFunc("GET /clock", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, time.Now().UnixNano())
	})
	return mux
}

// authorized lets a request through to h only with the run's token.
func (g *generator) authorized(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.URL.Query().Get(generators.TokenParam)), []byte(g.cfg.token)) != 1 {
			http.Error(w, "a start or stop needs this run's control token", http.StatusForbidden)
			return
		}
		h(w, r)
	}
}

// send waits for the start, sends until the stop (or its own bound, or
// ctx), and writes the end line.
func (g *generator) send(ctx context.Context) error {
	var at time.Time
	select {
	case at = <-g.start:
	case <-g.stop:
		return g.out.end(traffic.Stats{}, "stopped before it started")
	case <-time.After(g.cfg.wait):
		return fmt.Errorf("no start within %s", g.cfg.wait)
	case <-ctx.Done():
		return ctx.Err()
	}
	at = at.Add(phase(g.cfg.rate, g.cfg.index))
	select {
	case <-time.After(time.Until(at)):
	case <-g.stop:
		return g.out.end(traffic.Stats{}, "stopped before its start time")
	case <-ctx.Done():
		return ctx.Err()
	}
	a, err := attack.Start(ctx, g.trafficConfig(), g.out, nil)
	if err != nil {
		return err
	}
	beats := time.NewTicker(time.Second)
	defer beats.Stop()
	bound := time.After(g.cfg.run)
	cpu := cpuTime()
	sched := schedlat.New()
	last := time.Now()
	why := ""
loop:
	for {
		select {
		case <-g.stop:
			break loop
		case <-bound:
			why = fmt.Sprintf("no stop within %s: stopped by itself", g.cfg.run)
			break loop
		case <-ctx.Done():
			why = "terminated"
			break loop
		case <-a.Done():
			break loop
		case now := <-beats.C:
			lag, inFlight := a.Pacing()
			c := cpuTime()
			g.out.beat(generators.BeatLine{At: now.UnixNano(), Results: g.out.results(), LagNs: int64(lag), InFlight: inFlight,
				CPU: (c - cpu).Seconds() / now.Sub(last).Seconds(), SchedNs: int64(sched.Max())})
			cpu, last = c, now
		}
	}
	stats, err := a.Stop()
	if err != nil {
		why = err.Error()
	}
	if werr := g.out.end(stats, why); werr != nil {
		return werr
	}
	if err == nil && ctx.Err() != nil {
		// Terminated (its pod deleted or evicted), not stopped by droprun:
		// a failure, so that the Job replaces the pod rather than count
		// its index complete.
		err = errTerminated
	}
	return err
}

// errTerminated is a generator's exit on SIGTERM before droprun's stop.
var errTerminated = errors.New("terminated before droprun's stop: exiting 1 so that the Job replaces this generator")

// trafficConfig is the attack of this generator's share: its targets
// allowed by name (they are in the cluster, not on 127.0.0.1), results in
// vegeta's JSON encoding.
func (g *generator) trafficConfig() traffic.Config {
	c := g.cfg
	cfg := traffic.Config{Rate: share(c.rate, c.generators, c.index), Protocol: c.protocol, Connections: c.connections,
		Method: c.method, Timeout: c.timeout, IdleTimeout: c.idleTimeout, Arrivals: c.arrivals, Name: c.name, Encoding: traffic.EncodingJSON}
	if c.requestIDs {
		cfg.RequestIDs, cfg.RequestIDPrefix = true, c.name+"."+c.pod
	}
	for _, t := range c.targets {
		cfg.Targets = append(cfg.Targets, traffic.Target{URL: t})
		u, _ := url.Parse(t) // checked by parseConfig
		cfg.Allow = append(cfg.Allow, traffic.AllowTarget{Host: u.Hostname(), Port: u.Port()})
	}
	return cfg
}

// lines writes whole lines to w: the attack's results, written through
// its buffer in pieces of any size, and the beat and end lines, never
// one inside another.
type lines struct {
	mu      sync.Mutex
	w       io.Writer
	pending []byte
	n       uint64 // result lines written
}

// Write implements io.Writer for the attack: it writes the complete lines
// of p (with any pending start) and keeps the rest.
func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = append(l.pending, p...)
	cut := bytes.LastIndexByte(l.pending, '\n') + 1
	if cut == 0 {
		return len(p), nil
	}
	if _, err := l.w.Write(l.pending[:cut]); err != nil {
		return 0, err
	}
	l.n += uint64(bytes.Count(l.pending[:cut], []byte{'\n'}))
	l.pending = append(l.pending[:0], l.pending[cut:]...)
	return len(p), nil
}

func (l *lines) results() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *lines) beat(b generators.BeatLine) {
	_ = l.line(generators.BeatKey, b)
}

func (l *lines) end(s traffic.Stats, stopped string) error {
	e := generators.End{Results: s.Requests, AskedRate: s.AskedRate, AchievedRate: s.AchievedRate, MaxLagNs: int64(s.MaxLag), CPU: s.ClientCPU, Suspect: s.Suspect, Stopped: stopped}
	for c, n := range s.ByClass {
		if n > 0 {
			if e.ByClass == nil {
				e.ByClass = map[string]uint64{}
			}
			e.ByClass[string(c)] = n
		}
	}
	return l.line(generators.EndKey, e)
}

// line writes {"KEY":v} as one line.
func (l *lines) line(key string, v any) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return generators.WriteLine(l.w, key, v)
}

// cpuTime is the CPU this process has used (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// parseConfig parses flags and validates them. Errors are usage errors.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var cfg config
	var protocol, arrivals string
	fs := flag.NewFlagSet("generator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Func("target", "a URL to send to, http://HOST:PORT/PATH (in-cluster: a Service's DNS name, a node's IP and port); repeat it for several, sent to round robin", func(t string) error {
		if err := checkTarget(t); err != nil {
			return err
		}
		cfg.targets = append(cfg.targets, t)
		return nil
	})
	fs.IntVar(&cfg.rate, "rate", 0, "the total rate over every generator, requests per second")
	fs.IntVar(&cfg.generators, "generators", 1, "how many generators share the rate")
	fs.IntVar(&cfg.index, "index", -1, "this generator's index, 0 to generators-1 (default: $JOB_COMPLETION_INDEX)")
	fs.StringVar(&protocol, "protocol", string(traffic.ProtocolNewConnection), "the client's protocol: "+protocolNames())
	fs.IntVar(&cfg.connections, "connections", 0, "connections per target (h2c, grpc, keep-alive fleet); 0 for the protocol's default")
	fs.DurationVar(&cfg.idleTimeout, "idle-timeout", 0, "keep-alive and h2c: close a connection idle this long (0: net/http's default)")
	fs.StringVar(&arrivals, "arrivals", string(traffic.ArrivalsConstant), "how requests are spaced: constant or poisson")
	fs.StringVar(&cfg.method, "method", traffic.DefaultMethod, "HTTP method of every request")
	fs.DurationVar(&cfg.timeout, "timeout", traffic.DefaultTimeout, "per-request timeout")
	fs.StringVar(&cfg.name, "name", "", "attack name, stored in every result (droprun: the variant)")
	fs.BoolVar(&cfg.requestIDs, "request-ids", false, "give every request an ID, NAME.POD-N, in its X-Request-Id header and URL (a front's access log joins on it)")
	fs.StringVar(&cfg.control, "control", ":9000", "control listen address (start, stop, clock)")
	fs.DurationVar(&cfg.wait, "wait", 10*time.Minute, "give up when no start comes within this")
	fs.DurationVar(&cfg.run, "max-run", 2*time.Hour, "stop by itself when no stop comes within this after the start")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.index < 0 {
		v := getenv("JOB_COMPLETION_INDEX")
		n, err := strconv.Atoi(v)
		if err != nil {
			return cfg, fmt.Errorf("no --index and JOB_COMPLETION_INDEX %q is not a number: run it in an Indexed Job or give --index", v)
		}
		cfg.index = n
	}
	if cfg.token = getenv(generators.TokenEnv); cfg.token == "" {
		return cfg, errors.New("no $" + generators.TokenEnv + ": droprun gives each run's generators a control token, without which no start or stop is taken")
	}
	if cfg.pod = getenv(generators.PodNameEnv); cfg.requestIDs && cfg.pod == "" {
		return cfg, errors.New("--request-ids needs $" + generators.PodNameEnv + ", the pod's name, to keep IDs unique across generator pods")
	}
	cfg.protocol = traffic.Protocol(protocol)
	cfg.arrivals = traffic.Arrivals(arrivals)
	switch {
	case len(cfg.targets) == 0:
		return cfg, errors.New("--target is required")
	case cfg.generators < 1:
		return cfg, fmt.Errorf("--generators %d: want 1 or more", cfg.generators)
	case cfg.index >= cfg.generators:
		return cfg, fmt.Errorf("index %d: want 0 to %d (--generators %d)", cfg.index, cfg.generators-1, cfg.generators)
	case cfg.rate < cfg.generators:
		return cfg, fmt.Errorf("--rate %d: want at least one request per second per generator (%d)", cfg.rate, cfg.generators)
	}
	g := &generator{cfg: cfg}
	if err := g.trafficConfig().Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// checkTarget refuses a --target that is not what droprun computes: an
// http URL of a host, a port and a path (traffic.CheckPath), with no
// user, query or fragment. Nothing else reaches the load.
func checkTarget(t string) error {
	u, err := url.Parse(t)
	switch {
	case err != nil:
		return fmt.Errorf("%q: %w", t, err)
	case u.Scheme != "http" || u.Hostname() == "" || u.Port() == "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "":
		return fmt.Errorf("%q is not an http URL of a host, a port and a path", t)
	}
	if err := traffic.CheckPath(u.EscapedPath()); err != nil {
		return fmt.Errorf("%q: its path %w", t, err)
	}
	return nil
}

// protocolNames lists the protocols --protocol takes.
func protocolNames() string {
	return strings.Join([]string{string(traffic.ProtocolNewConnection), string(traffic.ProtocolKeepAlive), string(traffic.ProtocolH2C), string(traffic.ProtocolGRPC)}, ", ")
}
