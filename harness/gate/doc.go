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
// Bad limits (NaN, infinite, negative, a rate of 1 or more, a confidence
// outside [0.5, 1)), an unknown row or a baseline that lacks a row are a
// *UsageError before anything is checked. A row the scenario asks for but
// the run never measured is a failure. A baseline that is not whole fails,
// and a suspect one cannot pass.
//
// Drops come in bursts, one per rollout, so the rollout is the unit, and
// every mode's error rates are measured against ground truth
// (harness/gate/opchar, docs/statistics.md): a rate limit is tested
// against the bounds over the row's own rollouts (stats.BoundsOverRollouts),
// never another row's, with drops never taken as calmer than a burstiness
// floor, and a row without drops bounded for any burst shape unless a
// burstiness is stated; a per-rollout limit (drops, the new pods' share)
// is exact over rollouts at a tolerance (decideShare); a baseline is a
// non-inferiority test of the rate ratio against a margin
// (stats.RatioOverRollouts). Every limit counts the drops connection reuse
// masked with those the client saw. A limit is broken only by drops the
// variant's beyond the rig's doubt (see doubt): drops of a rollout the
// rig was short of CPU for, or behind answers the pods gave that the
// client never received (shared out over the rollouts, never granted
// twice), leave a breach undecided.
// TestCheckNeverPassesABrokenLimit
// checks thousands of generated runs and limits against these rules.
//
// Check returns a Report; Report.JUnit writes it as JUnit XML, one test
// case per row and limit.
package gate
