// Command bookshop is the demo application whose rolling updates droprun
// measures. One binary plays two roles:
//
//   - web (--mode=web, the default): a tiny storefront. GET / is an HTML page,
//     GET /version answers {"pod": ..., "version": ...} (with an optional
//     ?delay=DURATION, capped at 30s, to hold a request in flight).
//   - gateway (--mode=gateway): a reverse proxy to --upstream (typically the
//     web Service). By default it opens a fresh TCP connection per upstream
//     request, so a request that lands on a dead web pod shows up as a 502
//     instead of being hidden by a pooled connection to a live one.
//
// Both roles serve their own /healthz (liveness), /readyz (readiness) and
// /metrics (Prometheus, on a private registry); in gateway mode those three
// paths are answered by the gateway itself and never proxied. Every response
// carries X-Bookshop-Pod and X-Bookshop-Version so a client can attribute it;
// the gateway adds X-Bookshop-Gateway and passes the upstream pod's identity
// through (a 502 the gateway makes itself carries the gateway's identity).
//
// # The race
//
// Deleting a pod starts two things at once with no ordering between them: the
// kubelet runs the preStop hook and sends SIGTERM, and the endpoint
// controller removes the pod from the Service's EndpointSlice, a change that
// must then reach kube-proxy on every node. The kill is local and instant;
// the route removal takes tens of milliseconds or more. A process that closes
// its listener as soon as SIGTERM arrives refuses the connections that are
// still routed to it in that window: the client sees "connection refused"
// (curl's 000, a load balancer's 502) during a rollout Kubernetes reports as
// successful.
//
// # Shutdown modes (--shutdown)
//
//   - none (the default, in both roles): no graceful handling at all. SIGTERM
//     (or SIGINT) closes the listener and every connection at once, in-flight
//     requests included, and the process dies by the same signal (re-raised,
//     so its exit status is the default action's, 143 for SIGTERM). The
//     signal is caught only to record the final request totals on the way
//     (see below). This is the app that drops requests.
//   - naive: catch SIGTERM/SIGINT and call http.Server.Shutdown at once. The
//     in-flight requests finish, but Shutdown closes the listener first, so new
//     connections still routed here are refused exactly as with none.
//   - drain: catch SIGTERM/SIGINT, fail /readyz (503), keep serving everything,
//     new connections included, for --drain-delay, then Shutdown with
//     --shutdown-timeout and exit 0. This is the fix: outlive the propagation
//     delay. While draining, keep-alives are switched off so clients holding a
//     persistent connection to this pod reconnect, and land elsewhere.
//     Switching them off (http.Server.SetKeepAlivesEnabled(false)) also
//     closes every idle connection at once, so a kept-alive client that is
//     just sending on one sees EOF or a reset.
//   - drain-close: drain for kept-alive clients. As drain, but keep-alives
//     stay on: every response during the drain says "Connection: close", so
//     each client leaves its connection right after its next response (and
//     reconnects through the updated routes), and idle connections are left
//     open until the drain delay is over, when Shutdown closes them.
//
// The first signal uninstalls the handler, so a second SIGTERM during a
// naive, drain or drain-close shutdown kills the process at once (and
// records nothing).
//
// # Final request totals
//
// A pod's /metrics dies with it, so in every mode the process records its
// final request totals as it exits, from one reading of its counters: it
// logs them to stderr ("final request totals") and writes them as one JSON
// line, at most 4096 bytes, to --termination-log (default
// /dev/termination-log, the file Kubernetes turns into the container's
// termination message, status.containerStatuses[].state.terminated.message),
// here wrapped:
//
//	{"pod":"web-7d9c-x2x","version":"v1","mode":"web","shutdown":"none","exit":"killed","signal":"SIGTERM","code":143,
//	 "signalAt":"2025-06-01T10:00:00.123456789Z","listenerClosedAt":"2025-06-01T10:00:00.123501234Z",
//	 "requests":1234,"inFlight":2,"sealed":true,"byCode":{"200":1230,"503":4},"byHandler":{"version":{"200":1200},"readyz":{"200":30,"503":4}}}
//
// exit is killed (mode none), clean (exit 0) or error (exit 1, with an
// "error" text); code is the exit status; signalAt is when the process
// received the signal and listenerClosedAt when it closed its listening
// socket, after which new connections are refused (RFC 3339 in UTC with
// nanoseconds, by the pod's clock; left out when unknown): in modes none
// and naive the close follows the signal at once, in drain and drain-close
// a drain delay later; requests and byCode sum
// bookshop_http_requests_total over every handler, probes and /metrics
// scrapes included, and byHandler is that counter by handler and code (left
// out should the line not fit). The reading is sealed: no response is counted
// or sent after it, and the process waits (up to a second) until every
// response counted before it is written whole to its connection, so the
// counts are exactly the responses the process let out ("sealed":true), and
// inFlight counts the requests it cut unanswered. A wait that times out
// writes "sealed":false: a counted response may not have left.
// The file must exist (Kubernetes creates it; nothing is created in /dev
// elsewhere); a failure to write it is logged and the exit goes on.
//
// Logs are JSON lines on stderr. The first is
//
//	{"time":...,"level":"INFO","msg":"listening","pod":...,"version":...,"addr":"127.0.0.1:43567","mode":"web","shutdown":"drain"}
//
// where addr is the address actually bound, so --addr 127.0.0.1:0 works.
//
// Flags fall back to environment variables: --addr to BOOKSHOP_ADDR,
// --drain-delay to BOOKSHOP_DRAIN_DELAY and so on (BOOKSHOP_ + the flag name in
// upper case with dashes as underscores). The version is stamped at build
// time with -ldflags "-X main.version=v1".
package main
