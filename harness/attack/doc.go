// Package attack is droprun's host client: constant-rate load with vegeta
// (github.com/tsenart/vegeta/v12/lib) as a library, over HTTP/1.1, h2c or
// gRPC, every result classified (traffic.Classify) and streamed to disk as
// it arrives, in the results file traffic.ReadResults reads back.
//
//	a, err := attack.Start(ctx, traffic.Config{URL: "http://127.0.0.1:30080/version", Rate: 1000}, file, observe)
//	...
//	stats, err := a.Stop()
//
// It sends only where traffic.CheckURL allows: its dialer refuses every
// address but the targets', it follows no redirect and uses no proxy
// (ProbeClient keeps to the same rules for single requests).
//
// # Connections and methods
//
// By default every request opens a new TCP connection and sends
// "Connection: close", like curl: that is what exposes the routing race of
// a rolling update (a new connection routed to a pod that is gone is
// refused or times out). With traffic.ProtocolKeepAlive (traffic.Config.Protocol) connections are reused:
// by one client whose pool hands out the connection it last got back, or,
// with traffic.Config.Connections, by a fleet of that many clients taking turns,
// so each connection idles between its requests. traffic.Config.IdleTimeout is
// how long the client keeps an idle one (90 s, net/http's default).
// With traffic.ProtocolH2C every request is an HTTP/2 stream (cleartext, prior
// knowledge) on one of traffic.Config.Connections connections per target, each
// held by its own transport, requests spread over them round robin: a
// fleet of HTTP/2 clients. A connection is replaced when the server sends
// GOAWAY or closes it.
// Every request uses traffic.Config.Method, GET unless set, and carries no body.
//
// Requests are sent at a constant rate, or, with traffic.ArrivalsPoisson
// (traffic.Config.Arrivals), at exponentially distributed intervals with the same
// mean: the gaps between one connection's requests then vary continuously,
// as independent callers' do, which is what makes a server's idle timeout
// race the client's next request on a connection.
//
// # Hidden retries
//
// net/http retries a request that failed on a reused connection on another
// one, and tells the caller only the retry's outcome: a request without a
// body that failed before a byte of it was written, whatever its method
// (POST included), and an idempotent one (GET, HEAD, ...) that failed
// before a byte of response arrived. A server resetting a kept-alive
// connection can thus look like a 200. The attack sees every retry: each
// connection remembers its first read or write error, and a trace on each
// request (net/http/httptrace) sees it ask for a second connection. A
// retried request keeps the failures it hid (traffic.Record.Hidden, HiddenError,
// Retries; traffic.HiddenHeader in the file); one served by the retry is masked
// (traffic.Record.Masked): it counts as 2xx, since the client was served, and is
// counted apart (traffic.Stats.Masked, and per window in the analysis) as the
// failure the client would have seen without the retry. A new connection
// is never retried, so with a new connection per request nothing is masked.
//
// # An honest client
//
// A client that cannot hold its rate measures itself, not the target. Stop
// reports the achieved rate against the asked one, whether the worker bound
// (traffic.Config.MaxWorkers) made requests go out late, how far behind schedule the
// pacing fell, and the process's own CPU use; traffic.Stats.Suspect says in words
// when any of these makes the numbers suspect.
package attack
