package attack

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/droprun/droprun/harness/traffic"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
)

// grpcFleet is traffic.ProtocolGRPC's RoundTripper, under the attack's watch like
// every protocol's: each request vegeta hands out becomes one unary Check
// call, on one of traffic.Config.Connections channels to the request's target
// (round robin), with the request's context (the watch's deadline). So the
// pacing, the workers, the timeout, the results file and the classes are
// the HTTP client's.
//
// A call's outcome becomes the response (grpcResponse): OK with SERVING is
// a 200, OK with any other serving status a 503 (the server said it could
// not serve), and a non-OK status the transport error the client saw,
// "rpc error: code = Unavailable desc = …", which traffic.Classify reads by its
// wire cause (refused, reset, EOF, GOAWAY, stream reset, deadline) and
// otherwise as traffic.ClassUnavailable. Response metadata x-bookshop-* becomes
// X-Bookshop-* headers, so the results name the pod that answered. A
// failed call's error ends with the channel it went on (traffic.ChannelTag,
// traffic.Record.Channel), and with traffic.Config.OnChannel every channel's state
// changes and connection attempts are reported (traffic.ChannelState): together
// they say whether a call failed because its channel was waiting out a
// reconnect backoff, and after which attempt.
type grpcFleet struct {
	byHost  map[string]*channels
	onState func(traffic.ChannelState) // nil: nothing reported
	// stop ends the state watches; watching waits for them. closed
	// (under mu) drops what a dial reports after the fleet closed.
	stop     context.CancelFunc
	watching sync.WaitGroup
	mu       sync.RWMutex
	closed   bool
}

// channels are one target's channels and the count of calls sent to them:
// each target takes its channels in turn, whatever the others do (one
// count for all would pin a target to some of its channels when the
// targets' and channels' numbers share a factor).
type channels struct {
	ccs []*grpc.ClientConn
	n   atomic.Uint64
}

// channelError is a failed call's error, naming its channel.
type channelError struct {
	err     error
	channel int
}

func (e *channelError) Error() string {
	return e.err.Error() + traffic.ChannelTag + strconv.Itoa(e.channel) + "]"
}
func (e *channelError) Unwrap() error { return e.err }

// newGRPCFleet opens n channels to each of addrs (host:port), connecting
// through dial only. grpc.NewClient connects lazily, at the first call.
// With onState, each channel's state changes are reported to it until
// the fleet closes.
func newGRPCFleet(addrs []string, n int, dial dialFunc, onState func(traffic.ChannelState)) (*grpcFleet, error) {
	f := &grpcFleet{byHost: make(map[string]*channels, len(addrs)), onState: onState}
	ctx, stop := context.WithCancel(context.Background())
	f.stop = stop
	for _, addr := range addrs {
		chs := &channels{}
		f.byHost[addr] = chs
		for i := range n {
			id := traffic.ChannelState{Target: addr, Channel: i}
			cc, err := grpc.NewClient("passthrough:///"+addr,
				grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
					f.report(id, traffic.StateDialing, nil)
					c, err := dial(ctx, "tcp", a)
					f.report(id, traffic.StateDialed, err)
					return c, err
				}),
				// No service config from anywhere: no retry policy, so
				// the only retries are grpc-go's transparent ones,
				// which hiddenRetries sees.
				grpc.WithDisableServiceConfig(),
				grpc.WithStatsHandler(hiddenRetries{}),
			)
			if err != nil {
				f.close()
				return nil, fmt.Errorf("traffic: gRPC channel to %s: %w", addr, err)
			}
			if onState != nil {
				f.watching.Add(1)
				go f.watch(ctx, cc, id)
			}
			chs.ccs = append(chs.ccs, cc)
		}
	}
	return f, nil
}

// watch reports cc's state, then each change, until ctx ends or cc
// shuts down (the fleet's close).
func (f *grpcFleet) watch(ctx context.Context, cc *grpc.ClientConn, id traffic.ChannelState) {
	defer f.watching.Done()
	for {
		s := cc.GetState()
		if s == connectivity.Shutdown {
			return
		}
		f.report(id, s.String(), nil)
		if !cc.WaitForStateChange(ctx, s) {
			return
		}
	}
}

// report tells onState that channel id entered state (traffic.StateDialed with
// err is traffic.StateDialFailed), unless the fleet closed.
func (f *grpcFleet) report(id traffic.ChannelState, state string, err error) {
	if f.onState == nil {
		return
	}
	id.Time, id.State = time.Now(), state
	if err != nil {
		id.State, id.Error = traffic.StateDialFailed, err.Error()
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if !f.closed {
		f.onState(id)
	}
}

// RoundTrip implements http.RoundTripper.
func (f *grpcFleet) RoundTrip(req *http.Request) (*http.Response, error) {
	chs := f.byHost[req.URL.Host]
	if chs == nil || len(chs.ccs) == 0 {
		return nil, fmt.Errorf("traffic: no gRPC channel to %s", req.URL.Host)
	}
	i := int((chs.n.Add(1) - 1) % uint64(len(chs.ccs)))
	var md metadata.MD
	out, err := healthpb.NewHealthClient(chs.ccs[i]).Check(req.Context(), &healthpb.HealthCheckRequest{}, grpc.Header(&md))
	if err != nil {
		err = &channelError{err, i}
	}
	return grpcResponse(req, out, md, err)
}

// keptMetadataPrefix is keptHeaderPrefix as gRPC metadata keys have it.
var keptMetadataPrefix = strings.ToLower(keptHeaderPrefix)

// grpcResponse turns a Check call's outcome into what net/http's client
// would return (see grpcFleet).
func grpcResponse(req *http.Request, out *healthpb.HealthCheckResponse, md metadata.MD, err error) (*http.Response, error) {
	if err != nil {
		return nil, err
	}
	resp := &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK",
		Proto: "HTTP/2.0", ProtoMajor: 2,
		Header: http.Header{}, Body: http.NoBody, Request: req,
	}
	if s := out.GetStatus(); s != healthpb.HealthCheckResponse_SERVING {
		resp.StatusCode, resp.Status = http.StatusServiceUnavailable, "503 "+s.String()
	}
	for k, vs := range md {
		if strings.HasPrefix(k, keptMetadataPrefix) {
			for _, v := range vs {
				resp.Header.Add(http.CanonicalHeaderKey(k), v)
			}
		}
	}
	return resp, nil
}

// close closes every channel, and returns once no state is reported.
func (f *grpcFleet) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.stop()
	for _, chs := range f.byHost {
		for _, cc := range chs.ccs {
			_ = cc.Close()
		}
	}
	f.watching.Wait()
}

// hiddenRetries is the client channels' stats handler: it tells a call's
// attempts (from the watch, in its context) about every transparent retry
// grpc-go made, with the error of the attempt it replaced. grpc-go retries
// a call on a new stream, without telling the caller, when the server
// never saw the first one (refused by GOAWAY or REFUSED_STREAM, or a
// connection that closed before the stream left).
type hiddenRetries struct{}

func (hiddenRetries) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (hiddenRetries) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (hiddenRetries) HandleConn(context.Context, stats.ConnStats) {}

func (hiddenRetries) HandleRPC(ctx context.Context, s stats.RPCStats) {
	at, _ := ctx.Value(attemptsKey{}).(*attempts)
	if at == nil {
		return
	}
	switch s := s.(type) {
	case *stats.End:
		if s.Error != nil {
			at.lastErr(s.Error.Error())
		}
	case *stats.Begin:
		if s.IsTransparentRetryAttempt {
			at.retried(traffic.RefusedGRPCStream)
		}
	}
}

// attemptsKey holds a request's *attempts in its context, for a
// RoundTripper that learns of retries by other means than httptrace.
type attemptsKey struct{}

// lastErr notes the error an attempt ended with, for a retry that
// replaces it.
func (a *attempts) lastErr(text string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last = text
}

// retried notes a retry: the failure it hides is the last attempt's
// error, or unseen when it reported none.
func (a *attempts) retried(unseen string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	text := a.last
	if text == "" {
		text = unseen
	}
	a.hidden = append(a.hidden, text)
	a.last = ""
}

// closer is a RoundTripper with connections to close when the attack ends.
type closer interface{ close() }

var (
	_ http.RoundTripper = (*grpcFleet)(nil)
	_ closer            = (*grpcFleet)(nil)
	_ stats.Handler     = hiddenRetries{}
)
