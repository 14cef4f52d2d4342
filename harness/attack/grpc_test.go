package attack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/traffic"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// health answers Check with status, stamping x-bookshop-pod as bookshop does.
type health struct {
	healthpb.UnimplementedHealthServer
	pod    string
	status healthpb.HealthCheckResponse_ServingStatus
}

func (h health) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	_ = grpc.SetHeader(ctx, metadata.Pairs("x-bookshop-pod", h.pod))
	return &healthpb.HealthCheckResponse{Status: h.status}, nil
}

// connCounter counts the connections a server accepted.
type connCounter struct{ n atomic.Uint64 }

func (c *connCounter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (c *connCounter) HandleRPC(context.Context, stats.RPCStats)                       {}
func (c *connCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (c *connCounter) HandleConn(_ context.Context, s stats.ConnStats) {
	if _, ok := s.(*stats.ConnBegin); ok {
		c.n.Add(1)
	}
}

// grpcServer serves h on 127.0.0.1 and returns its gRPC target URL and its
// connection count.
func grpcServer(t *testing.T, h health, opts ...grpc.ServerOption) (string, *connCounter) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := &connCounter{}
	s := grpc.NewServer(append(opts, grpc.StatsHandler(conns))...)
	healthpb.RegisterHealthServer(s, h)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return "http://" + l.Addr().String() + traffic.GRPCPath, conns
}

// TestGRPCFleet: with traffic.ProtocolGRPC every request is a Check call, the
// client holds traffic.Config.Connections connections per target, and each result
// names the pod from the response metadata.
func TestGRPCFleet(t *testing.T) {
	url1, conns1 := grpcServer(t, health{pod: "pod-a", status: healthpb.HealthCheckResponse_SERVING})
	url2, conns2 := grpcServer(t, health{pod: "pod-b", status: healthpb.HealthCheckResponse_SERVING})
	recs, stats, _ := attackUntil(t, traffic.Config{Targets: []traffic.Target{{URL: url1}, {URL: url2}}, Rate: 200, Protocol: traffic.ProtocolGRPC, Connections: 3}, 60)
	if stats.ByClass[traffic.Class2xx] != stats.Requests {
		t.Fatalf("ByClass = %v, want every call served", stats.ByClass)
	}
	for _, r := range recs {
		want := "pod-a"
		if r.URL == url2 {
			want = "pod-b"
		}
		if r.Pod != want {
			t.Fatalf("a result from %s names pod %q, want %q", r.URL, r.Pod, want)
		}
	}
	for i, c := range []*connCounter{conns1, conns2} {
		if got := c.n.Load(); got != 3 {
			t.Errorf("target %d: %d connections, want 3 (Config.Connections)", i+1, got)
		}
	}
	if stats.Retried != 0 || stats.Masked != 0 {
		t.Errorf("a healthy server: Retried %d, Masked %d, want 0", stats.Retried, stats.Masked)
	}
}

// TestGRPCNotServing: a Check answered NOT_SERVING is a 503, the server
// saying it could not serve.
func TestGRPCNotServing(t *testing.T) {
	u, _ := grpcServer(t, health{pod: "p", status: healthpb.HealthCheckResponse_NOT_SERVING})
	_, stats, _ := attackUntil(t, traffic.Config{URL: u, Rate: 100, Protocol: traffic.ProtocolGRPC}, 10)
	if stats.ByClass[traffic.Class503] != stats.Requests {
		t.Errorf("ByClass = %v, want every call a 503", stats.ByClass)
	}
}

// refusedAddr is a 127.0.0.1 address nothing listens on: connecting to it
// is refused.
func refusedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestGRPCRefused: a target nothing listens on fails every call with
// UNAVAILABLE, whose wire cause is a refused connection.
func TestGRPCRefused(t *testing.T) {
	addr := refusedAddr(t)
	recs, stats, _ := attackUntil(t, traffic.Config{URL: "http://" + addr + traffic.GRPCPath, Rate: 100, Protocol: traffic.ProtocolGRPC, Connections: 1}, 10)
	if stats.ByClass[traffic.ClassRefused] != stats.Requests {
		t.Errorf("ByClass = %v, want every call refused; first error %q", stats.ByClass, recs[0].Error)
	}
	if !strings.Contains(recs[0].Error, "code = Unavailable") {
		t.Errorf("error %q, want grpc-go's UNAVAILABLE status kept", recs[0].Error)
	}
}

// TestGRPCMaxConnectionAge: a server that ends every connection after
// 100 ms (GOAWAY, then close once its calls finish) costs the client no
// call: it reconnects, and a stream refused by the GOAWAY is retried.
func TestGRPCMaxConnectionAge(t *testing.T) {
	u, conns := grpcServer(t, health{pod: "p", status: healthpb.HealthCheckResponse_SERVING},
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: 100 * time.Millisecond, MaxConnectionAgeGrace: 5 * time.Second}))
	_, stats, _ := attackUntil(t, traffic.Config{URL: u, Rate: 200, Protocol: traffic.ProtocolGRPC, Connections: 2}, 120)
	if stats.ByClass[traffic.Class2xx] != stats.Requests {
		t.Errorf("ByClass = %v, want every call served across the reconnections", stats.ByClass)
	}
	if got := conns.n.Load(); got < 4 {
		t.Errorf("%d connections in ~600 ms with a 100 ms maximum age, want new ones (at least 4)", got)
	}
}

// TestGRPCHiddenRetry: a transparent retry grpc-go reports to the stats
// handler becomes a hidden failure of the call, with the replaced
// attempt's error, or the refused stream's text when it had none; a
// served call with one is masked.
func TestGRPCHiddenRetry(t *testing.T) {
	at := &attempts{}
	ctx := context.WithValue(t.Context(), attemptsKey{}, at)
	h := hiddenRetries{}
	h.HandleRPC(ctx, &stats.Begin{})
	h.HandleRPC(ctx, &stats.End{Error: status.Error(codes.Unavailable, "the connection is draining")})
	h.HandleRPC(ctx, &stats.Begin{IsTransparentRetryAttempt: true})
	h.HandleRPC(ctx, &stats.End{})
	h.HandleRPC(ctx, &stats.Begin{IsTransparentRetryAttempt: true})
	h.HandleRPC(ctx, &stats.End{})
	got := at.failures()
	if len(got) != 2 || !strings.Contains(got[0], "the connection is draining") || got[1] != traffic.RefusedGRPCStream {
		t.Fatalf("hidden failures %q, want the draining error, then the refused stream's text", got)
	}
	for _, f := range got {
		if c := traffic.Classify(0, f); c != traffic.ClassGoAway {
			t.Errorf("hidden failure %q is %s, want %s", f, c, traffic.ClassGoAway)
		}
	}
	// Through the watch: the response carries them, and the record is masked.
	w := &watch{next: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		hiddenRetries{}.HandleRPC(r.Context(), &stats.Begin{IsTransparentRetryAttempt: true})
		return grpcResponse(r, &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil, nil)
	}), timeout: time.Second}
	req, err := http.NewRequestWithContext(t.Context(), "POST", "http://127.0.0.1:1"+traffic.GRPCPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := w.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if h := resp.Header.Values(traffic.HiddenHeader); len(h) != 1 || h[0] != traffic.RefusedGRPCStream || w.retried.Load() != 1 {
		t.Errorf("hidden header %q, retried %d; want the refused stream once", h, w.retried.Load())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestGRPCResponseError(t *testing.T) {
	want := status.Error(codes.Unavailable, "x")
	if _, err := grpcResponse(nil, nil, nil, want); !errors.Is(err, want) {
		t.Errorf("grpcResponse error = %v, want the status error itself", err)
	}
}

// TestGRPCProbeClient: under traffic.ProtocolGRPC the probe client's GET is a
// Check call, answered 200 with the pod in its headers.
func TestGRPCProbeClient(t *testing.T) {
	u, _ := grpcServer(t, health{pod: "pod-a", status: healthpb.HealthCheckResponse_SERVING})
	c, done, err := ProbeClient([]traffic.Target{{URL: u}}, nil, time.Second, traffic.ProtocolGRPC)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Bookshop-Pod") != "pod-a" {
		t.Errorf("probe: status %d, pod %q; want 200 from pod-a", resp.StatusCode, resp.Header.Get("X-Bookshop-Pod"))
	}
}

// TestGRPCChannelStates: with traffic.Config.OnChannel every channel reports its
// states and attempts, a refused one CONNECTING, a failed dial (with its
// error) and TRANSIENT_FAILURE, a served one a dial and READY; every
// failed call names its channel, which was in TRANSIENT_FAILURE when the
// call ended, after a failed dial; nothing is reported after Stop.
func TestGRPCChannelStates(t *testing.T) {
	refused := refusedAddr(t)
	served, _ := grpcServer(t, health{pod: "p", status: healthpb.HealthCheckResponse_SERVING})
	var (
		mu      sync.Mutex
		states  = map[string][]traffic.ChannelState{} // "target/channel" → its states, in order
		stopped bool
	)
	key := func(target string, ch int) string { return fmt.Sprintf("%s/%d", target, ch) }
	cfg := traffic.Config{Targets: []traffic.Target{{URL: "http://" + refused + traffic.GRPCPath}, {URL: served}}, Rate: 100, Protocol: traffic.ProtocolGRPC, Connections: 2,
		OnChannel: func(s traffic.ChannelState) {
			mu.Lock()
			defer mu.Unlock()
			if stopped {
				t.Errorf("state %+v reported after Stop", s)
			}
			states[key(s.Target, s.Channel)] = append(states[key(s.Target, s.Channel)], s)
		}}
	recs, _, _ := attackUntil(t, cfg, 40)
	mu.Lock()
	stopped = true
	defer mu.Unlock()

	inState := func(k string, at time.Time, want string) bool {
		var last traffic.ChannelState
		for _, s := range states[k] {
			if s.Time.After(at) {
				break
			}
			last = s
		}
		return last.State == want
	}
	var failed int
	for _, r := range recs {
		ch, ok := r.Channel()
		if !r.Class.Failed() {
			if ok {
				t.Errorf("served call names channel %d: %q", ch, r.Error)
			}
			continue
		}
		failed++
		if !ok || ch > 1 || r.Class != traffic.ClassRefused {
			t.Fatalf("failed call: channel %d, %v, class %s, error %q; want a refusal on channel 0 or 1", ch, ok, r.Class, r.Error)
		}
		// The watch stamps a change a scheduling delay after the call
		// saw it: allow 100 ms.
		if k := key(refused, ch); !inState(k, r.End().Add(100*time.Millisecond), "TRANSIENT_FAILURE") {
			t.Errorf("call ended %s on %s, which was not in TRANSIENT_FAILURE; its states %+v", r.End().Format(time.StampMicro), k, states[k])
		}
		var lastDial traffic.ChannelState
		for _, s := range states[key(refused, ch)] {
			if !s.Time.After(r.End()) && strings.HasPrefix(s.State, "dial") {
				lastDial = s
			}
		}
		if lastDial.State != traffic.StateDialFailed || !strings.Contains(lastDial.Error, "connection refused") {
			t.Errorf("call ended %s on channel %d, whose last attempt before was %+v; want a refused dial", r.End().Format(time.StampMicro), ch, lastDial)
		}
	}
	if failed == 0 {
		t.Fatal("no call to the refusing target failed")
	}
	for ch := range 2 {
		// The states and the attempts each in order (a state is stamped
		// a scheduling delay late, an attempt at once).
		for target, wants := range map[string][][]string{
			refused: {{"CONNECTING", "TRANSIENT_FAILURE"}, {traffic.StateDialing, traffic.StateDialFailed}},
			strings.TrimPrefix(strings.TrimSuffix(served, traffic.GRPCPath), "http://"): {{"CONNECTING", "READY"}, {traffic.StateDialing, traffic.StateDialed}},
		} {
			var seen []string
			for _, s := range states[key(target, ch)] {
				seen = append(seen, s.State)
			}
			for _, want := range wants {
				rest := seen
				for _, w := range want {
					i := slices.Index(rest, w)
					if i < 0 {
						t.Errorf("%s: states %v, want %v in that order", key(target, ch), seen, want)
						break
					}
					rest = rest[i+1:]
				}
			}
		}
	}
}

// TestGRPCPath: the path the records name a gRPC call by is grpc-go's own
// name of the health service's Check, which the client calls.
func TestGRPCPath(t *testing.T) {
	if traffic.GRPCPath != healthpb.Health_Check_FullMethodName {
		t.Errorf("traffic.GRPCPath %q, grpc-go's %q", traffic.GRPCPath, healthpb.Health_Check_FullMethodName)
	}
}
