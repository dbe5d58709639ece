package dp

import "math"

// Laplace draws from the Laplace distribution with mean 0 and scale b > 0,
// by inversion of its CDF. Adding Laplace(Δ/ε) to a value of L1 sensitivity Δ
// is ε-DP (Dwork et al. 2006).
//
// Floating-point safety: this sampler works on float64 and is NOT hardened
// against the attack of Mironov (CCS 2012) on the low-order bits of the
// output; use [DiscreteLaplace] for integer-valued releases where that
// matters. No mechanism calls it (tests, audit baselines and the float
// [AboveThreshold] do). It panics if b is not a finite positive number
// (programmer error).
func Laplace(src Source, b float64) float64 {
	if !(b > 0) || math.IsInf(b, 0) {
		panic("dp: Laplace scale must be finite and > 0")
	}
	u := uniformSigned(src)
	if u < 0 {
		return b * math.Log1p(2*u)
	}
	return -b * math.Log1p(-2*u)
}
