package dp

import (
	"fmt"
	"math"
)

// Tau returns τ(ε, δ, Δ) = (Δ/ε)·ln(1 + (e^ε − 1)/δ), the shift of the
// truncated Laplace mechanism (Ghazi et al. §2, the TLap mechanism): with
// scale b = Δ/ε, the noise TLap^τ_b on [0, 2τ] added to a value of
// sensitivity Δ is (ε, δ)-DP and never lowers the value.
func Tau(eps, delta, sens float64) (float64, error) {
	if err := checkMechanism(eps, delta, sens); err != nil {
		return 0, err
	}
	// ln(1 + (e^ε−1)/δ) computed with Expm1 and Log1p to stay exact for
	// small ε and δ.
	t := sens / eps * math.Log1p(math.Expm1(eps)/delta)
	if math.IsInf(t, 0) || math.IsNaN(t) {
		return 0, fmt.Errorf("%w: tau(ε=%v, δ=%v, Δ=%v) overflows", ErrInvalidParameter, eps, delta, sens)
	}
	return t, nil
}

// TLap draws from TLap^τ_b: the Laplace distribution with scale b centred at
// τ and truncated to [0, 2τ] (density ∝ exp(−|x−τ|/b) there). It samples by
// exact inversion: a fair side, then the distance from τ from an exponential
// truncated to [0, τ]; no rejection loop. The result always lies in
// [0, 2τ].
//
// Floating-point safety: float64 arithmetic, NOT hardened against
// Mironov's attack: a value padded with TLap and published lets a reader
// rule out neighbours from the low bits. Never publish its output or a
// value padded with it; use [TruncatedDiscreteLaplace] (integers) or
// [LogPad] (multiplicative bounds) instead (DESIGN.md §3, invariant 6).
// It panics if b or τ is not finite and positive (τ = 0 returns 0).
func TLap(src Source, tau, b float64) float64 {
	if !(b > 0) || math.IsInf(b, 0) || !(tau >= 0) || math.IsInf(tau, 0) {
		panic("dp: TLap needs finite b > 0 and tau >= 0")
	}
	if tau == 0 {
		return 0
	}
	side := src.Uint64()&1 == 0
	u := Uniform(src)
	// Inverse CDF of the exponential with rate 1/b truncated to [0, τ]:
	// d = −b·ln(1 − u·(1 − e^{−τ/b})).
	d := -b * math.Log1p(u*math.Expm1(-tau/b))
	d = math.Min(math.Max(d, 0), tau)
	if side {
		return tau + d
	}
	return tau - d
}
