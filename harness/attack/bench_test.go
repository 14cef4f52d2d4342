package attack

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/traffic"
	vegeta "github.com/tsenart/vegeta/v12/lib"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Flags of BenchmarkAttackLoopback (for `make bench`).
var (
	benchRate      = flag.Int("attack.rate", 3000, "BenchmarkAttackLoopback: asked rate, requests/s")
	benchDuration  = flag.Duration("attack.duration", 3*time.Second, "BenchmarkAttackLoopback: length of each attack")
	benchKeepAlive = flag.Bool("attack.keepalive", false, "BenchmarkAttackLoopback: reuse connections")
)

// serverEnv makes the test binary a plain HTTP server (see TestMain), so the
// attack benchmark's target runs in another process and ClientCPU measures
// the client alone.
const serverEnv = "DROPRUN_TRAFFIC_BENCH_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		os.Exit(benchServer())
	}
	if spec := os.Getenv(grpcLoopEnv); spec != "" {
		os.Exit(grpcLoop(spec))
	}
	os.Exit(m.Run())
}

// benchServer serves HTTP/1.1 and h2c on one 127.0.0.1 port and the gRPC
// health service's Check on another, prints "HTTPADDR GRPCADDR" on
// stdout, and exits when stdin closes (the parent is done, or gone).
func benchServer() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(ln.Addr().String(), gln.Addr().String())
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health{pod: "bench", status: healthpb.HealthCheckResponse_SERVING})
	go gs.Serve(gln)
	go func() {
		io.Copy(io.Discard, os.Stdin)
		ln.Close()
		gs.Stop()
	}()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(traffic.PodHeader, "bench")
		io.WriteString(w, `{"pod":"bench","version":"v1"}`)
	})}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	srv.Serve(ln)
	return 0
}

// startBenchServer runs the test binary as a server in a child process and
// returns its HTTP URL (/version) and its gRPC target URL.
func startBenchServer(b *testing.B) (httpURL, grpcURL string) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), serverEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill() // the child we started, by its pid
			<-exited
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("bench server: %v", err)
	}
	addrs := strings.Fields(line)
	if len(addrs) != 2 {
		b.Fatalf("bench server said %q, want two addresses", line)
	}
	return "http://" + addrs[0] + "/version", "http://" + addrs[1] + traffic.GRPCPath
}

func BenchmarkClassify(b *testing.B) {
	inputs := []struct {
		code uint16
		err  string
	}{
		{200, ""},
		{502, "502 Bad Gateway"},
		{0, `Get "http://127.0.0.1:30080/version": dial tcp 127.0.0.1:30080: connect: connection refused`},
		{0, `Get "http://127.0.0.1:30080/version": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`},
		{0, `Get "http://127.0.0.1:30080/version": EOF`},
	}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		in := inputs[n%len(inputs)]
		if traffic.Classify(in.code, in.err) == "" {
			b.Fatal("no class")
		}
		n++
	}
}

// countingWriter counts bytes written.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// BenchmarkPipeline measures what the attack does per result: classify,
// trim, gob-encode through a bufio.Writer. file-B/result is the size of a
// result in the results file.
func BenchmarkPipeline(b *testing.B) {
	for _, tc := range []struct {
		name string
		res  vegeta.Result
	}{
		{"2xx", vegeta.Result{Code: 200, Method: "GET", URL: "http://127.0.0.1:30080/version", Attack: "bench",
			BytesIn: 31, Headers: http.Header{traffic.PodHeader: {"bookshop-web-7d4b9c6f5-x2x9q"}, "X-Bookshop-Version": {"v1"}}}},
		{"refused", vegeta.Result{Code: 0, Method: "GET", URL: "http://127.0.0.1:30080/version", Attack: "bench",
			Error: `Get "http://127.0.0.1:30080/version": dial tcp 127.0.0.1:30080: connect: connection refused`}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var cw countingWriter
			buf := bufio.NewWriterSize(&cw, 64<<10)
			p := pipeline{enc: vegeta.NewEncoder(buf)}
			res := tc.res
			t0 := time.Now()
			// Warm up: the first gob message carries the type description.
			if _, err := p.process(&res); err != nil {
				b.Fatal(err)
			}
			buf.Flush()
			start := cw.n
			b.ReportAllocs()
			b.ResetTimer()
			var n uint64
			for b.Loop() {
				n++
				res.Seq = n
				res.Timestamp = t0.Add(time.Duration(n) * time.Millisecond)
				res.Latency = time.Duration(n%1000) * time.Microsecond
				if _, err := p.process(&res); err != nil {
					b.Fatal(err)
				}
			}
			buf.Flush()
			b.ReportMetric(float64(cw.n-start)/float64(n), "file-B/result")
		})
	}
}

// liveHeap returns HeapAlloc and HeapInuse after two full collections (the
// second frees what sync.Pools, net/http's buffers among them, only let go
// of at the first).
func liveHeap() (alloc, inuse uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.HeapInuse
}

// BenchmarkAttackLoopback runs an attack at -traffic.rate for
// -traffic.duration against a trivial server in a child process on
// 127.0.0.1, writing the results to a file, and reports:
//
//   - req/s: the achieved rate (asked-req/s is the asked one);
//   - client-cores: ClientCPU, the attack process's CPU in cores (the
//     server's is not in it);
//   - heap-B/Mresults: live heap (HeapAlloc after full GCs) after the
//     attack minus before it, with the Attack still referenced, per million
//     results. Memory that grows with results shows here; memory held by
//     requests in flight does not (that is peak-heap-MB). A warm-up attack
//     at the same rate runs first, because Go keeps every goroutine
//     descriptor it ever allocated (~4 MB after a peak of ~5,000
//     goroutines); a measured attack whose peak concurrency exceeds the
//     warm-up's still pays that. Short runs amplify noise: ±100 KB over
//     10,000 results reads as ±10 MB per million.
//     inuse-B/Mresults is the same from HeapInuse, which also counts spans
//     kept after the in-flight peak (fragmentation, not growth).
//   - peak-heap-MB: the largest HeapInuse seen during the attack (sampled
//     every 100ms), which grows with the requests in flight;
//   - peak-goroutines: the most goroutines seen (sampled every 100ms);
//   - failed, exhausted (1 = workers exhausted), file-B/result.
func BenchmarkAttackLoopback(b *testing.B) {
	url, _ := startBenchServer(b)
	cfg := traffic.Config{URL: url, Rate: *benchRate, Protocol: traffic.HTTP1(*benchKeepAlive), Name: "bench"}
	var last traffic.Stats
	var retainedPerM, inusePerM, peakHeap, peakGoroutines, fileB float64
	for i := 0; i < b.N; i++ {
		f, err := os.CreateTemp(b.TempDir(), "results-*.gob")
		if err != nil {
			b.Fatal(err)
		}
		// Warm up at the same rate: Go never frees a goroutine's descriptor,
		// so the first time the process reaches a number of goroutines (one
		// per request in flight, plus net/http's) costs heap for good, and
		// that is not memory that grows with results.
		warm, cancelWarm := context.WithTimeout(context.Background(), *benchDuration/3)
		w, err := Start(warm, cfg, io.Discard, nil)
		if err != nil {
			b.Fatal(err)
		}
		<-w.Done()
		cancelWarm()
		if _, err := w.Stop(); err != nil {
			b.Fatal(err)
		}

		var results atomic.Uint64
		ctx, cancel := context.WithTimeout(context.Background(), *benchDuration)
		beforeAlloc, beforeInuse := liveHeap()
		a, err := Start(ctx, cfg, f, func(traffic.Record) { results.Add(1) })
		if err != nil {
			b.Fatal(err)
		}
		tick := time.NewTicker(100 * time.Millisecond)
		var peak uint64
		var peakG int
	sample:
		for {
			select {
			case <-tick.C:
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
				peakG = max(peakG, runtime.NumGoroutine())
			case <-a.Done():
				break sample
			}
		}
		tick.Stop()
		cancel()
		last, err = a.Stop()
		if err != nil {
			b.Fatal(err)
		}
		afterAlloc, afterInuse := liveHeap()
		runtime.KeepAlive(a)
		fi, err := f.Stat()
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
		if n := results.Load(); n > 0 {
			retainedPerM = (float64(afterAlloc) - float64(beforeAlloc)) / float64(n) * 1e6
			inusePerM = (float64(afterInuse) - float64(beforeInuse)) / float64(n) * 1e6
		}
		peakHeap = float64(peak) / (1 << 20)
		peakGoroutines = float64(peakG)
		fileB = float64(fi.Size()) / float64(max(last.Requests, 1))
	}
	var failed uint64
	for c, n := range last.ByClass {
		if c.Failed() {
			failed += n
		}
	}
	exhausted := 0.0
	if last.WorkersExhausted {
		exhausted = 1
	}
	b.ReportMetric(last.AchievedRate, "req/s")
	b.ReportMetric(last.AskedRate, "asked-req/s")
	b.ReportMetric(last.ClientCPU, "client-cores")
	b.ReportMetric(retainedPerM, "heap-B/Mresults")
	b.ReportMetric(inusePerM, "inuse-B/Mresults")
	b.ReportMetric(peakHeap, "peak-heap-MB")
	b.ReportMetric(peakGoroutines, "peak-goroutines")
	b.ReportMetric(float64(failed), "failed")
	b.ReportMetric(exhausted, "exhausted")
	b.ReportMetric(fileB, "file-B/result")
	b.Logf("%d requests in %s, by class %v, peak in flight %d of %d, max lag %s, suspect: %q",
		last.Requests, last.End.Sub(last.Start).Round(time.Millisecond), last.ByClass,
		last.PeakInFlight, last.MaxWorkers, last.MaxLag, last.Suspect)
}

// The well-known clients BenchmarkClientCost sets droprun's against: the
// vegeta CLI (the same attack library, as its users run it) for HTTP/1.1
// and h2c, and for gRPC a plain grpc-go loop (one goroutine per call on a
// ticker, nothing recorded but a count), the least a gRPC load tool does.
const (
	vegetaModule = "github.com/tsenart/vegeta/v12@v12.13.0"
	grpcLoopEnv  = "DROPRUN_TRAFFIC_BENCH_GRPC_LOOP"
)

var benchPairs = flag.Int("attack.pairs", 5, "BenchmarkClientCost: alternating pairs per protocol")

// BenchmarkClientCost runs, for each protocol, droprun's client and a
// well-known one on the same target (a child process serving HTTP/1.1,
// h2c and gRPC on 127.0.0.1), -traffic.pairs times each, alternating
// which goes first, for -traffic.duration at -traffic.rate, and reports
// the medians of each side's CPU in cores per 1,000 requests/s achieved
// and of the pairs' ratios (droprun over the reference: above 1 costs
// more). droprun's side is its own measure (traffic.Stats.ClientCPU, this
// process); the reference's is its child process's user + system CPU over
// the attack's length, start-up included. droprun writes its results to a
// file, as the vegeta CLI does; the gRPC loop records nothing.
func BenchmarkClientCost(b *testing.B) {
	httpURL, grpcURL := startBenchServer(b)
	vegetaBin := installVegeta(b)
	rate, d := *benchRate, *benchDuration
	vegetaRef := func(url string, flags ...string) func() (float64, error) {
		return func() (float64, error) {
			out := filepath.Join(b.TempDir(), "vegeta.bin")
			args := append([]string{"attack", "-rate", strconv.Itoa(rate) + "/s", "-duration", d.String(), "-timeout", traffic.DefaultTimeout.String(), "-output", out}, flags...)
			cmd := exec.Command(vegetaBin, args...)
			cmd.Stdin = strings.NewReader("GET " + url + "\n")
			cpu, err := childCPU(cmd, d)
			if err != nil {
				return 0, err
			}
			f, err := os.Open(out)
			if err != nil {
				return 0, err
			}
			defer f.Close()
			n := 0
			dec := vegeta.NewDecoder(bufio.NewReader(f))
			for {
				var r vegeta.Result
				if err := dec.Decode(&r); err != nil {
					break
				}
				n++
			}
			return perKRPS(cpu, float64(n)/d.Seconds()), nil
		}
	}
	grpcRef := func() (float64, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d %d", grpcLoopEnv, strings.TrimPrefix(strings.TrimSuffix(grpcURL, traffic.GRPCPath), "http://"), rate, d.Milliseconds(), traffic.DefaultConnections))
		var stdout strings.Builder
		cmd.Stdout = &stdout
		cpu, err := childCPU(cmd, d)
		if err != nil {
			return 0, err
		}
		n, err := strconv.Atoi(strings.TrimSpace(stdout.String()))
		if err != nil {
			return 0, fmt.Errorf("gRPC loop said %q: %v", stdout.String(), err)
		}
		return perKRPS(cpu, float64(n)/d.Seconds()), nil
	}
	for _, m := range []struct {
		name  string
		proto traffic.Protocol
		url   string
		ref   func() (float64, error)
	}{
		{"http1-new-connection", traffic.ProtocolNewConnection, httpURL, vegetaRef(httpURL, "-keepalive=false")},
		{"http1-keep-alive", traffic.ProtocolKeepAlive, httpURL, vegetaRef(httpURL, "-keepalive=true")},
		{"h2c", traffic.ProtocolH2C, httpURL, vegetaRef(httpURL, "-h2c")},
		{"grpc", traffic.ProtocolGRPC, grpcURL, grpcRef},
	} {
		b.Run(m.name, func(b *testing.B) {
			ours := func() (float64, error) {
				f, err := os.Create(filepath.Join(b.TempDir(), "results.bin"))
				if err != nil {
					return 0, err
				}
				defer f.Close()
				ctx, cancel := context.WithTimeout(context.Background(), d)
				defer cancel()
				a, err := Start(ctx, traffic.Config{URL: m.url, Rate: rate, Protocol: m.proto, Name: "bench"}, f, nil)
				if err != nil {
					return 0, err
				}
				<-a.Done()
				s, err := a.Stop()
				return perKRPS(s.ClientCPU, s.AchievedRate), err
			}
			var us, them, ratio []float64
			for i := range *benchPairs {
				sides := []func() (float64, error){ours, m.ref}
				if i%2 == 1 {
					sides = []func() (float64, error){m.ref, ours}
				}
				var got [2]float64
				for j, side := range sides {
					v, err := side()
					if err != nil {
						b.Fatal(err)
					}
					got[j] = v
				}
				if i%2 == 1 {
					got[0], got[1] = got[1], got[0]
				}
				us, them, ratio = append(us, got[0]), append(them, got[1]), append(ratio, got[0]/got[1])
			}
			b.ReportMetric(median(us), "droprun-cores/krps")
			b.ReportMetric(median(them), "ref-cores/krps")
			b.ReportMetric(median(ratio), "ratio")
			b.Logf("%s at %d req/s for %s, %d pairs: droprun %.3f, reference %.3f cores per 1,000 req/s (medians); ratios %.2f",
				m.name, rate, d, len(us), median(us), median(them), ratio)
		})
	}
}

// installVegeta installs the vegeta CLI from the module proxy (the module
// cache after the first time) into a temporary directory.
func installVegeta(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	cmd := exec.Command("go", "install", vegetaModule)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go install %s: %v\n%s", vegetaModule, err, out)
	}
	return filepath.Join(dir, "vegeta")
}

// childCPU runs cmd and returns its user + system CPU in cores over d.
func childCPU(cmd *exec.Cmd, d time.Duration) (float64, error) {
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s: %v: %s", cmd.Path, err, stderr.String())
	}
	st := cmd.ProcessState
	return (st.UserTime() + st.SystemTime()).Seconds() / d.Seconds(), nil
}

func perKRPS(cores, rps float64) float64 {
	if rps <= 0 {
		return 0
	}
	return cores / (rps / 1000)
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// grpcLoop is the plain grpc-go client (spec "ADDR RATE MILLISECONDS CONNS"):
// CONNS channels, a Check call every 1/RATE s round robin over them, each
// in its own goroutine with traffic.DefaultTimeout, for MILLISECONDS; it prints the
// number of calls that succeeded.
func grpcLoop(spec string) int {
	var addr string
	var rate, ms, conns int
	if _, err := fmt.Sscan(spec, &addr, &rate, &ms, &conns); err != nil {
		fmt.Fprintln(os.Stderr, "grpc loop:", err)
		return 2
	}
	d := time.Duration(ms) * time.Millisecond
	var ccs []healthpb.HealthClient
	for range conns {
		cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			fmt.Fprintln(os.Stderr, "grpc loop:", err)
			return 1
		}
		defer cc.Close()
		ccs = append(ccs, healthpb.NewHealthClient(cc))
	}
	var ok atomic.Uint64
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	end := time.After(d)
	for i := 0; ; i++ {
		select {
		case <-end:
			wg.Wait()
			fmt.Println(ok.Load())
			return 0
		case <-tick.C:
			wg.Add(1)
			go func(c healthpb.HealthClient) {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), traffic.DefaultTimeout)
				defer cancel()
				if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); err == nil {
					ok.Add(1)
				}
			}(ccs[i%len(ccs)])
		}
	}
}
