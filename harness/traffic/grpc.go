package traffic

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
)

// GRPCPath is the URL path of a gRPC target: the one method the client
// calls, the standard health service's Check, which grpc-go ships
// generated (no code generation, and any gRPC server can register it).
const GRPCPath = healthpb.Health_Check_FullMethodName

// grpcFleet is ProtocolGRPC's RoundTripper, under the attack's watch like
// every protocol's: each request vegeta hands out becomes one unary Check
// call, on one of Config.Connections channels to the request's target
// (round robin), with the request's context (the watch's deadline). So the
// pacing, the workers, the timeout, the results file and the classes are
// the HTTP client's.
//
// A call's outcome becomes the response (grpcResponse): OK with SERVING is
// a 200, OK with any other serving status a 503 (the server said it could
// not serve), and a non-OK status the transport error the client saw,
// "rpc error: code = Unavailable desc = …", which Classify reads by its
// wire cause (refused, reset, EOF, GOAWAY, stream reset, deadline) and
// otherwise as ClassUnavailable. Response metadata x-bookshop-* becomes
// X-Bookshop-* headers, so the results name the pod that answered.
type grpcFleet struct {
	byHost map[string][]*grpc.ClientConn
	n      atomic.Uint64
}

// newGRPCFleet opens n channels to each of addrs (host:port), connecting
// through dial only. grpc.NewClient connects lazily, at the first call.
func newGRPCFleet(addrs []string, n int, dial dialFunc) (*grpcFleet, error) {
	f := &grpcFleet{byHost: make(map[string][]*grpc.ClientConn, len(addrs))}
	for _, addr := range addrs {
		for range n {
			cc, err := grpc.NewClient("passthrough:///"+addr,
				grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
					return dial(ctx, "tcp", a)
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
			f.byHost[addr] = append(f.byHost[addr], cc)
		}
	}
	return f, nil
}

// RoundTrip implements http.RoundTripper.
func (f *grpcFleet) RoundTrip(req *http.Request) (*http.Response, error) {
	ccs := f.byHost[req.URL.Host]
	if len(ccs) == 0 {
		return nil, fmt.Errorf("traffic: no gRPC channel to %s", req.URL.Host)
	}
	cc := ccs[(f.n.Add(1)-1)%uint64(len(ccs))]
	var md metadata.MD
	out, err := healthpb.NewHealthClient(cc).Check(req.Context(), &healthpb.HealthCheckRequest{}, grpc.Header(&md))
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

// close closes every channel.
func (f *grpcFleet) close() {
	for _, ccs := range f.byHost {
		for _, cc := range ccs {
			_ = cc.Close()
		}
	}
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

// refusedGRPCStream is a hidden failure's text when the replaced attempt
// reported no error (grpc-go retries transparently only a stream the
// server never saw); it is classified ClassGoAway.
const refusedGRPCStream = "grpc: stream refused before it started (the server's GOAWAY or REFUSED_STREAM); grpc-go retried it transparently"

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
			at.retried(refusedGRPCStream)
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
