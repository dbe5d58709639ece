package multi

import (
	"math"

	"github.com/synth-dp/synth/dp"
)

// SVTTrace records which queries an [SVT] run evaluated.
//
// NOT differentially private: with the jump start the walk begins at a
// guess k that may be computed from the private data (Alg. 3), and which
// f(ℓ) were computed depends on the unnoised values. Only the index [SVT]
// returns is DP. A trace is for the data custodian's diagnostics and tests
// only; never publish it.
type SVTTrace struct {
	// Evaluated lists the indices ℓ whose f(ℓ) was computed, in order.
	Evaluated []int
	// Skipped is the number of indices ℓ ≤ k the jump start never
	// computed.
	Skipped int
}

// SVT is the sparse vector technique with jump start (Dong–Sun–Yi Alg. 3)
// over the queries f(1), …, f(n) of sensitivity 1 that are non-decreasing
// in ℓ: it draws T̃ = T + Lap(2/ε), then v_k, …, v_1 ~ Lap(4/ε) … in the
// order of [dp.AboveThresholdJumpStart] (so that, on the same source, it
// returns the same index as [dp.AboveThresholdJumpStart] and
// [dp.AboveThreshold]), walks back from k computing f(ℓ) only while
// f' + v_ℓ ≥ T̃ for the last computed f' (a skipped f(ℓ) ≤ f' stays below
// the threshold), and returns the first ℓ with f(ℓ) + v_ℓ ≥ T̃, or 0.
//
// # Guarantee
//
// ε-DP for every instance when each f(ℓ) has sensitivity 1 (Lyu et al.
// 2017, Alg. 1 with c = 1; Dong–Sun–Yi Lemma 3.8): the output is that of
// plain AboveThreshold, only fewer queries are computed, and that saving
// needs f non-decreasing (for a non-monotone f the walk would substitute a
// later value for a skipped one, which the proof does not cover). k may
// depend on the private data. Only the index is released.
//
// Floating-point note: the noise is the float64 Laplace of package dp; only
// the index is published, so no noisy value leaves the process.
func SVT(src dp.Source, f func(l int) (float64, error), n, k int, threshold, eps float64, trace *SVTTrace) (int, error) {
	return svt(src, f, n, k, threshold, eps, trace, false)
}

// svt is [SVT] with the mutation knob of the audit test: noThresholdNoise
// compares against the bare threshold T (the flawed SVT whose privacy loss
// grows with the number of queries below the threshold).
func svt(src dp.Source, f func(l int) (float64, error), n, k int, threshold, eps float64, trace *SVTTrace, noThresholdNoise bool) (int, error) {
	if !(eps > 0) || math.IsInf(eps, 0) {
		return 0, invalid("SVT ε = %v, want a finite number > 0", eps)
	}
	if math.IsNaN(threshold) || math.IsInf(threshold, 0) {
		return 0, invalid("SVT threshold = %v, want a finite number", threshold)
	}
	if n < 0 {
		return 0, invalid("SVT over %d queries", n)
	}
	if trace == nil {
		trace = &SVTTrace{}
	}
	bT, bV := 2/eps, 4/eps
	k = max(0, min(k, n))
	tt := threshold + dp.Laplace(src, bT)
	if noThresholdNoise {
		tt = threshold
	}
	v := make([]float64, k+1)
	for l := 1; l <= k; l++ {
		v[l] = dp.Laplace(src, bV)
	}
	fv := make([]float64, k+1)
	fprime := math.Inf(1)
	for l := k; l >= 1; l-- {
		if fprime+v[l] < tt {
			fv[l] = fprime // f(ℓ) ≤ f' and f' + v_ℓ < T̃
			trace.Skipped++
			continue
		}
		fl, err := f(l)
		if err != nil {
			return 0, err
		}
		trace.Evaluated = append(trace.Evaluated, l)
		fv[l], fprime = fl, fl
	}
	for l := 1; l <= n; l++ {
		var vl, fl float64
		if l <= k {
			vl, fl = v[l], fv[l]
		} else {
			vl = dp.Laplace(src, bV)
			var err error
			if fl, err = f(l); err != nil {
				return 0, err
			}
			trace.Evaluated = append(trace.Evaluated, l)
		}
		if fl+vl >= tt {
			return l, nil
		}
	}
	return 0, nil
}
