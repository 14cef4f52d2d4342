package frontlog

import (
	"encoding/json"
	"slices"
	"time"
)

// Caddy's logger names (its module IDs): the access log, and the dynamic
// A upstreams, whose debug lines time each DNS refresh and list the IPs
// it found.
const (
	CaddyAccessLogger    = "http.log.access"
	CaddyUpstreamsLogger = "http.reverse_proxy.upstreams.a"
)

// caddyLine is the part of a Caddy JSON log line droprun reads: its
// time, logger and message; for an access-log line the request's
// X-Request-Id header, the duration, the status, and the upstream and
// upstream status droprun's config appends (log_append); for a refresh
// of the A upstreams, each IP it discovered.
type caddyLine struct {
	Time    time.Time `json:"ts"`
	Logger  string    `json:"logger"`
	Msg     string    `json:"msg"`
	Request struct {
		Headers map[string][]string `json:"headers"`
	} `json:"request"`
	Duration       float64 `json:"duration"`
	Status         int     `json:"status"`
	Upstream       string  `json:"upstream"`
	UpstreamStatus int     `json:"upstream_status"`
	IP             string  `json:"ip"`
}

// ParseCaddy reads one line of Caddy's JSON access log, logged by pod;
// false for a line that is not an access-log entry. Caddy logs a request
// when it is done, so its start is the line's time less its duration.
// Caddy sends each request once (droprun's config sets no retries).
func ParseCaddy(pod string, b []byte) (Line, bool) {
	var c caddyLine
	if json.Unmarshal(b, &c) != nil || c.Logger != CaddyAccessLogger || c.Time.IsZero() || c.Status == 0 {
		return Line{}, false
	}
	d := time.Duration(c.Duration * float64(time.Second))
	l := Line{Pod: pod, Start: c.Time.Add(-d), Duration: d, Upstream: c.Upstream, Status: c.Status, OriginStatus: c.UpstreamStatus}
	if ids := c.Request.Headers["X-Request-Id"]; len(ids) > 0 {
		l.RequestID = ids[0]
	}
	return l, true
}

// Servers is what a front's log says of the pods it sends new requests
// to: from At on, the IPs in IPs; until Start, the set before. Err, when
// not empty, says the front could not tell (a failed lookup), and IPs is
// empty.
type Servers struct {
	Start, At time.Time
	IPs       []string
	Err       string
}

// ServersLog reads one front pod's log, line by line, for the pods it
// sends to: ok when a line completes a set.
type ServersLog interface {
	Line(b []byte) (s Servers, ok bool)
}

// CaddyServers reads one Caddy pod's log for the lookups of its dynamic A
// upstreams. Caddy looks the name up again at the first request after
// the refresh interval, under a lock that holds every request until the
// lookup ends: a lookup is a "refreshing A upstreams" line (Start: the
// old set's last use) and one "discovered A record" line per IP (the last
// one's time is At, when the new set is used from). A lookup is complete
// at the next one's line, and Line returns it then. A lookup that found no
// IP failed (Go's resolver errs on an empty answer): Caddy then sent its
// requests nowhere and looks again at the next request; Line returns it
// with Err, and the next lookup that finds IPs starts, for the set
// before, at the failed one's start. Use one CaddyServers per pod.
type CaddyServers struct {
	open   bool
	cur    Servers
	failed time.Time // the first failed lookup's start since the last good one
}

// Line reads one log line; ok when it completes a lookup.
func (c *CaddyServers) Line(b []byte) (done Servers, ok bool) {
	var l caddyLine
	if json.Unmarshal(b, &l) != nil || l.Logger != CaddyUpstreamsLogger {
		return Servers{}, false
	}
	switch l.Msg {
	case "refreshing A upstreams":
		done, ok = c.cur, c.open
		slices.Sort(done.IPs)
		done.IPs = slices.Compact(done.IPs)
		switch {
		case !ok:
		case len(done.IPs) == 0:
			done.At, done.Err = done.Start, "Caddy's lookup of the web pods' name failed (no A record found)"
			if c.failed.IsZero() {
				c.failed = done.Start
			}
		case !c.failed.IsZero():
			done.Start, c.failed = c.failed, time.Time{}
		}
		c.open, c.cur = true, Servers{Start: l.Time}
	case "discovered A record":
		if c.open && l.IP != "" {
			c.cur.IPs = append(c.cur.IPs, l.IP)
			c.cur.At = l.Time
		}
	}
	return done, ok
}
