// Package metrics is droprun's own view of a run as Prometheus metrics,
// live while the run goes on: what every request got, where each variant
// is, and what its rollouts dropped. The metrics live in a registry of
// their own (never the global one); a run serves them over HTTP (Serve),
// pushes them to a Pushgateway (Push), and keeps their final values in its
// run directory (WriteFile, the Prometheus text format).
//
// They are a live view, not the measurement: summary.json, rebuilt from the
// raw results, stays the record. In particular the class counts here are by
// the time a request completed, the summary's by the time it was sent.
//
// # Use
//
//	m := metrics.New(runID, sc.Metadata.Name, version)
//	addr, err := m.Serve(ctx, "127.0.0.1:9464") // until ctx ends
//	m.VariantStarted(v.Name)                    // phase deploy
//	m.Phase(v.Name, metrics.PhaseControl)       // when traffic starts
//	// attack.Start's observe callback, per request:
//	m.Observe(v.Name, rec)
//	m.RolloutStarted(v.Name, n)                 // phase rollout
//	m.Phase(v.Name, metrics.PhaseSettle)        // old pods gone
//	m.RolloutDone(v.Name, took, drops)          // window closed
//	m.Phase(v.Name, metrics.PhaseBetween)
//	m.Phase(v.Name, metrics.PhaseDone)          // traffic stopped
//	err = m.WriteFile(filepath.Join(dir, "metrics.prom"))
//	err = m.Push(ctx, "http://pushgateway:9091")
//
// A nil *Metrics records nothing, so a run without metrics passes nil.
//
// # Metrics
//
// Every label is bounded: variant is a scenario variant name (at most
// MaxVariants distinct values, beyond which OverflowVariant), class one of
// traffic.Classes, phase one of Phases. No label ever holds error text, a
// pod name, a URL or a rollout number.
//
//	droprun_requests_total{variant, class}            counter
//	    Requests that completed, by outcome class: 2xx, 000:refused,
//	    000:reset, 000:eof, 000:idle-closed, 000:goaway, 000:stream-reset, 000:unavailable,
//	    000:timeout, 000:other, 502, 503, 5xx:other, 4xx (see traffic.Class). Every class of a variant exists, at 0,
//	    from the moment the variant starts, so rate() works from zero.
//	droprun_request_duration_seconds{variant}         histogram
//	    Request latency whatever the outcome, until the failure or the body
//	    was read. Buckets 1ms … 10s, with a bound at 2s, the default
//	    timeout: le="2" holds the requests that finished in time, and
//	    requests cut off by a 2s timeout land in le="2.5".
//	droprun_rollouts_total{variant}                   counter
//	    Rollouts whose measured window has closed.
//	droprun_rollout_duration_seconds{variant}         histogram
//	    Rollout start until its old pods were gone (settle not included).
//	    Buckets 1s … 600s.
//	droprun_rollout_window_drops_total{variant}       counter
//	    Failed (non-2xx) requests sent inside closed rollout windows (start
//	    to old pods gone, plus settle): the drops droprun is about.
//	droprun_phase{variant, phase}                     gauge
//	    1 for the variant's current phase, 0 for the others. Phases, in
//	    order: deploy, control, then for each rollout: rollout, settle,
//	    between; and at the end done.
//	droprun_current_rollout{variant}                  gauge
//	    The current (or last) rollout, 1-based; 0 before the first.
//	droprun_run_info{scenario, run_id, droprun_version} gauge
//	    Always 1: which run the metrics are of. Pushed metrics are grouped
//	    by job="droprun" and run_id instead (see Metrics.Push).
//
// # Queries
//
// Failures per second by class, over the last 10s (the 2xx line left out):
//
//	sum by (variant, class) (rate(droprun_requests_total{class!="2xx"}[10s]))
//
// The fraction of requests failing, per variant:
//
//	sum by (variant) (rate(droprun_requests_total{class!="2xx"}[30s]))
//	  / sum by (variant) (rate(droprun_requests_total[30s]))
//
// Drops per rollout, per variant:
//
//	droprun_rollout_window_drops_total / droprun_rollouts_total
//
// 99th percentile latency, and what each variant is doing now:
//
//	histogram_quantile(0.99, sum by (variant, le) (rate(droprun_request_duration_seconds_bucket[30s])))
//	droprun_phase == 1
package metrics
