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
// ended at end on the channel repeated: the channel's last attempt by
// then failed, at to, having begun at from. False when its last attempt
// succeeded or was still under way (the backoff had ended: a call then
// fails because the attempt hangs, not because of the backoff), or no
// attempt is known.
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
		case traffic.StateDialing, traffic.StateDialed:
			return time.Time{}, time.Time{}, false
		}
	}
	return time.Time{}, time.Time{}, false
}

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
