// Package traffic says what a load is and what it records, for the client
// that sends it (harness/attack), the generator pods (apps/generator) and
// every reader of a run (the analysis and its views) alike: the load's
// Config and Protocol, where it may go (CheckURL), the outcome classes
// (Classify), the Record of one request and its reader (ReadResults), the
// gRPC channels' states, a client's Stats, and the Source seam every load
// source fills. It holds no client: reading a run needs neither vegeta
// (ReadResults decodes vegeta's encodings itself, into Result, a mirror of
// vegeta.Result) nor grpc-go.
//
// # Where the load goes
//
// Only to http://127.0.0.1:PORT, or to a host the user named: Config
// refuses every other host (localhost and ::1 included) and scheme unless
// Config.Allow names the host (AllowTarget, from `droprun run --allow-target
// HOST[:PORT]`, for a load balancer or ingress in front of an existing
// cluster; such a URL may be http or https). CheckURL is that one check:
// every URL droprun sends a request to, load (attack.Start) or a probe
// (attack.ProbeClient), passes through it. The client follows no redirect (a 3xx
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
// its text gives, see harness/attack). The names are stable
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
package traffic
