package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/generators"
	"github.com/droprun/droprun/harness/traffic"
)

// TestShares: the generators' shares add up to the rate, differ by at
// most one, and their phases are distinct slots of the interleaved
// schedule.
func TestShares(t *testing.T) {
	for _, tc := range []struct{ rate, n int }{{1000, 3}, {300, 3}, {7, 7}, {10, 4}} {
		sum, lo, hi := 0, tc.rate, 0
		seen := map[time.Duration]bool{}
		for i := range tc.n {
			s := share(tc.rate, tc.n, i)
			sum, lo, hi = sum+s, min(lo, s), max(hi, s)
			p := phase(tc.rate, i)
			if seen[p] || p >= time.Second {
				t.Errorf("rate %d over %d: index %d's phase %s repeats or is a second or more", tc.rate, tc.n, i, p)
			}
			seen[p] = true
		}
		if sum != tc.rate || hi-lo > 1 {
			t.Errorf("rate %d over %d: shares sum to %d, from %d to %d", tc.rate, tc.n, sum, lo, hi)
		}
	}
}

// TestParseConfig: the index comes from the Indexed Job's environment
// unless given; every command line that cannot work is refused, saying
// why.
func TestParseConfig(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			switch k {
			case "JOB_COMPLETION_INDEX":
				return v
			case generators.TokenEnv:
				if v == "no-token" {
					return ""
				}
				return "t0ken"
			}
			return ""
		}
	}
	ok := []string{"--target", "http://web.droprun.svc:80/version", "--rate", "300", "--generators", "3"}
	cfg, err := parseConfig(ok, env("2"), io.Discard)
	if err != nil || cfg.index != 2 || len(cfg.targets) != 1 {
		t.Fatalf("parseConfig: %+v, %v; want index 2 from the environment", cfg, err)
	}
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{ok, "", "JOB_COMPLETION_INDEX"},
		{ok, "3", "index 3: want 0 to 2"},
		{[]string{"--rate", "300"}, "0", "--target is required"},
		{[]string{"--target", "http://web:80/", "--rate", "2", "--generators", "3"}, "0", "--rate 2"},
		{[]string{"--target", "web:80", "--rate", "10"}, "0", "not an http URL"},
		{[]string{"--target", "http://web:80/a,http://evil.example:80/", "--rate", "10"}, "0", "its path"},
		{[]string{"--target", "http://web:80/?x=1", "--rate", "10"}, "0", "not an http URL"},
		{[]string{"--target", "http://u@web:80/", "--rate", "10"}, "0", "not an http URL"},
		{[]string{"--target", "http://web/", "--rate", "10"}, "0", "not an http URL"},
		{[]string{"--targets", "http://web:80/", "--rate", "10"}, "0", "flag provided but not defined: -targets"},
		{[]string{"--target", "http://web:80/", "--rate", "10", "--index", "0"}, "no-token", "no $DROPRUN_CONTROL_TOKEN"},
		{[]string{"--target", "http://web:80/", "--rate", "10", "--protocol", "h3"}, "0", "h3"},
		{[]string{"--target", "http://web:80/", "--rate", "10", "--request-ids"}, "0", "--request-ids needs $POD_NAME"},
	} {
		if _, err := parseConfig(tc.args, env(tc.env), io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v with index %q: %v, want an error saying %q", tc.args, tc.env, err, tc.want)
		}
	}
}

// TestLinesWhole: results written in pieces that cut lines anywhere come
// out as whole lines, with beat lines only between them.
func TestLinesWhole(t *testing.T) {
	var out bytes.Buffer
	l := &lines{w: &out}
	data := `{"attack":"a","seq":0}` + "\n" + `{"attack":"a","seq":1}` + "\n"
	for i := 0; i < len(data); i += 7 {
		if _, err := l.Write([]byte(data[i:min(i+7, len(data))])); err != nil {
			t.Fatal(err)
		}
		l.beat(generators.BeatLine{At: int64(i)})
	}
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if !strings.HasPrefix(line, `{"attack":`) && !strings.HasPrefix(line, `{"droprun-beat":`) || !strings.HasSuffix(line, "}") {
			t.Errorf("line %q is not whole", line)
		}
	}
	if l.results() != 2 {
		t.Errorf("%d result lines counted, want 2", l.results())
	}
}

// syncBuffer is a bytes.Buffer safe for the generator's writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// tokenOnly is a generator's environment with the run's control token and
// nothing else.
func tokenOnly(k string) string {
	if k == generators.TokenEnv {
		return "t0ken"
	}
	return ""
}

// TestGeneratorSends: told to start, a generator sends its share to the
// target until told to stop; its stdout, read as droprun reads a
// generator's log, holds every result it sent, beats, and an end line
// whose totals match.
func TestGeneratorSends(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") }))
	defer srv.Close()
	cfg, err := parseConfig([]string{"--target", srv.URL + "/version", "--rate", "200", "--generators", "2", "--index", "1"}, tokenOnly, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	g := &generator{cfg: cfg, out: &lines{w: &out}, start: make(chan time.Time, 1), stop: make(chan struct{})}
	ctl := httptest.NewServer(g.handler())
	defer ctl.Close()
	// Without the run's token, neither a start nor a stop is taken; the
	// clock (the readiness probe's) needs none.
	for _, u := range []string{fmt.Sprintf("%s/start?at=%d", ctl.URL, time.Now().UnixNano()), ctl.URL + "/stop?token=guess"} {
		if resp, err := http.Post(u, "", nil); err != nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%s without the token: %v %v, want 403", u, resp, err)
		}
	}
	if resp, err := http.Get(ctl.URL + "/clock"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("clock without a token: %v %v, want 200", resp, err)
	}
	resp, err := http.Post(fmt.Sprintf("%s/start?at=%d&token=t0ken", ctl.URL, time.Now().UnixNano()), "", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("start: %v %v", resp, err)
	}
	if again, err := http.Post(fmt.Sprintf("%s/start?at=%d&token=t0ken", ctl.URL, time.Now().UnixNano()), "", nil); err != nil || again.StatusCode != http.StatusConflict {
		t.Errorf("a second start: %v %v, want 409", again, err)
	}
	done := make(chan error, 1)
	go func() { done <- g.send(context.Background()) }()
	time.AfterFunc(1500*time.Millisecond, func() { http.Post(ctl.URL+"/stop?token=t0ken", "", nil) })
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the generator did not stop")
	}
	s := generators.NewStream("pod-1", io.Discard, nil)
	if err := s.Consume(strings.NewReader(out.String())); err != nil {
		t.Fatal(err)
	}
	// 100 req/s, its share of 200, for about 1.5 s.
	if s.End == nil || s.End.Results != s.Results || s.Results < 100 || s.Results > 200 || s.LastBeat.At.IsZero() || s.Other != 0 {
		t.Errorf("stream: %d results, end %+v, last beat %v, %d other lines; want about 150, the end's count equal, a beat", s.Results, s.End, s.LastBeat.At, s.Other)
	}
	if s.End != nil && s.End.ByClass["2xx"] != s.Results {
		t.Errorf("end: %v, want every result 2xx", s.End.ByClass)
	}
}

// TestGeneratorTerminated: a generator terminated while it sends (its pod
// deleted or evicted) writes its end line, saying so, and fails, so that
// its Job replaces the pod rather than count its index complete.
func TestGeneratorTerminated(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") }))
	defer srv.Close()
	cfg, err := parseConfig([]string{"--target", srv.URL + "/version", "--rate", "50", "--index", "0"}, tokenOnly, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	g := &generator{cfg: cfg, out: &lines{w: &out}, start: make(chan time.Time, 1), stop: make(chan struct{})}
	g.start <- time.Now()
	ctx, terminate := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.send(ctx) }()
	waitForLine(t, &out, `"droprun-beat"`)
	terminate()
	select {
	case err := <-done:
		if !errors.Is(err, errTerminated) {
			t.Errorf("send: %v, want errTerminated", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the terminated generator did not end")
	}
	s := generators.NewStream("pod-0", io.Discard, nil)
	if err := s.Consume(strings.NewReader(out.String())); err != nil {
		t.Fatal(err)
	}
	if s.End == nil || s.End.Stopped != "terminated" || s.End.Results != s.Results {
		t.Errorf("end %+v after %d results; want its totals, stopped: terminated", s.End, s.Results)
	}
}

// TestGeneratorRequestIDs: with --request-ids every request carries an
// ID, in its X-Request-Id header (what a front logs) and in the URL its
// result keeps, NAME.POD-N: unique within the pod, and across pods,
// since a pod that replaces another has another name.
func TestGeneratorRequestIDs(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get(traffic.RequestIDHeader)]++
		mu.Unlock()
		fmt.Fprintln(w, "ok")
	}))
	defer srv.Close()
	env := func(k string) string {
		if k == generators.PodNameEnv {
			return "droprun-generators-1-x7k2p"
		}
		return tokenOnly(k)
	}
	cfg, err := parseConfig([]string{"--target", srv.URL + "/version", "--rate", "50", "--index", "0", "--name", "no-prestop", "--request-ids"}, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	g := &generator{cfg: cfg, out: &lines{w: &out}, start: make(chan time.Time, 1), stop: make(chan struct{})}
	g.start <- time.Now()
	done := make(chan error, 1)
	go func() { done <- g.send(context.Background()) }()
	waitForLine(t, &out, `"droprun-beat"`)
	g.once.Do(func() { close(g.stop) })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	const prefix = "no-prestop.droprun-generators-1-x7k2p-"
	var ids []string
	if err := traffic.ReadResults(strings.NewReader(resultLines(out.String())), func(rec traffic.Record) error {
		ids = append(ids, rec.RequestID())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ids) == 0 || len(seen) != len(ids) {
		t.Fatalf("%d results, %d distinct IDs at the server; want one each", len(ids), len(seen))
	}
	for _, id := range ids {
		if !strings.HasPrefix(id, prefix) || seen[id] != 1 {
			t.Errorf("result ID %q: the server saw it %d times; want once, prefixed %q", id, seen[id], prefix)
		}
	}
}

// resultLines keeps the result lines of a generator's output: not its
// beat or end lines.
func resultLines(out string) string {
	var b strings.Builder
	for line := range strings.Lines(out) {
		if !strings.HasPrefix(line, `{"droprun-`) {
			b.WriteString(line)
		}
	}
	return b.String()
}

// waitForLine polls out until it holds want.
func waitForLine(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s in the generator's output within 10s", want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
