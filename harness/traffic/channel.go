package traffic

import (
	"strconv"
	"strings"
	"time"
)

// GRPCPath is the URL path of a gRPC target: the one method the client
// calls, the standard health service's Check, which grpc-go ships
// generated (no code generation, and any gRPC server can register it):
// healthpb.Health_Check_FullMethodName, written out so that readers of
// records need no grpc-go (TestGRPCPath holds them equal).
const GRPCPath = "/grpc.health.v1.Health/Check"

// ChannelState is one change of a gRPC channel (Config.OnChannel): its
// connectivity state, IDLE, CONNECTING, READY or TRANSIENT_FAILURE (a
// connection attempt failed: the channel fails its calls at once with
// that attempt's error), or one of its connection attempts, StateDialing
// then StateDialed or StateDialFailed. The attempts are what says when a
// backoff ended: grpc-go's channel stays in TRANSIENT_FAILURE until it is
// READY again, through the attempts after the first failed.
type ChannelState struct {
	// Time is when the client saw the change: a state within a
	// scheduling delay of it (a state undone faster than the watch reads
	// the channel is not seen), an attempt exactly.
	Time time.Time
	// Target is the channel's host:port; Channel its index among the
	// target's channels (Record.Channel), from 0.
	Target  string
	Channel int
	State   string
	// Error is a failed attempt's error.
	Error string
}

// The connection attempts' ChannelState.State.
const (
	StateDialing    = "dialing"
	StateDialed     = "dialed"
	StateDialFailed = "dial failed"
)

// ChannelTag opens the suffix a failed call's error gets: " [gRPC channel
// N]". No classification rule reads it.
const ChannelTag = " [gRPC channel "

// Channel returns the gRPC channel a failed call went on (its index among
// its target's channels, see ChannelState), read from the end of its
// error; false for any other request.
func (r Record) Channel() (int, bool) {
	i := strings.LastIndex(r.Error, ChannelTag)
	if i < 0 || !strings.HasSuffix(r.Error, "]") {
		return 0, false
	}
	n, err := strconv.Atoi(r.Error[i+len(ChannelTag) : len(r.Error)-1])
	return n, err == nil && n >= 0
}
