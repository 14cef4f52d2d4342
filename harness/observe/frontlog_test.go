package observe

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/droprun/droprun/harness/frontlog"
	"github.com/droprun/droprun/harness/jsonl"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/timeline"
)

// TestFrontLogCaddy: a Caddy pod's log (harness/frontlog's fixture) gives
// its access-log lines to frontlog.jsonl and its lookups to the timeline:
// front.watching, then each change at the lookup that found it (last_seen
// the set before's expiry, its lookup's end plus 1 s; at the lookup's
// start), a failed lookup as front.poll_error, and the removal after it
// placed by the failed lookup's start.
//
// Read from the node, the same lines come in the CRI log file's format,
// longer ones in parts: the same results.
func TestFrontLogCaddy(t *testing.T) {
	raw, err := os.ReadFile("../frontlog/testdata/caddy.log")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("api", func(t *testing.T) { testFrontLogCaddy(t, raw, nil) })
	var file bytes.Buffer
	for l := range strings.Lines(string(raw)) {
		l = strings.TrimSuffix(l, "\n")
		for len(l) > 40 {
			fmt.Fprintf(&file, "2026-12-07T08:00:00.000000001Z stdout P %s\n", l[:40])
			l = l[40:]
		}
		fmt.Fprintf(&file, "2026-12-07T08:00:00.000000002Z stdout F %s\n", l)
	}
	var cri criLines
	t.Run("file", func(t *testing.T) { testFrontLogCaddy(t, file.Bytes(), cri.content) })
}

func testFrontLogCaddy(t *testing.T, log []byte, unwrap func([]byte) ([]byte, bool)) {
	var events []string
	fl := FrontLog{Container: "caddy", AccessLog: func() frontlog.AccessLog { return &frontlog.CaddyAccess{} },
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
	w := jsonl.NewWriter(&out, runfile.FrontLogFile)
	if err := copyLines("caddy-1", bytes.NewReader(log), unwrap, fl.AccessLog(), w, fl.servers("caddy-1", "n1")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines, err := jsonl.ReadAll[frontlog.Line](&out, runfile.FrontLogFile)
	var ids []string
	for _, l := range lines {
		ids = append(ids, l.RequestID)
	}
	if err != nil || strings.Join(ids, " ") != "0-1-17 0-1-19 0-1-20" {
		t.Errorf("frontlog.jsonl has requests %v (%v), want Caddy's 3 access-log lines", ids, err)
	}
	// Each with the error Caddy logged for it (its error log's line).
	var errs []string
	for _, l := range lines {
		errs = append(errs, l.UpstreamError)
	}
	if want := []string{"", "dial tcp 10.244.1.5:8080: connect: connection refused", "no upstreams available"}; !slices.Equal(errs, want) {
		t.Errorf("the lines' upstream errors %q, want %q", errs, want)
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

// TestPodLogFile: the path is the kubelet's, with the container's
// restarts as the file's number.
func TestPodLogFile(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "droprun", Name: "caddy-7f-x2", UID: "0a1b"},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "init"}, {Name: "caddy", RestartCount: 2}}}}
	if got, want := PodLogFile(pod, "caddy"), "/var/log/pods/droprun_caddy-7f-x2_0a1b/caddy/2.log"; got != want {
		t.Errorf("PodLogFile = %s, want %s", got, want)
	}
}

// TestCRILines: parts are joined to the line their F ends; an empty line,
// a line with a tag's extra fields and a line that is not CRI's.
func TestCRILines(t *testing.T) {
	var c criLines
	var got []string
	for _, l := range []string{
		"T stdout P {\"a\":",
		"T stdout F 1}",
		"T stdout F",
		"T stderr F:x b c",
		"not a line",
		"T stdout X y",
	} {
		if out, ok := c.content([]byte(l)); ok {
			got = append(got, string(out))
		}
	}
	if want := []string{`{"a":1}`, "", "b c"}; !slices.Equal(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
}
