package observe

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/frontlog"
	"github.com/droprun/droprun/harness/jsonl"
	"github.com/droprun/droprun/harness/timeline"
)

// TestFrontLogCaddy: a Caddy pod's log (harness/frontlog's fixture) gives
// its access-log lines to frontlog.jsonl and its lookups to the timeline:
// front.watching, then each change at the lookup that found it (last_seen
// the set before's expiry, its lookup's end plus 1 s; at the lookup's
// start), a failed lookup as front.poll_error, and the removal after it
// placed by the failed lookup's start.
func TestFrontLogCaddy(t *testing.T) {
	f, err := os.Open("../frontlog/testdata/caddy.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []string
	fl := FrontLog{Container: "caddy", AccessLog: frontlog.ParseCaddy,
		Servers: func() frontlog.ServersLog { return &frontlog.CaddyServers{} },
		Record: func(e timeline.Event) {
			at, last := e.FrontChange()
			s := fmt.Sprintf("%s %s %s at %s", e.Kind, e.Pod, e.IP, at.Format("05.0000"))
			if !last.IsZero() {
				s += " last_seen " + last.Format("05.0000")
			}
			if v := e.Detail["via"]; v != "" {
				s += " via " + v + " servers " + e.Detail["servers"]
			}
			events = append(events, s)
		}}
	var out bytes.Buffer
	w := jsonl.NewWriter(&out, frontlog.File)
	if err := copyLines("caddy-1", f, fl.AccessLog, w, fl.servers("caddy-1", "n1")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines, err := jsonl.ReadAll[frontlog.Line](&out, frontlog.File)
	var ids []string
	for _, l := range lines {
		ids = append(ids, l.RequestID)
	}
	if err != nil || strings.Join(ids, " ") != "0-1-17 0-1-19 0-1-20" {
		t.Errorf("frontlog.jsonl has requests %v (%v), want Caddy's 3 access-log lines", ids, err)
	}
	want := []string{
		"front.watching caddy-1  at 00.0001 via log servers 10.244.1.5 10.244.2.7",
		"front.removed caddy-1 10.244.1.5 at 01.0100 last_seen 01.0020",
		"front.added caddy-1 10.244.3.9 at 01.0100",
		"front.poll_error caddy-1  at 02.0200",
		"front.removed caddy-1 10.244.3.9 at 02.0200 last_seen 02.0117",
	}
	if strings.Join(events, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant\n%s", strings.Join(events, "\n"), strings.Join(want, "\n"))
	}
}
