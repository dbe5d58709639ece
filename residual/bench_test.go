package residual_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/residual"
	"github.com/synth-dp/synth/residual/internal/brute"
)

// benchInput is a join with a prebuilt T_E table.
type benchInput struct {
	name string
	h    *hypergraph.Hypergraph
	te   *residual.Table
}

// benchInputs builds paths and stars of m = 3, 4, 6, 8 relations with
// random T_E in [0, 10⁶), the scale of TPC-H SF 0.01 statistics.
func benchInputs(b *testing.B) []benchInput {
	rng := rand.New(rand.NewPCG(1, 2))
	var out []benchInput
	for _, m := range []int{3, 4, 6, 8} {
		for _, kind := range []string{"path", "star"} {
			s := brute.Shape{Name: kind}
			for i := range m {
				s.Rels = append(s.Rels, fmt.Sprintf("R%d", i))
				if kind == "path" {
					s.Attrs = append(s.Attrs, []string{fmt.Sprint("x", i), fmt.Sprint("x", i+1)})
				} else {
					s.Attrs = append(s.Attrs, []string{"hub", fmt.Sprint("x", i)})
				}
			}
			h, err := s.Hypergraph()
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, benchInput{fmt.Sprintf("%s/m=%d", kind, m), h, randomTable(b, rng, h, 1e6)})
		}
	}
	return out
}

// BenchmarkRS measures RS^β given T_E, for β = 1/13.8 ≈ ε/ln(1/δ) with
// ε = 1, δ = 10⁻⁶.
func BenchmarkRS(b *testing.B) {
	const beta = 1 / 13.8
	for _, in := range benchInputs(b) {
		b.Run(in.name, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := residual.RS(in.te, in.h, beta); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLocalSensitivityAt measures one LŜ^k at the last k that RS may
// examine, the largest search [RS] can face for β = 1/13.8.
func BenchmarkLocalSensitivityAt(b *testing.B) {
	const beta = 1 / 13.8
	for _, in := range benchInputs(b) {
		k, err := residual.SearchLimit(in.h.Private().Len(), beta)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%s/k=%d", in.name, k-1), func(b *testing.B) {
			for b.Loop() {
				if _, err := residual.LocalSensitivityAt(in.te, in.h, k-1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
