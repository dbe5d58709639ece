package dp

import (
	"math"
	"math/big"
	"math/bits"
)

// ExpGridSteps is the resolution of [ExponentialGrid]: the score grid γ
// is the power of two with sens/2·ExpGridSteps < γ ≤ sens/ExpGridSteps
// (unless the float error bound asks for a coarser one), so a score's
// sensitivity is at most ExpGridSteps + 1 grid steps.
const ExpGridSteps = 1024

// expGridLimit bounds |score|/γ: scores are clamped to ±2⁵⁰·γ so that
// every grid index and every difference of two fits an int64 exactly.
const expGridLimit = 1 << 50

// ExponentialGrid is the exponential mechanism (McSherry–Talwar 2007)
// sampled exactly, with integer arithmetic only: it returns index i with
// probability proportional to exp(ε′·k_i/(2K)), where
//
//   - γ is a public power-of-two grid: the smallest power of two
//     ≥ sens/[ExpGridSteps] and ≥ 8·errBound;
//   - k_i = ⌊clamp(scores[i], ±2⁵⁰·γ)/γ⌋, the score on the grid;
//   - K = ⌈sens/γ⌉ + 1, the grid scores' sensitivity (below);
//   - ε′ ≤ ε is ε rounded down to the dyadic rate ε′/(2K) = p/2^s with
//     p < 2⁶⁴, s ≤ 63 (so ε − ε′ < 2K/2⁶³: relative 10⁻⁷ at ε = 10⁻⁹,
//     K = 1025, and less for larger ε).
//
// Scores that are NaN or −Inf are never selected unless all are (then it
// returns 0, as [Exponential] does).
//
// # Guarantee
//
// ε-DP (and ε-bounded-range, Durfee–Rogers 2019, so ε²/8-zCDP) when every
// computed score is within errBound of a function of the data of
// sensitivity sens. Proof: for neighbours D, D′ the computed scores satisfy
// |s − s′| ≤ sens + 2·errBound ≤ sens + γ/4; clamping is 1-Lipschitz and
// ⌊x⌋ − ⌊y⌋ ≤ ⌊x − y⌋ + 1, so |k − k′| ≤ ⌊sens/γ + 1/4⌋ + 1 ≤
// ⌈sens/γ⌉ + 1 = K. The exponential mechanism on integer scores of
// sensitivity K at ε′ is ε′-DP, ε′ ≤ ε. The selection is exact: a
// candidate is proposed uniformly (Lemire's exact method) and accepted with
// probability exp(−(k* − k_i)·p/2^s), k* the largest k, by the exact
// Bernoulli(e^−γ) of Canonne–Kamath–Steinke 2020 (Alg. 1) on the rational
// exponent; the accepted index has exactly the target distribution. Unlike
// [Exponential], whose float64 Gumbel noise is bounded (so some selection
// probabilities that should be positive are exactly 0, breaking pure DP
// in the far tail) and only approximately distributed, nothing here is
// rounded after the grid (DESIGN.md §3, invariant 6). The single
// approximation is a whole exponent ⌊(k* − k_i)·p/2^s⌋ above 2⁶⁴ − 1,
// held at 2⁶⁴ − 1: such a candidate gets a larger probability than the
// target's, still below e^(−(2⁶⁴−1)) (reachable only when ε/(2K) ≥ 2¹³,
// as k* − k_i ≤ 2⁵¹; the proof above is for the uncapped mechanism).
//
// Cost: expected proposals n/Σ_i e^(−(k*−k_i)·p/2^s) ≤ n (n the eligible
// candidates; the best alone accepts with probability 1), each a few
// random words; no allocation proportional to n unless some score is
// ineligible (then 8 B an eligible candidate).
//
// Timing (outside the DP model, which covers the returned index only): the
// number of proposals is geometric with success probability Σ_i w_i/n,
// w_i = e^(−(k*−k_i)·p/2^s), independent of the returned index; between
// neighbours Σ_i w_i changes by a factor of at most e^ε′ (e^(−k*·p/2^s)
// and Σ_i e^(k_i·p/2^s) by e^(K·p/2^s) ≤ e^(ε′/2) each), so the running
// time — about one proposal when the scores are close, about n when one
// candidate dominates — is a side channel about Σ_i w_i for an observer
// who can time the call. Callers whose adversary sees timings should treat it
// as such; an exact mechanism of fixed running time (Ilvento's base-2
// exponential mechanism, CCS 2020: exact sums, O(n), no rejection) would
// remove it.
//
// It panics on an empty slice, non-finite or non-positive ε or sens, or a
// negative or non-finite errBound (programmer error).
func ExponentialGrid(src Source, scores []float64, eps, sens, errBound float64) int {
	if len(scores) == 0 {
		panic("dp: ExponentialGrid over no candidates")
	}
	if !(eps > 0) || !(sens > 0) || math.IsInf(eps, 0) || math.IsInf(sens, 0) || !(errBound >= 0) || math.IsInf(errBound, 0) {
		panic("dp: ExponentialGrid needs finite eps > 0, sens > 0 and errBound ≥ 0")
	}
	g := ExpGrid(sens, errBound)
	p, s := expGridRate(eps, ExpGridSensitivity(sens, g))
	return expGridSelect(src, scores, g, p, s)
}

// ExpGrid returns the grid γ of [ExponentialGrid] for a score sensitivity
// and float error bound: the smallest power of two ≥ sens/[ExpGridSteps]
// and ≥ 8·errBound.
func ExpGrid(sens, errBound float64) float64 {
	return max(pow2AtLeast(sens/ExpGridSteps), pow2AtLeast(8*errBound))
}

// ExpGridSensitivity returns K = ⌈sens/γ⌉ + 1, the sensitivity in grid
// steps of a score of sensitivity sens computed within γ/8.
func ExpGridSensitivity(sens, grid float64) int64 {
	return int64(math.Ceil(sens/grid)) + 1
}

// GridScores returns ⌊clamp(s, ±2⁵⁰·γ)/γ⌋ for every score and whether
// the score is eligible (not NaN or −Inf).
func GridScores(scores []float64, grid float64) ([]int64, []bool) {
	k := make([]int64, len(scores))
	ok := make([]bool, len(scores))
	for i, s := range scores {
		k[i], ok[i] = gridScore(s, grid)
	}
	return k, ok
}

// gridScore is one score of [GridScores].
func gridScore(s, grid float64) (int64, bool) {
	if math.IsNaN(s) || math.IsInf(s, -1) {
		return 0, false
	}
	lim := expGridLimit * grid
	return int64(math.Floor(math.Max(-lim, math.Min(lim, s)) / grid)), true
}

// pow2AtLeast returns the smallest power of two ≥ x (x > 0), or 0 for
// x ≤ 0.
func pow2AtLeast(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	frac, exp := math.Frexp(x) // x = frac·2^exp, frac ∈ [0.5, 1)
	if frac == 0.5 {
		return x
	}
	return math.Ldexp(1, exp)
}

// expGridRate returns p, s with p/2^s ≤ ε/(2K) exactly, p < 2⁶⁴ and
// s ≤ 63 as large as that allows (p = ⌊ε/(2K)·2^s⌋, computed in exact
// rational arithmetic; p = 2⁶⁴ − 1 when ε/(2K) ≥ 2⁶⁴).
func expGridRate(eps float64, sensGrid int64) (p uint64, s uint) {
	c := new(big.Rat).SetFloat64(eps)
	c.Quo(c, new(big.Rat).SetInt64(2*sensGrid))
	lim := new(big.Int).Lsh(big.NewInt(1), 64)
	t := new(big.Int)
	for s = 63; ; s-- {
		t.Lsh(c.Num(), s)
		t.Quo(t, c.Denom())
		if t.Cmp(lim) < 0 {
			return t.Uint64(), s
		}
		if s == 0 {
			return math.MaxUint64, 0
		}
	}
}

// expGridSelect draws i with probability ∝ exp(−(k* − k_i)·p/2^s) over the
// eligible indices, exactly (see [ExponentialGrid]), k_i the grid score of
// scores[i] ([gridScore]), computed when i is proposed. It allocates
// nothing proportional to len(scores) unless some score is ineligible
// (then the eligible indices, 8 B each).
func expGridSelect(src Source, scores []float64, grid float64, p uint64, s uint) int {
	kmax := int64(math.MinInt64)
	eligible := 0
	for _, sc := range scores {
		if k, ok := gridScore(sc, grid); ok {
			eligible++
			kmax = max(kmax, k)
		}
	}
	if eligible == 0 {
		return 0
	}
	var idx []int // nil: every index is eligible, idx[j] = j
	if eligible < len(scores) {
		idx = make([]int, 0, eligible)
		for i, sc := range scores {
			if _, ok := gridScore(sc, grid); ok {
				idx = append(idx, i)
			}
		}
	}
	mask := uint64(1)<<s - 1
	for {
		i := int(uniformN(src, uint64(eligible)))
		if idx != nil {
			i = idx[i]
		}
		k, _ := gridScore(scores[i], grid)
		diff := uint64(kmax - k) // ≤ 2⁵¹
		hi, lo := bits.Mul64(diff, p)
		// (hi:lo) / 2^s: whole part and remainder.
		var whole uint64
		if s == 0 {
			whole = lo
			if hi != 0 {
				whole = math.MaxUint64
			}
		} else if hi>>s != 0 {
			whole = math.MaxUint64
		} else {
			whole = hi<<(64-s) | lo>>s
		}
		if !bernoulliExpNeg1Times(src, whole) {
			continue
		}
		if s == 0 || bernoulliExpFrac(src, lo&mask, mask+1) {
			return i
		}
	}
}

// ExponentialGridMonotone is [ExponentialGrid] for monotone scores: it
// returns index i with probability proportional to exp(ε′·k_i/K) (twice
// ExponentialGrid's rate; k_i, K and ε′ ≤ ε as there, with errBound 0).
//
// # Guarantee
//
// ε-DP when, for every pair of neighbours D ⊃ D′, the computed scores all
// move the same way: 0 ≤ s_i(D′) − s_i(D) ≤ sens for every i (or all ≤ 0),
// computed by operations monotone in the data (integer counts, or float
// operations of a count with public values: rounding to nearest is
// monotone, so no float error can reverse a move). Proof (McSherry–Talwar
// 2007, the monotone case): flooring keeps the moves one-signed, 0 ≤
// k′_i − k_i ≤ ⌊sens/γ⌋ + 1 ≤ K; with w_i = e^{ε′k_i/K},
// P′(i)/P(i) = e^{ε′(k′_i−k_i)/K} · Σ_j w_j / Σ_j w_j·e^{ε′(k′_j−k_j)/K},
// the first factor in [1, e^{ε′}] and the second in [e^{−ε′}, 1], so the
// ratio is within e^{±ε′}. The ordinary mechanism's factor 2 pays for
// scores that may move both ways between the same neighbours; a score
// like −#{units above C_j} (deleting a unit lowers every count or leaves
// it) cannot. The sampling is ExponentialGrid's, exact. Not ε-bounded-range
// at this rate, so the ε²/8-zCDP remark of ExponentialGrid does not carry
// over: use it in pure-ε compositions.
func ExponentialGridMonotone(src Source, scores []float64, eps, sens float64) int {
	return ExponentialGrid(src, scores, 2*eps, sens, 0)
}
