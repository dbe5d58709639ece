package pmw

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/synth-dp/synth/dp"
)

// TestPoolCells: with pool set, shrink's target is ybar with its
// noise-dominated cells pooled (mwemMeas.poolCells). Hand cases at σ = 10:
// {95, 12, −5, 40, 29, 0} in decreasing order 95, 40, 29, 12, 0, −5:
// 95 clears the mean of the rest (15.2) by 30, 40 clears the mean below
// it (9) by 31, 29 does not clear 2.33 + 30, so 29, 12, 0 and −5 pool to
// their mean 9. A 2-cell table {97, 3} at σ = 20 keeps its large cell
// (97 ≥ 3 + 60; against the whole table's mean it needed 110): only one
// cell would pool, so the target is ybar. Every cell below the line: the
// uniform table, reported as fallen back; a pooled mean below 0 is 0.
func TestPoolCells(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ybar       []float64
		sigma      float64
		want       []float64
		wantLambda float64
	}{
		{"two kept", []float64{95, 12, -5, 40, 29, 0}, 10, []float64{95, 9, 9, 40, 9, 9}, 1},
		{"2 cells, one kept", []float64{97, 3}, 20, []float64{97, 3}, 1},
		{"2 cells, none kept", []float64{55, 45}, 20, []float64{50, 50}, 0},
		{"all pooled", []float64{10, 12, 8, 10}, 10, []float64{10, 10, 10, 10}, 0},
		{"negative mean", []float64{40, -30, -20, 10}, 10, []float64{40, 0, 0, 0}, 1},
		{"all kept but one", []float64{200, 12, 190}, 10, []float64{200, 12, 190}, 1},
	} {
		me := &mwemMeas{ybar: tc.ybar, target: make([]float64, len(tc.ybar)), prec: 1 / (tc.sigma * tc.sigma), pool: true}
		me.shrink()
		for c := range tc.want {
			if math.Abs(me.target[c]-tc.want[c]) > 1e-9 {
				t.Fatalf("%s: pooled target %v, want %v", tc.name, me.target, tc.want)
			}
		}
		if me.lambda != tc.wantLambda {
			t.Errorf("%s: lambda %v, want %v", tc.name, me.lambda, tc.wantLambda)
		}
	}
}

// TestPoolCellsRule checks poolCells against its definition on random
// tables (seeded, deterministic): sorted by ybar, every kept cell clears
// the mean of the cells after it (at least 0) by 3σ, the first pooled one
// does not, every pooled cell gets the pooled cells' mean (at least 0) and
// every kept cell its ybar; fewer than two pooled cells leave ybar.
func TestPoolCellsRule(t *testing.T) {
	src := dp.NewSeededSource(7)
	for trial := range 2000 {
		k := 2 + trial%12
		y := make([]float64, k)
		for c := range y {
			// A few large cells over noise of σ = 1 (some negative).
			y[c] = math.Round(dp.Uniform(src)*8-2) + math.Floor(dp.Uniform(src)*1.3)*math.Round(dp.Uniform(src)*20)
		}
		me := &mwemMeas{ybar: y, target: make([]float64, k), prec: 1, pool: true}
		me.poolCells(1)
		order := make([]int, k)
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int {
			switch {
			case y[a] > y[b]:
				return -1
			case y[a] < y[b]:
				return 1
			}
			return 0
		})
		line := func(j int) float64 { // the line of the j-th cell in order
			var s float64
			for _, c := range order[j+1:] {
				s += y[c]
			}
			return math.Max(s/float64(k-j-1), 0) + 3
		}
		kept := 0
		for kept < k-1 && y[order[kept]] >= line(kept) {
			kept++
		}
		want := slices.Clone(y)
		if k-kept >= 2 {
			var s float64
			for _, c := range order[kept:] {
				s += y[c]
			}
			for _, c := range order[kept:] {
				want[c] = math.Max(s/float64(k-kept), 0)
			}
		}
		for c := range want {
			if math.Abs(me.target[c]-want[c]) > 1e-9 {
				t.Fatalf("trial %d: ybar %v: target %v, want %v", trial, y, me.target, want)
			}
		}
	}
}

// TestPoolPureNoise: a near-uniform table of pure noise (38 cells at level
// 5, σ = 30, the Retail country marginal's shape without its signal) keeps
// a cell in about 38·Φ̄(3) ≈ 5% of draws. 4,000 draws (seeded): the share
// is within 0.025–0.08 (the binomial's sd is 0.0035, so the bounds are more
// than 7 sd from 5%).
func TestPoolPureNoise(t *testing.T) {
	const k, draws = 38, 4000
	src := dp.NewSeededSource(11)
	g, err := dp.NewDiscreteGaussian(30)
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for range draws {
		y := make([]float64, k)
		for c := range y {
			y[c] = float64(5 + g.Sample(src))
		}
		me := &mwemMeas{ybar: y, target: make([]float64, k), prec: 1.0 / 900, pool: true}
		me.poolCells(900)
		if me.lambda > 0 {
			kept++
		}
	}
	if p := float64(kept) / draws; p < 0.025 || p > 0.08 {
		t.Errorf("pure noise kept a cell in %.3f of draws, want about 0.05", p)
	}
}

// TestPoolWhenFewRows: the factored run pools its 1-way estimates, and
// measures them again at fewRowsRemeasure of the rounds' budget, exactly
// when their first DP total n̂ is positive and below poolRatio·σ₀; and it
// measures them again without pooling, at min(againCost·ρ₀, half the
// rounds' measurement share), exactly when n̂ is at least that but below
// againRatio·σ₀. Two columns, 150 rows in one cell of each (a sparse
// table); at ε = 0.05 (σ₀ ≈ 130 rows) n̂ ≈ 150 ± 300 lies between 0 and
// 8σ₀ for most seeds, at ε = 0.6 (σ₀ ≈ 13) n̂ ≈ 150 ± 29 between 8σ₀ and
// 20σ₀ for most, at ε = 5·10⁴ (σ₀ ≈ 10⁻³) far above. Seeds 0–9, fixed: the
// test checks that the flags follow n̂ and σ₀ as the run saw them, and
// that the small ε pooled in most seeds, the middle one measured again in
// most, and the large one did neither.
func TestPoolWhenFewRows(t *testing.T) {
	sizes := []int{10, 10}
	truth := func(_ context.Context, set []int) ([]int64, error) {
		tab := make([]int64, cellsOf(sizes, set))
		tab[0] = 150 // cell 0 of each column (and (0, 0) of the pair)
		return tab, nil
	}
	fams := []Family{Marginal([]int{0, 1})}
	for _, tc := range []struct {
		eps                float64
		min, max           int // seeds that pool, of 10
		minAgain, maxAgain int // seeds that measure again without pooling
	}{{0.05, 6, 10, 0, 4}, {0.6, 0, 4, 6, 10}, {5e4, 0, 0, 0, 0}} {
		pooled, again := 0, 0
		for seed := range uint64(10) {
			cfg := Config{Epsilon: tc.eps, Delta: 1e-6, Sensitivity: 1, NoNHat: true, Rounds: 1}
			f, err := startFactored(context.Background(), dp.NewSeededSource(seed), []string{"a", "b"}, sizes, fams, truth, cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := f.nInit > 0 && f.nInit < poolRatio*f.initScale()
			wantAgain := !want && f.nInit > 0 && f.nInit < againRatio*f.initScale()
			// When pooled, every 1-way is measured again at
			// fewRowsRemeasure of the rounds' measurement share, taken
			// from the rounds' budget; otherwise once, at σ₀.
			s0 := f.initScale()
			prec, used := 1/(s0*s0), 0.0
			if want {
				x := fewRowsRemeasure * f.roundsBudget
				s1 := math.Sqrt(2) / math.Sqrt(2*(1-mwemSelFracGauss)*x) // Δ̃ = 1, two columns
				prec += 1 / (s1 * s1)
				used = x
			}
			if wantAgain {
				m := math.Min(againCost*f.initCost, (1-mwemSelFracGauss)*f.roundsBudget/2)
				s1 := math.Sqrt(2) / math.Sqrt(2*m)
				prec += 1 / (s1 * s1)
				used = m / (1 - mwemSelFracGauss)
			}
			if f.fewRows != want || f.again != wantAgain || math.Abs(f.used-used) > 1e-12*f.total {
				t.Fatalf("ε = %g seed %d: fewRows %v again %v used ρ %g, want %v, %v and %g", tc.eps, seed, f.fewRows, f.again, f.used, want, wantAgain, used)
			}
			for _, c := range []int{0, 1} {
				me := f.meas[setKey([]int{c})]
				if me.pool != want {
					t.Fatalf("ε = %g seed %d column %d: pool %v, want %v (n̂ = %.1f, σ₀ = %.1f)", tc.eps, seed, c, me.pool, want, f.nInit, f.initScale())
				}
				if math.Abs(me.prec-prec) > 1e-9*prec {
					t.Fatalf("ε = %g seed %d column %d: precision %g, want %g", tc.eps, seed, c, me.prec, prec)
				}
			}
			var rho float64
			for _, sel := range f.sels {
				rho += sel.Rho
			}
			if math.Abs(rho-(f.initCost+(1-mwemSelFracGauss)*used)) > 1e-9*f.total {
				t.Fatalf("ε = %g seed %d: the init's selections record ρ %g, want %g", tc.eps, seed, rho, f.initCost+(1-mwemSelFracGauss)*used)
			}
			if want {
				pooled++
			}
			if wantAgain {
				again++
			}
		}
		if pooled < tc.min || pooled > tc.max {
			t.Errorf("ε = %g: %d of 10 seeds pooled, want %d to %d", tc.eps, pooled, tc.min, tc.max)
		}
		if again < tc.minAgain || again > tc.maxAgain {
			t.Errorf("ε = %g: %d of 10 seeds measured the 1-ways again without pooling, want %d to %d", tc.eps, again, tc.minAgain, tc.maxAgain)
		}
	}
}
