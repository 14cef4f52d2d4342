package stats

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// PFloor is the smallest p-value FormatP prints as a number; anything
// smaller is printed as "p < 1e-16".
const PFloor = 1e-16

// FormatP formats a p-value for people: two significant digits ("p = 0.41",
// "p = 0.0028", "p = 3.2e-5"), "p < 1e-16" below PFloor, and "p = n/a" for
// NaN (a test that could not be run).
func FormatP(p float64) string {
	switch {
	case math.IsNaN(p):
		return "p = n/a"
	case p < PFloor:
		return "p < 1e-16"
	}
	return "p = " + FormatSig(p, 2)
}

// FormatSig formats x with sig significant digits, the way droprun prints
// rates and ratios: plain decimals between 1e-4 and 1e6 ("0.0014", "1.97",
// "120"), otherwise a short exponent form ("1.4e-5", "2.5e7"). Trailing zeros
// are dropped; ±Inf prints as "∞" or "-∞".
func FormatSig(x float64, sig int) string {
	if sig < 1 {
		sig = 1
	}
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "∞"
	case math.IsInf(x, -1):
		return "-∞"
	case x == 0:
		return "0"
	}
	// Round to sig digits first; the exponent of the rounded value decides
	// the form (0.09996 rounds to 0.1, not 0.100).
	s := strconv.FormatFloat(x, 'e', sig-1, 64)
	mant, expStr, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(expStr)
	if exp >= -4 && exp < 6 {
		v, _ := strconv.ParseFloat(s, 64)
		return trimZeros(strconv.FormatFloat(v, 'f', max(0, sig-1-exp), 64))
	}
	return trimZeros(mant) + "e" + strconv.Itoa(exp)
}

// FormatPercent formats a fraction as a percentage with sig significant
// digits: 0.055 → "5.5%".
func FormatPercent(fraction float64, sig int) string { return FormatSig(fraction*100, sig) + "%" }

// FormatSigUp is FormatSig after rounding x > 0 up at its sig-th significant
// digit, for upper bounds that must not be understated.
func FormatSigUp(x float64, sig int) string {
	if !(x > 0) || math.IsInf(x, 0) {
		return FormatSig(x, sig)
	}
	_, expStr, _ := strings.Cut(strconv.FormatFloat(x, 'e', 16, 64), "e")
	exp, _ := strconv.Atoi(expStr)
	scale := math.Pow(10, float64(sig-1-exp))
	// The tiny shrink keeps values that are exact at sig digits (0.95) from
	// being bumped by representation error.
	return FormatSig(math.Ceil(x*scale*(1-1e-12))/scale, sig)
}

// trimZeros drops trailing zeros after a decimal point, and the point.
func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// FormatCount formats n with thousands separators: 214000 → "214,000".
func FormatCount(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// formatPercent formats a confidence level as a percentage: 0.95 → "95%",
// 0.999 → "99.9%".
func formatPercent(conf float64) string {
	v := math.Round(conf*100*1e6) / 1e6
	return strconv.FormatFloat(v, 'f', -1, 64) + "%"
}

// FormatSeconds formats a short duration given in seconds: "12 ms",
// "250 ms", "1.5 s", "29.7 s" (a value that rounds to 1000 ms is "1.0 s").
func FormatSeconds(s float64) string {
	if ms := math.Round(s * 1000); ms < 1000 {
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.1f s", s)
}
