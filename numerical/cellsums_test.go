package numerical

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCellSums checks Universe.CellSums against the exact per-cell sums of
// tuples written into the universe by Elements: full and reduced, signed
// and fractional.
func TestCellSums(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Measure
		red  Reduction
	}{
		{"full unsigned", Measure{Name: "m", Min: 0, Max: 100}, ReduceNever},
		{"reduced unsigned", Measure{Name: "m", Min: 0, Max: 100}, ReduceAlways},
		{"full signed", Measure{Name: "m", Min: -37, Max: 100}, ReduceNever},
		{"reduced signed fractional", Measure{Name: "m", Min: -3.7, Max: 10, Resolution: 0.1}, ReduceAlways},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := NewUniverse(Grid{Sizes: []int{3, 2}}, tc.m, UniverseOptions{Reduction: tc.red})
			if err != nil {
				t.Fatal(err)
			}
			rnd := rand.New(rand.NewPCG(3, 4))
			h := make([]float64, u.Size())
			want := make([]float64, u.Cells())
			for range 500 {
				cell := rnd.Int64N(u.Cells())
				y := u.Units(tc.m.Min + rnd.Float64()*(tc.m.Max-tc.m.Min))
				want[cell] += float64(y) * u.Resolution()
				u.Elements(cell, y, func(e int64) { h[e]++ })
			}
			got := u.CellSums(h)
			for c := range want {
				if math.Abs(got[c]-want[c]) > 1e-9*math.Max(1, math.Abs(want[c])) {
					t.Errorf("cell %d: %v, want %v", c, got[c], want[c])
				}
			}
		})
	}
}
