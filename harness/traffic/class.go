package traffic

import "strings"

// Class is a request's outcome class. The names are stable: they become CSV
// columns and metric labels, so never rename one.
type Class string

// The outcome classes. Each request is exactly one of them.
const (
	// Class2xx is any 2xx response: the request was served.
	Class2xx Class = "2xx"
	// ClassRefused is a connection refused (RST in answer to the SYN): nothing
	// was listening where the packet was routed, e.g. a pod whose process exited.
	ClassRefused Class = "000:refused"
	// ClassReset is a connection reset by the peer (or a broken pipe, the same
	// reset seen while writing) after the connection was accepted.
	ClassReset Class = "000:reset"
	// ClassEOF is a connection the server closed cleanly before a complete
	// response: "EOF", "unexpected EOF";
	// over HTTP/2, a connection closed with the stream in flight, after a
	// GOAWAY that covered it or without one.
	ClassEOF Class = "000:eof"
	// ClassIdleClosed is a kept-alive HTTP/1.1 connection the client took
	// from its idle pool that the server closed (EOF) or reset before a
	// response byte: the server closed it idle as the client reused it (an
	// idle timeout shorter than the client's), or a stopping process
	// closed or dropped its connections. net/http retries most of them on
	// a new connection (then they are masked); a request it cannot replay
	// shows it. Told apart by the client's trace (IdleReuseText).
	ClassIdleClosed Class = "000:idle-closed"
	// ClassGoAway is an HTTP/2 stream the server refused before it started
	// (a GOAWAY whose last stream ID is below it, or REFUSED_STREAM): the
	// server never saw it, so a retry is safe. net/http retries such a
	// stream on a new connection, so the class shows only when the retry
	// failed too or could not be made; a served retry is masked.
	ClassGoAway Class = "000:goaway"
	// ClassStreamReset is an HTTP/2 stream reset (RST_STREAM) after it
	// started: the server had it and gave it up.
	ClassStreamReset Class = "000:stream-reset"
	// ClassUnavailable is a gRPC call that failed UNAVAILABLE for no cause
	// the classes above name: the channel had no connection to try (it
	// was waiting out its reconnect backoff after a failure whose text it
	// no longer gives) or the server answered UNAVAILABLE itself. A gRPC
	// UNAVAILABLE that says why ("connection refused", "EOF", "the
	// connection is draining") is the class that names the cause.
	ClassUnavailable Class = "000:unavailable"
	// ClassTimeout is a request that did not complete within Config.Timeout
	// (dial, headers or body), e.g. a SYN routed to a pod that no longer
	// exists; a gRPC DEADLINE_EXCEEDED is this class (the deadline is the
	// client's timeout).
	ClassTimeout Class = "000:timeout"
	// ClassOther is everything else: a transport error none of the classes
	// above matches, and a response with a 1xx, 3xx or out-of-range status.
	ClassOther Class = "000:other"
	// Class502 is a 502 Bad Gateway: through the gateway, its upstream was dead.
	Class502 Class = "502"
	// Class503 is a 503 Service Unavailable.
	Class503 Class = "503"
	// Class5xxOther is any 5xx response other than 502 and 503.
	Class5xxOther Class = "5xx:other"
	// Class4xx is any 4xx response.
	Class4xx Class = "4xx"
)

// ClassInfo is what droprun says about an outcome class wherever it shows
// one: the figures, the report page, the stories of what a row shows.
type ClassInfo struct {
	Class Class
	// Label names the class in plain words.
	Label string
	// Colour is the class's colour in every figure and on the report
	// page, "#rrggbb": 2xx a pale green that recedes, the failures strong
	// colours.
	Colour string
	// Meaning says what a request of the class tells about the rollout.
	Meaning string
	// Race marks the classes that are the SIGTERM/endpoint race's
	// signature: a process that stopped listening while traffic was still
	// routed to it refuses connections, cuts the ones it had and, behind a
	// proxy, turns into 502s. Timeouts alone are not.
	Race bool
}

// catalogue is every class, in the order Classes returns: success, then
// transport failures, then HTTP failures.
var catalogue = [...]ClassInfo{
	{Class: Class2xx, Label: "served", Colour: "#c6dfc0",
		Meaning: "a 2xx response: the request was served"},
	{Class: ClassRefused, Label: "connection refused", Colour: "#d62728", Race: true,
		Meaning: "nothing was listening where the connection was routed: a pod whose process had stopped listening while a node still sent it new connections"},
	{Class: ClassReset, Label: "connection reset", Colour: "#ff7f0e", Race: true,
		Meaning: "the connection was accepted, then reset (or a write hit a broken pipe): cut by the process as it stopped"},
	{Class: ClassEOF, Label: "closed before a response", Colour: "#9467bd", Race: true,
		Meaning: "the server closed the connection before a complete response: a stopping process closing its connections"},
	{Class: ClassIdleClosed, Label: "reused idle connection closed", Colour: "#e7969c", Race: true,
		Meaning: "the server closed a kept-alive connection the client took from its idle pool, before answering on it: an idle timeout shorter than the client's (outside any rollout), or a stopping process closing its idle connections"},
	{Class: ClassGoAway, Label: "HTTP/2 stream refused (GOAWAY)", Colour: "#ffbb78", Race: true,
		Meaning: "an HTTP/2 server going away refused a stream it had not started, and the client's retry on a new connection failed too: new streams still reached a stopping process"},
	{Class: ClassStreamReset, Label: "HTTP/2 stream reset", Colour: "#c49c94", Race: true,
		Meaning: "an HTTP/2 server reset a stream it had started: a stopping process giving up requests in flight"},
	{Class: ClassUnavailable, Label: "gRPC UNAVAILABLE", Colour: "#dbdb8d",
		Meaning: "a gRPC call failed UNAVAILABLE without a cause on the wire: its channel had no connection to try (waiting out its reconnect backoff after an earlier failure) or the server said so; read it beside the rollout windows"},
	{Class: ClassTimeout, Label: "timeout", Colour: "#1f77b4",
		Meaning: "no complete answer within the client's timeout: a connection sent to a pod address that no longer answers at all, or, alone and few, a busy rig"},
	{Class: ClassOther, Label: "other error", Colour: "#8c564b",
		Meaning: "a transport error none of the other classes matches, or a 1xx, 3xx or out-of-range status: the request did not reach the app it was aimed at"},
	{Class: Class502, Label: "502 Bad Gateway", Colour: "#e377c2", Race: true,
		Meaning: "a proxy's upstream was dead: the race seen through the proxy"},
	{Class: Class503, Label: "503 Service Unavailable", Colour: "#bcbd22",
		Meaning: "the app or a proxy said it could not serve the request now"},
	{Class: Class5xxOther, Label: "other 5xx", Colour: "#17becf",
		Meaning: "a server error other than 502 and 503"},
	{Class: Class4xx, Label: "4xx", Colour: "#7f7f7f",
		Meaning: "the app refused the request itself (a wrong path or method), not the rollout"},
}

// NClasses is the number of outcome classes.
const NClasses = len(catalogue)

// Catalogue returns every class's ClassInfo, in the order of Classes. The
// slice is a fresh copy.
func Catalogue() []ClassInfo { return append([]ClassInfo(nil), catalogue[:]...) }

// Info returns what droprun says about class c. A class droprun does not
// know gets its own name as label, black, and no meaning.
func Info(c Class) ClassInfo {
	for _, ci := range catalogue {
		if ci.Class == c {
			return ci
		}
	}
	return ClassInfo{Class: c, Label: string(c), Colour: "#000000"}
}

// classes is the order Classes returns: the catalogue's.
var classes = func() []Class {
	cs := make([]Class, len(catalogue))
	for i, ci := range catalogue {
		cs[i] = ci.Class
	}
	return cs
}()

// Classes returns every class, in a fixed order (the order of CSV columns).
// The slice is a fresh copy.
func Classes() []Class { return append([]Class(nil), classes...) }

// Failed reports whether a request of class c counts as a failure: every
// class except Class2xx, including ClassOther (which holds 1xx and 3xx
// responses: droprun's targets never redirect, so a 3xx means the request did
// not reach the application it was aimed at, and counting it as served would
// hide that).
func (c Class) Failed() bool { return c != Class2xx }

// transportRules maps Go error text to a class, first match wins. The order
// matters: a timeout while reading a body mentions both the deadline and the
// body, and must count as a timeout.
var transportRules = []struct {
	class Class
	texts []string
}{
	// Before reset and EOF: the client names a reused idle connection's
	// reset or EOF so (IdleReuseText); net/http's own text for it.
	{ClassIdleClosed, []string{IdleReuseText, "server closed idle connection"}},
	{ClassRefused, []string{"connection refused"}},
	{ClassReset, []string{
		"connection reset", "broken pipe",
		// net/http's HTTP/2 client closes a connection itself once a write
		// on it failed (a reset or broken pipe from a dying pod), and the
		// streams still in flight on it end with this text. droprun never
		// closes a connection under a request.
		"client connection force closed via ClientConn.Close",
	}},
	{ClassTimeout, []string{
		"Client.Timeout",            // net/http: "(Client.Timeout exceeded while awaiting headers)"
		"i/o timeout",               // net: a dial, read or write deadline
		"context deadline exceeded", // the client's timeout as a context error
		"timeout awaiting response headers",
		"TLS handshake timeout",
		"code = DeadlineExceeded", // gRPC's status for the client's deadline
	}},
	// net/http's HTTP/2 client: errClientConnGotGoAway, a GOAWAY with an
	// error on a first stream, a REFUSED_STREAM reset; then any other
	// stream error; then http2GoAwayError, the connection closed after a
	// GOAWAY that covered the stream.
	{ClassGoAway, []string{
		"graceful shutdown GOAWAY",
		"received GOAWAY from server",
		"; REFUSED_STREAM",
		"stream refused before it started", // RefusedStream, a hidden failure's text
		// grpc-go: a new stream on a connection that got GOAWAY, and a
		// REFUSED_STREAM reset.
		"the connection is draining",
		"RST_STREAM with error code: REFUSED_STREAM",
	}},
	{ClassStreamReset, []string{"stream error: stream ID", "stream terminated by RST_STREAM"}},
	{ClassEOF, []string{
		"server sent GOAWAY and closed the connection",
		"EOF",                  // "EOF", "unexpected EOF"
		"transport is closing", // grpc-go: the connection closed under the call
		// net/http's HTTP/2 client: a connection that closed as soon as
		// it opened, before its first stream (a pod that died just after
		// accepting it; the same close gives others EOF or a reset), and
		// one closed while a request body waited to be sent.
		"http2: client conn could not be established",
		"http2: client conn is closed",
	}},
	// grpc-go's UNAVAILABLE with none of the causes above.
	{ClassUnavailable, []string{"code = Unavailable"}},
}

// Classify returns the class of a request from the fields of a vegeta Result:
// its status code and its error text. Code 0 means a transport error (no HTTP
// response), classified by the Go error text, e.g.
//
//	Get "http://127.0.0.1:30080/": dial tcp 127.0.0.1:30080: connect: connection refused
//	Get "http://127.0.0.1:30080/": read tcp ...: read: connection reset by peer
//	Get "http://127.0.0.1:30080/": EOF
//	Get "http://127.0.0.1:30080/": context deadline exceeded (Client.Timeout exceeded while awaiting headers)
//
// A response is classified by its code alone: 2xx, 4xx, 502, 503, other 5xx;
// 1xx, 3xx and codes outside 100–599 are ClassOther (see Class.Failed).
func Classify(code uint16, errText string) Class {
	switch {
	case code == 0:
		for _, rule := range transportRules {
			for _, t := range rule.texts {
				if strings.Contains(errText, t) {
					return rule.class
				}
			}
		}
		return ClassOther
	case code >= 200 && code < 300:
		return Class2xx
	case code >= 400 && code < 500:
		return Class4xx
	case code == 502:
		return Class502
	case code == 503:
		return Class503
	case code >= 500 && code < 600:
		return Class5xxOther
	default:
		return ClassOther
	}
}
