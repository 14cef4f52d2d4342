package analysis

import (
	"sort"
	"strings"
	"time"

	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

// channelStep is one state a gRPC channel entered, and when.
type channelStep struct {
	t     time.Time
	state string
}

// channelIndex holds each gRPC client channel's states and connection
// attempts (grpc.channel events) of one variant, in time order, by
// channelKey.
type channelIndex map[string][]channelStep

func channelKey(target, channel string) string { return target + "/" + channel }

// indexChannels reads variant's channel states from events; empty for a
// run recorded before droprun watched them, or over another protocol.
func indexChannels(events []timeline.Event, variant string) channelIndex {
	ix := channelIndex{}
	for _, e := range events {
		if e.Kind != timeline.KindGRPCChannel || e.Detail["variant"] != variant {
			continue
		}
		at := e.Time
		if t, err := time.Parse(time.RFC3339Nano, e.Detail["at"]); err == nil {
			at = t
		}
		k := channelKey(e.Detail["target"], e.Detail["channel"])
		ix[k] = append(ix[k], channelStep{at, e.Detail["state"]})
	}
	for _, steps := range ix {
		sort.SliceStable(steps, func(i, j int) bool { return steps[i].t.Before(steps[j].t) })
	}
	return ix
}

// failedAttempt returns the connection attempt whose failure a call that
// ended at end on the channel repeated: the channel's last failed attempt
// by then, which failed at to, having begun at from. grpc-go's pick_first
// keeps a channel in TRANSIENT_FAILURE from a failed attempt until it is
// READY again (gRFC A62's sticky failure), failing calls with that
// attempt's error while it waits out its backoff and while it tries
// again: so an attempt under way at the call's end, answered in time,
// does not end it (calls failed just after a backoff ended, before the
// next attempt's READY, measured in kind). False when the channel was
// READY since, when the attempt under way hung (hungAttempt: a stale
// conntrack entry holds it, not the backoff), or when no failed attempt
// is known.
func (ix channelIndex) failedAttempt(target, channel string, end time.Time) (from, to time.Time, ok bool) {
	steps := ix[channelKey(target, channel)]
	for i := sort.Search(len(steps), func(i int) bool { return steps[i].t.After(end) }) - 1; i >= 0; i-- {
		switch steps[i].state {
		case traffic.StateDialFailed:
			from, to = steps[i].t, steps[i].t
			if i > 0 && steps[i-1].state == traffic.StateDialing {
				from = steps[i-1].t
			}
			return from, to, true
		case stateReady:
			return time.Time{}, time.Time{}, false
		case traffic.StateDialing:
			if ix.hungAttempt(target, channel, end) {
				return time.Time{}, time.Time{}, false
			}
		}
	}
	return time.Time{}, time.Time{}, false
}

// stateReady is a channel's connectivity state once a connection is up
// (connectivity.Ready's name, as the channel events record it).
const stateReady = "READY"

// hungDial is how long a connection attempt must go unanswered to be
// one that hangs: on kind a dial is answered in milliseconds, and the
// kernel resends an unanswered SYN after a second.
const hungDial = time.Second

// hungAttempt reports whether a call that ended at end on the channel
// failed while the channel's connection attempt hung: its last step by
// then was an attempt under way, that went unanswered for hungDial or
// more (it ended that much after it began, or never ended).
func (ix channelIndex) hungAttempt(target, channel string, end time.Time) bool {
	steps := ix[channelKey(target, channel)]
	i := sort.Search(len(steps), func(i int) bool { return steps[i].t.After(end) }) - 1
	if i < 0 || steps[i].state != traffic.StateDialing {
		return false
	}
	for _, s := range steps[i+1:] {
		if s.state == traffic.StateDialed || s.state == traffic.StateDialFailed {
			return s.t.Sub(steps[i].t) >= hungDial
		}
	}
	return true
}

// hostPort is a target URL's host:port, as channel states name it.
func hostPort(url string) string {
	o := origin(url)
	if i := strings.Index(o, "://"); i >= 0 {
		return o[i+3:]
	}
	return o
}
