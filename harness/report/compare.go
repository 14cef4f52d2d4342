package report

import (
	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/stats"
)

// Compare returns one verdict per row name present in both a and b, the
// rows one family (stats.CompareAll: Holm-adjusted).
func Compare(a, b *analysis.Summary) []string {
	var pairs []stats.Pair
	for _, va := range a.Variants {
		for _, vb := range b.Variants {
			if va.Variant == vb.Variant {
				pairs = append(pairs, stats.Pair{A: counts(va, va.Variant+" (A)"), B: counts(vb, vb.Variant+" (B)")})
			}
		}
	}
	var out []string
	for _, c := range stats.CompareAll(pairs, stats.DefaultConfidence) {
		out = append(out, c.Verdict)
	}
	return out
}

// counts is row v's counts for a comparison, named name.
func counts(v analysis.VariantSummary, name string) stats.Counts {
	return stats.Counts{Name: name, Drops: v.Drops, Requests: v.WindowRequests, PerRollout: v.PerRollout()}
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

// compareVariants compares every row of sum after the first with the
// first, as one family (stats.CompareAll: Holm-adjusted); element k is
// about sum.Variants[k+1].
func compareVariants(sum *analysis.Summary) []stats.Comparison {
	if len(sum.Variants) < 2 {
		return nil
	}
	ref := sum.Variants[0]
	var pairs []stats.Pair
	for _, v := range sum.Variants[1:] {
		pairs = append(pairs, stats.Pair{A: counts(v, v.Variant), B: counts(ref, ref.Variant)})
	}
	return stats.CompareAll(pairs, stats.DefaultConfidence)
}
