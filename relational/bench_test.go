package relational

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/synth-dp/synth/dp"
)

// zipfContributions builds n join-result groups over two units with Zipf
// degrees (s = 1.5) on both sides and ψ ∈ {1, …, 4}: the R2T-shaped
// instances of the solver measurements.
func zipfContributions(n int, k int) ([]Contribution, []int) {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(k)))
	sides := make([]*rand.Zipf, k)
	counts := make([]int, k)
	for i := range sides {
		counts[i] = max(2, n/4)
		sides[i] = rand.NewZipf(rng, 1.5, 1, uint64(counts[i]-1))
	}
	cs := make([]Contribution, n)
	for j := range cs {
		u := make([]int, k)
		for i := range u {
			u[i] = int(sides[i].Uint64())
		}
		cs[j] = Contribution{Units: u, Psi: float64(1 + rng.IntN(4))}
	}
	return cs, counts
}

// BenchmarkTruncationLadder runs the τ ladder 2, 4, 8 (the τ = 8
// measurement) of the closed form (k = 1) and the max flow (k = 2) at
// 10⁴, 10⁵ and 10⁶ join results.
func BenchmarkTruncationLadder(b *testing.B) {
	for _, k := range []int{1, 2} {
		for _, n := range []int{10_000, 100_000, 1_000_000} {
			cs, counts := zipfContributions(n, k)
			b.Run(fmt.Sprintf("k=%d/n=%d", k, n), func(b *testing.B) {
				for b.Loop() {
					tr, _ := NewTruncation(cs, counts)
					for tau := 2.0; tau <= 8; tau *= 2 {
						if _, err := tr.At(context.Background(), tau); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// BenchmarkAnswerTPCH times Answer (statistics, then the mechanism; the
// data already loaded) on TPC-H SF 0.01.
func BenchmarkAnswerTPCH(b *testing.B) {
	e, s := tpch(b)
	ctx := context.Background()
	for _, aq := range accuracyQueries[:3] {
		q, err := Parse(ctx, e, s, aq.sql)
		if err != nil {
			b.Fatal(err)
		}
		for _, units := range [][]string{nil, {aq.unit}} {
			b.Run(fmt.Sprintf("%s/units=%v", aq.name, units), func(b *testing.B) {
				for b.Loop() {
					opt := Options{Budget: dp.Budget{Epsilon: 1, Delta: 1e-6}, Units: units}
					l, _ := dp.NewLedger(opt.Budget)
					if _, err := Answer(ctx, e, dp.NewSeededSource(1), s, []*Query{q}, opt, l); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
