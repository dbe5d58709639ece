package pmw

import (
	"fmt"
	"slices"
)

// Joint returns the distribution of a factored model over all its columns
// as one dense table of probabilities (mixed radix over the columns, the
// first most significant), for callers that condition on some columns and
// draw the others (the tables release draws a child's columns given its
// parent's). It refuses a table above maxCells cells, a public bound.
// Post-processing of the model.
func (r *FactoredResult) Joint(maxCells int64) ([]float64, error) {
	if r.model == nil {
		return nil, fmt.Errorf("%w: joint of an empty model", ErrInvalidInput)
	}
	return r.model.joint(maxCells)
}

// joint is [FactoredResult.Joint] on the model g: a copy of g with one more
// (zero) factor over every column, whose single clique is the joint.
func (g *graphical) joint(maxCells int64) ([]float64, error) {
	all := make([]int, len(g.sizes))
	n := int64(1)
	for i, s := range g.sizes {
		all[i] = i
		n *= int64(s)
		if n > maxCells {
			return nil, fmt.Errorf("%w: the joint over columns of sizes %v has more than %d cells", ErrTooLarge, g.sizes, maxCells)
		}
	}
	sets := append(slices.Clone(g.sets), all)
	h, err := newGraphical(g.sizes, sets)
	if err != nil {
		return nil, err
	}
	for i := range g.sets {
		copy(h.theta[i], g.theta[i])
	}
	h.calibrate()
	return h.marginal(all)
}

// Joint returns the dense model's distribution (its weights normalised to
// probabilities, in the universe's order). Post-processing.
func (r *Result) Joint() []float64 {
	out := make([]float64, len(r.Weights))
	var tot float64
	for _, w := range r.Weights {
		tot += max(w, 0)
	}
	for i, w := range r.Weights {
		if tot > 0 {
			out[i] = max(w, 0) / tot
		}
	}
	return out
}
