package traffic

import "strings"

// HiddenHeader is the header, in a result, that names the failures net/http
// hid from the client: one value per connection the request failed on
// before net/http retried it on another, the error text of that connection
// (see Record.Hidden). The attack's client adds it to the response it got;
// a header of this name sent by the server is removed first, so only the
// client ever sets it. It is kept in the results file.
const HiddenHeader = "X-Droprun-Hidden-Failure"

// RefusedStream is a hidden failure's text over HTTP/2 when the connection
// returned no error: net/http retries a stream on a new connection without
// one only when the server refused it before it started (a GOAWAY below
// its ID, or REFUSED_STREAM). It is classified ClassGoAway.
const RefusedStream = "http2: stream refused before it started (the server's GOAWAY or REFUSED_STREAM); net/http retried it on a new connection"

// IdleReuseText marks a failure on a kept-alive connection the client
// took from its idle pool (ClassIdleClosed): the client appends it, with
// how long the connection had been idle, to an EOF or reset there.
const IdleReuseText = "on a kept-alive connection reused after"

// AcceptedText marks a timeout on a connection dialled for the request
// that the server had accepted (httptrace's GotConn, not reused). On a
// direct path the server is the pod: it was listening and did not answer
// in time. A pod that had closed its listener refuses the connection, and
// one that is gone never accepts it; so such a timeout is the pod being
// slow, not a request routed to it after its listener closed (Accepted).
// Through a proxy or a front the server is that hop, which says nothing
// of the pod behind it.
const AcceptedText = "(on a new connection the server had accepted)"

// Accepted reports whether rec timed out on a new connection the server
// had accepted (AcceptedText): on a direct path, the pod was slow, not
// gone. False for records of protocols or runs that do not say.
func Accepted(rec Record) bool {
	return rec.Class == ClassTimeout && strings.HasSuffix(rec.Error, AcceptedText)
}

// RefusedGRPCStream is a hidden failure's text when the replaced attempt
// reported no error (grpc-go retries transparently only a stream the
// server never saw); it is classified traffic.ClassGoAway.
const RefusedGRPCStream = "grpc: stream refused before it started (the server's GOAWAY or REFUSED_STREAM); grpc-go retried it transparently"
