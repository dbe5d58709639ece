package dp

import "math"

// ClipLadder returns the public ladder of per-unit clips ⌈2^(j/2)⌉,
// j = 0, 1, …, without repeats, up to top (≥ 1): 1, 2, 3, 4, 6, 8, 12, 16,
// 23, 32, …; top itself ends the ladder when it is not on it. The unit
// release's row count and synth answer's clipped mechanism choose their
// clip C from it with [ChooseClip].
func ClipLadder(top int64) []int64 {
	top = max(top, 1)
	var out []int64
	for j := 0; ; j++ {
		c := int64(math.Ceil(math.Pow(2, float64(j)/2) - 1e-9))
		if c > top {
			break
		}
		if len(out) == 0 || out[len(out)-1] != c {
			out = append(out, c)
		}
	}
	if out[len(out)-1] != top {
		out = append(out, top)
	}
	return out
}

// ClipScores returns the scores of the clip's exponential mechanism over a
// ladder: −above(C_j) − λ·j, where above(C) is the number of units whose
// contribution exceeds C. Deleting a unit lowers one above(C_j) by at most
// one and leaves the public penalty λ·j alone: the scores have sensitivity
// 1 under the unit neighbour relation. The penalty makes a step up the
// ladder (√2 times the noise of a count clipped at C) pay only when it
// brings at least λ more units under the clip, and stops the plateau of
// large clips that clip nobody from outweighing the right one however long
// the ladder is (the weights fall by e^{−ε·λ/2} a step there).
func ClipScores(ladder []int64, above func(c int64) float64, lambda float64) []float64 {
	scores := make([]float64, len(ladder))
	for j, c := range ladder {
		scores[j] = -above(c) - lambda*float64(j)
	}
	return scores
}

// ChooseClip draws the index of a clip from ladder by the exponential
// mechanism ([ExponentialGrid], exact) on [ClipScores] with penalty
// λ = 1/eps: eps-DP under the unit neighbour relation (score sensitivity
// 1). trueArgmax (a planted bug for the audits, never set in production)
// returns the best score's index instead, with no noise.
func ChooseClip(src Source, ladder []int64, above func(c int64) float64, eps float64, trueArgmax bool) int {
	return pickClip(src, ClipScores(ladder, above, 1/eps), eps, false, trueArgmax)
}

// ChooseClipPenalty draws the index of a clip from ladder by the monotone
// exponential mechanism ([ExponentialGridMonotone], exact) on
// [ClipScores] with a step penalty λ of the caller's choosing: eps-DP
// under the unit neighbour relation for every λ that depends only on
// public values and on DP outputs released before the draw. The scores
// qualify: deleting a unit lowers above(C_j) by one or leaves it for
// every j at once (above counts units, and no other unit's rows change),
// so every score rises by 0 or 1 and none falls; each is an integer count
// less a public penalty, computed by monotone float operations. At λ =
// 1/(2·eps) it is distributed as ChooseClip at 2·eps (the same weights,
// e^{−1/2} a step on the plateau above every unit). trueArgmax as in
// ChooseClip.
func ChooseClipPenalty(src Source, ladder []int64, above func(c int64) float64, eps, lambda float64, trueArgmax bool) int {
	return pickClip(src, ClipScores(ladder, above, lambda), eps, true, trueArgmax)
}

// pickClip draws an index by the exponential mechanism on scores of
// sensitivity 1 (monotone or not), or with trueArgmax (a planted bug)
// returns the best score's.
func pickClip(src Source, scores []float64, eps float64, monotone, trueArgmax bool) int {
	if trueArgmax {
		best := 0
		for j, s := range scores {
			if s > scores[best] {
				best = j
			}
		}
		return best
	}
	if monotone {
		return ExponentialGridMonotone(src, scores, eps, 1)
	}
	return ExponentialGrid(src, scores, eps, 1, 0)
}
