package traffic

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// LoopbackHost is the only host Config.URL may name unless Config.Allow
// names another. Load goes to the host port mapping on loopback, never to
// private (docker network) or public addresses the user did not name.
const LoopbackHost = "127.0.0.1"

// DefaultTimeout is the per-request timeout when Config.Timeout is zero.
const DefaultTimeout = 2 * time.Second

// MinMaxWorkers is the smallest default worker bound (see Config.MaxWorkers).
const MinMaxWorkers = 100

// WorkerCap is the largest worker bound: each worker in flight holds a
// connection (a file descriptor), and a rate and timeout that would need
// more (e.g. 5,000 req/s with a 30 s timeout) would exhaust the process's
// descriptors before measuring anything. Reaching it shows in the attack's
// stats as exhausted workers (the requests went out late).
const WorkerCap = 10000

// MaxBody is how many bytes of each response body are kept; the rest is read
// and discarded so the connection completes normally.
const MaxBody = 1024

// Target is one way into the cluster: a URL on 127.0.0.1 and the node it
// enters through.
type Target struct {
	// Node names the node behind URL (a kind node's name), empty when
	// unknown, e.g. for an existing cluster.
	Node string `json:"node,omitempty"`
	// URL is http://127.0.0.1:PORT/PATH (or a URL on a host Config.Allow
	// names), checked as Config.URL is.
	URL string `json:"url"`
}

// Config describes one attack.
type Config struct {
	// URL is the target, http://127.0.0.1:PORT/PATH. Any other scheme or host
	// (localhost and ::1 included) is refused unless Allow names the host:
	// droprun aims load at the loopback port mapping only, never at private
	// or public addresses the user did not name. Set URL or Targets, not both.
	URL string
	// Targets are sent requests round robin, in this order: request n goes
	// to Targets[n mod len(Targets)], so each gets its share within one.
	// Each URL is checked as URL is, and no two may be the same (a result
	// names its target by URL: Record.URL).
	Targets []Target
	// Rate is the constant request rate in requests per second; > 0.
	Rate int
	// Protocol is how the client talks to the targets; empty means
	// ProtocolNewConnection, a new TCP connection per request, like curl,
	// which is what exposes the routing race. With ProtocolKeepAlive no
	// failure is hidden whatever the method: every net/http retry is
	// counted and a request it saved is marked masked.
	Protocol Protocol
	// Connections is, for a multiplexed protocol (ProtocolH2C,
	// ProtocolGRPC), how many connections the client keeps to each
	// target: a fleet of that many HTTP/2 clients or gRPC channels,
	// requests spread over them round robin. One would
	// pin a target's whole load to the one pod its connection was routed
	// to. Zero means DefaultConnections. With ProtocolKeepAlive it is a
	// fleet of that many HTTP/1.1 clients, each with its own pool (one
	// connection per target while its requests do not overlap), requests
	// spread round robin, so every connection idles between its requests
	// as a caller's does; zero means one client, whose pool reuses the
	// connection it last returned. It must be zero with
	// ProtocolNewConnection.
	Connections int
	// IdleTimeout is how long the client keeps an idle kept-alive
	// connection before it closes it (net/http's IdleConnTimeout), with
	// ProtocolKeepAlive and ProtocolH2C. Zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Encoding is how results are written to the attack's out:
	// EncodingGob (empty, the default), vegeta's binary encoding of
	// results files, or EncodingJSON, vegeta's JSON, one result a line,
	// which a generator pod streams (its lines can be read as they come).
	Encoding Encoding
	// Arrivals is how requests are spaced: ArrivalsConstant (the default,
	// also when empty) one every 1/Rate, ArrivalsPoisson at random with
	// Rate as the mean, as independent callers' requests are.
	Arrivals Arrivals
	// Method is the HTTP method of every request, one of Methods(); empty
	// means DefaultMethod (GET), whatever the protocol.
	Method string
	// Timeout bounds each request: dial, headers and body. Zero means
	// DefaultTimeout; negative is an error.
	Timeout time.Duration
	// MaxWorkers bounds the number of requests in flight (vegeta MaxWorkers).
	// Zero means 2 × Rate × Timeout in seconds, at least MinMaxWorkers: twice
	// what a target that times out every request needs to hold the rate;
	// at most WorkerCap (more is an error).
	MaxWorkers uint64
	// Name is the attack name, stored in every result and sent as the
	// X-Vegeta-Attack request header. May be empty.
	Name string
	// RequestIDs gives every request a unique ID, in its RequestIDHeader
	// header for a front's access log and in its URL's query
	// (RequestIDParam), which the results keep (Record.URL,
	// Record.RequestID): the two join a front's line to the client's
	// record. IDs are RequestIDPrefix (Name when empty), a dash and a
	// base-36 counter.
	RequestIDs bool
	// RequestIDPrefix makes the IDs of clients that share a Name unique:
	// each generator pod's is the variant and its pod's name, so a pod
	// that replaces another never repeats an ID.
	RequestIDPrefix string
	// Allow are the hosts beyond 127.0.0.1 the user named with
	// --allow-target (a load balancer or ingress in front of an existing
	// cluster): a target on one of them is accepted (see CheckURL). Empty
	// keeps every target on 127.0.0.1.
	Allow []AllowTarget
	// OnChannel, with ProtocolGRPC, is told each channel's state and every
	// change of it, from the first call until Stop (see ChannelState); it
	// must return quickly. Nil for none.
	OnChannel func(ChannelState)
}

// DefaultMethod is the method when Config.Method is empty.
const DefaultMethod = "GET"

// methods are the methods Config.Method may name (see Methods).
var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// Methods returns the methods Config.Method may name, a fresh copy. Every
// request is sent without a body.
func Methods() []string { return slices.Clone(methods) }

// RequestMethod returns the HTTP method the attack uses: Method, or
// DefaultMethod when it is empty.
func (c Config) RequestMethod() string {
	if c.Method == "" {
		return DefaultMethod
	}
	return c.Method
}

// Validate checks c without applying defaults. Errors name the field.
func (c Config) Validate() error {
	if _, err := c.Addrs(); err != nil {
		return err
	}
	if c.Rate <= 0 {
		return fmt.Errorf("traffic: Config.Rate %d: must be > 0 requests per second", c.Rate)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("traffic: Config.Timeout %s: must not be negative (0 means %s)", c.Timeout, DefaultTimeout)
	}
	if err := c.Protocol.check(); err != nil {
		return err
	}
	switch {
	case c.Connections != 0 && !c.Protocol.ReusesConnections():
		return fmt.Errorf("traffic: Config.Connections %d: %s opens a connection per request; leave it 0, or keep connections alive", c.Connections, c.Protocol.Text())
	case c.Connections < 0 || c.Connections > MaxConnections:
		return fmt.Errorf("traffic: Config.Connections %d: want 1 to %d per target (0 means %d)", c.Connections, MaxConnections, DefaultConnections)
	}
	switch {
	case c.IdleTimeout < 0:
		return fmt.Errorf("traffic: Config.IdleTimeout %s: must not be negative (0 means %s)", c.IdleTimeout, DefaultIdleTimeout)
	case c.IdleTimeout != 0 && !c.Protocol.IdleTimed():
		return fmt.Errorf("traffic: Config.IdleTimeout %s: only %s and %s keep idle connections on a timer; with %s leave it 0", c.IdleTimeout, ProtocolKeepAlive, ProtocolH2C, c.Protocol.Text())
	}
	if c.Encoding != EncodingGob && c.Encoding != EncodingJSON {
		return fmt.Errorf("traffic: Config.Encoding %q: want %s (or empty, vegeta's binary encoding)", c.Encoding, EncodingJSON)
	}
	if !slices.Contains(arrivals, c.Arrivals) {
		return fmt.Errorf("traffic: Config.Arrivals %q: want %s or %s", c.Arrivals, ArrivalsConstant, ArrivalsPoisson)
	}
	if c.MaxWorkers > WorkerCap {
		return fmt.Errorf("traffic: Config.MaxWorkers %d: at most %d requests may be in flight (one connection each)", c.MaxWorkers, WorkerCap)
	}
	if c.Method != "" && !slices.Contains(methods, c.Method) {
		return fmt.Errorf("traffic: Config.Method %q: want one of %s (empty means %s)", c.Method, strings.Join(methods, ", "), DefaultMethod)
	}
	return nil
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxWorkers == 0 {
		c.MaxWorkers = DefaultWorkers(c.Rate, c.Timeout)
	}
	if c.Connections == 0 && c.Protocol.Multiplexed() {
		c.Connections = DefaultConnections
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	return c
}

// DefaultIdleTimeout is Config.IdleTimeout when it is zero: net/http's
// DefaultTransport's.
const DefaultIdleTimeout = 90 * time.Second

// Encoding is how an attack writes its results (Config.Encoding).
type Encoding string

// The encodings of results: both vegeta's, both read by ReadResults.
const (
	EncodingGob  Encoding = ""
	EncodingJSON Encoding = "json"
)

// Arrivals is how an attack spaces its requests (Config.Arrivals).
type Arrivals string

// The arrivals an attack can have.
const (
	// ArrivalsConstant sends one request every 1/Rate.
	ArrivalsConstant Arrivals = "constant"
	// ArrivalsPoisson sends requests at exponentially distributed
	// intervals with mean 1/Rate (a Poisson process): the gaps between
	// one connection's requests vary continuously, as they do between
	// independent callers', rather than in steps of 1/Rate.
	ArrivalsPoisson Arrivals = "poisson"
)

// arrivals lists the values Config.Arrivals may take.
var arrivals = []Arrivals{"", ArrivalsConstant, ArrivalsPoisson}

// DefaultConnections is Config.Connections when it is zero: per target,
// enough connections that kube-proxy spreads them over both pods of a
// two-replica Deployment in most draws (each lands on either pod by
// chance: all four on one pod in 1 of 8 draws).
const DefaultConnections = 4

// MaxConnections bounds Config.Connections.
const MaxConnections = 256

// DefaultWorkers is the worker bound for rate and timeout when none is
// given: 2 × rate × timeout in seconds, between MinMaxWorkers and
// WorkerCap.
func DefaultWorkers(rate int, timeout time.Duration) uint64 {
	return min(max(uint64(2*float64(rate)*timeout.Seconds()), MinMaxWorkers), WorkerCap)
}

// ErrNotLoopback explains why a host is refused (wrapped by every refusal).
var ErrNotLoopback = errors.New("host must be " + LoopbackHost +
	": droprun only aims load at the loopback port mapping, never at private or public addresses")

// targetList returns the attack's targets: Targets, or URL as the only one.
func (c Config) TargetList() []Target {
	if len(c.Targets) > 0 {
		return c.Targets
	}
	return []Target{{URL: c.URL}}
}

// addrs validates the targets and returns their "127.0.0.1:PORT"
// addresses, without repeats: the only addresses the client may dial.
func (c Config) Addrs() ([]string, error) {
	if c.URL != "" && len(c.Targets) > 0 {
		return nil, fmt.Errorf("traffic: Config.URL %q and Config.Targets (%d) are both set: set one", c.URL, len(c.Targets))
	}
	if len(c.Targets) == 0 {
		a, err := targetAddr("Config.URL", c.URL, c.Allow)
		if err != nil {
			return nil, err
		}
		return []string{a}, nil
	}
	var addrs []string
	seen := make(map[string]int, len(c.Targets))
	for i, t := range c.Targets {
		field := fmt.Sprintf("Config.Targets[%d].URL", i)
		a, err := targetAddr(field, t.URL, c.Allow)
		if err != nil {
			return nil, err
		}
		if j, dup := seen[t.URL]; dup {
			return nil, fmt.Errorf("traffic: %s %q is also Targets[%d]'s: results name their target by URL, so each must be unique", field, t.URL, j)
		}
		seen[t.URL] = i
		if !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	return addrs, nil
}

// targetAddr validates raw (the value of field) as
// http://127.0.0.1:PORT/..., or as an http(s) URL on a host allow names,
// and returns the address to dial, "127.0.0.1:PORT" or "HOST:PORT".
func targetAddr(field, raw string, allow []AllowTarget) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("traffic: %s %q: %w", field, raw, err)
	}
	if u.User != nil {
		return "", fmt.Errorf("traffic: %s %q: has credentials in it; droprun sends none", field, raw)
	}
	if h := u.Hostname(); h != LoopbackHost && h != "" && !isLoopbackName(strings.ToLower(h)) && (u.Scheme == "http" || u.Scheme == "https") {
		for _, a := range allow {
			if a.allows(u) {
				return net.JoinHostPort(u.Hostname(), urlPort(u)), nil
			}
		}
		return "", fmt.Errorf("traffic: %s %q: %w; to send load to %s, name it: --allow-target %s", field, raw, ErrNotLoopback, u.Hostname(), AllowTarget{Host: strings.ToLower(u.Hostname()), Port: urlPort(u)})
	}
	if u.Scheme != "http" {
		return "", fmt.Errorf("traffic: %s %q: scheme must be http (got %q); %w", field, raw, u.Scheme, ErrNotLoopback)
	}
	if u.Hostname() != LoopbackHost {
		return "", fmt.Errorf("traffic: %s %q: %w", field, raw, ErrNotLoopback)
	}
	port := u.Port()
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("traffic: %s %q: needs an explicit port 1-65535, as in http://%s:30080/", field, raw, LoopbackHost)
	}
	return net.JoinHostPort(LoopbackHost, port), nil
}
