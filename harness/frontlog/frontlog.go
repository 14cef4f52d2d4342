// Package frontlog is the record of a front's access log (frontlog.jsonl
// in a run directory): one Line per request a front pod handled, as that
// pod logged it, with the request's ID, the upstream the front chose and
// the status it returned. harness/observe writes the lines while a run
// goes on, from each front pod's log stream; the analysis joins them to
// the client's records by request ID (traffic.Record.RequestID). It also
// reads what a front says of the pods it sends to: Traefik's API answer
// (TraefikServers) and Caddy's log of its DNS lookups (CaddyServers). It
// imports no client-go.
package frontlog

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"time"
)

// File is the run directory's front access log.
const File = "frontlog.jsonl"

// Line is one request a front pod handled.
type Line struct {
	// Pod is the front pod that logged it.
	Pod string `json:"pod"`
	// Start is when the front received the request; Duration how long it
	// took to answer.
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"durationNs"`
	// Origin is how long the upstream part took, from just after the
	// front picked the upstream to its answer (Traefik's OriginDuration);
	// 0 when not known. So the front picked it by Picked.
	Origin time.Duration `json:"originNs,omitempty"`
	// RequestID is the request's X-Request-Id header ("" without one).
	RequestID string `json:"requestId,omitempty"`
	// Upstream is the address (pod IP:port) the front sent it to; ""
	// when it chose none (no endpoint left).
	Upstream string `json:"upstream,omitempty"`
	// Status is what the front answered the client; OriginStatus what the
	// upstream answered it, 0 when the upstream did not answer (the
	// front's 502).
	Status       int `json:"status"`
	OriginStatus int `json:"originStatus,omitempty"`
	// Retries is how many times the front resent the request.
	Retries int `json:"retries,omitempty"`
	// UpstreamError is the error the front logged for a request it
	// failed: its upstream's, as Go's transport gave it ("dial tcp
	// 10.244.1.5:8080: connect: connection refused", "EOF"); "" when it
	// logged none (Traefik's access log has no such field).
	UpstreamError string `json:"upstreamError,omitempty"`
}

// AccessLog reads one front pod's log, line by line, for the requests it
// handled: ok when a line is an access-log entry. Use one per pod.
type AccessLog interface {
	Line(pod string, b []byte) (l Line, ok bool)
}

// TraefikAccess reads Traefik's access log (ParseTraefik).
type TraefikAccess struct{}

// Line reads one line (ParseTraefik).
func (TraefikAccess) Line(pod string, b []byte) (Line, bool) { return ParseTraefik(pod, b) }

// Picked is when the front had picked the line's upstream at the latest:
// before its upstream part began (Start + Duration - Origin).
func (l Line) Picked() time.Time { return l.Start.Add(l.Duration - l.Origin) }

// traefikLine is the part of a Traefik JSON access log line Line keeps.
type traefikLine struct {
	StartUTC         time.Time `json:"StartUTC"`
	Duration         int64     `json:"Duration"`
	OriginDuration   int64     `json:"OriginDuration"`
	ServiceAddr      string    `json:"ServiceAddr"`
	DownstreamStatus int       `json:"DownstreamStatus"`
	OriginStatus     int       `json:"OriginStatus"`
	RetryAttempts    int       `json:"RetryAttempts"`
	RequestID        string    `json:"request_X-Request-Id"`
}

// ParseTraefik reads one line of Traefik's JSON access log, logged by pod;
// false for a line that is not an access log entry (Traefik's own log).
func ParseTraefik(pod string, b []byte) (Line, bool) {
	var t traefikLine
	if json.Unmarshal(b, &t) != nil || t.StartUTC.IsZero() || t.DownstreamStatus == 0 {
		return Line{}, false
	}
	return Line{Pod: pod, Start: t.StartUTC, Duration: time.Duration(t.Duration), Origin: time.Duration(t.OriginDuration), RequestID: t.RequestID,
		Upstream: t.ServiceAddr, Status: t.DownstreamStatus, OriginStatus: t.OriginStatus, Retries: t.RetryAttempts}, true
}

// traefikService is the part of an entry of Traefik's /api/http/services
// TraefikServers reads.
type traefikService struct {
	Provider     string `json:"provider"`
	LoadBalancer *struct {
		Servers []struct {
			URL    string `json:"url"`
			Fenced bool   `json:"fenced"`
		} `json:"servers"`
	} `json:"loadBalancer"`
}

// TraefikServers reads Traefik's /api/http/services answer and returns the
// hosts (pod IPs) of the Kubernetes services' servers it chooses for new
// requests: not fenced (a terminating pod still serving is fenced, and
// gets none).
func TraefikServers(body []byte) ([]string, error) {
	var svcs []traefikService
	if err := json.Unmarshal(body, &svcs); err != nil {
		return nil, fmt.Errorf("reading Traefik's services: %w", err)
	}
	var out []string
	for _, s := range svcs {
		if s.Provider != "kubernetes" || s.LoadBalancer == nil {
			continue
		}
		for _, srv := range s.LoadBalancer.Servers {
			u, err := url.Parse(srv.URL)
			if err != nil || u.Hostname() == "" || srv.Fenced {
				continue
			}
			out = append(out, u.Hostname())
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
