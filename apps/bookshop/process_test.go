//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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

	done     chan struct{} // closed once it has exited and its stderr is read
	state    *os.ProcessState
	exitedAt time.Time

	mu   sync.Mutex
	logs []string
}

// startBookshop starts the binary on 127.0.0.1:0 with args and returns once
// its /healthz answers. The process is killed at the end of the test if it
// is still running, and its log is shown if the test failed.
func startBookshop(t *testing.T, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bookshopBinary(t), append([]string{"--addr", "127.0.0.1:0"}, args...)...)
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
	p := &proc{cmd: cmd, done: make(chan struct{})}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.logs = append(p.logs, sc.Text())
			p.mu.Unlock()
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				listening <- line.Addr
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
func (p *proc) dial() error {
	c, err := net.DialTimeout("tcp", p.addr, time.Second)
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
// at once; this is the window in which a rollout drops requests.
func TestProcessShutdownNone(t *testing.T) {
	t.Parallel()
	p := startBookshop(t, "--shutdown", "none")

	p.signal(t, syscall.SIGTERM)
	p.waitRefused(t, 500*time.Millisecond)

	state := p.wait(t, 5*time.Second)
	ws, ok := state.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("exit = %v, want death by SIGTERM", state)
	}
	if strings.Contains(p.log(), "final request totals") {
		t.Error("a process killed by SIGTERM cannot have logged its totals; something caught the signal")
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
}
