package traffic

import (
	"fmt"
	"slices"
	"testing"
)

func TestClassesOrderAndFailed(t *testing.T) {
	want := []Class{"2xx", "000:refused", "000:reset", "000:eof", "000:idle-closed", "000:goaway", "000:stream-reset", "000:unavailable", "000:timeout", "000:other", "502", "503", "5xx:other", "4xx"}
	got := Classes()
	if !slices.Equal(got, want) {
		t.Fatalf("Classes() = %v, want %v", got, want)
	}
	got[0] = "changed"
	if Classes()[0] != Class2xx {
		t.Fatal("Classes() returned the package's own slice")
	}
	for _, c := range want {
		if c.Failed() != (c != Class2xx) {
			t.Errorf("%s.Failed() = %v", c, c.Failed())
		}
	}
}

// TestCatalogue: every class has its entry, in the order of Classes, with
// a label, a meaning and a colour of its own.
func TestCatalogue(t *testing.T) {
	cat := Catalogue()
	if len(cat) != NClasses || NClasses != len(Classes()) {
		t.Fatalf("%d entries, NClasses %d, %d classes", len(cat), NClasses, len(Classes()))
	}
	colours := map[string]Class{}
	for i, ci := range cat {
		if ci.Class != Classes()[i] {
			t.Errorf("entry %d is %s, Classes()[%d] is %s", i, ci.Class, i, Classes()[i])
		}
		if ci.Label == "" || ci.Meaning == "" {
			t.Errorf("%s: label %q, meaning %q", ci.Class, ci.Label, ci.Meaning)
		}
		var r, g, b uint8
		if n, err := fmt.Sscanf(ci.Colour, "#%02x%02x%02x", &r, &g, &b); n != 3 || err != nil || len(ci.Colour) != 7 {
			t.Errorf("%s: colour %q is not #rrggbb", ci.Class, ci.Colour)
		}
		if other, ok := colours[ci.Colour]; ok {
			t.Errorf("%s and %s share the colour %s", other, ci.Class, ci.Colour)
		}
		colours[ci.Colour] = ci.Class
		if Info(ci.Class) != ci {
			t.Errorf("Info(%s) = %+v, want %+v", ci.Class, Info(ci.Class), ci)
		}
		if ci.Race && !ci.Class.Failed() {
			t.Errorf("%s is a race class and not a failure", ci.Class)
		}
	}
	if ci := Info("418"); ci.Label != "418" || ci.Colour != "#000000" || ci.Race {
		t.Errorf("Info of an unknown class: %+v", ci)
	}
	cat[0].Colour = "changed"
	if Catalogue()[0].Colour == "changed" {
		t.Error("Catalogue() returned the package's own table")
	}
}

func TestClassifyText(t *testing.T) {
	const u = `Get "http://127.0.0.1:30080/version": `
	tests := []struct {
		name string
		code uint16
		err  string
		want Class
	}{
		{"200", 200, "", Class2xx},
		{"204", 204, "", Class2xx},
		{"404", 404, "404 Not Found", Class4xx},
		{"429", 429, "429 Too Many Requests", Class4xx},
		{"500", 500, "500 Internal Server Error", Class5xxOther},
		{"502", 502, "502 Bad Gateway", Class502},
		{"503", 503, "503 Service Unavailable", Class503},
		{"504", 504, "504 Gateway Timeout", Class5xxOther},
		{"101 is other", 101, "101 Switching Protocols", ClassOther},
		{"302 is other", 302, "", ClassOther},
		{"code 600 is other", 600, "600 ", ClassOther},
		{"refused", 0, u + "dial tcp 127.0.0.1:30080: connect: connection refused", ClassRefused},
		{"reset on read", 0, u + "read tcp 127.0.0.1:4000->127.0.0.1:30080: read: connection reset by peer", ClassReset},
		{"reset on write", 0, u + "write tcp 127.0.0.1:4000->127.0.0.1:30080: write: broken pipe", ClassReset},
		{"eof", 0, u + "EOF", ClassEOF},
		{"unexpected eof in body", 0, "unexpected EOF", ClassEOF},
		{"server closed idle", 0, u + "http: server closed idle connection", ClassIdleClosed},
		// net/http's HTTP/2 client, its own texts.
		{"h2 goaway, retry refused", 0, u + "http2: Transport received Server's graceful shutdown GOAWAY", ClassGoAway},
		{"h2 goaway with an error", 0, u + "http2: Transport received GOAWAY from server ErrCode:PROTOCOL_ERROR", ClassGoAway},
		{"h2 refused stream", 0, u + "stream error: stream ID 7; REFUSED_STREAM; received from peer", ClassGoAway},
		{"h2 stream reset", 0, u + "stream error: stream ID 9; INTERNAL_ERROR; received from peer", ClassStreamReset},
		{"h2 closed after goaway", 0, u + `http2: server sent GOAWAY and closed the connection; LastStreamID=11, ErrCode=NO_ERROR, debug=""`, ClassEOF},
		{"h2 connection lost", 0, u + "unexpected EOF", ClassEOF},
		{"h2 closed before its first stream", 0, u + "http2: client conn could not be established", ClassEOF},
		{"h2 closed under a body", 0, u + "http2: client conn is closed", ClassEOF},
		{"h2 conn closed after another stream's write failed", 0, u + "http2: client connection force closed via ClientConn.Close", ClassReset},
		{"h2 refusal a retry hid", 0, RefusedStream, ClassGoAway},
		// grpc-go's status errors (grpcFleet): the wire cause decides.
		{"grpc refused", 0, u + `rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:30080: connect: connection refused"`, ClassRefused},
		{"grpc reset", 0, u + "rpc error: code = Unavailable desc = error reading from server: read tcp 127.0.0.1:4000->127.0.0.1:30080: read: connection reset by peer", ClassReset},
		{"grpc closed in flight", 0, u + "rpc error: code = Unavailable desc = error reading from server: EOF", ClassEOF},
		{"grpc closed after goaway", 0, u + `rpc error: code = Unavailable desc = closing transport due to: connection error: desc = "error reading from server: EOF", received prior goaway: code: NO_ERROR, debug data: "graceful_stop"`, ClassEOF},
		{"grpc transport closing", 0, u + "rpc error: code = Unavailable desc = transport is closing", ClassEOF},
		{"grpc draining", 0, u + "rpc error: code = Unavailable desc = the connection is draining", ClassGoAway},
		{"grpc refused stream", 0, u + "rpc error: code = Unavailable desc = stream terminated by RST_STREAM with error code: REFUSED_STREAM", ClassGoAway},
		{"grpc stream reset", 0, u + "rpc error: code = Internal desc = stream terminated by RST_STREAM with error code: INTERNAL_ERROR", ClassStreamReset},
		{"grpc refusal a retry hid", 0, RefusedGRPCStream, ClassGoAway},
		{"grpc deadline", 0, u + "rpc error: code = DeadlineExceeded desc = context deadline exceeded", ClassTimeout},
		{"grpc deadline while connecting", 0, u + "rpc error: code = DeadlineExceeded desc = received context error while waiting for new LB policy update: context deadline exceeded", ClassTimeout},
		{"grpc unavailable, no cause", 0, u + "rpc error: code = Unavailable desc = the server is shedding load", ClassUnavailable},
		{"grpc other status", 0, u + "rpc error: code = Unimplemented desc = unknown service grpc.health.v1.Health", ClassOther},
		{"client timeout awaiting headers", 0, u + "context deadline exceeded (Client.Timeout exceeded while awaiting headers)", ClassTimeout},
		{"client timeout in body", 0, "context deadline exceeded (Client.Timeout or context cancellation while reading body)", ClassTimeout},
		{"dial timeout", 0, u + "dial tcp 127.0.0.1:30080: i/o timeout", ClassTimeout},
		{"old net/http timeout text", 0, u + "net/http: request canceled (Client.Timeout exceeded while awaiting headers)", ClassTimeout},
		{"dial guard", 0, u + "traffic: refusing to dial tcp 10.0.0.1:80: this client only connects to 127.0.0.1:30080", ClassOther},
		{"no such host", 0, u + "dial tcp: lookup nowhere: no such host", ClassOther},
		{"code 0 without error", 0, "", ClassOther},
		{"status text ignored for codes", 200, "connection refused", Class2xx},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.code, tt.err); got != tt.want {
				t.Errorf("Classify(%d, %q) = %s, want %s", tt.code, tt.err, got, tt.want)
			}
		})
	}
}
