// Package traffic drives constant-rate HTTP load at the bookshop with vegeta
// (github.com/tsenart/vegeta/v12/lib) as a library, classifies every
// result, and streams every result to disk as it arrives.
//
//	a, err := traffic.Start(ctx, traffic.Config{URL: "http://127.0.0.1:30080/version", Rate: 1000}, file, observe)
//	...
//	stats, err := a.Stop()
//
// # Where the load goes
//
// Only to http://127.0.0.1:PORT, or to a host the user named: Config
// refuses every other host (localhost and ::1 included) and scheme unless
// Config.Allow names the host (AllowTarget, from `droprun run --allow-target
// HOST[:PORT]`, for a load balancer or ingress in front of an existing
// cluster; such a URL may be http or https). CheckURL is that one check:
// every URL droprun sends a request to, load (Start) or a probe
// (ProbeClient), passes through it. The client follows no redirect (a 3xx
// is a result of its own), uses no proxy, and its dialer refuses any address
// but the targets'. Load is never aimed at the docker network's private
// addresses, and this project's tests send nothing beyond 127.0.0.1.
//
// Config.Targets spreads the load round robin over several URLs, one per
// node's host port, as a cloud load balancer spreads connections over every
// node: request n goes to target n mod len(Targets). Each result keeps the
// URL it went to (Record.URL, vegeta's Result.URL in the file), which names
// the node it entered through.
//
// # Connections and methods
//
// By default every request opens a new TCP connection and sends
// "Connection: close", like curl: that is what exposes the routing race of
// a rolling update (a new connection routed to a pod that is gone is
// refused or times out). With ProtocolKeepAlive (Config.Protocol) connections are reused:
// by one client whose pool hands out the connection it last got back, or,
// with Config.Connections, by a fleet of that many clients taking turns,
// so each connection idles between its requests. Config.IdleTimeout is
// how long the client keeps an idle one (90 s, net/http's default).
// With ProtocolH2C every request is an HTTP/2 stream (cleartext, prior
// knowledge) on one of Config.Connections connections per target, each
// held by its own transport, requests spread over them round robin: a
// fleet of HTTP/2 clients. A connection is replaced when the server sends
// GOAWAY or closes it.
// Every request uses Config.Method, GET unless set, and carries no body.
//
// Requests are sent at a constant rate, or, with ArrivalsPoisson
// (Config.Arrivals), at exponentially distributed intervals with the same
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
// retried request keeps the failures it hid (Record.Hidden, HiddenError,
// Retries; HiddenHeader in the file); one served by the retry is masked
// (Record.Masked): it counts as 2xx, since the client was served, and is
// counted apart (Stats.Masked, and per window in the analysis) as the
// failure the client would have seen without the retry. A new connection
// is never retried, so with a new connection per request nothing is masked.
//
// # gRPC channels
//
// With ProtocolGRPC a failed call's error ends with the channel it went
// on (Record.Channel), and Config.OnChannel hears every channel's state
// changes (ChannelState: CONNECTING, READY, TRANSIENT_FAILURE, ...). A
// channel whose connection attempt failed fails its calls at once with
// that error until its reconnect backoff ends: the two together say
// which calls met a backoff, and after which attempt.
//
// # Outcome classes
//
// Each request is exactly one Class: 2xx, 000:refused, 000:reset, 000:eof,
// 000:idle-closed, 000:goaway, 000:stream-reset, 000:unavailable,
// 000:timeout, 000:other, 502, 503, 5xx:other, 4xx (000:idle-closed with
// ProtocolKeepAlive only: an EOF or reset on a connection the client took
// from its idle pool, named so by the client's trace; the two HTTP/2 ones
// with ProtocolH2C and ProtocolGRPC only, 000:unavailable with
// ProtocolGRPC only; a gRPC call's status is classified by the wire cause
// its text gives, see grpcFleet). The names are stable
// (CSV columns, metric labels). Transport failures (code 0) are classified
// from Go's error text; the text itself is kept in Record.Error. Every class
// but 2xx is a failure; 1xx and 3xx responses are 000:other, because the
// bookshop never redirects and a 3xx means the request did not reach it. A
// hidden failure (Record.Hidden) is classified the same way; a masked
// request is of class 2xx.
//
// # The results file
//
// The file is vegeta's own gob stream (vegeta.NewEncoder), so
// `vegeta report` and `vegeta plot` read it, and ReadResults rebuilds every
// Record from it: droprun's reports can be rebuilt from raw data. vegeta's
// gob encoding keeps Result.Headers, which is where Record.Pod comes from.
// To keep the file small each result is trimmed before encoding: only the
// X-Bookshop-* response headers (and HiddenHeader) are kept, and the body only for failures
// (at most MaxBody bytes; BytesIn still counts what was read). A 2xx result
// with the bookshop's two headers takes about 150 bytes: ~0.5 GB an hour at
// 1,000 req/s.
//
// # An honest client
//
// A client that cannot hold its rate measures itself, not the target. Stop
// reports the achieved rate against the asked one, whether the worker bound
// (Config.MaxWorkers) made requests go out late, how far behind schedule the
// pacing fell, and the process's own CPU use; Stats.Suspect says in words
// when any of these makes the numbers suspect.
package traffic
