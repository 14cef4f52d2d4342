package analysis

import "github.com/droprun/droprun/harness/stats"

// PerRollout is each rollout's window drops and requests, the unit the
// intervals and comparisons over rollouts take (stats.RateOverRollouts,
// stats.CompareRollouts).
func (v VariantSummary) PerRollout() []stats.Rollout {
	out := make([]stats.Rollout, 0, len(v.Rollouts))
	for _, ro := range v.Rollouts {
		out = append(out, stats.Rollout{Drops: ro.Window.Failures, Requests: ro.Window.Requests})
	}
	return out
}

// Counted is PerRollout as the gate and the history count drops: the
// drops the client saw and those connection reuse masked (a retry on a
// new connection hid them from the client; the pod still refused them).
func (v VariantSummary) Counted() []stats.Rollout {
	out := v.PerRollout()
	for k, ro := range v.Rollouts {
		out[k].Drops += ro.Window.Masked
	}
	return out
}

// perRolloutMeasurable is PerRollout without the excused timeouts (the
// measurable tally's rollouts).
func (v VariantSummary) perRolloutMeasurable() []stats.Rollout {
	out := v.PerRollout()
	for k, ro := range v.Rollouts {
		x := min(ro.Excused, out[k].Drops)
		out[k].Drops -= x
		out[k].Requests -= x
	}
	return out
}

// Unaccounted is how many of the rollout window's drops are of a class a
// pod's answer can hide behind (a timeout, reset or EOF) and accounted for
// by no race window, close or stale conntrack entry: those a row's
// Unreceived answers may hide behind.
func (r RolloutSummary) Unaccounted() uint64 {
	var n uint64
	for _, c := range answerable {
		n += r.Window.Classes[c]
	}
	if r.Explained != nil {
		n -= min(n, r.Explained.Answerable)
	}
	return n
}
