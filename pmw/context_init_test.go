package pmw

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/synth-dp/synth/dp"
)

// TestInitLow: with Own = {2} and InitLow = {0}, the initial step
// measures the 1-ways of columns 2 and 0 (not 1), the context column's at
// σ/√share; the init's shares add up to its ρ₀ (the ledger's charge); and
// no round selects a set without an own column, so the context 1-way is
// never measured again.
func TestInitLow(t *testing.T) {
	sizes := []int{3, 2, 4}
	r := rand.New(rand.NewPCG(7, 8))
	full := make([]int64, 3*2*4)
	for i := range full {
		full[i] = int64(r.IntN(200))
	}
	fams := []Family{Marginal([]int{0, 2}), Marginal([]int{1, 2}), Marginal([]int{0, 1})}
	for _, share := range []float64{0.25, 1} {
		l, err := dp.NewLedger(dp.Budget{Epsilon: 1, Delta: 1e-6})
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Epsilon: 1, Delta: 1e-6, Sensitivity: 1, Rounds: 6, NoNHat: true, Own: []int{2}, InitLow: []int{0}, InitLowShare: share, Ledger: l}
		res, err := RunFactored(context.Background(), dp.NewSeededSource(1), []string{"a", "b", "c"}, sizes, fams, tableTruth(sizes, full), cfg)
		if err != nil {
			t.Fatal(err)
		}
		sigma := map[int]float64{}
		var rho0 float64
		for _, s := range res.Selections {
			if s.Round == 0 {
				if len(s.Columns) != 1 {
					t.Fatalf("share %g: init measured %v", share, s.Columns)
				}
				sigma[s.Columns[0]] = s.Sigma
				rho0 += s.Rho
				continue
			}
			if !slices.Contains(s.Columns, 2) {
				t.Fatalf("share %g: round %d selected %v, which holds no own column", share, s.Round, s.Columns)
			}
		}
		if _, ok := sigma[1]; ok || len(sigma) != 2 {
			t.Fatalf("share %g: init measured the 1-ways of %v, want columns 0 and 2", share, sigma)
		}
		if got, want := sigma[0], sigma[2]/math.Sqrt(share); math.Abs(got-want) > 1e-9*want {
			t.Fatalf("share %g: context σ %g, want σ_own/√share = %g", share, got, want)
		}
		// Σ_c Δ²/(2σ_c²) is the init's ρ₀.
		if got := 1/(2*sigma[0]*sigma[0]) + 1/(2*sigma[2]*sigma[2]); math.Abs(got-rho0) > 1e-9*rho0 {
			t.Fatalf("share %g: the init's noise is %g-zCDP, its shares add up to %g", share, got, rho0)
		}
	}
}
