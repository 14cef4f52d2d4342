// Package gate holds a run to limits, for CI: what `droprun check` does.
//
// A gate is only worth its worst answer, so every check here has three
// outcomes, never a silent pass:
//
//   - Pass: the data shows the limit is met (a rate limit's upper
//     confidence bound is at or below it, not just the observed rate).
//   - Fail: the data shows it is broken, or the run is not whole
//     (interrupted, errored, killed, fewer rollouts than asked, a variant
//     missing).
//   - Inconclusive: the data cannot decide (too few requests or rollouts
//     for the limit, a suspect measurement). The result says what it would
//     take: the requests or rollouts needed, or what made it suspect.
//
// Bad limits (NaN, infinite, negative), an unknown row or a baseline that
// lacks a row are a *UsageError before anything is checked.
//
// Drops come in bursts, one per rollout, so the rollout is the unit a
// comparison with a baseline tests (stats.PermutationTest); the
// per-request numbers are shown beside it, labelled. A rate limit is
// tested per request (stats.OneSided) and, once there are drops, per
// rollout too; the larger bound decides.
//
// Check returns a Report; Report.JUnit writes it as JUnit XML, one test
// case per row and limit.
package gate
