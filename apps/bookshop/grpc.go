package main

import (
	"context"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// Values of --grpc-stop: how the gRPC server stops when the app shuts
// down (at once in naive mode, after the drain delay in drain mode).
const (
	grpcStopGraceful = "graceful" // GracefulStop: GOAWAY, finish the calls in flight
	grpcStopHard     = "stop"     // Stop: cut every connection and call at once
)

// handlerGRPC is the gRPC Check calls' handler label in the counters.
const handlerGRPC = "grpc-check"

// grpcSide is the web pods' gRPC server, on a listener of its own: the
// standard health service's Check, which droprun's protocol grpc calls
// as its request. Check answers SERVING while the process serves at all
// (draining included): it is the load's request, not a probe; the
// kubelet's readiness probe stays /readyz on the HTTP port.
type grpcSide struct {
	srv  *grpc.Server
	ln   *stampedListener
	stop string
}

// newGRPC builds the gRPC server: every call counted in m's tally under
// handlerGRPC (its OK as "200", as /version's), its response stamped
// with the pod and version as x-bookshop-* metadata, and, when
// maxAge > 0, connections ended after maxAge (keepalive
// MaxConnectionAge, with grace for the calls in flight).
func newGRPC(id identity, m *metrics, maxAge, grace time.Duration) *grpc.Server {
	c := countedCalls{tally: m.tally}
	opts := []grpc.ServerOption{grpc.UnaryInterceptor(c.intercept), grpc.StatsHandler(c)}
	if maxAge > 0 {
		opts = append(opts, grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: maxAge, MaxConnectionAgeGrace: grace}))
	}
	s := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(s, checkServer{id: id})
	return s
}

// checkServer answers Check.
type checkServer struct {
	healthpb.UnimplementedHealthServer
	id identity
}

func (h checkServer) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	// metadata.Pairs lower-cases the keys: x-bookshop-pod, x-bookshop-version.
	_ = grpc.SetHeader(ctx, metadata.Pairs(headerPod, h.id.pod, headerVersion, h.id.version))
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// countedCalls counts gRPC calls in the tally as wrap counts HTTP
// requests: a call is in flight from its start to its counted answer, a
// call that starts or ends after the seal is never answered (it waits
// for the server to cut it), and a counted answer is sending until the
// server has written its status (the stats handler's End, which grpc-go
// reports after the status went out).
type countedCalls struct{ tally *tally }

type countedKey struct{}

func (c countedCalls) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !c.tally.begin(true) {
		return c.cut(ctx)
	}
	resp, err := handler(ctx, req)
	code := "200"
	if err != nil {
		code = status.Code(err).String()
	}
	if !c.tally.end(true, handlerCode{handlerGRPC, code}) {
		return c.cut(ctx)
	}
	// newGRPC installs c as the stats handler too: its End marks the
	// answer written.
	ctx.Value(countedKey{}).(*atomic.Bool).Store(true)
	return resp, err
}

// cut holds a call the sealed tally will not count until the server
// closes its connection: nothing is answered.
func (countedCalls) cut(ctx context.Context) (any, error) {
	<-ctx.Done()
	return nil, status.Error(codes.Unavailable, "bookshop is stopping")
}

func (countedCalls) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return context.WithValue(ctx, countedKey{}, new(atomic.Bool))
}

func (c countedCalls) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if _, end := s.(*stats.End); !end {
		return
	}
	if counted, ok := ctx.Value(countedKey{}).(*atomic.Bool); ok && counted.Load() {
		c.tally.written()
	}
}

func (countedCalls) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (countedCalls) HandleConn(context.Context, stats.ConnStats)                       {}

// shutdown stops the gRPC server as --grpc-stop says, giving a graceful
// stop until ctx is done before cutting what is left.
func (g *grpcSide) shutdown(ctx context.Context) {
	if g.stop == grpcStopHard {
		g.srv.Stop()
		return
	}
	done := make(chan struct{})
	go func() {
		g.srv.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		g.srv.Stop()
		<-done
	}
}
