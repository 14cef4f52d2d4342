package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestTerminationLogFlag(t *testing.T) {
	cfg, err := parseConfig(nil, func(string) string { return "" }, io.Discard)
	if err != nil || cfg.terminationLog != "/dev/termination-log" {
		t.Errorf("default --termination-log = %q, %v; want /dev/termination-log", cfg.terminationLog, err)
	}
	cfg, err = parseConfig(nil, func(k string) string { return map[string]string{"BOOKSHOP_TERMINATION_LOG": "/tmp/x"}[k] }, io.Discard)
	if err != nil || cfg.terminationLog != "/tmp/x" {
		t.Errorf("BOOKSHOP_TERMINATION_LOG: %q, %v; want /tmp/x", cfg.terminationLog, err)
	}
	cfg, err = parseConfig([]string{"--termination-log="}, func(string) string { return "" }, io.Discard)
	if err != nil || cfg.terminationLog != "" {
		t.Errorf("--termination-log= : %q, %v; want empty", cfg.terminationLog, err)
	}
}

// TestTerminationMessageFromCounters: the message carries what the
// counters counted, read once.
func TestTerminationMessageFromCounters(t *testing.T) {
	life := new(lifecycle)
	m := newMetrics("v1", modeWeb, life)
	h := newWeb(identity{pod: "web-1", version: "v1"}, life, m)
	get(t, h, "/version")
	get(t, h, "/version")
	get(t, h, "/nope")
	life.set(phaseDraining)
	get(t, h, "/readyz")

	cfg := config{mode: modeWeb, shutdown: shutdownNone}
	msg := newTerminationMessage(identity{pod: "web-1", version: "v1"}, cfg, m.totals(), exitKilled, syscall.SIGTERM, exitTimes{}, signalStatus(syscall.SIGTERM), nil)
	b, err := msg.encode()
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"pod":"web-1","version":"v1","mode":"web","shutdown":"none","exit":"killed","signal":"SIGTERM","code":143,` +
		`"requests":4,"inFlight":0,"byCode":{"200":2,"404":1,"503":1},` +
		`"byHandler":{"other":{"404":1},"readyz":{"503":1},"version":{"200":2}}}` + "\n"
	if string(b) != want {
		t.Errorf("termination message\n got %s\nwant %s", b, want)
	}
}

// TestTerminationMessageTimes: the signal and listener-close times are
// written in UTC, RFC 3339 with nanoseconds, and left out when unknown.
func TestTerminationMessageTimes(t *testing.T) {
	signal := time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.FixedZone("CEST", 2*3600))
	closed := signal.Add(5*time.Second + 1)
	cfg := config{mode: modeWeb, shutdown: shutdownDrain}
	msg := newTerminationMessage(identity{pod: "web-1", version: "v1"}, cfg, totals{total: 1, byCode: map[string]int{"200": 1}},
		exitClean, syscall.SIGTERM, exitTimes{signal: signal, listenerClosed: closed}, 0, nil)
	b, err := msg.encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"signalAt":"2025-06-01T10:00:00.123456789Z"`, `"listenerClosedAt":"2025-06-01T10:00:05.12345679Z"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("termination message lacks %s:\n%s", want, b)
		}
	}
	var got terminationMessage
	if err := json.Unmarshal(b, &got); err != nil || !got.SignalAt.Equal(signal) || !got.ListenerClosedAt.Equal(closed) {
		t.Errorf("decoded signalAt %v, listenerClosedAt %v (%v); want %v, %v", got.SignalAt, got.ListenerClosedAt, err, signal, closed)
	}

	msg = newTerminationMessage(identity{pod: "web-1"}, cfg, totals{}, exitError, nil, exitTimes{}, 1, errors.New("listen failed"))
	if b, err := msg.encode(); err != nil || strings.Contains(string(b), `"signalAt"`) || strings.Contains(string(b), `"listenerClosedAt"`) {
		t.Errorf("unknown times: %s, %v; want them left out", b, err)
	}
}

// TestTerminationMessageFits: a message over Kubernetes' 4096 bytes loses
// its per-handler counts, then its error text, and stays valid JSON with
// its totals and times.
func TestTerminationMessageFits(t *testing.T) {
	signal := time.Date(2025, 6, 1, 10, 0, 0, 123456789, time.UTC)
	big := terminationMessage{Pod: "p", Exit: exitError, Code: 1, Requests: 1, ByCode: map[string]int{"200": 1},
		SignalAt: signal, ListenerClosedAt: signal.Add(time.Second),
		ByHandler: map[string]map[string]int{}, Error: strings.Repeat("e", maxErrorText)}
	for i := range 400 {
		big.ByHandler["h"+strconv.Itoa(i)] = map[string]int{"200": 1}
	}
	b, err := big.encode()
	if err != nil {
		t.Fatal(err)
	}
	var got terminationMessage
	if len(b) > maxTerminationMessage || json.Unmarshal(b, &got) != nil || got.ByHandler != nil || got.Error == "" || got.Requests != 1 ||
		!got.SignalAt.Equal(big.SignalAt) || !got.ListenerClosedAt.Equal(big.ListenerClosedAt) {
		t.Errorf("%d bytes: %s", len(b), b)
	}

	huge := big
	huge.ByCode = map[string]int{}
	for i := range 1000 {
		huge.ByCode[strconv.Itoa(i)] = 1
	}
	if b, err := huge.encode(); err == nil {
		t.Errorf("a message that cannot fit encoded to %d bytes", len(b))
	}
}

func TestWriteTerminationMessage(t *testing.T) {
	dir := t.TempDir()
	msg := terminationMessage{Pod: "p", Exit: exitClean, Requests: 2, ByCode: map[string]int{"200": 2}}
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))

	// The file is overwritten, not appended to.
	path := filepath.Join(dir, "termination-log")
	if err := os.WriteFile(path, []byte(strings.Repeat("stale ", 100)), 0o666); err != nil {
		t.Fatal(err)
	}
	writeTerminationMessage(path, msg, log)
	if b, err := os.ReadFile(path); err != nil || !strings.HasPrefix(string(b), `{"pod":"p"`) || strings.Contains(string(b), "stale") {
		t.Errorf("termination log = %q, %v", b, err)
	}
	if logs.Len() != 0 {
		t.Errorf("a successful write logged %s", logs.String())
	}

	// A missing file is not created; the failure is one warning.
	missing := filepath.Join(dir, "missing")
	writeTerminationMessage(missing, msg, log)
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("stat %s: %v; want it not created", missing, err)
	}
	if !strings.Contains(logs.String(), `"msg":"termination message not written"`) || strings.Count(logs.String(), "\n") != 1 {
		t.Errorf("log = %s, want one warning", logs.String())
	}

	logs.Reset()
	writeTerminationMessage("", msg, log) // disabled
	if logs.Len() != 0 {
		t.Errorf("an empty path logged %s", logs.String())
	}
}
