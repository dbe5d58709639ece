package residual_test

import (
	"context"
	"flag"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/residual"
	"github.com/synth-dp/synth/residual/internal/brute"
)

var seedFlag = flag.Uint64("residual.seed", 0, "seed of the random instances (0: a fixed default)")

// newRand returns a PCG generator seeded from -residual.seed or a fixed
// default, and logs the seed so a failure can be replayed.
func newRand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = 20260405
	}
	t.Logf("seed %d (replay with -residual.seed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// betas are the smoothing parameters the property tests use, down to
// ε/ln(1/δ) with ε = 1, δ = 10⁻⁶.
var betas = []float64{2, 1, 0.5, 0.1, 1 / math.Log(1e6)}

// compute runs TE and RS on an instance through the brute-force counter.
func compute(t *testing.T, in *brute.Instance, beta float64) (*hypergraph.Hypergraph, *residual.Table, float64, int) {
	t.Helper()
	h, err := in.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	te, err := residual.TE(context.Background(), h, &brute.Counter{In: in})
	if err != nil {
		t.Fatalf("TE(%v): %v", in, err)
	}
	rs, k, err := residual.RS(te, h, beta)
	if err != nil {
		t.Fatalf("RS(%v, β=%v): %v", in, beta, err)
	}
	return h, te, rs, k
}

// defLocalSensitivity evaluates LŜ^k by Def. 3.6 verbatim: every s ∈ S^k
// over all m coordinates (public coordinates fixed to 0, the private ones
// including s_i enumerated), every private i, every E ⊆ [m]∖{i}.
func defLocalSensitivity(te *residual.Table, h *hypergraph.Hypergraph, k int) float64 {
	m := h.Len()
	all := h.All()
	priv := h.Private().Members()
	s := make([]int, m)
	best := 0.0
	var rec func(x, left int)
	rec = func(x, left int) {
		if x == len(priv)-1 {
			s[priv[x]] = left
			for _, i := range priv {
				sum := 0.0
				rest := all &^ (1 << uint(i))
				for e := hypergraph.Set(0); e <= rest; e++ {
					if e&^rest != 0 {
						continue
					}
					prod := te.At(rest &^ e)
					for v := uint64(e); v != 0; v &= v - 1 { // e's members, increasing
						prod *= float64(s[bits.TrailingZeros64(v)])
					}
					sum += prod
				}
				best = max(best, sum)
			}
			return
		}
		for v := 0; v <= left; v++ {
			s[priv[x]] = v
			rec(x+1, left-v)
		}
	}
	rec(0, k)
	return best
}

// randomTable draws T_E for every connected proper subset of h: zero with
// probability 1/8, else uniform in [0, scale), integer valued.
func randomTable(t testing.TB, rng *rand.Rand, h *hypergraph.Hypergraph, scale float64) *residual.Table {
	t.Helper()
	vals := map[hypergraph.Set]float64{}
	for e := hypergraph.Set(1); e < h.All(); e++ {
		if !h.Connected(e) {
			continue
		}
		if rng.IntN(8) == 0 {
			vals[e] = 0
		} else {
			vals[e] = math.Floor(rng.Float64() * scale)
		}
	}
	te, err := residual.NewTable(h, vals)
	if err != nil {
		t.Fatal(err)
	}
	return te
}

// atMost reports a ≤ b up to a relative float64 slack.
func atMost(a, b float64) bool { return a <= b*(1+1e-12)+1e-300 }

func nan() float64 { return math.NaN() }
func inf() float64 { return math.Inf(1) }
