package dp

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Gaussian draws from the normal distribution with mean 0 and standard
// deviation σ > 0. It runs the ziggurat sampler of math/rand/v2 on a
// generator that reads src (never the math/rand globals). Adding
// Gaussian(σ) with σ from [SigmaAnalytic] (or [SigmaClassical]) to a vector
// of L2 sensitivity Δ is (ε, δ)-DP; with σ from [SigmaForRho] it is
// ρ-zCDP (Bun–Steinke 2016, Prop. 1.6).
//
// Floating-point safety: float64 arithmetic, NOT hardened against the
// attack of Mironov (CCS 2012) on the low-order bits of the released value;
// use [DiscreteGaussian] for integer-valued releases where that matters.
// It panics if σ is not finite and positive (programmer error).
func Gaussian(src Source, sigma float64) float64 {
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		panic("dp: Gaussian sigma must be finite and > 0")
	}
	r := rand.New(src)
	return sigma * r.NormFloat64()
}

// SigmaClassical returns σ = Δ·√(2·ln(1.25/δ))/ε, the classical calibration
// of the Gaussian mechanism (Dwork–Roth 2014, Thm. A.1): adding N(0, σ²) to
// a value of L2 sensitivity Δ is (ε, δ)-DP. The theorem holds only for
// ε < 1, so larger ε is an error. It is a documented alternative to
// [SigmaAnalytic], which is never larger and is valid for every ε.
func SigmaClassical(eps, delta, sens float64) (float64, error) {
	if err := checkMechanism(eps, delta, sens); err != nil {
		return 0, err
	}
	if eps >= 1 {
		return 0, fmt.Errorf("%w: epsilon = %v, the classical Gaussian bound needs epsilon < 1 (use SigmaAnalytic)", ErrInvalidParameter, eps)
	}
	return sens * math.Sqrt(2*math.Log(1.25/delta)) / eps, nil
}

// SigmaAnalytic returns the smallest σ (up to a relative 1e-12, always
// rounded up) for which the Gaussian mechanism N(0, σ²) on a value of L2
// sensitivity Δ is (ε, δ)-DP: the analytic Gaussian mechanism of Balle and
// Wang (ICML 2018, Thm. 8). The mechanism is (ε, δ)-DP if and only if
//
//	Φ(Δ/(2σ) − εσ/Δ) − e^ε·Φ(−Δ/(2σ) − εσ/Δ) ≤ δ,
//
// with Φ the standard normal CDF. The left side decreases in σ, so this
// function brackets the root and bisects on that exact condition (Φ through
// math.Erfc) instead of using Balle–Wang's closed-form reparametrisation;
// the returned σ satisfies the condition as evaluated in float64. It is
// valid for every ε > 0, unlike [SigmaClassical].
//
// It is for the continuous Gaussian N(0, σ²) only. The discrete Gaussian
// N_ℤ(0, σ²) ([DiscreteGaussian]) with this σ is not (ε, δ)-DP at a shift
// of exactly Δ: its δ there is up to 1.2–1.7 times the target. Calibrate
// the discrete Gaussian through zCDP instead (σ = Δ/√(2ρ) with
// ρ = [RhoForBudget]; Canonne, Kamath and Steinke 2020, Thm. 14).
func SigmaAnalytic(eps, delta, sens float64) (float64, error) {
	if err := checkMechanism(eps, delta, sens); err != nil {
		return 0, err
	}
	// Work with Δ = 1 and scale at the end: the condition depends on σ/Δ.
	ok := func(s float64) bool { return gaussianDelta(eps, s) <= delta }
	hi := 1.0
	for i := 0; !ok(hi); i++ {
		if i > 2000 {
			return 0, fmt.Errorf("%w: no finite sigma for epsilon = %v, delta = %v", ErrInvalidParameter, eps, delta)
		}
		hi *= 2
	}
	lo := hi / 2
	for i := 0; ok(lo); i++ {
		if i > 2000 || lo == 0 {
			break
		}
		hi, lo = lo, lo/2
	}
	// ok(hi) holds, ok(lo) does not (or lo underflowed).
	for i := 0; i < 200 && hi-lo > 1e-12*hi; i++ {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return sens * hi, nil
}

// gaussianDelta returns the exact δ of the Gaussian mechanism with noise σ
// on sensitivity 1 at privacy level ε (Balle–Wang 2018, Thm. 8).
func gaussianDelta(eps, sigma float64) float64 {
	a := 1/(2*sigma) - eps*sigma
	b := -1/(2*sigma) - eps*sigma
	// e^ε·Φ(b) in log space so that large ε does not overflow.
	t2 := 0.0
	if pb := normalCDF(b); pb > 0 {
		t2 = math.Exp(eps + math.Log(pb))
	}
	return normalCDF(a) - t2
}

// normalCDF is Φ(x) = erfc(−x/√2)/2, accurate in the lower tail.
func normalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
