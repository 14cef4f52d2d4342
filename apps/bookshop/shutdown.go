package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// serve runs srv on ln until it fails or a signal ends it, and returns the
// signal (nil if none came), when it was received, and any failure. In the
// naive, drain and drain-close modes SIGTERM or SIGINT shuts the server
// down and serve returns a nil error after a clean shutdown.
//
// In mode none serve returns as soon as the signal arrives, with srv still
// serving: the caller reads the final totals, closes srv (the listener and
// every connection at once, as the signal's default action would) and
// re-raises the signal (reraise). No request is finished, nothing drained.
//
// g, when not nil, is the gRPC server: it serves beside srv, and stops
// when srv shuts down (as --grpc-stop says), or, in mode none, is left
// to the caller with srv. A gRPC server that fails ends serve as srv
// failing does.
func serve(srv *http.Server, ln net.Listener, g *grpcSide, cfg config, life *lifecycle, log *slog.Logger) (os.Signal, time.Time, error) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	served := make(chan error, 2)
	go func() { served <- srv.Serve(ln) }()
	if g != nil {
		go func() {
			if err := g.srv.Serve(g.ln); err != nil {
				served <- fmt.Errorf("grpc: %w", err)
			}
		}()
	}

	var sig os.Signal
	var at time.Time
	select {
	case err := <-served:
		signal.Stop(sigs)
		return nil, time.Time{}, err
	case sig = <-sigs:
		at = time.Now()
	}
	if cfg.shutdown == shutdownNone {
		// The caller reads the totals, closes srv and re-raises sig; the
		// handler stays installed until then.
		return sig, at, nil
	}
	// From here on, a second signal gets the default disposition: death.
	signal.Stop(sigs)
	log.Info("signal received", "signal", sig.String(), "shutdown", cfg.shutdown)

	if cfg.shutdown == shutdownDrain || cfg.shutdown == shutdownDrainClose {
		// Fail readiness but keep the listener open and answer everything:
		// the routes to this pod are still being removed, node by node.
		transition(life, phaseDraining, log, "drain_delay", cfg.drainDelay.String())
		if cfg.shutdown == shutdownDrain {
			// Without keep-alives, clients on a persistent connection come
			// back on a new one, which the updated routes send elsewhere.
			// This also closes every idle connection at once, racing a
			// client that is just sending on one (it sees EOF or a reset).
			srv.SetKeepAlivesEnabled(false)
		}
		// In drain-close, closeWhileDraining answers each request with
		// "Connection: close" instead: every kept-alive client moves to a
		// new connection right after its next response, and idle
		// connections stay open until Shutdown below closes them.
		t := time.NewTimer(cfg.drainDelay)
		select {
		case <-t.C:
		case err := <-served:
			t.Stop()
			return sig, at, err
		}
	}

	// Shutdown closes the listener first (new connections are refused from
	// now on), then the idle connections, and waits for in-flight requests,
	// whose responses say "Connection: close".
	transition(life, phaseShuttingDown, log, "timeout", cfg.shutdownTimeout.String())
	ctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	grpcDone := make(chan struct{})
	go func() {
		defer close(grpcDone)
		if g != nil {
			g.shutdown(ctx)
		}
	}()
	defer func() { <-grpcDone }()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close() // cut what is left
		return sig, at, fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return sig, at, err
	}
	log.Info("shutdown complete")
	return sig, at, nil
}

// stampedListener is a net.Listener that records when it is first
// closed: whoever closes it (main in mode none, http.Server's Shutdown or
// Close, Serve on failure), the stamp is the close itself, taken just
// before the socket goes, so no connection is refused before it.
type stampedListener struct {
	net.Listener
	mu       sync.Mutex
	closedAt time.Time
}

func (l *stampedListener) Close() error {
	l.mu.Lock()
	if l.closedAt.IsZero() {
		l.closedAt = time.Now()
	}
	l.mu.Unlock()
	return l.Listener.Close()
}

// closed is when the listener was first closed; zero if it is open.
func (l *stampedListener) closed() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closedAt
}

// closeWhileDraining makes every response h gives once the process has
// left phaseServing say "Connection: close", so that net/http closes the
// connection right after it and a kept-alive client opens a new one, which
// the updated routes send to another pod. The client learns it from the
// response it was waiting for, and a client that does not pipeline (Go's,
// curl, browsers) has nothing else in flight on that connection, so no
// request races the close; idle connections are left alone until
// Shutdown (drain-close mode).
func closeWhileDraining(h http.Handler, life *lifecycle) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if life.get() != phaseServing {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// connEndKey is the context key of the time after which a connection's
// responses end it (see connAge).
type connEndKey struct{}

// connAge is http.Server.ConnContext for --max-connection-age: each new
// connection's context carries the time it should end, maxAge after it
// was accepted, ±10% (as grpc-go jitters its MaxConnectionAge) so that
// connections opened together do not all reconnect together.
func connAge(maxAge time.Duration) func(context.Context, net.Conn) context.Context {
	return func(ctx context.Context, _ net.Conn) context.Context {
		jitter := time.Duration(rand.Int64N(int64(maxAge)/5+1)) - maxAge/10
		return context.WithValue(ctx, connEndKey{}, time.Now().Add(maxAge+jitter))
	}
}

// closeWhenOld makes every response on a connection past its end (see
// connAge) say "Connection: close": net/http closes an HTTP/1.1 connection
// right after that response and sends an HTTP/2 one GOAWAY, so the client
// opens a new connection, which the current routes send to any pod. As in
// closeWhileDraining, the client learns it from the response it waited
// for, so no request races the close.
func closeWhenOld(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if end, ok := r.Context().Value(connEndKey{}).(time.Time); ok && !time.Now().Before(end) {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// transition sets the phase and logs it (slog stamps the time).
func transition(life *lifecycle, p phase, log *slog.Logger, args ...any) {
	from := life.get()
	life.set(p)
	log.Info("phase transition", append([]any{"from", from.String(), "phase", p.String()}, args...)...)
}

// firstClosed is the earlier of two listeners' close stamps, ignoring a
// zero one: when the process first refused a connection.
func firstClosed(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
