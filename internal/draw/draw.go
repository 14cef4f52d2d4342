// Package draw draws from the distributions droprun's simulations need
// (the coverage tests of harness/stats, the gate's operating
// characteristics in harness/gate/opchar): exact, seeded by the caller.
package draw

import (
	"math"
	"math/rand/v2"
)

// Gamma draws from Gamma(shape, 1) (Marsaglia and Tsang 2000; a shape
// below 1 is boosted by U^(1/shape)); 0 for a shape of 0 or less.
func Gamma(rng *rand.Rand, shape float64) float64 {
	if shape <= 0 {
		return 0
	}
	if shape < 1 {
		return Gamma(rng, shape+1) * math.Pow(rng.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		if u := rng.Float64(); math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

// Binomial draws from Binomial(n, p) by geometric gaps between
// successes: exact, and O(successes).
func Binomial(rng *rand.Rand, n uint64, p float64) uint64 {
	if p <= 0 {
		return 0
	}
	if p >= 1 {
		return n
	}
	lq := math.Log1p(-p)
	var k uint64
	pos := 0.0
	for {
		pos += math.Floor(math.Log(1-rng.Float64())/lq) + 1
		if pos > float64(n) {
			return k
		}
		k++
	}
}
