package multi

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/stattest"
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

// TestNoisyBoundDistribution: the noise of T̂ (Alg. 2 step 2) is exactly
// the discrete Laplace of scale b = 5(2G + 1)/(2ε) on the grid 1/G, shifted
// by the public s: 200 000 draws of G·T̂ − ⌈G·T⌉ − s against the
// Lap_ℤ(b) pmf (values beyond ±40 folded into the end bins), chi-square at
// level 10⁻⁶ with categories merged until each expects ≥ 5 draws
// ([stattest.ChiSquare]; asymptotic, a false failure has probability about
// 10⁻⁶).
// The same test rejects the planted bug b/2 (half the noise). T̂ is never
// below T in these draws (its tail is below δ/(2e^{3ε/5}) = 5·10⁻⁸ here).
func TestNoisyBoundDistribution(t *testing.T) {
	const eps, delta, T = 5 * (2*tHatGrid + 1) / 6.0, 1e-7, 3.3 // b = 3 grid steps
	b := tHatScale(eps)
	shift := math.Ceil(b * (3*eps/5 - math.Log(delta)))
	base := math.Ceil(tHatGrid*T) + shift
	const L = 40
	pmf := make([]float64, 2*L+1)
	r := math.Exp(-1 / b)
	for i := range pmf {
		x := float64(i - L)
		switch {
		case i == 0:
			pmf[i] = math.Pow(r, L) / (1 + r)
		case i == 2*L:
			pmf[i] = math.Pow(r, L) / (1 + r)
		default:
			pmf[i] = (1 - r) / (1 + r) * math.Pow(r, math.Abs(x))
		}
	}
	run := func(scale float64) []int64 {
		src := dp.NewSource()
		obs := make([]int64, 2*L+1)
		for range 200_000 {
			th, err := noisyBoundScale(src, T, eps, delta, scale)
			if err != nil {
				t.Fatal(err)
			}
			if th < T {
				t.Fatalf("T̂ = %v below T = %v", th, T)
			}
			x := int64(th*tHatGrid - base)
			obs[min(max(x, -L), L)+L]++
		}
		return obs
	}
	if r, err := stattest.ChiSquare(run(b), pmf, 1e-6); err != nil || r.Reject() {
		t.Errorf("T̂ noise: %v (err %v)", r, err)
	}
	if r, err := stattest.ChiSquare(run(b/2), pmf, 1e-6); err != nil || !r.Reject() {
		t.Errorf("the test did not reject T̂ with half the noise: %v (err %v)", r, err)
	}
}

// TestNoisyBoundMargin checks the "+1" of b = 5(2G + 1)/(2ε) by brute
// force: for neighbours whose exact T differ by at most 2 and whose
// computed F̂ errors differ by at most 2⁻¹¹ (computed T's within 2 + 1/G),
// the integer ⌈G·T⌉ ([tHatSteps]) moves by d ≤ 2G + 1 steps, and the
// privacy loss of ⌈G·T⌉ + Lap_ℤ(b), exactly d/b, is at most 2ε/5. One
// planted pair reaches d = 2G + 1, so the scale without the +1,
// 5·2G/(2ε), fails the same check.
func TestNoisyBoundMargin(t *testing.T) {
	const eps = 1.5
	if b, want := tHatScale(eps), dp.NoiseScale(5*(2*tHatGrid+1), 2*eps); b != want {
		t.Errorf("tHatScale(%v) = %v, want 5(2G + 1)/(2ε) rounded up = %v", eps, b, want)
	}
	r := rand.New(rand.NewPCG(5, 6))
	type pair struct{ a, b float64 }
	pairs := []pair{{0.5 / tHatGrid, 0.5/tHatGrid + 2 + 0.9/tHatGrid}} // ⌈⌉ = 1 and 2G + 2
	for range 100_000 {
		T := 100 * (2*r.Float64() - 1)
		move := 2 * (2*r.Float64() - 1)
		if r.IntN(3) == 0 {
			move = float64(2 * (2*r.IntN(2) - 1))
		}
		// Errors of F̂ differing by at most 2⁻¹¹: T's by at most 2⁻¹⁰ = 1/G.
		e1, e2 := 0x1p-12*(2*r.Float64()-1), 0x1p-12*(2*r.Float64()-1)
		pairs = append(pairs, pair{T - 2*e1, T + move - 2*e2})
	}
	loss := func(b float64) float64 {
		worst := 0.0
		for _, p := range pairs {
			worst = math.Max(worst, math.Abs(tHatSteps(p.a)-tHatSteps(p.b))/b)
		}
		return worst
	}
	if l := loss(tHatScale(eps)); l > 2*eps/5*(1+1e-12) {
		t.Errorf("T̂ privacy loss %v > 2ε/5 = %v", l, 2*eps/5)
	}
	if l := loss(5 * 2 * tHatGrid / (2 * eps)); l <= 2*eps/5 {
		t.Errorf("the scale without the +1 step passed: loss %v ≤ 2ε/5 = %v", l, 2*eps/5)
	}
}
