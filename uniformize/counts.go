package uniformize

import (
	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/joinasone"
)

// mergedCounts is the union of the sub-instances' synthetic rows, gathered
// as each sub-instance's PMW run finishes: one dense int64 count per
// universe cell (8 bytes a cell, the [pmw.Memory] Merged part a release
// counts with pmw.Config.MergeCounts). Each run's integer counts are drawn
// right after it (pmw.Result.Counts, post-processing with the run's
// randomness) and its dense weights are dropped, so a release holds one
// run's arrays and this sum at a time instead of every sub-instance's
// weights (up to 62 buckets, or K·ℓ sub-instances, of 8 bytes a cell each).
type mergedCounts struct {
	n []int64
}

// add draws r's counts into the sum and releases r's weights.
func (m *mergedCounts) add(src dp.Source, r *joinasone.Result) error {
	if m.n == nil {
		m.n = make([]int64, r.PMW.Universe.Len())
	}
	err := r.PMW.Counts(src, func(cell, count int64) error {
		m.n[cell] += count
		return nil
	})
	r.PMW.Weights = nil
	return err
}

// emit calls fn for every cell with a positive count, in increasing cell
// order.
func (m *mergedCounts) emit(fn func(cell, count int64) error) error {
	for cell, n := range m.n {
		if n > 0 {
			if err := fn(int64(cell), n); err != nil {
				return err
			}
		}
	}
	return nil
}
