package analysis

import (
	"sort"
	"strings"
	"time"

	"github.com/droprun/droprun/harness/timeline"
)

// channelStamp is how long after a call saw its channel's change the
// client's watch may stamp it (traffic.ChannelState.Time): a scheduling
// delay.
const channelStamp = 100 * time.Millisecond

// channelStep is one state a gRPC channel entered, and when.
type channelStep struct {
	t     time.Time
	state string
}

// channelIndex holds each gRPC client channel's states (grpc.channel
// events) of one variant, in time order, by channelKey.
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
// ended at end on the channel met: the channel was in TRANSIENT_FAILURE
// then, entered at to, after an attempt that began at from (its
// CONNECTING; to when none was seen). A change stamped up to channelStamp
// after end may have come before it: the latest TRANSIENT_FAILURE among
// those, or else the state stamped last by end, counts. False when the
// channel was in another state, or is not known.
func (ix channelIndex) failedAttempt(target, channel string, end time.Time) (from, to time.Time, ok bool) {
	steps := ix[channelKey(target, channel)]
	last := sort.Search(len(steps), func(i int) bool { return steps[i].t.After(end.Add(channelStamp)) }) - 1
	sure := sort.Search(len(steps), func(i int) bool { return steps[i].t.After(end) }) - 1
	for i := last; i >= 0 && i >= sure; i-- {
		if steps[i].state != "TRANSIENT_FAILURE" {
			continue
		}
		from, to = steps[i].t, steps[i].t
		if i > 0 && steps[i-1].state == "CONNECTING" {
			from = steps[i-1].t
		}
		return from, to, true
	}
	return time.Time{}, time.Time{}, false
}

// hostPort is a target URL's host:port, as channel states name it.
func hostPort(url string) string {
	o := origin(url)
	if i := strings.Index(o, "://"); i >= 0 {
		return o[i+3:]
	}
	return o
}
