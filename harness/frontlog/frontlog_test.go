package frontlog

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
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
	want := Line{Pod: "traefik-1", Start: time.Date(2026, 12, 3, 8, 0, 8, 994519040, time.UTC), Duration: 2000943243,
		RequestID: "no-prestop-4sz", Upstream: "10.244.1.3:8080", Status: 499, OriginStatus: 499}
	if !cut.Start.Equal(want.Start) {
		t.Errorf("start %v, want %v", cut.Start, want.Start)
	}
	cut.Start = want.Start
	if cut != want {
		t.Errorf("the client gave up after 2 s:\n got %+v\nwant %+v", cut, want)
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
