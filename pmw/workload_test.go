package pmw

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
)

// TestWorkloadOnce checks the workload measured once (see
// factored.measureWorkload): with Config.MeasureWorkload and n̂ ≥
// againRatio·σ₀, no adaptive round runs and the rounds' whole budget
// measures each multi-column workload marginal once, the one of k cells
// at ρ ∝ k^(2/3) and σ = Δ̃/√(2ρ), so that the realised ρ of every
// measurement adds up to the run's ρ; the ledger states the rule and the
// run publishes pmw_workload_once. Without the flag, with a fixed number
// of rounds, or below againRatio·σ₀ (n̂ read by the run, a DP output) the
// adaptive rounds run as before. Three columns of 4, 3 and 2 cells, the
// workload {0,1} and {1,2} (so {0}, {1}, {2} are candidates contained in
// them); 20,000 rows at ε = 1 (σ₀ ≈ 15 rows: n̂/σ₀ ≈ 1,300) and 60 rows
// at ε = 0.3 (n̂/σ₀ about 1.2: below 8σ₀). Seeds 0–4, fixed: every check
// is exact given what the run drew.
func TestWorkloadOnce(t *testing.T) {
	sizes := []int{4, 3, 2}
	fams := []Family{Marginal([]int{0, 1}), Marginal([]int{1, 2})}
	truthOf := func(rows int64) Truth {
		// A dependent joint: row r has a = r mod 4, b = (r mod 4) mod 3
		// for most rows, c = b mod 2.
		full := make([]int64, 24)
		for r := range rows {
			a := r % 4
			b := (a + r/7%2) % 3
			c := (b + r/11%3) % 2
			full[(a*3+b)*2+c]++
		}
		return func(_ context.Context, set []int) ([]int64, error) {
			tab := make([]int64, cellsOf(sizes, set))
			for i, v := range full {
				cols := []int{i / 6, i / 2 % 3, i % 2}
				k := 0
				for _, c := range set {
					k = k*sizes[c] + cols[c]
				}
				tab[k] += v
			}
			return tab, nil
		}
	}
	for _, tc := range []struct {
		name      string
		rows      int64
		eps       float64
		flag      bool
		rounds    int
		wantWhole bool
	}{
		{"many rows", 20000, 1, true, 0, true},
		{"without the flag", 20000, 1, false, 0, false},
		{"fixed rounds", 20000, 1, true, 3, false},
		{"few rows", 60, 0.3, true, 0, false},
	} {
		for seed := range uint64(5) {
			l, err := dp.NewLedger(dp.Budget{Epsilon: tc.eps, Delta: 1e-6})
			if err != nil {
				t.Fatal(err)
			}
			cfg := Config{Epsilon: tc.eps, Delta: 1e-6, Sensitivity: 1, NoNHat: true, Rounds: tc.rounds, MeasureWorkload: tc.flag, Ledger: l}
			f, err := startFactored(context.Background(), dp.NewSeededSource(seed), []string{"a", "b", "c"}, sizes, fams, truthOf(tc.rows), cfg)
			if err != nil {
				t.Fatal(err)
			}
			// The regime follows n̂ as the run drew it.
			want := tc.wantWhole && f.nInit >= againRatio*f.initScale()
			if tc.wantWhole && !want {
				t.Fatalf("%s seed %d: n̂ = %.1f below %dσ₀ = %.1f: the case does not test the regime", tc.name, seed, f.nInit, againRatio, againRatio*f.initScale())
			}
			if f.whole != want {
				t.Fatalf("%s seed %d: workload measured once %v, want %v (n̂ = %.1f, σ₀ = %.2f)", tc.name, seed, f.whole, want, f.nInit, f.initScale())
			}
			if !want {
				if f.done {
					t.Fatalf("%s seed %d: no round left to run", tc.name, seed)
				}
				continue
			}
			if !f.done || f.t != 1 {
				t.Fatalf("%s seed %d: done %v after %d rounds, want done after 1", tc.name, seed, f.done, f.t)
			}
			// Round 1 measured {0,1} (12 cells) and {1,2} (6 cells) once
			// each, at ρ ∝ cells^(2/3) adding up to the rounds' budget.
			var got [][]int
			var rho float64
			w12, w6 := math.Pow(12, 2.0/3), math.Pow(6, 2.0/3)
			for _, s := range f.sels {
				rho += s.Rho
				if s.Round != 1 {
					continue
				}
				got = append(got, s.Columns)
				wantRho := f.roundsBudget * w6 / (w12 + w6)
				if s.Cells == 12 {
					wantRho = f.roundsBudget * w12 / (w12 + w6)
				}
				if math.Abs(s.Rho-wantRho) > 1e-12*f.total || math.Abs(s.Sigma-1/math.Sqrt(2*wantRho)) > 1e-9*s.Sigma {
					t.Fatalf("%s seed %d: %s measured at ρ %g σ %g, want ρ %g σ %g", tc.name, seed, s.Marginal, s.Rho, s.Sigma, wantRho, 1/math.Sqrt(2*wantRho))
				}
			}
			if !slices.EqualFunc(got, [][]int{{0, 1}, {1, 2}}, slices.Equal) {
				t.Fatalf("%s seed %d: round 1 measured %v, want [[0 1] [1 2]]", tc.name, seed, got)
			}
			if math.Abs(rho-f.total) > 1e-9*f.total || math.Abs(f.used-f.roundsBudget) > 1e-12*f.total {
				t.Fatalf("%s seed %d: the measurements' ρ add up to %g (rounds used %g of %g), want the run's ρ %g", tc.name, seed, rho, f.used, f.roundsBudget, f.total)
			}
			if seed == 0 {
				var stated bool
				for _, s := range l.Spends() {
					for _, p := range s.Parts {
						if strings.HasPrefix(p.Mechanism, "pmw: round measurements") && strings.Contains(p.Rule, "measured once at ρ_r ∝ k_r^(2/3)") {
							stated = true
						}
					}
				}
				if !stated {
					t.Fatalf("%s: the ledger's round measurements do not state the workload measured once: %+v", tc.name, l.Spends())
				}
			}
		}
	}
	// The public forecast's sets and shares (WorkloadOnceSets) are the run's.
	ws, shares, err := WorkloadOnceSets(sizes, fams)
	if err != nil {
		t.Fatal(err)
	}
	w12, w6 := math.Pow(12, 2.0/3), math.Pow(6, 2.0/3)
	if !slices.EqualFunc(ws, [][]int{{0, 1}, {1, 2}}, slices.Equal) || len(shares) != 2 ||
		math.Abs(shares[0]-w12/(w12+w6)) > 1e-12 || math.Abs(shares[1]-w6/(w12+w6)) > 1e-12 {
		t.Fatalf("WorkloadOnceSets: %v %v", ws, shares)
	}
	// The published flag, through RunFactored.
	l, err := dp.NewLedger(dp.Budget{Epsilon: 1, Delta: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunFactored(context.Background(), dp.NewSeededSource(1), []string{"a", "b", "c"}, sizes, fams, truthOf(20000),
		Config{Epsilon: 1, Delta: 1e-6, Sensitivity: 1, NoNHat: true, MeasureWorkload: true, Ledger: l})
	if err != nil {
		t.Fatal(err)
	}
	if !res.WorkloadOnce || res.Rounds != 1 {
		t.Fatalf("RunFactored: WorkloadOnce %v after %d rounds, want true after 1", res.WorkloadOnce, res.Rounds)
	}
	if i := slices.IndexFunc(l.Outputs(), func(o dp.Output) bool { return o.Name == "pmw_workload_once" }); i < 0 || l.Outputs()[i].Value != 1 {
		t.Fatalf("pmw_workload_once not published as 1: %+v", l.Outputs())
	}
}
