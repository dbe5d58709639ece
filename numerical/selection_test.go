package numerical

import (
	"testing"

	"github.com/synth-dp/synth/dp"
)

// TestSelectionGrid: the exact selection of a round (dp.ExponentialGrid
// with score sensitivity 1 and the float error bound scoreErr of scores
// clamped at scoreCap) runs on the grid 2⁻¹⁰ with K = 1025 steps, as the
// comment on scoreCap states: the cap's error bound does not coarsen the
// grid that the sensitivity alone sets.
func TestSelectionGrid(t *testing.T) {
	if g := dp.ExpGrid(1, scoreErr); g != 0x1p-10 {
		t.Errorf("grid %v, want 2⁻¹⁰", g)
	}
	if k := dp.ExpGridSensitivity(1, dp.ExpGrid(1, scoreErr)); k != 1025 {
		t.Errorf("K = %d, want 1025", k)
	}
}
