//go:build !race

package metrics

// raceEnabled reports a -race build, whose instrumentation may allocate.
const raceEnabled = false
