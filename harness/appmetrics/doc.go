// Package appmetrics is the record type of app-metrics.jsonl: the pods' own
// request counters (bookshop's, or a custom app's named Counter) read
// during a run, so that what the client saw can be set beside what the
// pods say they answered. harness/observe's AppMetrics collects them; this
// package holds the records, reads them back (Read) and sums them over a
// time range (Totals), and imports no client-go.
//
// Two sources feed the collector:
//
//   - Scrapes. Every observe.AppMetricsOptions.Interval (default 1s), each running pod
//     matching the selector has its /metrics read through the API server's
//     pod proxy (pods/NAME:8080/proxy/metrics), concurrently per pod and
//     with a short timeout, and bookshop_http_requests_total is kept by
//     handler and status code. A pod that is dying answers slowly or not at
//     all: a failed scrape is counted, not reported line by line, and the
//     pod keeps the last value read.
//   - Termination messages. As it exits, bookshop writes its final totals
//     as one JSON line to /dev/termination-log (see apps/bookshop), which
//     the kubelet copies into the container's terminated state. The
//     collector watches the pods and records each message once; it is the
//     true final count, so it wins over the last scrape, which may be up to
//     an interval old.
//
// Everything is written as JSON lines (File, in the run
// directory), one Record each: one per successful scrape of a pod
// (source "scrape"), one per termination message ("termination-message"),
// and one per pod whose scrapes failed ("scrape-errors", the count since
// the last such line, written when the pod goes away and at Stop):
//
//	{"time":"...","source":"scrape","pod":"web-5c9-abcde","variant":"no-prestop","row":"no-prestop","container":"web",
//	 "containerID":"containerd://...","started":"...","scheduled":"...","lateSeconds":0.0002,"tookSeconds":0.011,
//	 "requests":42,"byCode":{"200":42},"byHandler":{"version":{"200":40},"readyz":{"200":2}}}
//
// A scrape record also says when it was due (scheduled), how late its
// request started (lateSeconds) and how long it took (tookSeconds, the API
// client's rate limit and the pod proxy included): the pod read its
// counters between time-tookSeconds and time (Record.ReadBetween). Files
// written before these fields existed still read; their scrapes have none.
//
// For an app other than bookshop, observe.AppMetricsOptions.Counter names the counter to
// read instead (a family, the status-code label, label values to match);
// such an app writes no exit totals, so its pods are counted from scrapes
// alone and a pod's last scrape before it exits can miss its final
// requests: the count is a lower bound.
//
// Counters belong to a container instance (a restarted container counts
// from zero again), so records carry the container ID and totals are
// computed per instance.
//
// A run starts one observe.AppMetrics per namespace with the web pods'
// selector (app=web) before its traffic starts, call ScrapeNow when the
// traffic stops, for a reading as fresh as that moment, and Stop after the
// old pods are gone; then set Totals over the traffic's span beside the
// client's own counts:
//
//	c, err := observe.StartAppMetrics(ctx, client, ns, "app=web", file, observe.AppMetricsOptions{})
//	...
//	// ... traffic from trafficStart; it stops:
//	c.ScrapeNow(ctx)                          // stamped after the stop
//	s := c.Totals(trafficStart, time.Now())   // or Totals(Read(file), ...)
//	fmt.Printf("client sent %d, got %d 2xx; pods answered %d (%d 2xx)\n", sent, ok, s.Answered, s.Answered2xx)
//
// Totals reads records back (Read, or observe.AppMetrics.Records) and answers, for
// a time range, how many requests the pods answered: per instance, its
// value at the end of the range (its termination message if it ended by
// then, else its last scrape) less its value at the start. Answered leaves
// out the cluster's own requests (ProbeHandlers: kubelet probes and these
// scrapes), so it compares with the client's count. Scrapes are an
// interval apart: a range whose ends fall in steady traffic is only as
// exact as the rate times the interval. Take ranges whose ends are quiet,
// such as from before the traffic starts to after it stops and the old
// pods have exited, for an exact comparison.
package appmetrics
