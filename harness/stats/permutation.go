package stats

import (
	"math"
	"math/rand/v2"
)

// Rollout is what one rollout measured: its drops among its requests.
type Rollout struct {
	Drops, Requests uint64
}

// Rate is the rollout's drop rate; 0 when it sent nothing.
func (r Rollout) Rate() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.Drops) / float64(r.Requests)
}

// Permutation is the result of PermutationTest.
type Permutation struct {
	// Diff is the mean per-rollout drop rate of a minus that of b.
	Diff float64
	// Greater is the one-sided p-value that a drops more than b; Less that
	// it drops less; TwoSided that they differ.
	Greater, Less, TwoSided float64
	// MinP is the smallest two-sided p-value these numbers of rollouts can
	// give at all (2 / C(na+nb, na) when exact): a test with MinP above the
	// level can never declare a difference, however large.
	MinP float64
	// Exact is true when every relabelling was counted, false when they
	// were sampled (permutationSamples of them, a fixed seed).
	Exact bool
}

// permutationLimit is the most relabellings counted one by one; above it
// permutationSamples are drawn.
const (
	permutationLimit   = 200_000
	permutationSamples = 100_000
)

// PermutationTest compares the per-rollout drop rates of a and b without
// assuming requests fail independently: drops come in bursts, one burst
// per rollout, so the rollout is the unit. Under "no difference" any split
// of the na+nb rollouts into groups of na and nb is as likely as the one
// observed; the p-values are the share of splits whose difference in mean
// rate is at least as extreme. It needs a rollout on each side; otherwise
// every p-value is NaN.
func PermutationTest(a, b []Rollout) Permutation {
	na, nb := len(a), len(b)
	p := Permutation{Diff: math.NaN(), Greater: math.NaN(), Less: math.NaN(), TwoSided: math.NaN(), MinP: math.NaN()}
	if na == 0 || nb == 0 {
		return p
	}
	rates := make([]float64, 0, na+nb)
	for _, r := range a {
		rates = append(rates, r.Rate())
	}
	for _, r := range b {
		rates = append(rates, r.Rate())
	}
	total := 0.0
	for _, x := range rates {
		total += x
	}
	diff := func(sumA float64) float64 { return sumA/float64(na) - (total-sumA)/float64(nb) }
	sumA := 0.0
	for _, x := range rates[:na] {
		sumA += x
	}
	p.Diff = diff(sumA)
	// Ties count as extreme; a relative tolerance absorbs float rounding.
	eps := 1e-9 * (math.Abs(p.Diff) + 1e-12)

	var greater, less, two, n float64
	count := func(s float64) {
		d := diff(s)
		n++
		if d >= p.Diff-eps {
			greater++
		}
		if d <= p.Diff+eps {
			less++
		}
		if math.Abs(d) >= math.Abs(p.Diff)-eps {
			two++
		}
	}
	splits := math.Exp(lchoose(float64(na+nb), float64(na)))
	p.MinP = math.Min(1, 2/splits)
	if splits <= permutationLimit {
		p.Exact = true
		combinations(len(rates), na, func(idx []int) {
			s := 0.0
			for _, i := range idx {
				s += rates[i]
			}
			count(s)
		})
	} else {
		rng := rand.New(rand.NewPCG(1, 2))
		perm := make([]int, len(rates))
		for k := 0; k < permutationSamples; k++ {
			for i := range perm {
				perm[i] = i
			}
			// A partial Fisher-Yates shuffle picks group a.
			s := 0.0
			for i := 0; i < na; i++ {
				j := i + rng.IntN(len(perm)-i)
				perm[i], perm[j] = perm[j], perm[i]
				s += rates[perm[i]]
			}
			count(s)
		}
		// The observed split counts once more (so no p-value is 0).
		count(sumA)
	}
	p.Greater, p.Less, p.TwoSided = greater/n, less/n, two/n
	return p
}

// combinations calls fn with every k-subset of 0..n-1, in lexicographic
// order; fn must not keep idx.
func combinations(n, k int, fn func(idx []int)) {
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	for {
		fn(idx)
		i := k - 1
		for i >= 0 && idx[i] == n-k+i {
			i--
		}
		if i < 0 {
			return
		}
		idx[i]++
		for j := i + 1; j < k; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}

// RolloutsForPermutation is the fewest rollouts per variant (the same for
// both) at which a two-sided permutation test at level alpha can declare a
// difference at all: the smallest m with 2 / C(2m, m) < alpha. It is 4 at
// alpha 0.05 (2/70), whatever the effect.
func RolloutsForPermutation(alpha float64) int {
	if !(alpha > 0 && alpha < 1) {
		return -1
	}
	for m := 1; ; m++ {
		if 2/math.Exp(lchoose(float64(2*m), float64(m))) < alpha {
			return m
		}
	}
}
