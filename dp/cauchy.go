package dp

import "math"

// cauchyHalfMass is ∫₀^∞ dt/(1+t⁴) = π/(2√2).
const cauchyHalfMass = math.Pi / (2 * math.Sqrt2)

// Cauchy draws from the general Cauchy distribution with γ = 4 and unit
// scale, density h(z) = (√2/π)/(1 + z⁴) (Nissim–Raskhodnikova–Smith 2007,
// Lemma 2.7; Dong–Yi survey §3.2, footnote 5). With S a β-smooth upper bound
// on the local sensitivity, β = ε/(2(γ+1)) = ε/10 ([CauchyBeta]), the release
// f(I) + (10·S(I)/ε)·Z ([CauchyNoiseScale]) is ε-DP (NRS07 Lemma 2.6: h is
// (ε/10, ε/10)-admissible): the residual-sensitivity mechanism for join
// counts uses it with S = RS^β.
//
// Method: a fair sign, then |Z| by inversion of its tail
// H(x) = ∫ₓ^∞ dt/(1+t⁴), computed in closed form for x < 2 and by its
// alternating series in 1/x for x ≥ 2 (no cancellation in either), solved
// by Newton's method safeguarded with bisection on a bracket, for at most
// 100 iterations: no rejection loop, so it cannot spin. The uniform input
// lies on a 2⁻⁵² grid, so |Z| is at most about 1.4·10⁵ and the tail beyond
// is cut at probability below 2⁻⁵³.
//
// Floating-point safety: float64 inversion, NOT hardened against Mironov's
// attack (CCS 2012) on low-order bits; the pure ε-DP claim holds for the
// ideal real-valued distribution.
func Cauchy(src Source) float64 {
	neg := src.Uint64()&1 == 1
	target := Uniform(src) * cauchyHalfMass
	x := cauchyTailInverse(target)
	if neg {
		return -x
	}
	return x
}

// CauchyBeta returns β = ε/10, the smoothness parameter for the smooth
// sensitivity used with [Cauchy] noise (γ = 4: β = ε/(2(γ+1)), NRS07
// Lemma 2.7).
func CauchyBeta(eps float64) (float64, error) {
	if err := checkPositive("epsilon", eps); err != nil {
		return 0, err
	}
	return eps / 10, nil
}

// CauchyNoiseScale returns 10·S/ε, the factor by which [Cauchy] noise is
// multiplied when S is a β-smooth upper bound on the local sensitivity with
// β = [CauchyBeta](ε); the result is ε-DP (NRS07 Lemmas 2.6 and 2.7).
func CauchyNoiseScale(eps, smoothSens float64) (float64, error) {
	if err := checkPositive("epsilon", eps); err != nil {
		return 0, err
	}
	if err := checkPositive("smooth sensitivity", smoothSens); err != nil {
		return 0, err
	}
	return 10 * smoothSens / eps, nil
}

// cauchyTail returns H(x) = ∫ₓ^∞ dt/(1+t⁴) for x ≥ 0.
func cauchyTail(x float64) float64 {
	if x >= 2 {
		// With t = 1/s: H(x) = ∫₀^{1/x} s²/(1+s⁴) ds
		//             = Σ_k (−1)^k s^(4k+3)/(4k+3), s = 1/x ≤ 1/2.
		s := 1 / x
		s4 := s * s * s * s
		term := s * s * s
		sum := 0.0
		for k := 0; k < 20; k++ {
			sum += term / float64(4*k+3)
			term *= -s4
		}
		return sum
	}
	// H(x) = π/(2√2) − A(x) with the closed-form antiderivative
	// A(x) = [ln((x²+√2x+1)/(x²−√2x+1)) + 2·atan(√2x+1) + 2·atan(√2x−1)]/(4√2);
	// H(x) ≥ H(2) > 0.04 here, so the subtraction loses nothing.
	r := math.Sqrt2 * x
	a := math.Log((x*x+r+1)/(x*x-r+1)) + 2*math.Atan(r+1) + 2*math.Atan(r-1)
	return cauchyHalfMass - a/(4*math.Sqrt2)
}

// cauchyCDF is the CDF of the unit general Cauchy with γ = 4.
func cauchyCDF(x float64) float64 {
	if x < 0 {
		return cauchyTail(-x) / (2 * cauchyHalfMass)
	}
	return 1 - cauchyTail(x)/(2*cauchyHalfMass)
}

// cauchyTailInverse returns x ≥ 0 with H(x) = target, 0 < target ≤ H(0).
func cauchyTailInverse(target float64) float64 {
	// H(x) ≤ 1/(3x³), so H(hi) ≤ target at hi = (3·target)^(−1/3); when
	// that is below 2, target > 1/24 ≥ H(2) and hi = 2 brackets instead.
	lo, hi := 0.0, math.Max(2, math.Cbrt(1/(3*target)))
	x := hi // the tail approximation is the better start for small targets
	if target > 1.0/24 {
		x = math.Max(0, cauchyHalfMass-target) // H(x) ≈ H(0) − x near 0
	}
	for i := 0; i < 100; i++ {
		f := cauchyTail(x) - target
		if f > 0 {
			lo = x
		} else {
			hi = x
		}
		if f == 0 {
			return x
		}
		x4 := x * x * x * x
		next := x + f*(1+x4) // Newton: H'(x) = −1/(1+x⁴)
		if !(next > lo && next < hi) {
			next = lo + (hi-lo)/2
		}
		if math.Abs(next-x) <= 1e-15*math.Max(x, 1e-300) || hi-lo <= 1e-15*hi {
			return next
		}
		x = next
	}
	return x
}
