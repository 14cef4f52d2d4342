package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// serve runs srv on ln until it fails or, in the naive and drain modes, until
// SIGTERM or SIGINT has shut it down. It returns nil after a clean shutdown.
func serve(srv *http.Server, ln net.Listener, cfg config, life *lifecycle, log *slog.Logger) error {
	if cfg.shutdown == shutdownNone {
		// No signal.Notify: SIGTERM keeps Go's default disposition and kills
		// the process on the spot, closing the listener with it.
		return srv.Serve(ln)
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	var sig os.Signal
	select {
	case err := <-served:
		signal.Stop(sigs)
		return err
	case sig = <-sigs:
	}
	// From here on, a second signal gets the default disposition: death.
	signal.Stop(sigs)
	log.Info("signal received", "signal", sig.String(), "shutdown", cfg.shutdown)

	if cfg.shutdown == shutdownDrain {
		// Fail readiness but keep the listener open and answer everything:
		// the routes to this pod are still being removed, node by node.
		// Without keep-alives, clients on a persistent connection come back
		// on a new one, which the updated routes send elsewhere.
		transition(life, phaseDraining, log, "drain_delay", cfg.drainDelay.String())
		srv.SetKeepAlivesEnabled(false)
		t := time.NewTimer(cfg.drainDelay)
		select {
		case <-t.C:
		case err := <-served:
			t.Stop()
			return err
		}
	}

	// Shutdown closes the listener first (new connections are refused from
	// now on), then waits for in-flight requests.
	transition(life, phaseShuttingDown, log, "timeout", cfg.shutdownTimeout.String())
	ctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close() // cut what is left
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("shutdown complete")
	return nil
}

// transition sets the phase and logs it (slog stamps the time).
func transition(life *lifecycle, p phase, log *slog.Logger, args ...any) {
	from := life.get()
	life.set(p)
	log.Info("phase transition", append([]any{"from", from.String(), "phase", p.String()}, args...)...)
}
