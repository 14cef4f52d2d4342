package report

import (
	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/stats"
)

// Compare returns one verdict per row name present in both a and b.
func Compare(a, b *analysis.Summary) []string {
	var out []string
	for _, va := range a.Variants {
		for _, vb := range b.Variants {
			if va.Variant != vb.Variant {
				continue
			}
			c := stats.Compare(stats.Counts{Name: va.Variant + " (A)", Drops: va.Drops, Requests: va.WindowRequests, PerRollout: va.PerRollout()},
				stats.Counts{Name: vb.Variant + " (B)", Drops: vb.Drops, Requests: vb.WindowRequests, PerRollout: vb.PerRollout()}, stats.DefaultConfidence)
			out = append(out, c.Verdict)
		}
	}
	return out
}

// CompareVariants returns the verdict of every row of sum against the
// first row (e.g. each fix against no-prestop).
func CompareVariants(sum *analysis.Summary) []string {
	var out []string
	for _, c := range compareVariants(sum) {
		out = append(out, c.Verdict)
	}
	return out
}

// compareVariants compares every row of sum after the first with the first;
// element k is about sum.Variants[k+1].
func compareVariants(sum *analysis.Summary) []stats.Comparison {
	if len(sum.Variants) < 2 {
		return nil
	}
	ref := sum.Variants[0]
	var out []stats.Comparison
	for _, v := range sum.Variants[1:] {
		out = append(out, stats.Compare(stats.Counts{Name: v.Variant, Drops: v.Drops, Requests: v.WindowRequests, PerRollout: v.PerRollout()},
			stats.Counts{Name: ref.Variant, Drops: ref.Drops, Requests: ref.WindowRequests, PerRollout: ref.PerRollout()}, stats.DefaultConfidence))
	}
	return out
}
