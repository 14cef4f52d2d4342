package metrics

import (
	"testing"
	"time"

	"github.com/droprun/droprun/harness/traffic"
)

// benchRecords are records of every class, mostly 2xx as in a real run,
// with latencies spread over the histogram's buckets.
func benchRecords() []traffic.Record {
	var recs []traffic.Record
	for i := range 1000 {
		c := traffic.Class2xx
		if i%50 == 0 {
			all := traffic.Classes()
			c = all[(i/50)%len(all)]
		}
		recs = append(recs, traffic.Record{
			Seq:     uint64(i),
			Class:   c,
			Latency: time.Duration(i%200) * 10 * time.Millisecond,
			Error:   "read: connection reset by peer",
			Pod:     "web-7d9f8b6c5d-x2x9z",
		})
	}
	return recs
}

// BenchmarkObserve is the per-request cost: droprun calls Observe for every
// request, at up to 3,000 req/s, from the results goroutine.
func BenchmarkObserve(b *testing.B) {
	m := New(testRun, testScenario, testVersion)
	m.VariantStarted("no-prestop")
	recs := benchRecords()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m.Observe("no-prestop", recs[i%len(recs)])
		i++
	}
}

// BenchmarkObserveFailures is the cost for a failure class, found after
// comparing with the classes before it.
func BenchmarkObserveFailures(b *testing.B) {
	m := New(testRun, testScenario, testVersion)
	m.VariantStarted("no-prestop")
	rec := traffic.Record{Class: traffic.Class4xx, Latency: 2 * time.Second}
	b.ReportAllocs()
	for b.Loop() {
		m.Observe("no-prestop", rec)
	}
}

// BenchmarkObserveParallelScrape is Observe while /metrics is gathered
// concurrently, as under a scraping Prometheus.
func BenchmarkObserveParallelScrape(b *testing.B) {
	m := New(testRun, testScenario, testVersion)
	m.VariantStarted("no-prestop")
	recs := benchRecords()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				_, _ = m.reg.Gather()
				time.Sleep(time.Millisecond)
			}
		}
	}()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m.Observe("no-prestop", recs[i%len(recs)])
		i++
	}
	b.StopTimer()
	close(stop)
	<-done
}
