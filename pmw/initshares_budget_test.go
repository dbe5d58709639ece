package pmw

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/synth-dp/synth/dp"
)

// TestInitSharesSpendTheCharge: without Config.Own the factored init
// measures column c's 1-way marginal at σ_c = σ₀/√s_c with s_c ∝
// k_c^(2/3) ([InitShares]), so unequal shares. The noise actually drawn
// must cost what the ledger charged for the init: Σ_c Δ̃²/(2σ_c²) = ρ₀,
// each selection's recorded ρ must be its own Δ̃²/(2σ_c²), the σ's must
// stand in the ratio (k_c/k_d)^(-1/3), and the init, the rounds'
// selections and their measurements together must not spend more than the
// ledger's split. Planting σ₀ instead of σ₀/√s_c, or each column's ρ
// recorded as ρ₀/d, makes it fail.
func TestInitSharesSpendTheCharge(t *testing.T) {
	const eps, delta = 1.5, 1e-6
	for _, tc := range []struct {
		name  string
		sizes []int
		sens  float64
	}{
		{"2 5 16", []int{2, 5, 16}, 1},
		{"3 3 12 2, Δ̃ 2.5", []int{3, 3, 12, 2}, 2.5},
		{"equal", []int{4, 4, 4}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cells := 1
			for _, k := range tc.sizes {
				cells *= k
			}
			r := rand.New(rand.NewPCG(3, uint64(cells)))
			full := make([]int64, cells)
			for i := range full {
				full[i] = int64(50 + r.IntN(400)) // n̂ far above 20σ₀: the plain init
			}
			var fams []Family
			for a := range tc.sizes {
				for b := a + 1; b < len(tc.sizes); b++ {
					fams = append(fams, Marginal([]int{a, b}))
				}
			}
			names := []string{"a", "b", "c", "d"}[:len(tc.sizes)]
			l, err := dp.NewLedger(dp.Budget{Epsilon: eps, Delta: delta})
			if err != nil {
				t.Fatal(err)
			}
			cfg := Config{Epsilon: eps, Delta: delta, Sensitivity: tc.sens, NoNHat: true, Ledger: l}
			res, err := RunFactored(context.Background(), dp.NewSeededSource(5), names, tc.sizes, fams, tableTruth(tc.sizes, full), cfg)
			if err != nil {
				t.Fatal(err)
			}
			var split *dp.Spend
			for i, sp := range l.Spends() {
				if len(sp.Parts) > 0 {
					split = &l.Spends()[i]
				}
			}
			if split == nil || len(split.Parts) != 3 {
				t.Fatalf("no three-part zCDP split in the ledger: %+v", l.Spends())
			}
			rho0 := split.Parts[0].Rho
			sigma := map[int]float64{}
			var realised, recorded, rounds float64
			for _, s := range res.Selections {
				if s.Round > 0 {
					rounds += s.Rho
					continue
				}
				if len(s.Columns) != 1 {
					t.Fatalf("the init measured %v", s.Columns)
				}
				c := s.Columns[0]
				sigma[c] = s.Sigma
				own := tc.sens * tc.sens / (2 * s.Sigma * s.Sigma)
				if math.Abs(s.Rho-own) > 1e-9*own {
					t.Errorf("column %d: recorded ρ %g, its noise σ = %g costs %g", c, s.Rho, s.Sigma, own)
				}
				realised += own
				recorded += s.Rho
			}
			if res.Rounds == 0 {
				t.Fatal("no round ran: the rounds' spend is not checked")
			}
			if len(sigma) != len(tc.sizes) {
				t.Fatalf("the init measured %d columns, want %d", len(sigma), len(tc.sizes))
			}
			if math.Abs(realised-rho0) > 1e-9*rho0 || math.Abs(recorded-rho0) > 1e-9*rho0 {
				t.Fatalf("the init's noise costs ρ %g (recorded %g), the ledger charged %g", realised, recorded, rho0)
			}
			for c := 1; c < len(tc.sizes); c++ {
				want := math.Pow(float64(tc.sizes[c])/float64(tc.sizes[0]), -1.0/3)
				if got := sigma[c] / sigma[0]; math.Abs(got-want) > 1e-9*want {
					t.Errorf("σ_%d/σ_0 = %g, want (k_%d/k_0)^(-1/3) = %g", c, got, c, want)
				}
			}
			if charged := split.Parts[1].Rho + split.Parts[2].Rho; rounds > charged*(1+1e-9) {
				t.Fatalf("the rounds spent ρ %g, the ledger charged %g", rounds, charged)
			}
			var parts float64
			for _, p := range split.Parts {
				parts += p.Rho
			}
			if rho, err := dp.RhoForBudget(dp.Budget{Epsilon: split.Epsilon, Delta: split.Delta}); err != nil || math.Abs(parts-rho) > 1e-9*rho {
				t.Fatalf("the split's parts add up to ρ %g, its (ε, δ) allows %g (%v)", parts, rho, err)
			}
		})
	}
}
