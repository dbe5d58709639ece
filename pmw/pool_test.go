package pmw

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/synth-dp/synth/dp"
)

// TestPoolCells: with pool set, shrink's target is ybar with every cell
// below the mean cell plus 3σ replaced by the mean of those cells (hand
// case, σ = 10, mean 28.5: only 95 clears 58.5, the others pool to (12 −
// 5 + 40 + 29 + 0)/5 = 15.2); with a single cell below the line nothing is
// pooled.
func TestPoolCells(t *testing.T) {
	const sigma = 10.0
	me := &mwemMeas{ybar: []float64{95, 12, -5, 40, 29, 0}, target: make([]float64, 6), prec: 1 / (sigma * sigma), pool: true}
	me.shrink()
	want := []float64{95, 15.2, 15.2, 15.2, 15.2, 15.2}
	for c := range want {
		if math.Abs(me.target[c]-want[c]) > 1e-9 {
			t.Fatalf("pooled target %v, want %v", me.target, want)
		}
	}
	if me.lambda != 1 {
		t.Errorf("lambda %v after pooling, want 1", me.lambda)
	}
	one := &mwemMeas{ybar: []float64{200, 12, 190}, target: make([]float64, 3), prec: 1 / (sigma * sigma), pool: true}
	plain := &mwemMeas{ybar: []float64{200, 12, 190}, target: make([]float64, 3), prec: 1 / (sigma * sigma)}
	one.shrink()
	plain.shrink()
	if !slices.Equal(one.target, plain.target) {
		t.Errorf("one cell below 3σ: target %v, want the unpooled %v", one.target, plain.target)
	}
	// Every cell below the line: the uniform table, reported as fallen back.
	all := &mwemMeas{ybar: []float64{10, 12, 8, 10}, target: make([]float64, 4), prec: 1 / (sigma * sigma), pool: true}
	all.shrink()
	for c := range all.target {
		if math.Abs(all.target[c]-10) > 1e-9 || all.lambda != 0 {
			t.Fatalf("all pooled: target %v lambda %v, want uniform 10 and 0", all.target, all.lambda)
		}
	}
}

// TestPoolWhenFewRows: the factored run pools its 1-way estimates exactly
// when their DP total n̂ is positive and below poolRatio·σ₀. Two columns,
// 150 rows in one cell of each (a sparse table); at ε = 0.05 (σ₀ ≈ 50
// rows) n̂ ≈ 150 ± 110 lies between 0 and 8σ₀ = 400 for most seeds, at
// ε = 5·10⁴ (σ₀ ≈ 10⁻³) far above. Seeds 0–9, fixed: the test checks that
// the flag follows n̂ and σ₀ as the run saw them, and that the small ε
// pooled in most seeds and the large one in none.
func TestPoolWhenFewRows(t *testing.T) {
	sizes := []int{10, 10}
	truth := func(_ context.Context, set []int) ([]int64, error) {
		tab := make([]int64, cellsOf(sizes, set))
		tab[0] = 150 // cell 0 of each column (and (0, 0) of the pair)
		return tab, nil
	}
	fams := []Family{Marginal([]int{0, 1})}
	for _, tc := range []struct {
		eps      float64
		min, max int // seeds that pool, of 10
	}{{0.05, 6, 10}, {5e4, 0, 0}} {
		pooled := 0
		for seed := range uint64(10) {
			cfg := Config{Epsilon: tc.eps, Delta: 1e-6, Sensitivity: 1, NoNHat: true, Rounds: 1}
			f, err := startFactored(context.Background(), dp.NewSeededSource(seed), []string{"a", "b"}, sizes, fams, truth, cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := f.nEst > 0 && f.nEst < poolRatio*f.initScale()
			for _, c := range []int{0, 1} {
				if me := f.meas[setKey([]int{c})]; me.pool != want {
					t.Fatalf("ε = %g seed %d column %d: pool %v, want %v (n̂ = %.1f, σ₀ = %.1f)", tc.eps, seed, c, me.pool, want, f.nEst, f.initScale())
				}
			}
			if want {
				pooled++
			}
		}
		if pooled < tc.min || pooled > tc.max {
			t.Errorf("ε = %g: %d of 10 seeds pooled, want %d to %d", tc.eps, pooled, tc.min, tc.max)
		}
	}
}
