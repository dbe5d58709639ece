package dp

import (
	"math/rand/v2"
	"testing"
)

// TestChooseClipPenalty: the clip's scores are monotone under the unit
// neighbour relation, as ChooseClipPenalty needs (brute force: random
// units' row counts, each unit deleted in turn; every computed score rises
// by 0 or 1, within the float rounding of the penalty's subtraction, and
// none falls, exactly), ChooseClipPenalty at ε and λ = 1/(2ε) draws from
// ChooseClip's distribution at 2ε, and with another penalty from that
// penalty's scores (chi-square at level falseFailure, 200,000 draws each
// on one instance).
func TestChooseClipPenalty(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	ladder := ClipLadder(1 << 10)
	aboveOf := func(rows []int64) func(c int64) float64 {
		return func(c int64) float64 {
			var n float64
			for _, x := range rows {
				if x > c {
					n++
				}
			}
			return n
		}
	}
	for trial := 0; trial < 200; trial++ {
		rows := make([]int64, 1+r.IntN(30))
		for i := range rows {
			rows[i] = 1 + r.Int64N(1<<r.IntN(11))
		}
		lambda := 1 / (0.01 + r.Float64())
		s := ClipScores(ladder, aboveOf(rows), lambda)
		for u := range rows {
			rest := append(append([]int64{}, rows[:u]...), rows[u+1:]...)
			s2 := ClipScores(ladder, aboveOf(rest), lambda)
			for j := range s {
				if d := s2[j] - s[j]; d < 0 || d > 1+1e-9 {
					t.Fatalf("rows %v without unit %d: score %d moves by %v, want 0 to 1", rows, u, j, d)
				}
			}
		}
	}
	rows := []int64{1, 2, 3, 5, 8, 8, 13, 40, 90, 200}
	const eps = 0.3
	scores := ClipScores(ladder, aboveOf(rows), 1/(2*eps))
	src := NewSource()
	obs := make([]int64, len(ladder))
	for range 200_000 {
		obs[ChooseClipPenalty(src, ladder, aboveOf(rows), eps, 1/(2*eps), false)]++
	}
	chiSquareTest(t, "ChooseClipPenalty at 1/(2ε)", obs, expGridPMF(scores, 2*eps, 1, 0), falseFailure)

	// A penalty four times 1/(2ε): the draw must follow its scores, whose
	// plateau above the largest unit falls by e^{−2} a step, not e^{−1/2}.
	const lambda = 2 / eps
	steep := ClipScores(ladder, aboveOf(rows), lambda)
	clear(obs)
	for range 200_000 {
		obs[ChooseClipPenalty(src, ladder, aboveOf(rows), eps, lambda, false)]++
	}
	chiSquareTest(t, "ChooseClipPenalty", obs, expGridPMF(steep, 2*eps, 1, 0), falseFailure)
}
