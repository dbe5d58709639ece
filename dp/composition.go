package dp

import (
	"fmt"
	"math"
)

// AdvancedEpsilon returns the ε of k-fold adaptive composition of ε₀-DP
// mechanisms at slack δ' by the advanced composition theorem (Dwork,
// Rothblum, Vadhan 2010; Dwork–Roth Thm. 3.20):
// ε = √(2k·ln(1/δ'))·ε₀ + k·ε₀·(e^{ε₀} − 1).
func AdvancedEpsilon(eps0 float64, k int, deltaPrime float64) float64 {
	kf := float64(k)
	return math.Sqrt(2*kf*math.Log(1/deltaPrime))*eps0 + kf*eps0*math.Expm1(eps0)
}

// PerStepEpsilon returns the largest ε₀ such that k adaptively composed
// ε₀-DP steps are (ε, δ)-DP, taking the better of basic composition
// (ε₀ = ε/k, δ unused) and advanced composition with slack δ (solved by
// bisection on the monotone [AdvancedEpsilon]). The result never exceeds
// what either theorem allows.
func PerStepEpsilon(eps, delta float64, k int) (float64, error) {
	if err := checkPositive("epsilon", eps); err != nil {
		return 0, err
	}
	if k < 1 {
		return 0, fmt.Errorf("%w: k = %d steps, want ≥ 1", ErrInvalidParameter, k)
	}
	basic := eps / float64(k)
	if delta == 0 {
		return basic, nil
	}
	if err := checkDelta("delta", delta); err != nil {
		return 0, err
	}
	lo, hi := 0.0, eps
	for i := 0; i < 200; i++ {
		mid := (lo + hi) / 2
		if AdvancedEpsilon(mid, k, delta) <= eps {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Max(basic, lo), nil
}
