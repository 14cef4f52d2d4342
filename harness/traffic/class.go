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
	// response: "EOF", "unexpected EOF", "server closed idle connection".
	ClassEOF Class = "000:eof"
	// ClassTimeout is a request that did not complete within Config.Timeout
	// (dial, headers or body), e.g. a SYN routed to a pod that no longer exists.
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

// classes is the order Classes returns: success, then transport failures,
// then HTTP failures.
var classes = []Class{
	Class2xx, ClassRefused, ClassReset, ClassEOF, ClassTimeout, ClassOther,
	Class502, Class503, Class5xxOther, Class4xx,
}

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
	{ClassRefused, []string{"connection refused"}},
	{ClassReset, []string{"connection reset", "broken pipe"}},
	{ClassTimeout, []string{
		"Client.Timeout",            // net/http: "(Client.Timeout exceeded while awaiting headers)"
		"i/o timeout",               // net: a dial, read or write deadline
		"context deadline exceeded", // the client's timeout as a context error
		"timeout awaiting response headers",
		"TLS handshake timeout",
	}},
	{ClassEOF, []string{
		"EOF",                           // "EOF", "unexpected EOF"
		"server closed idle connection", // net/http, on a kept-alive connection
	}},
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
