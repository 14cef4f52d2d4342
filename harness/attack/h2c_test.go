package attack

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/droprun/droprun/harness/traffic"
)

// h2cServer is an httptest server that speaks HTTP/1.1 and HTTP/2 over
// cleartext, as bookshop does, and counts the connections it accepted and
// the requests it saw by protocol major version. h runs before the answer.
func h2cServer(t *testing.T, h func(w http.ResponseWriter, n uint64)) (url string, conns *atomic.Uint64, byProto func() map[int]uint64) {
	t.Helper()
	var mu sync.Mutex
	protos := map[int]uint64{}
	var n atomic.Uint64
	conns = new(atomic.Uint64)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protos[r.ProtoMajor]++
		mu.Unlock()
		if h != nil {
			h(w, n.Add(1))
		}
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, conns, func() map[int]uint64 {
		mu.Lock()
		defer mu.Unlock()
		return map[int]uint64{1: protos[1], 2: protos[2]}
	}
}

// TestH2CFleet: with traffic.ProtocolH2C every request is an HTTP/2 stream, and the
// client holds traffic.Config.Connections connections per target, no more, spread
// round robin.
func TestH2CFleet(t *testing.T) {
	url1, conns1, protos1 := h2cServer(t, nil)
	url2, conns2, protos2 := h2cServer(t, nil)
	_, stats, _ := attackUntil(t, traffic.Config{Targets: []traffic.Target{{URL: url1 + "/"}, {URL: url2 + "/"}}, Rate: 200, Protocol: traffic.ProtocolH2C, Connections: 3}, 60)
	if stats.ByClass[traffic.Class2xx] != stats.Requests {
		t.Fatalf("ByClass = %v", stats.ByClass)
	}
	for i, s := range []struct {
		conns  *atomic.Uint64
		protos func() map[int]uint64
	}{{conns1, protos1}, {conns2, protos2}} {
		p := s.protos()
		if p[1] != 0 || p[2] == 0 {
			t.Errorf("target %d saw requests by protocol %v, want HTTP/2 only", i+1, p)
		}
		if got := s.conns.Load(); got != 3 {
			t.Errorf("target %d: %d connections, want 3 (Config.Connections)", i+1, got)
		}
	}
	if stats.Retried != 0 || stats.Masked != 0 {
		t.Errorf("a healthy server: Retried %d, Masked %d, want 0", stats.Retried, stats.Masked)
	}
}

// TestH2CGoAwayNewConnection: a server that sends GOAWAY on a connection
// ("Connection: close" on an HTTP/2 response) does not fail the client's
// requests: the client opens a new connection and goes on.
func TestH2CGoAwayNewConnection(t *testing.T) {
	url, conns, _ := h2cServer(t, func(w http.ResponseWriter, n uint64) {
		if n%10 == 0 {
			w.Header().Set("Connection", "close") // net/http: GOAWAY, then close when idle
		}
	})
	_, stats, _ := attackUntil(t, traffic.Config{URL: url + "/", Rate: 200, Protocol: traffic.ProtocolH2C, Connections: 2}, 60)
	if stats.ByClass[traffic.Class2xx] != stats.Requests {
		t.Errorf("ByClass = %v, want every request served despite the GOAWAYs", stats.ByClass)
	}
	if got := conns.Load(); got < 4 {
		t.Errorf("%d connections for 60 requests with a GOAWAY every 10th, want new ones opened (at least 4)", got)
	}
}

// TestH2CClosedAtOnce: a connection closed as soon as it is accepted (a
// pod that dies with the connection just routed to it) fails the h2c
// client's requests in the connection-closed classes, whichever of its
// texts net/http returns ("could not be established", EOF, a reset),
// never as an unknown failure.
func TestH2CClosedAtOnce(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, stats, _ := attackUntil(t, traffic.Config{URL: "http://" + l.Addr().String() + "/", Rate: 200, Protocol: traffic.ProtocolH2C, Connections: 2}, 100)
	for c, n := range stats.ByClass {
		if n > 0 && c != traffic.ClassEOF && c != traffic.ClassReset {
			t.Errorf("%d requests of class %s, want only %s and %s (ByClass %v)", n, c, traffic.ClassEOF, traffic.ClassReset, stats.ByClass)
		}
	}
}
