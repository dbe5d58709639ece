package pmw

import (
	"math"

	"github.com/synth-dp/synth/dp"
)

// Counts turns the weights into non-negative integer counts F : X → ℕ
// with Σ F = N. For [VariantMWEM] the weights are a log-linear model on
// the measured column sets, and the rows are drawn through its junction
// tree with controlled rounding ([graphical.drawCounts]), so that every
// measured marginal of the rows is within about one row per cell of the
// model's; the rest of this comment describes the universe-order
// systematic rounding that other results (and an MWEM result whose tree
// would not be smaller than the universe) use, where N = [Result.Rows] for
// [VariantMWEM] and N = round(max(n̂, 0)) otherwise (for [VariantPaper],
// n̂ is an integer ≥ 0 and N = n̂ = Rows): with
// e(x) = N·Weights[x]/Σ Weights the target counts, C(x) their cumulative
// sums in cell order and one uniform offset U ∈ (0, 1) drawn from src,
//
//	F(x) = ⌊C(x) + U⌋ − ⌊C(x−1) + U⌋.
//
// So F(x) ∈ {⌊e(x)⌋, ⌈e(x)⌉}, E[F(x)] = e(x) exactly, the total is exactly
// N, and everything is determined by one uniform. This is post-processing
// of the DP weights and costs no budget.
//
// emit is called for every cell with F(x) > 0, in increasing cell order, so
// a writer can stream rows without holding them; an error from emit stops
// Counts and is returned. Counts reads Weights only and may be called more
// than once (each call draws a new offset).
func (r *Result) Counts(src dp.Source, emit func(cell int64, count int64) error) error {
	n := math.Round(math.Max(r.NHat, 0))
	if r.Variant == VariantMWEM {
		n = float64(max(r.Rows, 0))
	}
	if n == 0 || len(r.Weights) == 0 {
		return nil
	}
	if r.Variant == VariantMWEM {
		if g, ok := denseModel(r); ok {
			return g.drawCounts(src, int64(n), emit)
		}
	}
	var total, comp float64
	for _, v := range r.Weights {
		total, comp = kahan(total, comp, math.Max(v, 0))
	}
	if !(total > 0) {
		return nil
	}
	scale := n / total
	u := dp.Uniform(src)
	var cum, prevC float64
	comp = 0
	var prev int64 // ⌊0 + U⌋ = 0
	last := len(r.Weights) - 1
	for x, v := range r.Weights {
		cum, comp = kahan(cum, comp, math.Max(v, 0)*scale)
		c := math.Min(math.Max(cum, prevC), n)
		if x == last {
			c = n
		}
		prevC = c
		f := int64(math.Floor(c + u))
		if k := f - prev; k > 0 {
			if err := emit(int64(x), k); err != nil {
				return err
			}
		}
		prev = f
	}
	return nil
}

// kahan adds v to the compensated sum (s, c).
func kahan(s, c, v float64) (float64, float64) {
	y := v - c
	t := s + y
	return t, (t - s) - y
}
