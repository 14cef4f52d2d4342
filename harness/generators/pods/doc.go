// Package pods runs a variant's load from generator pods inside the
// cluster as one traffic.Source: the Indexed Job of render.GeneratorsJob
// (apps/generator in every pod, its share of the rate from its index),
// applied as droprun's own, started at one barrier over each pod's control
// port through the API server, every pod's log followed into its
// generators.Stream (results file and observer, origin pod-N) while it
// runs, then stopped, read to its end line and deleted.
//
// A generator whose pod fails is replaced by the Job (backoffLimitPerIndex)
// and started again as soon as the new pod is ready: its stream says it
// restarted, and the time between is a gap in its account, never a silent
// hole. Each generator's clock offset from droprun's is estimated at the
// start and again at the stop, each with its error bound (half the round
// trip of the shortest of a few exchanges).
package pods
