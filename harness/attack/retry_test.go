package attack

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/traffic"
)

// connRequests is the per-connection request counter resettingServer keeps
// in each request's context.
type connRequests struct{}

// resettingServer answers 200, except that it resets (RST, SO_LINGER 0)
// every connection when its nth request arrives (n = 1: every request), as
// a pod that dies under kept-alive clients does. The request was written
// whole: net/http retries it only if it is idempotent.
func resettingServer(t *testing.T, n int64) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(connRequests{}).(*atomic.Int64).Add(1) < n {
			return
		}
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		_ = c.(*net.TCPConn).SetLinger(0)
		c.Close()
	}))
	srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, connRequests{}, new(atomic.Int64))
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// healthyServer answers 200 to everything.
func healthyServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// failSecondWrite dials as net.Dialer does, but each connection fails its
// second write (its second request) with nothing written, as a write on a
// connection the peer has already reset fails: the one failure net/http
// retries for a POST, so far the only way to provoke that retry at will.
func failSecondWrite(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &faultConn{Conn: c}, nil
}

type faultConn struct {
	net.Conn
	writes atomic.Int32
}

func (c *faultConn) Write(p []byte) (int, error) {
	if c.writes.Add(1) == 2 {
		return 0, &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("write", syscall.ECONNRESET)}
	}
	return c.Conn.Write(p)
}

// TestHiddenRetriesAreMasked: every request net/http retries behind the
// client's back is counted, and one it served by the retry is masked with
// the class of the failure it hid, for GET and POST alike; a failure
// net/http does not retry stays a visible drop, and without keep-alive
// nothing is retried, so nothing is masked.
func TestHiddenRetriesAreMasked(t *testing.T) {
	resetSecond := func(t *testing.T) string { return resettingServer(t, 2) }
	resetEvery := func(t *testing.T) string { return resettingServer(t, 1) }
	tests := []struct {
		name      string
		keepAlive bool
		method    string
		server    func(*testing.T) string
		dial      dialFunc      // nil: net.Dialer
		masked    bool          // want masked requests and no drop
		visible   traffic.Class // want drops, all of this class ("": none)
		// or a few of this one: a request net/http hands a connection
		// straight from the one before (GotConnInfo.WasIdle false, on a
		// busy machine) took none from the idle pool, so its reset is
		// plain (a CI-like run: 1 of 10).
		orVisible traffic.Class
	}{
		{"keep-alive GET, server resets each connection's second request", true, "GET", resetSecond, nil, true, "", ""},
		// The second request rides a connection taken from the idle pool:
		// its reset is a reused idle connection closed (traffic.ClassIdleClosed).
		{"keep-alive POST, server resets each connection's second request", true, "POST", resetSecond, nil, false, traffic.ClassIdleClosed, traffic.ClassReset},
		{"keep-alive GET, second write fails with nothing written", true, "GET", healthyServer, failSecondWrite, true, "", ""},
		{"keep-alive POST, second write fails with nothing written", true, "POST", healthyServer, failSecondWrite, true, "", ""},
		{"keep-alive GET, server resets every request", true, "GET", resetEvery, nil, false, traffic.ClassReset, ""},
		{"new connections GET, server resets each connection's second request", false, "GET", resetSecond, nil, false, "", ""},
		{"new connections POST, second write fails with nothing written", false, "POST", healthyServer, failSecondWrite, false, "", ""},
		{"new connections GET, server resets every request", false, "GET", resetEvery, nil, false, traffic.ClassReset, ""},
		{"new connections POST, server resets every request", false, "POST", resetEvery, nil, false, traffic.ClassReset, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dial := tt.dial
			if dial == nil {
				dial = (&net.Dialer{}).DialContext
			}
			cfg := traffic.Config{URL: tt.server(t), Rate: 100, Protocol: traffic.HTTP1(tt.keepAlive), Method: tt.method, Name: "hidden"}
			recs, stats, file := attackWith(t, cfg, 20, dial)

			var masked, drops, or uint64
			for _, r := range recs {
				if r.Class.Failed() {
					drops++
					if r.Class == tt.orVisible && tt.orVisible != "" && !strings.Contains(r.Error, traffic.IdleReuseText) {
						or++
					} else if r.Class != tt.visible {
						t.Errorf("seq %d: a drop of class %s (%q), want %q", r.Seq, r.Class, r.Error, tt.visible)
					}
				}
				if r.Hidden == "" {
					if r.HiddenError != "" || r.Retries != 0 {
						t.Errorf("seq %d: no hidden class but error %q, %d retries", r.Seq, r.HiddenError, r.Retries)
					}
					continue
				}
				// Only a kept-alive connection is retried, and it was
				// taken from the idle pool.
				if !r.Masked() || r.Hidden != traffic.ClassIdleClosed || r.Retries < 1 || !strings.Contains(r.HiddenError, "connection reset") || !strings.Contains(r.HiddenError, traffic.IdleReuseText) {
					t.Errorf("seq %d: %s, masked %v, hidden %s %q after %d retries; want a 2xx masking a %s",
						r.Seq, r.Class, r.Masked(), r.Hidden, r.HiddenError, r.Retries, traffic.ClassIdleClosed)
				}
				masked++
			}
			t.Logf("%d requests: %d masked, %d dropped, retried %d; by class %v", stats.Requests, masked, drops, stats.Retried, stats.ByClass)
			switch {
			case tt.masked && (masked == 0 || drops != 0):
				t.Errorf("%d masked and %d dropped, want some masked and no drop", masked, drops)
			case !tt.masked && masked != 0:
				t.Errorf("%d masked, want none", masked)
			case tt.visible != "" && drops == or:
				t.Errorf("%d drops, none of class %s", drops, tt.visible)
			case 2*or > drops:
				t.Errorf("%d of %d drops of class %s, want the most of class %s", or, drops, tt.orVisible, tt.visible)
			case tt.visible == "" && drops != 0:
				t.Errorf("%d drops, want none", drops)
			}
			// Here every retry ends in a 2xx: Retried and Masked agree.
			if stats.Masked != masked || stats.Retried != masked {
				t.Errorf("Stats: Masked %d, Retried %d; the records show %d masked", stats.Masked, stats.Retried, masked)
			}
			// The results file keeps what was hidden.
			var read []traffic.Record
			if err := traffic.ReadResults(bytes.NewReader(file), func(r traffic.Record) error { read = append(read, r); return nil }); err != nil {
				t.Fatal(err)
			}
			if len(read) != len(recs) {
				t.Fatalf("read %d records back, observed %d", len(read), len(recs))
			}
			for i := range read {
				if !sameRecord(read[i], recs[i]) {
					t.Errorf("record %d read back as %+v, observed %+v", i, read[i], recs[i])
				}
			}
		})
	}
}

// TestHiddenHeaderFromServerIsIgnored: only the client sets traffic.HiddenHeader,
// so a server sending it masks nothing.
func TestHiddenHeaderFromServerIsIgnored(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(traffic.HiddenHeader, "EOF")
	}))
	defer srv.Close()
	recs, stats, _ := attackUntil(t, traffic.Config{URL: srv.URL + "/", Rate: 50, Protocol: traffic.ProtocolKeepAlive}, 3)
	for _, r := range recs {
		if r.Hidden != "" || r.Masked() {
			t.Errorf("seq %d: hidden %q from the server's header", r.Seq, r.Hidden)
		}
	}
	if stats.Masked != 0 || stats.Retried != 0 {
		t.Errorf("Stats: Masked %d, Retried %d", stats.Masked, stats.Retried)
	}
}

// Under TLS the transport hands the trace a *tls.Conn over droprun's
// errConn: the hidden failure's text is still the error the connection
// returned, not the placeholder.
func TestHiddenFailureTextUnderTLS(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	ec := &errConn{Conn: client}
	ec.note(errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer"))
	tc := tls.Client(ec, &tls.Config{InsecureSkipVerify: true})
	defer tc.Close()
	if got := failureOf(tc, ""); got != "read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer" {
		t.Errorf("failureOf(tls.Conn) = %q", got)
	}
	if got := failureOf(&errConn{Conn: client}, ""); got != unseenFailure {
		t.Errorf("a connection without an error: %q", got)
	}
	if got := failureOf(client, ""); got != unseenFailure {
		t.Errorf("a connection droprun did not wrap: %q", got)
	}
}

// A connection the client closed itself (net/http's HTTP/2 client closes
// one after a GOAWAY) fails its reads with "use of closed network
// connection": that is not the failure a retry hid, so over HTTP/2 the
// hidden failure is the refused stream.
func TestHiddenFailureIgnoresOwnClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	ec := &errConn{Conn: c}
	ec.Close()
	if _, err := ec.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read on a closed connection: %v, want net.ErrClosed", err)
	}
	if got := failureOf(ec, traffic.RefusedStream); got != traffic.RefusedStream {
		t.Errorf("failureOf(own close) = %q, want %q", got, traffic.RefusedStream)
	}
	if c := traffic.Classify(0, traffic.RefusedStream); c != traffic.ClassGoAway {
		t.Errorf("the refused stream's text is classified %s, want %s", c, traffic.ClassGoAway)
	}
}

// An EOF or reset on a connection taken from the idle pool is named so,
// with how long it sat idle; any other failure, or one on a connection
// not taken from the pool, keeps its text and class.
func TestIdleReuseNamed(t *testing.T) {
	conn, peer := net.Pipe()
	defer conn.Close()
	defer peer.Close()
	for _, tc := range []struct {
		name      string
		idleReuse bool
		info      httptrace.GotConnInfo
		err       string
		want      traffic.Class
	}{
		{"EOF on an idle connection", true, httptrace.GotConnInfo{Conn: conn, Reused: true, WasIdle: true, IdleTime: 4 * time.Second}, `Get "http://127.0.0.1:31080/": EOF`, traffic.ClassIdleClosed},
		{"reset on an idle connection", true, httptrace.GotConnInfo{Conn: conn, Reused: true, WasIdle: true}, "read: connection reset by peer", traffic.ClassIdleClosed},
		{"timeout on an idle connection", true, httptrace.GotConnInfo{Conn: conn, Reused: true, WasIdle: true}, "context deadline exceeded", traffic.ClassTimeout},
		{"EOF on a new connection", true, httptrace.GotConnInfo{Conn: conn}, "EOF", traffic.ClassEOF},
		{"EOF on a multiplexed connection", false, httptrace.GotConnInfo{Conn: conn, Reused: true, WasIdle: true}, "EOF", traffic.ClassEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &attempts{idleReuse: tc.idleReuse}
			a.gotConn(tc.info)
			err := a.named(errors.New(tc.err))
			if c := traffic.Classify(0, err.Error()); c != tc.want || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("%q: %s, want %s with the text kept", err, c, tc.want)
			}
			if tc.want == traffic.ClassIdleClosed && !strings.Contains(err.Error(), traffic.IdleReuseText+" "+tc.info.IdleTime.String()+" idle") {
				t.Errorf("%q does not say how long the connection was idle (%s)", err, tc.info.IdleTime)
			}
		})
	}
}
