package frontlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestParseTraefik reads two access-log lines Traefik v3.6.12 logged in a
// run (JSON), between them a line in the form of its own log (text, not a
// request).
func TestParseTraefik(t *testing.T) {
	b, err := os.ReadFile("testdata/traefik-access.log")
	if err != nil {
		t.Fatal(err)
	}
	var got []Line
	for l := range bytes.Lines(b) {
		if line, ok := ParseTraefik("traefik-1", bytes.TrimSpace(l)); ok {
			got = append(got, line)
		}
	}
	if len(got) != 2 {
		t.Fatalf("%d access-log lines, want 2 (Traefik's own log line is not one): %+v", len(got), got)
	}
	ok, cut := got[0], got[1]
	if ok.Pod != "traefik-1" || ok.Status != 200 || ok.OriginStatus != 200 || ok.RequestID == "" || ok.Upstream == "" || ok.Start.IsZero() || ok.Duration <= 0 {
		t.Errorf("a 200: %+v", ok)
	}
	want := Line{Pod: "traefik-1", Start: time.Date(2026, 12, 3, 8, 0, 8, 994519040, time.UTC), Duration: 2000943243, Origin: 2000904931,
		RequestID: "no-prestop-4sz", Upstream: "10.244.1.3:8080", Status: 499, OriginStatus: 499}
	if !cut.Start.Equal(want.Start) {
		t.Errorf("start %v, want %v", cut.Start, want.Start)
	}
	cut.Start = want.Start
	if cut != want {
		t.Errorf("the client gave up after 2 s:\n got %+v\nwant %+v", cut, want)
	}
	// Traefik picked the upstream before its 2 s upstream part began:
	// within 39 µs of the start.
	if got := cut.Picked().Sub(cut.Start); got != 38312 {
		t.Errorf("picked %v after the start, want 38.312µs", got)
	}
	for _, bad := range []string{"", "not json", `{"level":"info"}`, `{"StartUTC":"2026-12-03T08:00:08Z"}`} {
		if l, ok := ParseTraefik("p", []byte(bad)); ok {
			t.Errorf("%q read as %+v", bad, l)
		}
	}
}

// TestTraefikServers reads the servers from an answer of Traefik
// v3.6.12's /api/http/services in a run (two web pods, beside Traefik's
// internal services), and leaves out a fenced one.
func TestTraefikServers(t *testing.T) {
	b, err := os.ReadFile("testdata/traefik-services.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := TraefikServers(b)
	if err != nil || strings.Join(got, " ") != "10.244.1.4 10.244.2.5" {
		t.Errorf("servers %q, %v; want the two web pods' IPs", got, err)
	}
	fenced := bytes.Replace(b, []byte(`{"url":"http://10.244.1.4:8080"}`), []byte(`{"url":"http://10.244.1.4:8080","fenced":true}`), 1)
	if got, err := TraefikServers(fenced); err != nil || strings.Join(got, " ") != "10.244.2.5" {
		t.Errorf("with 10.244.1.4 fenced: %q, %v; want only 10.244.2.5", got, err)
	}
	if _, err := TraefikServers([]byte("404 page not found")); err == nil {
		t.Error("read a non-JSON answer")
	}
}

// caddyLog is Caddy v2.11.9's log with droprun's config (CaddyConfig):
// lines it logged, their times and IPs edited into a rollout. Four lookups
// of the web pods' name: two pods; one gone and one new (listed twice);
// a failed lookup; one pod. A fifth lookup's first line closes the fourth.
func caddyLog(t *testing.T) [][]byte {
	b, err := os.ReadFile("testdata/caddy.log")
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	for l := range bytes.Lines(b) {
		lines = append(lines, bytes.TrimSpace(l))
	}
	return lines
}

// TestParseCaddy reads Caddy's access-log lines (a 200, a 502 from a pod
// that refused after two resends, a 503 with no upstream) and nothing
// else, each line alone (a reader per line: no error joined, as
// TestCaddyAccess joins them).
func TestParseCaddy(t *testing.T) {
	parse := func(pod string, b []byte) (Line, bool) { return (&CaddyAccess{}).Line(pod, b) }
	var got []Line
	for _, l := range caddyLog(t) {
		if line, ok := parse("caddy-1", l); ok {
			got = append(got, line)
		}
	}
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	want := []Line{
		{Pod: "caddy-1", Start: at("2026-12-03T10:00:00.4975Z"), Duration: 2500 * time.Microsecond, RequestID: "0-1-17", Upstream: "10.244.1.5:8080", Status: 200, OriginStatus: 200},
		{Pod: "caddy-1", Start: at("2026-12-03T10:00:00.9Z"), Duration: 200 * time.Millisecond, RequestID: "0-1-19", Upstream: "10.244.1.5:8080", Status: 502, Retries: 2},
		{Pod: "caddy-1", Start: at("2026-12-03T10:00:02.02Z"), Duration: 1100 * time.Microsecond, RequestID: "0-1-20", Status: 503},
	}
	if len(got) != len(want) {
		t.Fatalf("%d access-log lines, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g := got[i]
		if !g.Start.Equal(want[i].Start) {
			t.Errorf("line %d starts %v, want %v", i, g.Start, want[i].Start)
		}
		g.Start = want[i].Start
		if g != want[i] {
			t.Errorf("line %d:\n got %+v\nwant %+v", i, g, want[i])
		}
	}
	for _, bad := range []string{"", "not json", `{"logger":"http.log.access"}`, `{"logger":"http.log.error","ts":"2026-12-03T10:00:00Z","status":502}`} {
		if l, ok := parse("p", []byte(bad)); ok {
			t.Errorf("%q read as %+v", bad, l)
		}
	}
}

// TestCaddyAccess joins each access-log line to the error Caddy logged
// for the same request just before it (its error logger's line, with the
// request's headers): 0-1-19's refusal, though another request's error
// came between, and 0-1-20's missing upstream; 0-1-17 was served. An
// error whose access-log line never comes is kept only up to the bound,
// and an error's text is cut to its bound on a character's edge.
func TestCaddyAccess(t *testing.T) {
	var c CaddyAccess
	got := map[string]string{}
	for _, l := range caddyLog(t) {
		if line, ok := c.Line("caddy-1", l); ok {
			got[line.RequestID] = line.UpstreamError
		}
	}
	want := map[string]string{"0-1-17": "", "0-1-19": "dial tcp 10.244.1.5:8080: connect: connection refused", "0-1-20": "no upstreams available"}
	if !maps.Equal(got, want) {
		t.Errorf("upstream errors %q, want %q", got, want)
	}
	if len(c.errs) != 1 || c.errs["0-1-18"] == "" {
		t.Errorf("pending errors %q; want 0-1-18's alone (its access-log line never came)", c.errs)
	}
	errLine := func(id, msg string) []byte {
		b, _ := json.Marshal(map[string]any{"logger": CaddyErrorLogger, "ts": "2026-12-03T10:00:00Z", "msg": msg, "status": 502,
			"request": map[string]any{"headers": map[string][]string{"X-Request-Id": {id}}}})
		return b
	}
	for i := range 2 * maxPendingErrors {
		c.Line("caddy-1", errLine(fmt.Sprint("x-", i), "EOF"))
	}
	if len(c.errs) > maxPendingErrors {
		t.Errorf("%d errors pending, want at most %d", len(c.errs), maxPendingErrors)
	}
	long := strings.Repeat("é", maxErrorText) // 2 bytes each
	c.Line("caddy-1", errLine("long", "x"+long))
	if e := c.errs["long"]; len(e) > maxErrorText || !utf8.ValidString(e) || !strings.HasPrefix(e, "xé") {
		t.Errorf("a long error kept as %d bytes (valid UTF-8: %v); want at most %d, cut between characters", len(e), utf8.ValidString(e), maxErrorText)
	}
}

// TestCaddyServers reads the pods Caddy sent to from its lookups: each is
// returned when the next begins, from its last discovered IP on, its IPs
// sorted once each, placed between the set before's expiry (its lookup's
// end plus CaddyRefresh) and its own start; the failed lookup comes with
// Err and no IPs, and the next good one ends at the failed one's start.
func TestCaddyServers(t *testing.T) {
	var got []string
	c := &CaddyServers{}
	for _, l := range caddyLog(t) {
		if s, ok := c.Line(l); ok {
			got = append(got, fmt.Sprintf("%s-%s %s err=%t", s.Start.Format("05.000000"), s.At.Format("05.000000"), strings.Join(s.IPs, ","), s.Err != ""))
		}
	}
	want := []string{
		"00.000100-00.000100 10.244.1.5,10.244.2.7 err=false", // the first: no set before
		"01.002000-01.010000 10.244.2.7,10.244.3.9 err=false", // the set before expired at 01.002 (00.002 + 1 s); the lookup began at 01.010
		"02.020000-02.020000  err=true",
		"02.011700-02.020000 10.244.2.7 err=false", // the set before expired at 02.0117 and took no request after the failed lookup
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lookups:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A discovered IP before any lookup's first line belongs to none.
	c = &CaddyServers{}
	for _, l := range []string{
		`{"logger":"http.reverse_proxy.upstreams.a","ts":"2026-12-03T10:00:00Z","msg":"discovered A record","ip":"10.0.0.1"}`,
		`{"logger":"http.reverse_proxy.upstreams.a","ts":"2026-12-03T10:00:01Z","msg":"refreshing A upstreams"}`,
	} {
		if s, ok := c.Line([]byte(l)); ok {
			t.Errorf("a lookup read from a half: %+v", s)
		}
	}
}
