package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// version is stamped at build time: go build -ldflags "-X main.version=v1".
var version = "dev"

// Values of --mode and --shutdown.
const (
	modeWeb     = "web"
	modeGateway = "gateway"

	shutdownNone       = "none"
	shutdownNaive      = "naive"
	shutdownDrain      = "drain"
	shutdownDrainClose = "drain-close"
)

// config is the parsed command line.
type config struct {
	addr            string
	mode            string
	shutdown        string
	drainDelay      time.Duration
	shutdownTimeout time.Duration
	// idleTimeout is how long the HTTP server keeps an idle kept-alive
	// connection open (http.Server.IdleTimeout); 0 keeps it until the
	// client closes it.
	idleTimeout time.Duration
	// maxConnectionAge is how long a connection, HTTP or gRPC, is used
	// before the server ends it (0: as long as the client likes).
	maxConnectionAge time.Duration
	// grpcAddr is the gRPC server's listen address (web mode; "" for
	// none), grpcStop how it stops.
	grpcAddr          string
	grpcStop          string
	upstream          *url.URL // gateway mode only
	upstreamKeepAlive bool
	// upstreamDialTimeout and upstreamTimeout bound a gateway's wait for an
	// upstream connection and its response headers.
	upstreamDialTimeout, upstreamTimeout time.Duration
	// terminationLog is the file the final totals are written to on exit;
	// "" writes none.
	terminationLog string
	showVersion    bool
}

// errUsage marks a command line that could not be used; run exits 2 on it.
var errUsage = errors.New("usage error")

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// newServer is the HTTP server of cfg's mode: HTTP/1.1 and HTTP/2 over
// cleartext (prior knowledge, droprun's protocol h2c) on the one port.
// Shutdown sends every HTTP/2 connection a GOAWAY; Close cuts them as it
// cuts HTTP/1.1 ones; a response with "Connection: close" (drain-close)
// makes net/http send its HTTP/2 connection a GOAWAY instead.
func newServer(cfg config, id identity, life *lifecycle, m *metrics, log *slog.Logger) *http.Server {
	var handler http.Handler
	if cfg.mode == modeGateway {
		handler = newGateway(cfg, id, life, m, log)
	} else {
		handler = newWeb(id, life, m)
	}
	if cfg.shutdown == shutdownDrainClose {
		handler = closeWhileDraining(handler, life)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       cfg.idleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	if cfg.maxConnectionAge > 0 {
		srv.Handler = closeWhenOld(srv.Handler)
		srv.ConnContext = connAge(cfg.maxConnectionAge)
	}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	return srv
}

// listen binds cfg's HTTP port and, in web mode with a gRPC port, the gRPC
// side, each listener stamped to tell when it closes, whichever mode
// closes it. It logs after binding, so the log names the port actually
// bound, and logs a failure itself.
func listen(cfg config, id identity, m *metrics, log *slog.Logger) (*stampedListener, *grpcSide, error) {
	l, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		log.Error("listen failed", "addr", cfg.addr, "err", err.Error())
		return nil, nil, err
	}
	ln := &stampedListener{Listener: l}
	log.Info("listening", "addr", ln.Addr().String(), "mode", cfg.mode, "shutdown", cfg.shutdown, "max_connection_age", cfg.maxConnectionAge.String())
	if cfg.mode != modeWeb || cfg.grpcAddr == "" {
		return ln, nil, nil
	}
	gl, err := net.Listen("tcp", cfg.grpcAddr)
	if err != nil {
		_ = ln.Close()
		log.Error("listen failed", "addr", cfg.grpcAddr, "err", err.Error())
		return nil, nil, err
	}
	g := &grpcSide{srv: newGRPC(id, m, cfg.maxConnectionAge, cfg.shutdownTimeout), ln: &stampedListener{Listener: gl}, stop: cfg.grpcStop}
	log.Info("listening", "addr", g.ln.Addr().String(), "protocol", "grpc", "stop", cfg.grpcStop)
	return ln, g, nil
}

// run is the whole program; it returns the exit status: 0 after a clean
// shutdown, 1 when serving or shutting down failed, 2 on a bad command line.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, getenv, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "bookshop: %v\n", err)
		return 2
	case cfg.showVersion:
		fmt.Fprintln(stdout, version)
		return 0
	}

	pod, err := os.Hostname()
	if err != nil {
		pod = "unknown"
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil)).With("pod", pod, "version", version)
	id := identity{pod: pod, version: version}
	life := new(lifecycle)
	m := newMetrics(version, cfg.mode, life)

	srv := newServer(cfg, id, life, m, log)
	ln, g, err := listen(cfg, id, m, log)
	if err != nil {
		return 1
	}

	sig, sigAt, err := serve(srv, ln, g, cfg, life, log)
	// Read the totals once, sealed: from now on no response is counted and
	// none is sent (see tally), so they are exactly what the process let
	// out. In mode none the process dies on the signal: stop accepting
	// first, as death would, let the responses counted before the seal
	// finish leaving (the requests after it are cut at once), then close
	// the rest.
	if cfg.shutdown == shutdownNone && sig != nil {
		_ = ln.Close()
		if g != nil {
			_ = g.ln.Close()
		}
	}
	t := m.seal()
	if !m.tally.waitSent(time.Second) {
		// A counted response not yet written may never leave: the totals
		// may count one the client never got, so they are not sealed.
		t.sealed = false
	}
	exit, code := exitClean, 0
	switch {
	case cfg.shutdown == shutdownNone && sig != nil:
		_ = srv.Close()
		if g != nil {
			g.srv.Stop()
		}
		exit, code = exitKilled, signalStatus(sig)
	case err != nil:
		exit, code = exitError, 1
	}
	at := exitTimes{signal: sigAt, listenerClosed: ln.closed()}
	if g != nil {
		at.listenerClosed = firstClosed(at.listenerClosed, g.ln.closed())
	}
	writeTerminationMessage(cfg.terminationLog, newTerminationMessage(id, cfg, t, exit, sig, at, code, err), log)
	t.log(log)
	switch exit {
	case exitKilled:
		log.Info("exit", "signal", signalName(sig), "code", code)
		reraise(sig) // does not return
		return code
	case exitError:
		log.Error("exit", "err", err.Error(), "code", code)
		return code
	}
	log.Info("exit", "code", 0)
	return 0
}

// parseConfig parses flags, falling back to BOOKSHOP_* environment variables
// for flags not given, and validates the result. Errors wrap errUsage.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var cfg config
	var upstream string
	fs := flag.NewFlagSet("bookshop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.addr, "addr", ":8080", "listen address (host:port; port 0 picks a free one)")
	fs.StringVar(&cfg.mode, "mode", modeWeb, "role: web or gateway")
	fs.StringVar(&cfg.shutdown, "shutdown", shutdownNone, "SIGTERM handling: none, naive, drain or drain-close")
	fs.DurationVar(&cfg.drainDelay, "drain-delay", 5*time.Second, "drain and drain-close modes: how long to keep serving after SIGTERM")
	fs.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 10*time.Second, "naive, drain and drain-close modes: how long Shutdown waits for in-flight requests")
	fs.DurationVar(&cfg.idleTimeout, "idle-timeout", 0, "close a kept-alive connection idle this long (HTTP/1.1 and h2c); 0 keeps it open until the client closes it. A timeout shorter than the client's or proxy's in front races their next request on it")
	fs.DurationVar(&cfg.maxConnectionAge, "max-connection-age", 0, "end each connection after about this long (±10%) so clients reconnect and spread over new pods: HTTP/1.1 with \"Connection: close\" on its next response, h2c and gRPC with GOAWAY (gRPC's keepalive MaxConnectionAge); 0 for never")
	fs.StringVar(&cfg.grpcAddr, "grpc-addr", ":9090", "web mode: the gRPC server's listen address (the standard health service's Check); empty for none")
	fs.StringVar(&cfg.grpcStop, "grpc-stop", grpcStopGraceful, "how the gRPC server stops when the app shuts down (at once in naive mode, after the drain delay in drain modes): graceful (GracefulStop: GOAWAY, finish the calls in flight) or stop (Stop: cut them)")
	fs.StringVar(&upstream, "upstream", "", "gateway mode: base URL to proxy to, e.g. http://web.bookshop.svc:80")
	fs.BoolVar(&cfg.upstreamKeepAlive, "upstream-keepalive", false, "gateway mode: reuse upstream connections (hides dead pods behind pooled connections)")
	fs.DurationVar(&cfg.upstreamDialTimeout, "upstream-dial-timeout", 500*time.Millisecond, "gateway mode: give up connecting to an upstream pod after this (a dead pod's IP never answers)")
	fs.DurationVar(&cfg.upstreamTimeout, "upstream-timeout", time.Second, "gateway mode: give up waiting for an upstream's response headers after this; keep it below the client's timeout so a dead upstream shows as 502")
	fs.StringVar(&cfg.terminationLog, "termination-log", defaultTerminationLog, "file the final request totals are written to on exit, as one JSON line (Kubernetes' termination message); it must exist; empty writes none")
	fs.BoolVar(&cfg.showVersion, "version", false, "print the version and exit")
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "version" {
			f.Usage += " (env " + envName(f.Name) + ")"
		}
	})

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, fmt.Errorf("%w: %v", errUsage, err) // the flag package has printed usage
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}

	if err := applyEnv(fs, getenv); err != nil {
		return cfg, err
	}
	if cfg.showVersion {
		return cfg, nil
	}

	err := cfg.check(upstream)
	return cfg, err
}

// applyEnv fills in, from the environment, the flags of fs that were not
// given (each flag's variable: envName).
func applyEnv(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		env := envName(f.Name)
		if v := getenv(env); v != "" && !given[f.Name] && f.Name != "version" && envErr == nil {
			if err := fs.Set(f.Name, v); err != nil {
				envErr = fmt.Errorf("%w: %s=%q: %v", errUsage, env, v, err)
			}
		}
	})
	return envErr
}

// check refuses a configuration bookshop cannot run with, and sets the
// gateway's upstream URL from upstream.
func (cfg *config) check(upstream string) error {
	switch cfg.mode {
	case modeWeb, modeGateway:
	default:
		return fmt.Errorf("%w: --mode %q: want web or gateway", errUsage, cfg.mode)
	}
	switch cfg.shutdown {
	case shutdownNone, shutdownNaive, shutdownDrain, shutdownDrainClose:
	default:
		return fmt.Errorf("%w: --shutdown %q: want none, naive, drain or drain-close", errUsage, cfg.shutdown)
	}
	switch cfg.grpcStop {
	case grpcStopGraceful, grpcStopHard:
	default:
		return fmt.Errorf("%w: --grpc-stop %q: want graceful or stop", errUsage, cfg.grpcStop)
	}
	if cfg.maxConnectionAge < 0 {
		return fmt.Errorf("%w: --max-connection-age %v: must not be negative (0 for never)", errUsage, cfg.maxConnectionAge)
	}
	if cfg.idleTimeout < 0 {
		return fmt.Errorf("%w: --idle-timeout %v: must not be negative (0 keeps idle connections open)", errUsage, cfg.idleTimeout)
	}
	if cfg.drainDelay < 0 {
		return fmt.Errorf("%w: --drain-delay %v: must not be negative", errUsage, cfg.drainDelay)
	}
	if cfg.shutdownTimeout <= 0 {
		return fmt.Errorf("%w: --shutdown-timeout %v: must be positive", errUsage, cfg.shutdownTimeout)
	}
	if cfg.mode == modeGateway {
		u, err := url.Parse(upstream)
		switch {
		case upstream == "":
			return fmt.Errorf("%w: --mode gateway needs --upstream", errUsage)
		case err != nil:
			return fmt.Errorf("%w: --upstream: %v", errUsage, err)
		case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			return fmt.Errorf("%w: --upstream %q: want an http:// or https:// URL with a host", errUsage, upstream)
		}
		cfg.upstream = u
	}
	return nil
}

// envName is the environment variable a flag falls back to:
// drain-delay -> BOOKSHOP_DRAIN_DELAY.
func envName(flagName string) string {
	return "BOOKSHOP_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}
