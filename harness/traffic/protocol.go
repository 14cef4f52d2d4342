package traffic

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Protocol is how the client talks to its targets. It is a mode, not a
// switch: HTTP/1.1 with a new connection per request or with kept-alive
// connections, HTTP/2 over cleartext (h2c) and gRPC unary calls; a new
// protocol is one more entry of protocols and its RoundTripper in
// newClient.
type Protocol string

const (
	// ProtocolNewConnection is HTTP/1.1 over a new TCP connection per
	// request, like curl: each request is routed afresh by the nodes'
	// rules, which is what exposes the routing race. The default.
	ProtocolNewConnection Protocol = "http1-new-connection"
	// ProtocolKeepAlive is HTTP/1.1 over reused connections. net/http may
	// retry a request that failed on a reused connection on another one
	// without telling the client; the client counts every such retry
	// (Stats.Retried) and marks a request served only thanks to it as
	// masked (Record.Hidden, Record.Masked).
	ProtocolKeepAlive Protocol = "http1-keep-alive"
	// ProtocolH2C is HTTP/2 over cleartext with prior knowledge: every
	// request is a stream on one of Config.Connections long-lived
	// connections per target, as a fleet of HTTP/2 clients would hold. A
	// server shutting down sends GOAWAY: the streams it had not started
	// are refused (ClassGoAway) and net/http retries them on a new
	// connection, which the client counts as masked, as for keep-alive.
	ProtocolH2C Protocol = "h2c"
	// ProtocolGRPC is gRPC: every request is one unary call of the
	// standard health service (grpc.health.v1.Health/Check) on one of
	// Config.Connections grpc-go channels per target, each holding one
	// HTTP/2 connection (pick_first), with grpc-go's defaults (reconnect
	// backoff from 1 s, transparent retry of streams the server never
	// saw). The call's status becomes the result (see grpcResponse).
	ProtocolGRPC Protocol = "grpc"
)

// ProtocolInfo is what a protocol means for a measurement.
type ProtocolInfo struct {
	Protocol Protocol
	// Wire is how a scenario's traffic.protocol names it: http1 (both
	// HTTP/1.1 protocols; keepAlive chooses), h2c or grpc.
	Wire string
	// Text says it in a report: "a new connection per request".
	Text string
	// ReusesConnections is true when a request may ride a connection an
	// earlier one opened: a routing change then reaches it only when the
	// connection is closed, and failures can be masked by retries.
	ReusesConnections bool
	// Multiplexed is true when many requests share one connection at
	// once (HTTP/2 streams): the client then holds a fixed number of
	// connections (Config.Connections) instead of one per worker.
	Multiplexed bool
	// Backoff is how long, at most, the client goes on failing requests
	// with the error of a connection attempt that failed inside a race
	// window before it tries again: grpc-go's reconnect backoff, in which
	// a channel's calls fail at once with its last attempt's error (two
	// refused attempts fit a window of about a second; the backoff after
	// the second is at most 1 s × 1.6 × 1.2 = 1.92 s). 0 when every
	// request makes its own attempt. Which calls a backoff failed is
	// measured (ChannelState), not inferred from this bound.
	Backoff time.Duration
}

// The scenario's names for the protocols (ProtocolInfo.Wire).
const (
	WireHTTP1 = "http1"
	WireH2C   = "h2c"
	WireGRPC  = "grpc"
)

var protocols = []ProtocolInfo{
	{ProtocolNewConnection, WireHTTP1, "a new connection per request", false, false, 0},
	{ProtocolKeepAlive, WireHTTP1, "keep-alive connections", true, false, 0},
	{ProtocolH2C, WireH2C, "HTTP/2 (h2c) streams over long-lived connections", true, true, 0},
	{ProtocolGRPC, WireGRPC, "gRPC unary calls over long-lived HTTP/2 connections", true, true, 1920 * time.Millisecond},
}

// ForWire returns the protocol a scenario's traffic.protocol and
// keepAlive name; false for a name droprun does not speak.
func ForWire(wire string, keepAlive bool) (Protocol, bool) {
	if wire == WireHTTP1 || wire == "" {
		return HTTP1(keepAlive), true
	}
	for _, pi := range protocols {
		if pi.Wire == wire {
			return pi.Protocol, true
		}
	}
	return "", false
}

// Wires returns the names traffic.protocol may take, in protocols' order.
func Wires() []string {
	var w []string
	for _, pi := range protocols {
		if !slices.Contains(w, pi.Wire) {
			w = append(w, pi.Wire)
		}
	}
	return w
}

// Wire is how a scenario names p (ProtocolInfo.Wire).
func (p Protocol) Wire() string {
	info, _ := p.Info()
	return info.Wire
}

// Info returns what p means; the zero Protocol is ProtocolNewConnection.
func (p Protocol) Info() (ProtocolInfo, bool) {
	if p == "" {
		p = ProtocolNewConnection
	}
	i := slices.IndexFunc(protocols, func(pi ProtocolInfo) bool { return pi.Protocol == p })
	if i < 0 {
		return ProtocolInfo{}, false
	}
	return protocols[i], true
}

// HTTP1 is HTTP/1.1 with kept-alive connections or a new one per request:
// how a scenario's keepAlive, and an older run.json's, name a protocol.
func HTTP1(keepAlive bool) Protocol {
	if keepAlive {
		return ProtocolKeepAlive
	}
	return ProtocolNewConnection
}

// ReusesConnections reports whether p keeps connections alive.
func (p Protocol) ReusesConnections() bool {
	info, _ := p.Info()
	return info.ReusesConnections
}

// IdleTimed reports whether the client keeps p's idle connections in
// net/http's pool, on its idle timer (Config.IdleTimeout).
func (p Protocol) IdleTimed() bool { return p == ProtocolKeepAlive || p == ProtocolH2C }

// Multiplexed reports whether p sends many requests over one connection at
// once.
func (p Protocol) Multiplexed() bool {
	info, _ := p.Info()
	return info.Multiplexed
}

// Text says p in a report ("a new connection per request").
func (p Protocol) Text() string {
	if info, ok := p.Info(); ok {
		return info.Text
	}
	return string(p)
}

func (p Protocol) check() error {
	if _, ok := p.Info(); ok {
		return nil
	}
	names := make([]string, len(protocols))
	for i, pi := range protocols {
		names[i] = string(pi.Protocol)
	}
	return fmt.Errorf("traffic: Config.Protocol %q: want one of %s (empty means %s)", p, strings.Join(names, ", "), ProtocolNewConnection)
}
