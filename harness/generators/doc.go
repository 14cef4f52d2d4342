// Package generators brings home the load that generator pods send from
// inside the cluster (apps/generator, one pod per index of an Indexed
// Job), every request once.
//
// A generator writes its results to its stdout, which droprun reads as the
// pod's log while it runs: vegeta's JSON encoding, a result a line, a beat
// line every second and an end line with its totals (apps/generator says
// how). A Stream reads one generator's log and sorts its lines: each
// result line goes, whole, to that generator's results file
// (results-VARIANT+ORIGIN.bin, which traffic.ReadResults and the analysis
// read beside the host's) and to an observer as a typed traffic.Record with
// the generator's origin; beats and the end line go to the Stream's
// account; anything else (the generator's own messages, which the log
// interleaves) is counted and set aside.
//
// Every request comes home once, and a missing one is visible:
//   - Reading a container's log again (the API server's stream broke and
//     droprun followed it anew) skips the lines it already read, by count.
//   - A restarted container is a new log (Restarted): its lines are new
//     requests, written after the old container's.
//   - A generator that goes silent (no beat for SilenceAfter), restarts or
//     ends without its end line leaves a Gap in the account, with its
//     interval, which the analysis holds against the rollouts it overlaps.
package generators
