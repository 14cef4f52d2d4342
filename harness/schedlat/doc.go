// Package schedlat reads how long this process's runnable goroutines
// waited for a core (Go's runtime/metrics /sched/latencies:seconds): the
// evidence that a client had work due and could not run. droprun's rig
// samples it for its own client, and a generator pod says it in its beats.
package schedlat
