package dp

import (
	"fmt"
	"math"
)

// AboveThreshold runs the sparse vector technique (SVT, Dwork et al. 2009;
// Dwork–Roth 2014 Alg. 1; Dong–Sun–Yi Lemma 3.8) over the queries
// f(1), f(2), …, f(n): it draws a noisy threshold T̃ = T + Lap(2Δ/ε) and
// returns the first ℓ with f(ℓ) + Lap(4Δ/ε) ≥ T̃, or 0 if no ℓ ≤ n
// qualifies. The index is 1-based, as in the paper. The whole run is ε-DP
// when every f(ℓ) has sensitivity Δ, however many queries it asks
// (the queries need not be monotone). Utility (Lemma 3.8, Δ = 1): if some
// f(k) ≥ T + (6/ε)·ln(2/β), then with probability ≥ 1 − β it returns
// ℓ ≤ k with f(ℓ) ≥ T − (6/ε)·ln(2k/β).
//
// Only the index is released; f is called once per ℓ in order, stopping at
// the answer, and its error (for instance a failed SQL query) is returned
// as is. Floating-point safety: Laplace noise in float64; only an index is
// published, so Mironov's low-order-bit attack does not apply directly, but
// the noise distribution is the float64 approximation of Laplace.
func AboveThreshold(src Source, f func(l int) (float64, error), n int, threshold, eps, sens float64) (int, error) {
	bT, bV, err := svtScales(n, threshold, eps, sens)
	if err != nil {
		return 0, err
	}
	tt := threshold + Laplace(src, bT)
	for l := 1; l <= n; l++ {
		v := Laplace(src, bV)
		fl, err := f(l)
		if err != nil {
			return 0, err
		}
		if fl+v >= tt {
			return l, nil
		}
	}
	return 0, nil
}

// AboveThresholdJumpStart is SVT with jump start (Dong–Sun–Yi Alg. 3): the
// same mechanism as [AboveThreshold], executed so that fewer queries are
// evaluated when f is non-decreasing in ℓ and k is a good guess of the
// stopping index (k may depend on private data). It draws T̃ and the noises
// v_1..v_k first (in that order, as AboveThreshold would), walks back from
// k evaluating f(ℓ) only when f' + v_ℓ ≥ T̃ for the last evaluated f' (by
// monotonicity a skipped f(ℓ) ≤ f' cannot cross), then runs forward as
// AboveThreshold. Its output distribution — and, for the same source state,
// its output — equals that of AboveThreshold, so it is ε-DP for queries of
// sensitivity Δ. That argument needs f non-decreasing: for a non-monotone
// f a skipped f(ℓ) is replaced by a later query's value, and which one
// depends on the noise, so the SVT proof no longer covers the output; do
// not call it with a non-monotone f. k is clamped to [0, n].
func AboveThresholdJumpStart(src Source, f func(l int) (float64, error), n, k int, threshold, eps, sens float64) (int, error) {
	bT, bV, err := svtScales(n, threshold, eps, sens)
	if err != nil {
		return 0, err
	}
	k = max(0, min(k, n))
	tt := threshold + Laplace(src, bT)
	v := make([]float64, k+1)
	for l := 1; l <= k; l++ {
		v[l] = Laplace(src, bV)
	}
	fv := make([]float64, k+1)
	fprime := math.Inf(1)
	for l := k; l >= 1; l-- {
		if fprime+v[l] < tt {
			fv[l] = fprime // f(ℓ) ≤ f' and f' + v_ℓ < T̃: below either way
			continue
		}
		fl, err := f(l)
		if err != nil {
			return 0, err
		}
		fv[l], fprime = fl, fl
	}
	for l := 1; l <= n; l++ {
		var vl, fl float64
		if l <= k {
			vl, fl = v[l], fv[l]
		} else {
			vl = Laplace(src, bV)
			if fl, err = f(l); err != nil {
				return 0, err
			}
		}
		if fl+vl >= tt {
			return l, nil
		}
	}
	return 0, nil
}

// svtScales validates SVT parameters and returns the threshold and query
// noise scales 2Δ/ε and 4Δ/ε.
func svtScales(n int, threshold, eps, sens float64) (float64, float64, error) {
	if err := checkPositive("epsilon", eps); err != nil {
		return 0, 0, err
	}
	if err := checkPositive("sensitivity", sens); err != nil {
		return 0, 0, err
	}
	if math.IsNaN(threshold) || math.IsInf(threshold, 0) {
		return 0, 0, fmt.Errorf("%w: threshold = %v, want a finite number", ErrInvalidParameter, threshold)
	}
	if n < 0 {
		return 0, 0, fmt.Errorf("%w: n = %d queries, want ≥ 0", ErrInvalidParameter, n)
	}
	return 2 * sens / eps, 4 * sens / eps, nil
}
