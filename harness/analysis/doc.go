// Package analysis turns a run directory's raw data into everything droprun
// reports: the summary rows (summary.json) and the series the figures draw
// (per-rollout request bins, cluster event markers, rig samples, deletion
// gaps, failures by time since deletion, per-node tallies).
//
// It is the one path from raw data to a verdict. It reads each raw file
// once: run.json (what only the live run knew: cluster, traffic settings,
// how it ended), scenario.yaml, events.jsonl, app-metrics.jsonl and every
// results-*.bin. It is pure: no cluster, no clock, no writes. run calls it
// to write summary.json and failures.jsonl; plot and report render its
// value and never re-read or re-derive anything.
//
// Intervals. Every rate a view shows comes with its interval from
// IntervalsOf, computed once per row into VariantSummary.Intervals at
// stats.DefaultConfidence: the drop rate (Wilson), drops per rollout
// (exact Poisson), the measurable rate of the sweeps (Wilson) and, for a
// row that dropped nothing, the exact upper bound its zero supports
// (Clopper–Pearson).
//
// Windows. A variant's traffic is cut into a control window (before the
// first rollout), then per rollout its window (from its start until its old
// pods are gone, plus settle) and its tail (until the next rollout). A
// request belongs to the window it was sent in.
//
// The rig is never mistaken for the race. Refused, reset, EOF and 5xx are
// the race's signature and always count. A timeout is excused only with
// evidence that the rig, not the pods, failed: a rig sample taken while
// the request was in flight shows the client more than SaturationLag behind
// schedule, or its goroutines waiting that long for a core, or a kind node
// without CPU (NodeStarvedShare of each sample) for SaturationLag or more.
// Excused timeouts are counted apart (Excused), never silently, and make
// the row suspect.
//
// Masked requests. With keep-alive, net/http may retry a request that
// failed on a reused connection on another one without telling the
// client (traffic.Record.Hidden). One the retry served is masked: a 2xx,
// so not a drop, but a failure the client would have seen without the
// retry. Every tally counts them apart (Tally.Masked, by hidden class), so
// each window and row says how many drops connection reuse masked. A
// front told to resend (traffic.frontRetries) logs how many times it
// resent each request; joined by ID, those are counted apart too
// (Tally.FrontResent, FrontMasked: served after a resend), never as drops.
//
// Truncated input. A results file or JSON-lines file cut off by a crash is
// read up to its last whole record, with a warning in Analysis.Warnings.
package analysis
