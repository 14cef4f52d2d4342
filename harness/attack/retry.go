package attack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/droprun/droprun/harness/traffic"
)

// unseenFailure is a hidden failure's text when the connection it failed
// on returned no error the client saw (every retry follows a read or write
// error, so this should not happen).
const unseenFailure = "net/http retried the request on another connection without a read or write error on the first"

// watch is the attack's RoundTripper around its http.Transport. It bounds
// each request by the attack's timeout and records, per request, every
// retry net/http made behind the caller's back: net/http retries a request
// that failed on a reused connection (one without a body that failed
// before a byte was written, whatever its method; an idempotent one, GET
// and HEAD included, that failed before a response byte arrived), and the
// caller sees only the retry's outcome.
//
// The timeout is a context deadline, not http.Client.Timeout: with a
// RoundTripper that is not an *http.Transport, Client.Timeout falls back to
// request cancellation by two extra goroutines per request, a cost at
// thousands of requests per second. The deadline covers the connection,
// the headers and the body, as Client.Timeout does; a request past it
// fails with "context deadline exceeded" (traffic.ClassTimeout).
type watch struct {
	next    http.RoundTripper
	timeout time.Duration
	// unseen is a hidden failure's text when its connection returned no
	// error: unseenFailure, or traffic.RefusedStream over HTTP/2.
	unseen string
	// retried counts the requests net/http retried at least once.
	retried atomic.Uint64
	// idleReuse names an EOF or reset on a connection taken from the
	// idle pool: set for a protocol that reuses connections one request
	// at a time (HTTP/1.1 keep-alive), where such a connection carried
	// nothing else when it failed.
	idleReuse bool
}

// RoundTrip implements http.RoundTripper.
func (w *watch) RoundTrip(req *http.Request) (*http.Response, error) {
	at := &attempts{unseen: w.unseen, idleReuse: w.idleReuse}
	trace := &httptrace.ClientTrace{GetConn: at.getConn, GotConn: at.gotConn}
	ctx := context.WithValue(httptrace.WithClientTrace(req.Context(), trace), attemptsKey{}, at)
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	resp, err := w.next.RoundTrip(req.WithContext(ctx))
	hidden := at.failures()
	if len(hidden) > 0 {
		w.retried.Add(1)
	}
	if err != nil {
		cancel()
		return nil, at.named(err)
	}
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	resp.Header.Del(traffic.HiddenHeader)
	for _, h := range hidden {
		resp.Header.Add(traffic.HiddenHeader, h)
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// attempts follows one request's connection attempts through its trace.
// net/http's transport asks for a connection (GetConn) once per attempt,
// so every GetConn after a connection was got means that connection's
// attempt failed and net/http is retrying.
type attempts struct {
	mu     sync.Mutex
	conn   net.Conn // the connection of the current attempt
	hidden []string
	unseen string // the failure's text when conn returned no error
	last   string // gRPC: the error the latest attempt ended with
	// idleReuse is watch.idleReuse; idle is how long the current
	// attempt's connection sat in the idle pool, -1 when it was not taken
	// from there.
	idleReuse bool
	idle      time.Duration
	// fresh says the current attempt's connection was dialled for it
	// (not reused): the server's kernel accepted it for this request.
	fresh bool
}

func (a *attempts) getConn(string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn != nil {
		a.hidden = append(a.hidden, a.idleText(failureOf(a.conn, a.unseen)))
		a.conn = nil
	}
}

func (a *attempts) gotConn(info httptrace.GotConnInfo) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.conn, a.idle, a.fresh = info.Conn, -1, !info.Reused
	if a.idleReuse && info.Reused && info.WasIdle {
		a.idle = info.IdleTime
	}
}

// idleText is the text of a failure on the current attempt's connection:
// an EOF or reset on one taken from the idle pool says so (traffic.IdleReuseText).
func (a *attempts) idleText(text string) string {
	if a.idle < 0 || a.conn == nil {
		return text
	}
	if c := traffic.Classify(0, text); c != traffic.ClassEOF && c != traffic.ClassReset {
		return text
	}
	return fmt.Sprintf("%s (%s %s idle)", text, traffic.IdleReuseText, a.idle.Round(time.Millisecond))
}

// named is err, the request's error, naming an EOF or reset on a
// connection taken from the idle pool (idleText).
func (a *attempts) named(err error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if text := a.idleText(err.Error()); text != err.Error() {
		return &idleClosedError{err: err, text: text}
	}
	if a.conn != nil && a.fresh && traffic.Classify(0, err.Error()) == traffic.ClassTimeout {
		return &idleClosedError{err: err, text: err.Error() + " " + traffic.AcceptedText}
	}
	return err
}

// idleClosedError is a request's error with the text that says more of
// it: on a reused idle connection, or a timeout on a new one the server
// had accepted.
type idleClosedError struct {
	err  error
	text string
}

func (e *idleClosedError) Error() string { return e.text }
func (e *idleClosedError) Unwrap() error { return e.err }

func (a *attempts) failures() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hidden
}

// failureOf returns the text of the first error conn returned, unseen if
// none (or unseenFailure when unseen is empty). Under TLS the transport's
// connection is a *tls.Conn over the errConn: it is unwrapped (NetConn)
// to reach it.
func failureOf(conn net.Conn, unseen string) string {
	if unseen == "" {
		unseen = unseenFailure
	}
	for conn != nil {
		switch c := conn.(type) {
		case *errConn:
			if err := c.firstErr(); err != nil {
				return err.Error()
			}
			return unseen
		case interface{ NetConn() net.Conn }:
			conn = c.NetConn()
		default:
			return unseen
		}
	}
	return unseen
}

// cancelBody ends the request's context when the body is closed (vegeta
// reads every body to its end and closes it).
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// errConn is a connection that remembers its first read or write error:
// the failure a retry on another connection hides. The transport's read
// loop records a read error before it reports it, and its write loop a
// write error, so the error is there when the retry asks for a connection.
type errConn struct {
	net.Conn
	mu  sync.Mutex
	err error
}

func (c *errConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.note(err)
	}
	return n, err
}

func (c *errConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err != nil {
		c.note(err)
	}
	return n, err
}

func (c *errConn) note(err error) {
	if errors.Is(err, net.ErrClosed) {
		// The client closed it itself (after a GOAWAY, or after an error
		// already noted): a consequence, not the failure.
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
}

func (c *errConn) firstErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// noteErrors wraps dial so that every connection remembers its first error.
func noteErrors(dial dialFunc) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &errConn{Conn: c}, nil
	}
}
