package frontlog

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Caddy's logger names (its module IDs): the access log, and the dynamic
// A upstreams, whose debug lines time each DNS refresh and list the IPs
// it found.
const (
	CaddyAccessLogger    = "http.log.access"
	CaddyUpstreamsLogger = "http.reverse_proxy.upstreams.a"
	// CaddyErrorLogger logs each request Caddy failed, at ERROR for a
	// 5xx, with the error as its message: for the reverse proxy, the
	// upstream's (its transport's) error.
	CaddyErrorLogger = "http.log.error"
	// CaddyRetriesKey is the access-log field droprun's config appends
	// with the resends of a request ({http.reverse_proxy.retries}).
	CaddyRetriesKey = "retries"
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
	Retries        int     `json:"retries"`
	IP             string  `json:"ip"`
}

// access is c as the request Caddy handled, logged by pod; false for a
// line that is not an access-log entry. Caddy logs a request when it is
// done, so its start is the line's time less its duration. The resends
// are those its config appends as CaddyRetriesKey (0 when it sets no
// retries). The line holds no error: CaddyAccess joins it.
func (c *caddyLine) access(pod string) (Line, bool) {
	if c.Logger != CaddyAccessLogger || c.Time.IsZero() || c.Status == 0 {
		return Line{}, false
	}
	d := time.Duration(c.Duration * float64(time.Second))
	return Line{Pod: pod, Start: c.Time.Add(-d), Duration: d, RequestID: c.requestID(), Upstream: c.Upstream,
		Status: c.Status, OriginStatus: c.UpstreamStatus, Retries: c.Retries}, true
}

func (c *caddyLine) requestID() string {
	if ids := c.Request.Headers["X-Request-Id"]; len(ids) > 0 {
		return ids[0]
	}
	return ""
}

// CaddyAccess reads one Caddy pod's log for the requests it handled: its
// access-log lines, each with the error Caddy logged for
// the request, if any (Line.UpstreamError). Caddy logs a request it
// failed on CaddyErrorLogger just before its access-log line, from the
// request's own goroutine, both with its headers (so its X-Request-Id);
// other requests' lines may come between. Use one per pod.
type CaddyAccess struct {
	errs map[string]string // by request ID, until its access-log line
}

// Bounds on what CaddyAccess keeps: the errors whose access-log line has
// not come yet (Caddy writes the two together, so a handful), and the
// length of an error's text.
const (
	maxPendingErrors = 4096
	maxErrorText     = 512
)

// Line reads one line of the pod's log: ok for an access-log line.
func (c *CaddyAccess) Line(pod string, b []byte) (Line, bool) {
	var cl caddyLine
	if json.Unmarshal(b, &cl) != nil {
		return Line{}, false
	}
	if cl.Logger == CaddyErrorLogger {
		if id := cl.requestID(); id != "" && cl.Msg != "" {
			c.pending(id, cl.Msg)
		}
		return Line{}, false
	}
	l, ok := cl.access(pod)
	if ok && l.RequestID != "" {
		if e, found := c.errs[l.RequestID]; found {
			l.UpstreamError = e
			delete(c.errs, l.RequestID)
		}
	}
	return l, ok
}

func (c *CaddyAccess) pending(id, msg string) {
	if c.errs == nil {
		c.errs = map[string]string{}
	}
	if len(c.errs) >= maxPendingErrors {
		for k := range c.errs { // any: all but a handful never get their line
			delete(c.errs, k)
			break
		}
	}
	if len(msg) > maxErrorText {
		msg = strings.ToValidUTF8(msg[:maxErrorText], "")
	}
	c.errs[id] = msg
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

// CaddyRefresh is how long Caddy uses one lookup's IPs before it looks
// the name up again (droprun's config of its dynamic A upstreams).
const CaddyRefresh = time.Second

// CaddyServers reads one Caddy pod's log for the lookups of its dynamic A
// upstreams: a "refreshing A upstreams" line, then one "discovered A
// record" line per IP. Caddy keeps a lookup's IPs for CaddyRefresh from
// just after its last discovered line; a request that comes later finds
// them stale and takes a lock under which it looks again, logs the
// refreshing line and holds every other request until the lookup ends.
// So the old set took its last request between the last lookup's end
// plus CaddyRefresh (Start) and the new lookup's refreshing line (At),
// and every request that came after At went to the new set: the switch
// is placed to the gap between the set's expiry and the next request,
// however long the lookup itself took. A lookup is complete at the next
// one's line, and Line returns it then. A lookup that found no IP
// failed (Go's resolver errs on an empty answer): Caddy then sent its
// requests nowhere and looks again at the next request; Line returns it
// with Err, and the next lookup that finds IPs takes the failed one's
// start as its At: the set before took no request after it. Use one
// CaddyServers per pod.
type CaddyServers struct {
	open   bool
	cur    Servers
	last   time.Time // the last good lookup's end (its last discovered line)
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
		default:
			end := done.At // this lookup's last discovered line
			done.At = done.Start
			if !c.failed.IsZero() {
				done.At, c.failed = c.failed, time.Time{}
			}
			done.Start = done.At
			if expired := c.last.Add(CaddyRefresh); !c.last.IsZero() && expired.Before(done.At) {
				done.Start = expired
			}
			c.last = end
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
