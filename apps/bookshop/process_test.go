//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// The process tests build the real binary once, start it on 127.0.0.1:0,
// send it SIGTERM and watch from a client what each shutdown mode does.

const testVersion = "vtest"

// binDir holds the binary built for the process tests.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bookshop-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var built struct {
	once sync.Once
	path string
	err  error
}

// bookshopBinary builds the bookshop binary (once) and returns its path. It
// skips the test in -short mode or when the go command is not on PATH.
func bookshopBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("process test: skipped in -short mode")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("process test: needs the go command to build the binary: %v", err)
	}
	built.once.Do(func() {
		path := binDir + "/bookshop"
		cmd := exec.Command(goCmd, "build", "-o", path, "-ldflags", "-X main.version="+testVersion, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		built.path = path
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// proc is a running bookshop process.
type proc struct {
	cmd  *exec.Cmd
	addr string // the address it listens on, from its "listening" log line
	// grpcAddr is its gRPC server's address (web mode), from its own
	// "listening" line.
	grpcAddr string
	termLog  string // its --termination-log

	done     chan struct{} // closed once it has exited and its stderr is read
	state    *os.ProcessState
	exitedAt time.Time

	mu   sync.Mutex
	logs []string
}

// startBookshop starts the binary on 127.0.0.1:0 with args and returns once
// its /healthz answers. Unless args set --termination-log, it writes its
// termination message to an empty file in a temporary directory. The
// process is killed at the end of the test if it is still running, and its
// log is shown if the test failed.
func startBookshop(t *testing.T, args ...string) *proc {
	t.Helper()
	bin := bookshopBinary(t)
	p := &proc{done: make(chan struct{})}
	if !slices.Contains(args, "--termination-log") {
		p.termLog = filepath.Join(t.TempDir(), "termination-log")
		if err := os.WriteFile(p.termLog, nil, 0o666); err != nil { // Kubernetes creates it too
			t.Fatal(err)
		}
		args = append([]string{"--termination-log", p.termLog}, args...)
	}
	if !slices.Contains(args, "--grpc-addr") {
		args = append([]string{"--grpc-addr", "127.0.0.1:0"}, args...)
	}
	cmd := exec.Command(bin, append([]string{"--addr", "127.0.0.1:0"}, args...)...)
	p.cmd = cmd
	for _, kv := range os.Environ() { // the flags alone configure it
		if !strings.HasPrefix(kv, "BOOKSHOP_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening, grpcListening := make(chan string, 1), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.logs = append(p.logs, sc.Text())
			p.mu.Unlock()
			var line struct{ Msg, Addr, Protocol string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				if line.Protocol == "grpc" {
					grpcListening <- line.Addr
				} else {
					listening <- line.Addr
				}
			}
		}
		io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		p.state, p.exitedAt = cmd.ProcessState, time.Now()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("bookshop %s log:\n%s", strings.Join(args, " "), p.log())
		}
	})

	select {
	case p.addr = <-listening:
	case <-p.done:
		t.Fatalf("bookshop exited before listening: %v", p.state)
	case <-time.After(10 * time.Second):
		t.Fatal("bookshop did not log a listening line within 10s")
	}
	waitFor(t, 5*time.Second, "/healthz answers 200", func() bool {
		code, err := p.status("/healthz")
		return err == nil && code == http.StatusOK
	})
	if i := slices.Index(args, "--grpc-addr"); args[i+1] != "" && !slices.Contains(args, modeGateway) {
		select { // logged before serving, so the scanner has it or is on it
		case p.grpcAddr = <-grpcListening:
		case <-time.After(5 * time.Second):
			t.Fatal("bookshop did not log its gRPC listening line")
		}
	}
	return p
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.logs, "\n")
}

// get sends a GET for path on a new connection.
func (p *proc) get(path string) (*http.Response, error) {
	return p.getWith(&http.Transport{DisableKeepAlives: true}, path)
}

// getWith sends a GET for path through transport and reads the body.
func (p *proc) getWith(transport *http.Transport, path string) (*http.Response, error) {
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + p.addr + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp, err
}

// status is the status code of a GET for path.
func (p *proc) status(path string) (int, error) {
	resp, err := p.get(path)
	if err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}

func (p *proc) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// wait waits for the process to exit and returns its state.
func (p *proc) wait(t *testing.T, timeout time.Duration) *os.ProcessState {
	t.Helper()
	select {
	case <-p.done:
		return p.state
	case <-time.After(timeout):
		t.Fatalf("bookshop still running %v later", timeout)
		return nil
	}
}

// dial opens and closes a TCP connection to the process.
func (p *proc) dial() error { return p.dialAddr(p.addr) }

// dialAddr opens and closes a connection to addr.
func (p *proc) dialAddr(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err
}

// waitRefused polls until a new connection is refused and returns when.
func (p *proc) waitRefused(t *testing.T, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := p.dial()
		if errors.Is(err, syscall.ECONNREFUSED) {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("a new connection was not refused within %v; last dial: %v", within, err)
		}
		time.Sleep(time.Millisecond)
	}
}

var inFlightRE = regexp.MustCompile(`(?m)^bookshop_http_requests_in_flight (\d+)$`)

// inFlight reads bookshop_http_requests_in_flight from /metrics.
func (p *proc) inFlight() (int, error) {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + p.addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	m := inFlightRE.FindSubmatch(b)
	if m == nil {
		return 0, errors.New("no in-flight gauge in /metrics")
	}
	return strconv.Atoi(string(m[1]))
}

// totals returns the process's "final request totals" log line.
func (p *proc) totals(t *testing.T) (total int, byCode map[string]int) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.logs {
		var line struct {
			Msg    string
			Total  int
			ByCode map[string]int `json:"by_code"`
		}
		if json.Unmarshal([]byte(l), &line) == nil && line.Msg == "final request totals" {
			return line.Total, line.ByCode
		}
	}
	t.Fatal("no final request totals in the log")
	return 0, nil
}

// termMessage is the termination message as Kubernetes would hand it on,
// decoded independently of the type that writes it.
type termMessage struct {
	Pod, Version, Mode, Shutdown, Exit, Signal, Error string
	Code, Requests, InFlight                          int
	Sealed                                            bool
	SignalAt, ListenerClosedAt                        time.Time
	ByCode                                            map[string]int
	ByHandler                                         map[string]map[string]int
}

// terminationMessage reads the process's termination log, checks that it
// is one JSON line within Kubernetes' 4096 bytes naming this process, and
// that its counts add up, and returns it.
func (p *proc) terminationMessage(t *testing.T) termMessage {
	t.Helper()
	b, err := os.ReadFile(p.termLog)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || len(b) > 4096 || bytes.Count(b, []byte("\n")) != 1 || b[len(b)-1] != '\n' {
		t.Fatalf("termination log is not one line of at most 4096 bytes (%d bytes):\n%s", len(b), b)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var m termMessage
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("termination log: %v\n%s", err, b)
	}
	if m.Pod == "" || m.Version != testVersion || m.Mode != modeWeb {
		t.Errorf("termination message names pod %q, version %q, mode %q; want a pod, %s, web", m.Pod, m.Version, m.Mode, testVersion)
	}
	byCode, byHandler := 0, 0
	for _, n := range m.ByCode {
		byCode += n
	}
	for _, codes := range m.ByHandler {
		for _, n := range codes {
			byHandler += n
		}
	}
	if m.Requests == 0 || byCode != m.Requests || byHandler != m.Requests {
		t.Errorf("termination message: requests %d, by code sum to %d, by handler to %d; want equal and non-zero\n%s", m.Requests, byCode, byHandler, b)
	}
	// The log line and the message come from one reading of the counters.
	if total, codes := p.totals(t); total != m.Requests || !maps.Equal(codes, m.ByCode) {
		t.Errorf("logged totals %d %v differ from the termination message's %d %v", total, codes, m.Requests, m.ByCode)
	}
	return m
}

// send makes n GET requests for path, each on a new connection, and fails
// the test unless every one is answered with status want.
func (p *proc) send(t *testing.T, n int, path string, want int) {
	t.Helper()
	for i := range n {
		if code, err := p.status(path); err != nil || code != want {
			t.Fatalf("%s #%d: %d, %v; want %d", path, i+1, code, err, want)
		}
	}
}

// waitFor polls cond every 5ms until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// none: SIGTERM kills the process outright and its port refuses connections
// at once; this is the window in which a rollout drops requests. The signal
// is caught only to write the termination message: the in-flight request is
// cut, and the process still dies by SIGTERM.
func TestProcessShutdownNone(t *testing.T) {
	t.Parallel()
	p := startBookshop(t, "--shutdown", "none")
	p.send(t, 3, "/version", http.StatusOK)
	p.send(t, 1, "/nope", http.StatusNotFound)

	cut := make(chan error, 1)
	go func() {
		_, err := p.get("/version?delay=5s")
		cut <- err
	}()
	waitFor(t, 5*time.Second, "the slow request is in flight", func() bool {
		n, err := p.inFlight()
		return err == nil && n == 1
	})

	sent := time.Now()
	p.signal(t, syscall.SIGTERM)
	refusedAt := p.waitRefused(t, 100*time.Millisecond)
	t.Logf("new connections refused %v after SIGTERM", refusedAt.Sub(sent))

	select {
	case err := <-cut:
		if err == nil {
			t.Error("the in-flight request was answered; mode none must cut it")
		}
	case <-time.After(2 * time.Second):
		t.Error("the in-flight request was not cut within 2s of SIGTERM")
	}
	state := p.wait(t, 5*time.Second)
	ws, ok := state.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("exit = %v, want death by SIGTERM", state)
	}
	if took := p.exitedAt.Sub(sent); took > time.Second {
		t.Errorf("exited %v after SIGTERM; mode none must not linger", took)
	}

	m := p.terminationMessage(t)
	if m.Shutdown != shutdownNone || m.Exit != "killed" || m.Signal != "SIGTERM" || m.Code != 143 || m.Error != "" {
		t.Errorf("termination message: shutdown %q, exit %q, signal %q, code %d, error %q; want none, killed, SIGTERM, 143, none",
			m.Shutdown, m.Exit, m.Signal, m.Code, m.Error)
	}
	if m.InFlight != 1 {
		t.Errorf("termination message: inFlight %d, want the 1 cut request", m.InFlight)
	}
	if !m.Sealed {
		t.Error("termination message: totals not sealed")
	}
	// The cut request is not counted as answered; /healthz was polled at least once.
	if m.ByHandler["version"]["200"] != 3 || m.ByHandler["other"]["404"] != 1 || m.ByHandler["healthz"]["200"] < 1 || m.ByCode["404"] != 1 {
		t.Errorf("termination message counts %v (by code %v); want 3 version 200s, one 404, some healthz 200s", m.ByHandler, m.ByCode)
	}
}

// naive: Shutdown lets the in-flight request finish but closes the listener
// first, so new connections are refused while it is still running.
func TestProcessShutdownNaive(t *testing.T) {
	t.Parallel()
	p := startBookshop(t, "--shutdown", "naive", "--shutdown-timeout", "5s")

	type result struct {
		status int
		pod    string
		err    error
		at     time.Time
	}
	slow := make(chan result, 1)
	go func() {
		resp, err := p.get("/version?delay=1s")
		r := result{err: err, at: time.Now()}
		if err == nil {
			r.status, r.pod = resp.StatusCode, resp.Header.Get(headerPod)
		}
		slow <- r
	}()
	waitFor(t, 5*time.Second, "the slow request is in flight", func() bool {
		n, err := p.inFlight()
		return err == nil && n == 1
	})

	p.signal(t, syscall.SIGTERM)
	refusedAt := p.waitRefused(t, 500*time.Millisecond)

	var r result
	select {
	case r = <-slow:
	case <-time.After(5 * time.Second):
		t.Fatal("the in-flight request did not complete")
	}
	if r.err != nil || r.status != http.StatusOK || r.pod == "" {
		t.Errorf("in-flight request: status %d, pod %q, err %v; want 200 from a named pod", r.status, r.pod, r.err)
	}
	if !refusedAt.Before(r.at) {
		t.Errorf("new connections were refused only at %v, after the in-flight request ended at %v", refusedAt, r.at)
	}

	if state := p.wait(t, 5*time.Second); state.ExitCode() != 0 {
		t.Errorf("exit = %v, want exit status 0", state)
	}
	if _, byCode := p.totals(t); byCode["200"] < 2 { // /healthz and the slow /version at least
		t.Errorf("final totals by code = %v, want at least two 200s", byCode)
	}
	m := p.terminationMessage(t)
	if m.Shutdown != shutdownNaive || m.Exit != "clean" || m.Signal != "SIGTERM" || m.Code != 0 || m.InFlight != 0 {
		t.Errorf("termination message: shutdown %q, exit %q, signal %q, code %d, inFlight %d; want naive, clean, SIGTERM, 0, 0",
			m.Shutdown, m.Exit, m.Signal, m.Code, m.InFlight)
	}
	if m.ByHandler["version"]["200"] != 1 { // the slow request, finished
		t.Errorf("termination message counts %v; want the one /version 200", m.ByHandler)
	}
}

// drain: after SIGTERM, readiness fails but new connections are still
// served for the drain delay; only then does the process shut down, exit 0
// and refuse connections.
func TestProcessShutdownDrain(t *testing.T) {
	t.Parallel()
	const delay, timeout = time.Second, 5 * time.Second
	p := startBookshop(t, "--shutdown", "drain", "--drain-delay", delay.String(), "--shutdown-timeout", timeout.String())

	sent := time.Now()
	p.signal(t, syscall.SIGTERM)
	waitFor(t, 500*time.Millisecond, "/readyz answers 503", func() bool {
		code, err := p.status("/readyz")
		return err == nil && code == http.StatusServiceUnavailable
	})
	if code, err := p.status("/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("/healthz while draining: %d, %v; want 200", code, err)
	}

	// Send /version requests for most of the drain delay, through a client
	// that would keep its connection alive: the server must accept each new
	// connection, serve it, and close it (keep-alives are off while draining).
	keepAlive := &http.Transport{}
	defer keepAlive.CloseIdleConnections()
	served := 0
	for time.Since(sent) < delay-300*time.Millisecond {
		resp, err := p.getWith(keepAlive, "/version")
		if err != nil {
			t.Fatalf("request %d, %v after SIGTERM: %v; want it served while draining", served+1, time.Since(sent), err)
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get(headerVersion) != testVersion {
			t.Fatalf("request %d while draining: status %d, version %q", served+1, resp.StatusCode, resp.Header.Get(headerVersion))
		}
		if !resp.Close {
			t.Fatalf("response while draining lacks Connection: close; keep-alives should be off")
		}
		served++
		time.Sleep(10 * time.Millisecond) // pacing, not synchronisation
	}
	if served == 0 {
		t.Fatal("no request made it inside the drain window; the machine is too slow for this test")
	}

	state := p.wait(t, delay+timeout+time.Second)
	if state.ExitCode() != 0 {
		t.Errorf("exit = %v, want exit status 0", state)
	}
	if took := p.exitedAt.Sub(sent); took < delay {
		t.Errorf("exited %v after SIGTERM, before the %v drain delay was over", took, delay)
	}
	if err := p.dial(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial after exit: %v, want ECONNREFUSED", err)
	}

	log := p.log()
	drainAt, shutAt := strings.Index(log, `"phase":"draining"`), strings.Index(log, `"phase":"shutting_down"`)
	if drainAt < 0 || shutAt < drainAt {
		t.Errorf("log lacks the draining then shutting_down transitions")
	}
	if _, byCode := p.totals(t); byCode["200"] < served || byCode["503"] < 1 {
		t.Errorf("final totals by code = %v, want at least %d 200s and one 503", byCode, served)
	}
	m := p.terminationMessage(t)
	if m.Shutdown != shutdownDrain || m.Exit != "clean" || m.Signal != "SIGTERM" || m.Code != 0 || m.InFlight != 0 {
		t.Errorf("termination message: shutdown %q, exit %q, signal %q, code %d, inFlight %d; want drain, clean, SIGTERM, 0, 0",
			m.Shutdown, m.Exit, m.Signal, m.Code, m.InFlight)
	}
	if m.ByHandler["version"]["200"] != served || m.ByHandler["readyz"]["503"] < 1 {
		t.Errorf("termination message counts %v; want exactly %d /version 200s and a /readyz 503", m.ByHandler, served)
	}
}

// Every mode stamps its termination message with when the signal came and
// when the listener closed: after the signal was sent, before a new
// connection was first refused, and a drain delay apart in the drain modes.
func TestProcessTerminationTimes(t *testing.T) {
	t.Parallel()
	const delay = 50 * time.Millisecond
	for _, c := range []struct {
		shutdown string
		sig      syscall.Signal
	}{
		{shutdownNone, syscall.SIGTERM}, {shutdownNaive, syscall.SIGTERM}, {shutdownNaive, syscall.SIGINT},
		{shutdownDrain, syscall.SIGTERM}, {shutdownDrainClose, syscall.SIGTERM},
	} {
		t.Run(c.shutdown+"/"+signalName(c.sig), func(t *testing.T) {
			t.Parallel()
			p := startBookshop(t, "--shutdown", c.shutdown, "--drain-delay", delay.String(), "--shutdown-timeout", "5s")
			sent := time.Now()
			p.signal(t, c.sig)
			refusedAt := p.waitRefused(t, 5*time.Second)
			p.wait(t, 5*time.Second)
			m := p.terminationMessage(t)
			if m.Signal != signalName(c.sig) || m.SignalAt.IsZero() || m.ListenerClosedAt.IsZero() {
				t.Fatalf("termination message: signal %q at %v, listener closed at %v; want %s and both times",
					m.Signal, m.SignalAt, m.ListenerClosedAt, signalName(c.sig))
			}
			if m.SignalAt.Before(sent) || m.ListenerClosedAt.Before(m.SignalAt) || refusedAt.Before(m.ListenerClosedAt) {
				t.Errorf("signal sent at %v, received at %v, listener closed at %v, first refusal at %v; want them in that order",
					sent, m.SignalAt, m.ListenerClosedAt, refusedAt)
			}
			drains := c.shutdown == shutdownDrain || c.shutdown == shutdownDrainClose
			if took := m.ListenerClosedAt.Sub(m.SignalAt); drains && took < delay {
				t.Errorf("listener closed %v after the signal, inside the %v drain delay", took, delay)
			}
		})
	}
}

// rawConn is a kept-alive client connection driven by hand, to see exactly
// when the server closes it.
type rawConn struct {
	c  net.Conn
	br *bufio.Reader
}

// openConn opens a connection to the process, closed at the end of the test.
func (p *proc) openConn(t *testing.T) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{c: c, br: bufio.NewReader(c)}
}

// get sends a GET for path on the connection and reads the whole response.
func (rc *rawConn) get(t *testing.T, path string) *http.Response {
	t.Helper()
	_ = rc.c.SetDeadline(time.Now().Add(5 * time.Second))
	defer rc.c.SetDeadline(time.Time{})
	if _, err := io.WriteString(rc.c, "GET "+path+" HTTP/1.1\r\nHost: bookshop\r\n\r\n"); err != nil {
		t.Fatalf("GET %s: writing: %v", path, err)
	}
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("GET %s: body: %v", path, err)
	}
	return resp
}

// closedWithin reports whether the server closes the connection (EOF or
// reset) within d; false means it is still open, with nothing to read.
func (rc *rawConn) closedWithin(t *testing.T, d time.Duration) bool {
	t.Helper()
	_ = rc.c.SetReadDeadline(time.Now().Add(d))
	defer rc.c.SetReadDeadline(time.Time{})
	_, err := rc.br.Peek(1)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return false
	case err == nil:
		t.Fatal("the server sent bytes on an idle connection")
	}
	return true
}

// drain: switching keep-alives off at SIGTERM closes the idle kept-alive
// connections at once, long before the drain is over, racing any client
// that is just sending on one (what drain-close avoids).
func TestProcessShutdownDrainCutsIdleConns(t *testing.T) {
	t.Parallel()
	const delay = 1500 * time.Millisecond
	p := startBookshop(t, "--shutdown", "drain", "--drain-delay", delay.String(), "--shutdown-timeout", "5s")
	idle := p.openConn(t)
	if resp := idle.get(t, "/version"); resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("before SIGTERM: status %d, Connection: close %v; want a kept-alive 200", resp.StatusCode, resp.Close)
	}
	sent := time.Now()
	p.signal(t, syscall.SIGTERM)
	if !idle.closedWithin(t, delay/2) {
		t.Errorf("the idle kept-alive connection was still open %v after SIGTERM; drain was expected to close it at once", time.Since(sent))
	}
	if state := p.wait(t, delay+6*time.Second); state.ExitCode() != 0 {
		t.Errorf("exit = %v, want exit status 0", state)
	}
}

// drain-close: during the drain a kept-alive client keeps its connection
// until its next response, which says "Connection: close", and then moves
// to a new one; a connection left idle is not cut before the drain is over.
func TestProcessShutdownDrainClose(t *testing.T) {
	t.Parallel()
	const delay, timeout = 1500 * time.Millisecond, 5 * time.Second
	p := startBookshop(t, "--shutdown", "drain-close", "--drain-delay", delay.String(), "--shutdown-timeout", timeout.String())

	// Two hand-driven kept-alive connections, each with a response behind
	// it: one is used again during the drain, one is left idle. And Go's
	// own kept-alive client, with a connection in its pool.
	used, idle := p.openConn(t), p.openConn(t)
	for _, c := range []*rawConn{used, idle} {
		if resp := c.get(t, "/version"); resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("before SIGTERM: status %d, Connection: close %v; want a kept-alive 200", resp.StatusCode, resp.Close)
		}
	}
	keepAlive := &http.Transport{}
	defer keepAlive.CloseIdleConnections()
	if resp, reused := p.tracedGet(t, keepAlive, "/version"); resp.StatusCode != http.StatusOK || resp.Close || reused {
		t.Fatalf("before SIGTERM, Go's client: status %d, Connection: close %v, reused %v", resp.StatusCode, resp.Close, reused)
	}
	idleClosed := make(chan time.Time, 1)
	go func() {
		_ = idle.c.SetReadDeadline(time.Now().Add(delay + timeout))
		_, _ = idle.br.Peek(1) // returns when the server closes it
		idleClosed <- time.Now()
	}()

	sent := time.Now()
	p.signal(t, syscall.SIGTERM)
	waitFor(t, 500*time.Millisecond, "/readyz answers 503", func() bool {
		code, err := p.status("/readyz")
		return err == nil && code == http.StatusServiceUnavailable
	})
	time.Sleep(200 * time.Millisecond) // into the drain: pacing, not synchronisation
	if used.closedWithin(t, 50*time.Millisecond) {
		t.Fatalf("the kept-alive connection was cut %v after SIGTERM, before its next response", time.Since(sent))
	}
	// Its next request is answered, with Connection: close, and then the
	// connection is closed: by the response, not by the end of the drain.
	resp := used.get(t, "/version")
	if resp.StatusCode != http.StatusOK || resp.Header.Get(headerVersion) != testVersion || !resp.Close {
		t.Errorf("during the drain: status %d, version %q, Connection: close %v; want a 200 that closes", resp.StatusCode, resp.Header.Get(headerVersion), resp.Close)
	}
	if !used.closedWithin(t, time.Second) {
		t.Error("the connection stayed open after a response that said Connection: close")
	}
	// Go's client: its pooled connection is reused once, told to close,
	// and the next request goes out on a new connection.
	for i, wantReused := range []bool{true, false} {
		resp, reused := p.tracedGet(t, keepAlive, "/version")
		if resp.StatusCode != http.StatusOK || !resp.Close || reused != wantReused {
			t.Errorf("Go's client, request %d of the drain: status %d, Connection: close %v, reused %v; want 200, true, %v",
				i+1, resp.StatusCode, resp.Close, reused, wantReused)
		}
	}
	if took := time.Since(sent); took >= delay {
		t.Fatalf("the checks took %v, past the %v drain delay: the machine is too slow for this test", took, delay)
	}
	select {
	case at := <-idleClosed:
		t.Errorf("the idle connection was closed %v after SIGTERM, inside the %v drain delay", at.Sub(sent), delay)
	default:
	}

	// The idle connection is closed only when the drain is over.
	select {
	case at := <-idleClosed:
		if at.Sub(sent) < delay {
			t.Errorf("the idle connection was closed %v after SIGTERM, inside the %v drain delay", at.Sub(sent), delay)
		}
	case <-time.After(delay + timeout):
		t.Error("the idle connection was never closed")
	}
	state := p.wait(t, delay+timeout+time.Second)
	if state.ExitCode() != 0 {
		t.Errorf("exit = %v, want exit status 0", state)
	}
	m := p.terminationMessage(t)
	if m.Shutdown != shutdownDrainClose || m.Exit != "clean" || m.Signal != "SIGTERM" || m.Code != 0 || m.InFlight != 0 {
		t.Errorf("termination message: shutdown %q, exit %q, signal %q, code %d, inFlight %d; want drain-close, clean, SIGTERM, 0, 0",
			m.Shutdown, m.Exit, m.Signal, m.Code, m.InFlight)
	}
	if m.ByHandler["version"]["200"] != 6 {
		t.Errorf("termination message counts %v; want 6 /version 200s", m.ByHandler)
	}
}

// tracedGet sends a GET for path through transport and reports whether it
// went out on a reused connection.
func (p *proc) tracedGet(t *testing.T, transport *http.Transport, path string) (*http.Response, bool) {
	t.Helper()
	var reused bool
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: transport, Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("GET %s: body: %v", path, err)
	}
	return resp, reused
}

// A termination log that cannot be written is logged and skipped: the
// process exits as it would have.
func TestProcessTerminationLogUnwritable(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{shutdownNone, shutdownNaive} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			missing := filepath.Join(t.TempDir(), "no-such-dir", "termination-log")
			p := startBookshop(t, "--shutdown", mode, "--termination-log", missing)
			p.signal(t, syscall.SIGTERM)
			state := p.wait(t, 5*time.Second)
			ws, _ := state.Sys().(syscall.WaitStatus)
			if mode == shutdownNone && !(ws.Signaled() && ws.Signal() == syscall.SIGTERM) || mode == shutdownNaive && state.ExitCode() != 0 {
				t.Errorf("exit = %v, want what mode %s gives without a termination log", state, mode)
			}
			log := p.log()
			if !strings.Contains(log, "termination message not written") || !strings.Contains(log, "final request totals") {
				t.Errorf("log lacks the warning or the totals:\n%s", log)
			}
			if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("stat %s: %v; nothing should have been created", missing, err)
			}
		})
	}
}

// h2c: bookshop answers HTTP/2 over cleartext (prior knowledge) on its one
// port. A naive shutdown lets the stream in flight finish and sends its
// connection a GOAWAY, so a new request needs a new connection, which the
// closed listener refuses: what an HTTP/2 client meets on a pod that stops
// while routes still lead to it.
func TestProcessH2C(t *testing.T) {
	t.Parallel()
	p := startBookshop(t, "--shutdown", "naive", "--shutdown-timeout", "5s")
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	resp, err := p.getWith(tr, "/version")
	if err != nil || resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		t.Fatalf("h2c GET /version: %v, %v; want 200 over HTTP/2", resp, err)
	}

	type result struct {
		resp *http.Response
		err  error
	}
	slow := make(chan result, 1)
	go func() {
		resp, err := p.getWith(tr, "/version?delay=1s")
		slow <- result{resp, err}
	}()
	waitFor(t, 5*time.Second, "the slow stream is in flight", func() bool {
		n, err := p.inFlight()
		return err == nil && n == 1
	})
	p.signal(t, syscall.SIGTERM)
	p.waitRefused(t, 500*time.Millisecond)
	if _, err := p.getWith(tr, "/version"); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("a new stream after SIGTERM: %v; want its new connection refused (the old one went away)", err)
	}
	select {
	case r := <-slow:
		if r.err != nil || r.resp.StatusCode != http.StatusOK || r.resp.ProtoMajor != 2 {
			t.Errorf("the stream in flight: %v, %v; want it finished, 200 over HTTP/2", r.resp, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream in flight did not complete")
	}
	if state := p.wait(t, 5*time.Second); state.ExitCode() != 0 {
		t.Errorf("exit = %v, want exit status 0", state)
	}
}

// grpcCheck calls Check on conn, returning the pod the answer names.
func grpcCheck(ctx context.Context, conn *grpc.ClientConn) (string, error) {
	var md metadata.MD
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&md))
	if err != nil {
		return "", err
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return "", fmt.Errorf("status %s", resp.GetStatus())
	}
	if pod := md.Get("x-bookshop-pod"); len(pod) == 1 && md.Get("x-bookshop-version")[0] == testVersion {
		return pod[0], nil
	}
	return "", fmt.Errorf("metadata %v lacks the pod and version", md)
}

// TestProcessGRPCDrain: the gRPC server answers Check on its own port,
// counted, while the process serves and while it drains; after the drain
// delay GracefulStop sends GOAWAY and the process exits cleanly, its
// totals counting every call answered.
func TestProcessGRPCDrain(t *testing.T) {
	t.Parallel()
	const delay = time.Second
	p := startBookshop(t, "--shutdown", "drain", "--drain-delay", delay.String(), "--shutdown-timeout", "5s")
	conn, err := grpc.NewClient("passthrough:///"+p.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	calls := 0
	call := func(when string) {
		t.Helper()
		if _, err := grpcCheck(t.Context(), conn); err != nil {
			t.Fatalf("Check %s: %v", when, err)
		}
		calls++
	}
	call("before SIGTERM")
	sent := time.Now()
	p.signal(t, syscall.SIGTERM)
	waitFor(t, 500*time.Millisecond, "/readyz answers 503", func() bool {
		code, err := p.status("/readyz")
		return err == nil && code == http.StatusServiceUnavailable
	})
	for time.Since(sent) < delay-300*time.Millisecond {
		call("while draining")
		time.Sleep(10 * time.Millisecond) // pacing, not synchronisation
	}
	if state := p.wait(t, delay+6*time.Second); state.ExitCode() != 0 {
		t.Errorf("exit = %v, want exit status 0", state)
	}
	if _, err := grpcCheck(t.Context(), conn); status.Code(err) != codes.Unavailable {
		t.Errorf("Check after exit: %v, want UNAVAILABLE", err)
	}
	if m := p.terminationMessage(t); m.ByHandler[handlerGRPC]["200"] != calls || m.InFlight != 0 {
		t.Errorf("termination message counts %v, in flight %d; want exactly %d Check calls answered", m.ByHandler, m.InFlight, calls)
	}
}

// TestProcessGRPCStop tells --grpc-stop stop from graceful with a call in
// flight at SIGTERM: a Check stream opened (its headers sent) whose request
// is not yet sent. Stop cuts it at once: the call fails UNAVAILABLE and the
// process exits within a second. GracefulStop waits for it: the process
// is still up a second after SIGTERM, the call still open, until
// --shutdown-timeout (2 s) ends the wait with Stop. Either way the one
// call answered before is counted and the listener is gone.
func TestProcessGRPCStop(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	for _, mode := range []string{grpcStopHard, grpcStopGraceful} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			p := startBookshop(t, "--shutdown", "naive", "--grpc-stop", mode, "--shutdown-timeout", timeout.String())
			conn, err := grpc.NewClient("passthrough:///"+p.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// The call in flight: its stream is open on the server,
			// waiting for the request message. A call answered after it
			// on the same connection shows the server has it: HTTP/2
			// frames are written and read in order.
			stream, err := conn.NewStream(t.Context(), &grpc.StreamDesc{}, "/grpc.health.v1.Health/Check")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := grpcCheck(t.Context(), conn); err != nil {
				t.Fatal(err)
			}
			sent := time.Now()
			p.signal(t, syscall.SIGTERM)
			failed := make(chan error, 1)
			go func() { failed <- stream.RecvMsg(new(healthpb.HealthCheckResponse)) }()
			switch mode {
			case grpcStopHard:
				select {
				case err := <-failed:
					if status.Code(err) != codes.Unavailable {
						t.Errorf("the call in flight: %v, want UNAVAILABLE", err)
					}
				case <-time.After(time.Second):
					t.Error("the call in flight still open 1s after SIGTERM: Stop should cut it at once")
				}
				p.wait(t, 5*time.Second)
				if took := p.exitedAt.Sub(sent); took > time.Second {
					t.Errorf("exited %v after SIGTERM; Stop should not wait", took)
				}
			case grpcStopGraceful:
				select {
				case err := <-failed:
					t.Errorf("the call in flight ended %v after SIGTERM (%v): GracefulStop should wait for it", time.Since(sent), err)
				case <-p.done:
					t.Errorf("exited %v after SIGTERM with a call in flight: GracefulStop should wait for it", time.Since(sent))
				case <-time.After(time.Second):
				}
				p.wait(t, timeout+5*time.Second)
				if took := p.exitedAt.Sub(sent); took < timeout-200*time.Millisecond {
					t.Errorf("exited %v after SIGTERM, before the %v --shutdown-timeout: GracefulStop did not wait", took, timeout)
				}
			}
			if p.state.ExitCode() != 0 {
				t.Errorf("exit = %v, want exit status 0", p.state)
			}
			if m := p.terminationMessage(t); m.ByHandler[handlerGRPC]["200"] != 1 {
				t.Errorf("termination message counts %v; want the one call", m.ByHandler)
			}
			if err := p.dialAddr(p.grpcAddr); !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("dial the gRPC port after exit: %v, want ECONNREFUSED", err)
			}
		})
	}
}

// --idle-timeout: a kept-alive connection left idle is closed after the
// timeout, not before; without the flag it stays open.
func TestProcessIdleTimeout(t *testing.T) {
	t.Parallel()
	const idle = 300 * time.Millisecond
	p := startBookshop(t, "--idle-timeout", idle.String())
	c := p.openConn(t)
	if resp := c.get(t, "/version"); resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("status %d, Connection: close %v; want a kept-alive 200", resp.StatusCode, resp.Close)
	}
	answered := time.Now()
	if c.closedWithin(t, idle/3) {
		t.Fatalf("the connection closed %v after its response, before the %v idle timeout", time.Since(answered), idle)
	}
	if !c.closedWithin(t, idle+2*time.Second) {
		t.Errorf("the connection was still open %v after its response, with a %v idle timeout", time.Since(answered), idle)
	}

	q := startBookshop(t)
	open := q.openConn(t)
	if resp := open.get(t, "/version"); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	if open.closedWithin(t, 2*idle) {
		t.Errorf("without --idle-timeout the idle connection closed within %v", 2*idle)
	}
}

// --max-connection-age: a connection is used for about the age (±10%),
// then the response on it says "Connection: close" (HTTP/1.1) or comes
// with a GOAWAY (h2c), and the client's next request opens a new one;
// never before 90% of the age, and never without the flag.
func TestProcessMaxConnectionAge(t *testing.T) {
	t.Parallel()
	const age = 500 * time.Millisecond
	p := startBookshop(t, "--max-connection-age", age.String())
	limit := age*11/10 + time.Second

	c := p.openConn(t)
	opened := time.Now()
	for {
		resp := c.get(t, "/version")
		took := time.Since(opened)
		if resp.Close {
			if took < age*9/10 {
				t.Errorf("HTTP/1.1: Connection: close %v after the connection opened, before 90%% of its %v age", took, age)
			}
			if !c.closedWithin(t, time.Second) {
				t.Error("HTTP/1.1: the connection stayed open after its Connection: close response")
			}
			break
		}
		if took > limit {
			t.Fatalf("HTTP/1.1: no Connection: close %v after the connection opened, with a %v age", took, age)
		}
		time.Sleep(20 * time.Millisecond) // the client's pace, not a wait for a condition
	}

	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	if resp, reused := p.tracedGet(t, tr, "/version"); resp.ProtoMajor != 2 || reused {
		t.Fatalf("h2c: HTTP/%d, reused %v; want a new HTTP/2 connection", resp.ProtoMajor, reused)
	}
	opened = time.Now()
	for {
		_, reused := p.tracedGet(t, tr, "/version")
		took := time.Since(opened)
		if !reused {
			if took < age*9/10 {
				t.Errorf("h2c: a new connection %v after the first opened, before 90%% of its %v age", took, age)
			}
			break
		}
		if took > limit {
			t.Fatalf("h2c: the first connection still used %v after it opened, with a %v age", took, age)
		}
		time.Sleep(20 * time.Millisecond)
	}

	q := startBookshop(t)
	open := q.openConn(t)
	for start := time.Now(); time.Since(start) < 2*age; time.Sleep(20 * time.Millisecond) {
		if resp := open.get(t, "/version"); resp.Close {
			t.Fatalf("without --max-connection-age a response said Connection: close %v after the connection opened", time.Since(start))
		}
	}
}
