//go:build clp

package relational

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// lpOf solves the truncation LP of cs with CLP whatever the number of
// units.
func lpOf(t *testing.T, cs []Contribution, counts []int, tau float64) float64 {
	t.Helper()
	tr := &lpTruncation{cs: cs, counts: counts}
	v, err := tr.At(context.Background(), tau)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCLPMatchesClosedFormAndFlow checks the closed form (k = 1) and the
// max flow (k = 2) against CLP on 300 random instances each, and for
// k = 3 checks CLP against enumeration (the LP is ≥ every integer
// truncation and ≤ Q(I)), R2T's sensitivity property on the user-level
// neighbour and Q(I, τ) = Q(I) for τ ≥ DS_Q(I).
func TestCLPMatchesClosedFormAndFlow(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 4))
	taus := []float64{1, 2, 3, 4, 8}
	for _, k := range []int{1, 2, 3} {
		for inst := 0; inst < 300; inst++ {
			cs, counts := randomContributions(rng, k)
			u := rng.IntN(counts[0])
			ds := downSensitivity(cs, k)
			var tr Truncation
			if k < 3 {
				tr, _ = NewTruncation(cs, counts)
			}
			for _, tau := range taus {
				lp := lpOf(t, cs, counts, tau)
				if tr != nil {
					v, _ := tr.At(context.Background(), tau)
					if math.Abs(v-lp) > 1e-7 {
						t.Fatalf("k=%d τ=%v: exact method %v, CLP %v (%+v)", k, tau, v, lp, cs)
					}
				}
				if brute := bruteTruncation(cs, k, tau); lp < brute-1e-7 || lp > total(cs)+1e-7 {
					t.Fatalf("k=%d τ=%v: CLP %v outside [integer optimum %v, Q(I) %v]", k, tau, lp, brute, total(cs))
				}
				if n := lpOf(t, withoutUnit(cs, u), counts, tau); math.Abs(lp-n) > tau+1e-7 {
					t.Fatalf("k=%d τ=%v: sensitivity |%v − %v| > τ", k, tau, lp, n)
				}
				if tau >= ds && math.Abs(lp-total(cs)) > 1e-7 {
					t.Fatalf("k=%d τ=%v ≥ DS=%v: CLP %v ≠ Q(I) %v", k, tau, ds, lp, total(cs))
				}
			}
		}
	}
}

// BenchmarkCLPTruncation solves the LP truncation of three units (Zipf
// degrees) at τ = 8 with CLP.
func BenchmarkCLPTruncation(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		cs, counts := zipfContributions(n, 3)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				tr, _ := NewTruncation(cs, counts)
				if _, err := tr.At(context.Background(), 8); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
