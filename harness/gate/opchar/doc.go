// Package opchar measures the gate's operating characteristics against
// ground truth: it simulates whole runs from stated truths (rows,
// rollouts, requests, drops, a baseline run, a history of runs), holds
// each to a limit with gate.Check, and counts how often the verdict is
// wrong. A gate's 95 % is a claim; this package is where it is checked.
//
// A truth is a family of burst shapes (how a rollout's drop rate varies
// around its mean) and a mean placed relative to the limit: a breach
// (the truth breaks the limit by 1.5x or more) and a good release (the
// truth at half the limit or less). For each gate mode, family and
// number of rollouts, the Suite reports P(pass | breach), P(fail | good)
// and P(inconclusive) over many runs. TestOperatingCharacteristics holds
// every error rate to 5 %, and `make stats-table` writes the table into
// docs/statistics.md.
package opchar
