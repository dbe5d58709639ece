package multi

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/relational/ipopt"
)

// gridE is the brute-force Ê(I, r) on 3 units: the maximum of Σ y over the
// grid y ∈ {0, 1/m, …, 1}³ with z tight as in (17), subject to the
// quadratic constraints (a lower bound within 3/m of the optimum, since
// lowering any y keeps the constraints).
func gridE(groups []JoinGroup, d int, r float64, m int) float64 {
	best := -1.0
	y := make([]float64, 3)
	for a := 0; a <= m; a++ {
		for b := 0; b <= m; b++ {
			for c := 0; c <= m; c++ {
				y[0], y[1], y[2] = float64(a)/float64(m), float64(b)/float64(m), float64(c)/float64(m)
				s := make([][]float64, 3)
				for i := range s {
					s[i] = make([]float64, d)
				}
				for _, g := range groups {
					z := 1 - float64(len(g.Units))
					for _, u := range g.Units {
						z += y[u]
					}
					z = math.Max(0, z)
					for _, u := range g.Units {
						s[u][g.Coord] += g.Psi * z
					}
				}
				ok := true
				for i := range s {
					n2 := 0.0
					for _, v := range s[i] {
						n2 += v * v
					}
					ok = ok && n2 <= r*r*(1+1e-12)
				}
				if ok {
					best = math.Max(best, y[0]+y[1]+y[2])
				}
			}
		}
	}
	return best
}

// TestQCQPBruteForce checks F̂(I, r) from Ipopt against the grid oracle on
// 25 random instances of 3 units, 2 coordinates and 2–5 join groups of one
// or two units (self-joins), for radii 1, 2, 4, 8: Ipopt's Ê is at least
// the grid maximum (up to 10⁻⁶) and at most 3/m above it, after the
// feasibility repair.
func TestQCQPBruteForce(t *testing.T) {
	if !ipopt.Available {
		t.Skip("needs -tags ipopt")
	}
	r := rand.New(rand.NewPCG(11, 12))
	const m = 40
	violated, maxLoss := 0, 0.0
	defer func() {
		t.Logf("Ipopt's own point violated a quadratic constraint exactly in %d of 100 programs; largest repair loss of Σ y %.3g", violated, maxLoss)
	}()
	for trial := 0; trial < 25; trial++ {
		var groups []JoinGroup
		for g := 0; g < 2+r.IntN(4); g++ {
			u := r.Perm(3)[:1+r.IntN(2)]
			groups = append(groups, JoinGroup{Coord: r.IntN(2), Units: u, Psi: float64(1 + r.IntN(6))})
		}
		p := newProgram(groups, 3, 2)
		for _, rad := range []float64{1, 2, 4, 8} {
			e, _, rep, err := p.solve(context.Background(), rad)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Violations > 0 {
				violated++
			}
			if rep.Loss > maxLoss {
				maxLoss = rep.Loss
			}
			want := gridE(groups, 2, rad, m)
			if e < want-1e-6 || e > want+3.0/m+1e-6 {
				t.Fatalf("trial %d r=%v: Ê = %v, grid %v (groups %+v)", trial, rad, e, want, groups)
			}
		}
	}
}

// TestSelfJoinJumpStart runs Alg. 2 on 60 units in pairs sharing join
// results (every result references two units) and shows the SVT jump
// start: only a few QCQPs are solved out of the ⌈log₂ GS⌉ + 1 radii, and
// with ε large the answers are near the truth.
func TestSelfJoinJumpStart(t *testing.T) {
	if !ipopt.Available {
		_, err := RunSelfJoin(context.Background(), dp.NewSeededSource(1), nil, 1, Config{Epsilon: 1, Delta: 1e-6, GS: 8})
		if !errors.Is(err, ErrNeedsIpopt) {
			t.Fatalf("without ipopt: error %v, want ErrNeedsIpopt", err)
		}
		return
	}
	var groups []JoinGroup
	truth := make([]float64, 4)
	for u := 0; u < 60; u += 2 {
		for k := 0; k < 4; k++ {
			psi := float64(100 + 10*k + u)
			groups = append(groups, JoinGroup{Coord: k, Units: []int{u, u + 1}, Psi: psi})
			truth[k] += psi
		}
	}
	res, err := RunSelfJoin(context.Background(), dp.NewSeededSource(2), groups, 4, Config{Epsilon: 8, Delta: 1e-7, GS: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("r̃ = %v, QCQPs solved %d (radii evaluated %v, skipped %d), solver time %v, answers %v, truth %v",
		res.Radius, res.Programs, res.Trace.Evaluated, res.Trace.Skipped, res.SolveTime, res.Values, truth)
	if res.Programs > 5 || res.Trace.Skipped < 5 {
		t.Fatalf("jump start solved %d programs, skipped %d; want few solved", res.Programs, res.Trace.Skipped)
	}
}
