package traffic

import (
	"fmt"
	"slices"
	"strings"
)

// Protocol is how the client talks to its targets. It is a mode, not a
// switch: HTTP/1.1 with a new connection per request or with kept-alive
// connections, and HTTP/2 over cleartext (h2c); gRPC is the next entry of
// protocols.
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
)

// ProtocolInfo is what a protocol means for a measurement.
type ProtocolInfo struct {
	Protocol Protocol
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
}

var protocols = []ProtocolInfo{
	{ProtocolNewConnection, "a new connection per request", false, false},
	{ProtocolKeepAlive, "keep-alive connections", true, false},
	{ProtocolH2C, "HTTP/2 (h2c) streams over long-lived connections", true, true},
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
