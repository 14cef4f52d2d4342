package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// defaultTerminationLog is where Kubernetes reads a container's termination
// message from unless the pod spec's terminationMessagePath says otherwise.
const defaultTerminationLog = "/dev/termination-log"

// maxTerminationMessage is the size Kubernetes keeps of a container's
// termination message; the rest would be cut, leaving broken JSON.
const maxTerminationMessage = 4096

// maxErrorText bounds the error text carried in a termination message.
const maxErrorText = 512

// Values of terminationMessage.Exit.
const (
	exitKilled = "killed" // shutdown none: the signal's default action, re-raised
	exitClean  = "clean"  // exit status 0
	exitError  = "error"  // exit status 1
)

// terminationMessage is the single JSON line the process writes to its
// termination log as it exits: its final request totals, which its /metrics
// can no longer tell once it is gone. The kubelet copies the file into the
// container's terminated state (status.containerStatuses[].state.terminated
// .message, later lastState), where harness/appmetrics reads it.
type terminationMessage struct {
	Pod      string `json:"pod"`
	Version  string `json:"version"`
	Mode     string `json:"mode"`
	Shutdown string `json:"shutdown"`
	// Exit is how the process ends: killed, clean or error.
	Exit string `json:"exit"`
	// Signal names the signal that started the exit (SIGTERM, SIGINT), if any.
	Signal string `json:"signal,omitempty"`
	// Code is the exit status the process ends with; 128+n for death by signal n.
	Code int `json:"code"`
	// SignalAt is when the process received Signal, ListenerClosedAt when
	// it closed its listening socket (from then on new connections are
	// refused): the pod's own clock, in UTC, RFC 3339 with nanoseconds.
	// Absent when unknown (no signal; the listener never closed).
	SignalAt         time.Time `json:"signalAt,omitzero"`
	ListenerClosedAt time.Time `json:"listenerClosedAt,omitzero"`
	// Requests is the sum of bookshop_http_requests_total: every response
	// the process made, probes and /metrics scrapes included.
	Requests int `json:"requests"`
	// InFlight is bookshop_http_requests_in_flight at exit: requests accepted
	// and cut unanswered (non-zero only when killed mid-request).
	InFlight int `json:"inFlight"`
	// Sealed says the totals are sealed (see tally): every response the
	// process sent is counted, and the requests in flight were cut, so
	// the count is exact whatever InFlight holds.
	Sealed bool           `json:"sealed,omitempty"`
	ByCode map[string]int `json:"byCode"`
	// ByHandler is bookshop_http_requests_total as the registry holds it:
	// handler, then status code. Dropped if the message would not fit.
	ByHandler map[string]map[string]int `json:"byHandler,omitempty"`
	Error     string                    `json:"error,omitempty"`
}

// exitTimes are the moments of an exit the harness lines up with the
// cluster's events; a zero time is unknown.
type exitTimes struct {
	signal         time.Time // serve received the signal
	listenerClosed time.Time // the listening socket was closed
}

// newTerminationMessage describes an exit with totals t.
func newTerminationMessage(id identity, cfg config, t totals, exit string, sig os.Signal, at exitTimes, code int, err error) terminationMessage {
	msg := terminationMessage{
		Pod: id.pod, Version: id.version, Mode: cfg.mode, Shutdown: cfg.shutdown,
		Exit: exit, Signal: signalName(sig), Code: code,
		SignalAt: at.signal.UTC(), ListenerClosedAt: at.listenerClosed.UTC(), // a zero time stays zero
		Requests: t.total, InFlight: t.inFlight, Sealed: t.sealed, ByCode: t.byCode, ByHandler: t.byHandlerCode,
	}
	if err != nil {
		msg.Error = err.Error()
		if len(msg.Error) > maxErrorText {
			msg.Error = msg.Error[:maxErrorText]
		}
	}
	return msg
}

// encode renders msg as one JSON line of at most maxTerminationMessage
// bytes, dropping the per-handler counts, then the error text, if needed;
// the rest (totals, exit, times) is always kept.
func (msg terminationMessage) encode() ([]byte, error) {
	for {
		b, err := json.Marshal(msg)
		if err != nil {
			return nil, fmt.Errorf("encoding the termination message: %w", err)
		}
		b = append(b, '\n')
		switch {
		case len(b) <= maxTerminationMessage:
			return b, nil
		case msg.ByHandler != nil:
			msg.ByHandler = nil
		case msg.Error != "":
			msg.Error = ""
		default:
			return nil, fmt.Errorf("the termination message is %d bytes, over Kubernetes' %d", len(b), maxTerminationMessage)
		}
	}
}

// writeTerminationMessage writes msg to path, which must exist: Kubernetes
// creates it, and outside Kubernetes nothing is created in /dev. An empty
// path writes nothing. A failure is logged, never fatal: the process is
// exiting anyway.
func writeTerminationMessage(path string, msg terminationMessage, log *slog.Logger) {
	if path == "" {
		return
	}
	err := func() error {
		b, err := msg.encode()
		if err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return fmt.Errorf("opening the termination log: %w", err)
		}
		_, werr := f.Write(b)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("writing the termination log: %w", werr)
		}
		return nil
	}()
	if err != nil {
		log.Warn("termination message not written", "path", path, "err", err.Error())
	}
}

// signalName names the signals the process handles the way kill -l does;
// nil is "".
func signalName(sig os.Signal) string {
	switch sig {
	case nil:
		return ""
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return sig.String()
}

// signalStatus is the exit status a shell reports for death by sig: 128+n.
func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// reraise kills the process with sig, whose handler has done its job: the
// parent sees a death by that signal, as if the signal had never been
// caught. It does not return; should the signal not kill the process
// (say it was ignored when the process started), it exits with the status
// a shell would report for that death.
func reraise(sig os.Signal) {
	signal.Reset(sig)
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		if p.Signal(sig) == nil {
			time.Sleep(time.Second) // delivery is asynchronous
		}
	}
	os.Exit(signalStatus(sig))
}
