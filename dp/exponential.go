package dp

import "math"

// Exponential selects an index i of scores with probability proportional to
// exp(ε·scores[i]/(2Δ)): the exponential mechanism (McSherry–Talwar 2007;
// Ghazi et al. §2), ε-DP when every score has sensitivity Δ. It uses the
// Gumbel-max trick — argmax of ε·s/(2Δ) plus an independent standard Gumbel
// variate — which is exact and numerically stable for scores of any
// magnitude. Scores that are NaN or −Inf are never selected unless all are.
// It panics on an empty slice or non-positive ε or Δ (programmer error).
//
// Floating-point safety: the Gumbel noise is float64; only the index is
// released, so Mironov's low-order-bit attack (CCS 2012) does not apply
// directly, but the selection probabilities are those of the float64
// approximation.
func Exponential(src Source, scores []float64, eps, sens float64) int {
	if len(scores) == 0 {
		panic("dp: Exponential over no candidates")
	}
	if !(eps > 0) || !(sens > 0) || math.IsInf(eps, 0) || math.IsInf(sens, 0) {
		panic("dp: Exponential needs finite eps > 0 and sens > 0")
	}
	c := eps / (2 * sens)
	best, bestV := 0, math.Inf(-1)
	for i, s := range scores {
		if math.IsNaN(s) || math.IsInf(s, -1) {
			continue
		}
		v := c*s + gumbel(src)
		if v > bestV {
			best, bestV = i, v
		}
	}
	return best
}
