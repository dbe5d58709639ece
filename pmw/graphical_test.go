package pmw

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/synth-dp/synth/internal/stattest"
)

// denseOf enumerates p(x) ∝ exp(Σ_s θ_s(x_s)) over the whole universe.
func denseOf(g *graphical) []float64 {
	n := cellsOf(g.sizes, seqInts(len(g.sizes)))
	p := make([]float64, n)
	d := make([]int, len(g.sizes))
	var z float64
	for x := range n {
		r := x
		for i := len(d) - 1; i >= 0; i-- {
			d[i] = r % g.sizes[i]
			r /= g.sizes[i]
		}
		var lp float64
		for f, s := range g.sets {
			k := 0
			for _, c := range s {
				k = k*g.sizes[c] + d[c]
			}
			lp += g.theta[f][k]
		}
		p[x] = math.Exp(lp)
		z += p[x]
	}
	for x := range p {
		p[x] /= z
	}
	return p
}

func seqInts(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// denseMarginal sums p onto the sorted set cols.
func denseMarginal(sizes []int, p []float64, cols []int) []float64 {
	return (&graphical{sizes: sizes, belief: [][]float64{p}}).marginalIn(0, cols, projectCells(sizes, seqInts(len(sizes)), cols))
}

// randomSets draws column sets over d columns: every 1-way set, then a
// shape — a chain, a star, a cycle (a triangulation must add chords), or
// random pairs and triples.
func randomSets(r *rand.Rand, d int) [][]int {
	var sets [][]int
	for c := range d {
		sets = append(sets, []int{c})
	}
	switch r.IntN(4) {
	case 0: // chain
		for c := 0; c+1 < d; c++ {
			sets = append(sets, []int{c, c + 1})
		}
	case 1: // star
		for c := 1; c < d; c++ {
			sets = append(sets, []int{0, c})
		}
	case 2: // cycle
		for c := range d {
			a, b := c, (c+1)%d
			if a != b {
				sets = append(sets, []int{min(a, b), max(a, b)})
			}
		}
	default:
		for range 1 + r.IntN(4) {
			k := 2 + r.IntN(2)
			perm := r.Perm(d)[:min(k, d)]
			slices.Sort(perm)
			sets = append(sets, perm)
		}
	}
	return sets
}

// TestGraphicalMarginalsEqualDense: on ≥ 200 random small universes with
// random potentials, every clique's and every factor's marginal of the
// junction-tree model equals the brute-force marginal of the dense
// distribution to 1e-9.
func TestGraphicalMarginalsEqualDense(t *testing.T) {
	r := rand.New(rand.NewPCG(stattest.Seed(t), 3))
	for inst := range 240 {
		d := 2 + r.IntN(5)
		sizes := make([]int, d)
		for i := range sizes {
			sizes[i] = 2 + r.IntN(3)
		}
		sets := randomSets(r, d)
		g, err := newGraphical(sizes, sets)
		if err != nil {
			t.Fatalf("instance %d: %v", inst, err)
		}
		for f := range g.theta {
			for k := range g.theta[f] {
				g.theta[f][k] = r.NormFloat64() * 2
			}
		}
		g.calibrate()
		p := denseOf(g)
		check := append(slices.Clone(g.cliques), g.sets...)
		for _, cols := range check {
			got, err := g.marginal(cols)
			if err != nil {
				t.Fatalf("instance %d: %v", inst, err)
			}
			want := denseMarginal(sizes, p, cols)
			for k := range want {
				if math.Abs(got[k]-want[k]) > 1e-9 {
					t.Fatalf("instance %d (sizes %v, sets %v, cliques %v): marginal %v cell %d = %v, dense %v", inst, sizes, sets, g.cliques, cols, k, got[k], want[k])
				}
			}
		}
	}
}

// TestTriangulateCycle: a 4-cycle needs one chord, giving two triangles.
func TestTriangulateCycle(t *testing.T) {
	cl := triangulate([]int{2, 2, 2, 2}, [][]int{{0, 1}, {1, 2}, {2, 3}, {0, 3}})
	if len(cl) != 2 || len(cl[0]) != 3 || len(cl[1]) != 3 {
		t.Fatalf("cliques %v, want two triangles", cl)
	}
}
