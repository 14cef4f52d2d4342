package analysis

import "github.com/droprun/droprun/harness/stats"

// PerRollout is each rollout's window drops and requests, the unit the
// comparisons over rollouts test (stats.PermutationTest).
func (v VariantSummary) PerRollout() []stats.Rollout {
	out := make([]stats.Rollout, 0, len(v.Rollouts))
	for _, ro := range v.Rollouts {
		out = append(out, stats.Rollout{Drops: ro.Window.Failures, Requests: ro.Window.Requests})
	}
	return out
}
