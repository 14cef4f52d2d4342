package stats

import (
	"math"
	"math/big"
	"slices"
	"testing"
)

// exactBinomCDF is P(Binomial(n, q) ≤ m) in exact rational arithmetic, q
// given as num/den: the reference for binomCDF on small n.
func exactBinomCDF(m, n int, num, den int64) float64 {
	p := big.NewRat(num, den)
	one := big.NewRat(1, 1)
	notp := new(big.Rat).Sub(one, p)
	sum := new(big.Rat)
	for j := 0; j <= m && j <= n; j++ {
		term := new(big.Rat).SetInt(new(big.Int).Binomial(int64(n), int64(j)))
		term.Mul(term, new(big.Rat).SetFrac(new(big.Int).Exp(p.Num(), big.NewInt(int64(j)), nil), new(big.Int).Exp(p.Denom(), big.NewInt(int64(j)), nil)))
		term.Mul(term, new(big.Rat).SetFrac(new(big.Int).Exp(notp.Num(), big.NewInt(int64(n-j)), nil), new(big.Int).Exp(notp.Denom(), big.NewInt(int64(n-j)), nil)))
		sum.Add(sum, term)
	}
	f, _ := sum.Float64()
	return f
}

func TestBinomCDFExact(t *testing.T) {
	for _, n := range []int{1, 2, 10, 59, 120} {
		for _, q := range [][2]int64{{1, 2}, {9, 10}, {95, 100}, {99, 100}} {
			for m := -1; m <= n; m++ {
				got := binomCDF(m, n, float64(q[0])/float64(q[1]))
				want := 0.0
				if m >= 0 {
					want = exactBinomCDF(m, n, q[0], q[1])
				}
				if !near(got, want, 1e-12) {
					t.Fatalf("binomCDF(%d, %d, %d/%d) = %.15g, want %.15g", m, n, q[0], q[1], got, want)
				}
			}
		}
	}
}

// TestBinomCDFLarge: n = 1e5 stays finite and monotone, and matches the
// normal approximation near the mean.
func TestBinomCDFLarge(t *testing.T) {
	const n, q = 100000, 0.99
	mean, sd := n*q, math.Sqrt(n*q*(1-q))
	prev := -1.0
	for m := n - 2000; m < n; m += 50 {
		p := binomCDF(m, n, q)
		if math.IsNaN(p) || p < prev || p > 1 {
			t.Fatalf("binomCDF(%d, %d, %g) = %g after %g", m, n, q, p, prev)
		}
		prev = p
	}
	// Continuity-corrected normal: good to about 1e-3 here.
	m := int(mean + sd)
	want := 1 - 0.5*math.Erfc((float64(m)+0.5-mean)/sd/math.Sqrt2)
	if got := binomCDF(m, n, q); !near(got, want, 5e-3) {
		t.Errorf("binomCDF(%d, %d, %g) = %g, normal approximation %g", m, n, q, got, want)
	}
}

func TestPairsNeeded(t *testing.T) {
	tests := []struct {
		q, conf float64
		want    int
	}{
		{0.95, 0.95, 59},  // the classic "59 samples" rule
		{0.99, 0.95, 299}, // log(0.05)/log(0.99) = 298.07
		{0.90, 0.95, 29},  // 28.4
		{0.99, 0.99, 459}, // 458.2
		{0.5, 0.75, 2},    // 1 − 0.5² = 0.75 exactly
		{0.999, 0.95, 2995},
	}
	for _, tc := range tests {
		if got := PairsNeeded(tc.q, tc.conf); got != tc.want {
			t.Errorf("PairsNeeded(%g, %g) = %d, want %d", tc.q, tc.conf, got, tc.want)
		}
		// The maximum of exactly that many is a bound; one fewer is not.
		vals := make([]float64, tc.want)
		for i := range vals {
			vals[i] = float64(i)
		}
		if _, k, ok := UpperQuantileBound(vals, tc.q, tc.conf); !ok || k != tc.want {
			t.Errorf("UpperQuantileBound(n=%d, %g, %g): k=%d ok=%v, want the maximum", tc.want, tc.q, tc.conf, k, ok)
		}
		if _, _, ok := UpperQuantileBound(vals[:tc.want-1], tc.q, tc.conf); ok {
			t.Errorf("UpperQuantileBound(n=%d, %g, %g) ok with one pair short", tc.want-1, tc.q, tc.conf)
		}
	}
	for _, bad := range [][2]float64{{0, 0.95}, {1, 0.95}, {0.99, 0}, {0.99, 1}, {math.NaN(), 0.95}} {
		if got := PairsNeeded(bad[0], bad[1]); got != -1 {
			t.Errorf("PairsNeeded(%g, %g) = %d, want -1", bad[0], bad[1], got)
		}
	}
}

func TestPairsForRank(t *testing.T) {
	for _, tc := range []struct{ q, conf float64 }{{0.95, 0.95}, {0.99, 0.95}, {0.9, 0.99}} {
		prev := 0
		for r := 0; r <= 5; r++ {
			n := PairsForRank(tc.q, tc.conf, r)
			if n <= prev {
				t.Fatalf("PairsForRank(%g, %g, %d) = %d, not above rank %d's %d", tc.q, tc.conf, r, n, r-1, prev)
			}
			prev = n
			// At n the bound is at most the (r+1)-th largest; at n−1 it is
			// above it (or missing).
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = float64(i)
			}
			if _, k, ok := UpperQuantileBound(vals, tc.q, tc.conf); !ok || k > n-r {
				t.Errorf("q=%g conf=%g r=%d n=%d: k=%d ok=%v, want k <= %d", tc.q, tc.conf, r, n, k, ok, n-r)
			}
			if _, k, ok := UpperQuantileBound(vals[:n-1], tc.q, tc.conf); ok && k <= n-1-r {
				t.Errorf("q=%g conf=%g r=%d n-1=%d already gives k=%d", tc.q, tc.conf, r, n-1, k)
			}
		}
	}
	// 0.95 at 95% by the second largest: 1 − 0.95^n − n·0.05·0.95^(n−1) ≥ 0.95 first at n = 93.
	if got := PairsForRank(0.95, 0.95, 1); got != 93 {
		t.Errorf("PairsForRank(0.95, 0.95, 1) = %d, want 93", got)
	}
}

func TestUpperQuantileBound(t *testing.T) {
	// The median of 10 at 95%: P(Bin(10, 0.5) ≤ 7) = 0.9453, ≤ 8 = 0.9893,
	// so the bound is the 9th smallest (as in tables of order-statistic
	// bounds for the median).
	ten := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if b, k, ok := UpperQuantileBound(ten, 0.5, 0.95); !ok || k != 9 || b != 9 {
		t.Errorf("median of 10 at 95%%: bound %g k %d ok %v, want 9, 9, true", b, k, ok)
	}
	// 100 values, 0.9 quantile at 95%: P(Bin(100, 0.9) ≤ 94) = 0.9424,
	// ≤ 95 = 0.9763: the 96th smallest.
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = 0.001 * float64(i*i) // any increasing values
	}
	b, k, ok := UpperQuantileBound(hundred, 0.9, 0.95)
	if !ok || k != 96 || b != hundred[95] {
		t.Errorf("0.9 of 100 at 95%%: bound %g k %d ok %v, want k 96", b, k, ok)
	}
	// k is the smallest reaching conf, and the bound is one of the values.
	for n := 1; n <= 400; n += 7 {
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = math.Sqrt(float64(i))
		}
		for _, q := range []float64{0.5, 0.9, 0.99} {
			b, k, ok := UpperQuantileBound(vals, q, 0.95)
			if !ok {
				if 1-math.Pow(q, float64(n)) >= 0.95 {
					t.Errorf("n=%d q=%g: not ok, but the maximum covers", n, q)
				}
				continue
			}
			if !slices.Contains(vals, b) || vals[k-1] != b {
				t.Errorf("n=%d q=%g: bound %g is not the %d-th value", n, q, b, k)
			}
			if binomCDF(k-1, n, q) < 0.95 || (k > 1 && binomCDF(k-2, n, q) >= 0.95) {
				t.Errorf("n=%d q=%g: k=%d is not the smallest covering rank", n, q, k)
			}
		}
	}
	for _, bad := range []struct {
		vals    []float64
		q, conf float64
	}{{nil, 0.5, 0.95}, {ten, 0, 0.95}, {ten, 1, 0.95}, {ten, 0.5, 1}, {ten, 0.99, 0.95}} {
		if b, k, ok := UpperQuantileBound(bad.vals, bad.q, bad.conf); ok || k != 0 || !math.IsNaN(b) {
			t.Errorf("UpperQuantileBound(%v, %g, %g) = %g, %d, %v; want NaN, 0, false", bad.vals, bad.q, bad.conf, b, k, ok)
		}
	}
}

// TestUpperQuantileBoundCoverage: over many samples from a known
// distribution the bound is at or above the true quantile at least conf of
// the time (a distribution-free bound covers whatever the shape).
func TestUpperQuantileBoundCoverage(t *testing.T) {
	// A fixed linear congruential sequence: deterministic, no seeds to
	// flake on. Exponential(1): x_q = −ln(1−q).
	state := uint64(12345)
	uniform := func() float64 {
		state = state*6364136223846793005 + 1442695040888963407
		return (float64(state>>11) + 0.5) / (1 << 53)
	}
	const trials, n, q, conf = 2000, 80, 0.9, 0.95
	xq := -math.Log(1 - q)
	covered := 0
	for range trials {
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = -math.Log(1 - uniform())
		}
		slices.Sort(vals)
		b, _, ok := UpperQuantileBound(vals, q, conf)
		if !ok {
			t.Fatal("80 values must bound the 0.9 quantile at 95%")
		}
		if b >= xq {
			covered++
		}
	}
	// Exact coverage is P(Bin(80, 0.9) ≤ k−1) for the k used, ≥ 0.95; allow
	// 3 standard errors of the simulation below it.
	if got := float64(covered) / trials; got < conf-3*math.Sqrt(conf*(1-conf)/trials) {
		t.Errorf("coverage %g over %d samples, want about %g or more", got, trials, conf)
	}
}

func TestMaxSupportedQuantile(t *testing.T) {
	tests := []struct {
		n          int
		conf, want float64
	}{
		{59, 0.95, 0.950492}, // 0.05^(1/59)
		{299, 0.95, 0.990031},
		{1, 0.95, 0.05},
		{10, 0.5, 0.933033},
	}
	for _, tc := range tests {
		got := MaxSupportedQuantile(tc.n, tc.conf)
		if !near(got, tc.want, 1e-6) {
			t.Errorf("MaxSupportedQuantile(%d, %g) = %g, want %g", tc.n, tc.conf, got, tc.want)
		}
		// The maximum of n bounds exactly that quantile.
		if p := 1 - math.Pow(got, float64(tc.n)); !near(p, tc.conf, 1e-12) {
			t.Errorf("1 − q^n at q = %g: %g, want %g", got, p, tc.conf)
		}
	}
	if !math.IsNaN(MaxSupportedQuantile(0, 0.95)) || !math.IsNaN(MaxSupportedQuantile(5, 1)) {
		t.Error("MaxSupportedQuantile with n = 0 or conf = 1 must be NaN")
	}
}

func TestSampleQuantile(t *testing.T) {
	vals := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct{ p, want float64 }{{0, 1}, {0.5, 5}, {0.9, 9}, {0.91, 10}, {1, 10}} {
		if got := SampleQuantile(vals, tc.p); got != tc.want {
			t.Errorf("SampleQuantile(1..10, %g) = %g, want %g", tc.p, got, tc.want)
		}
	}
	if !math.IsNaN(SampleQuantile(nil, 0.5)) || !math.IsNaN(SampleQuantile(vals, 1.5)) {
		t.Error("SampleQuantile of nothing, or p > 1, must be NaN")
	}
}
