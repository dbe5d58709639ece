package multi

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/relational/ipopt"
)

// JoinGroup is a set of join results of one query coordinate that
// reference the same units (the set D_{k,j} of Dong–Sun–Yi §3.2): merging
// them leaves the QCQP's optimum unchanged (their variables have the same
// constraints, and by convexity an optimum gives them equal values).
type JoinGroup struct {
	// Coord is the query coordinate k.
	Coord int
	// Units are the ids of the units the join results reference (one id
	// space for all unit relations), at least one, no repeats.
	Units []int
	// Psi is the total ψ of the join results, in grid steps, ≥ 0.
	Psi float64
}

// SelfJoinResult is the output of [RunSelfJoin].
type SelfJoinResult struct {
	// Values are the d answers, integers.
	Values []int64
	// Radius is r̃ (a DP output).
	Radius float64
	// Programs is the number of QCQPs solved, and SolveTime their total
	// time (each program is one F̂(I, r)).
	Programs  int
	SolveTime time.Duration
	// Trace says which radii the SVT evaluated.
	Trace SVTTrace
}

// program is the convex QCQP of Dong–Sun–Yi §5.3 for one instance, built
// once and solved per radius.
type program struct {
	groups []JoinGroup
	n      int // units
	d      int
}

// solve returns Ê(I, r) = max Σ_i y_i and the canonical optimal z of (17):
//
//	max Σ_i y_i  s.t.  z_g ≥ Σ_{i∈D_g} y_i − |D_g| + 1,
//	                   Σ_k (Σ_{g∋i, coord k} ψ_g·z_g)² ≤ r²  for every unit i,
//	                   0 ≤ y, z ≤ 1,
//
// with ψ/r in the quadratic constraints (scaled to 1 on the right).
func (p *program) solve(ctx context.Context, r float64) (e float64, z []float64, err error) {
	nz := len(p.groups)
	nv := p.n + nz
	q := &ipopt.QCQP{C: make([]float64, nv), XL: make([]float64, nv), XU: make([]float64, nv)}
	for v := range nv {
		q.XU[v] = 1
	}
	for i := range p.n {
		q.C[i] = -1
	}
	q.LinPtr = []int32{0}
	for g, jg := range p.groups {
		q.LinIdx = append(q.LinIdx, int32(p.n+g))
		q.LinVal = append(q.LinVal, 1)
		for _, u := range jg.Units {
			q.LinIdx = append(q.LinIdx, int32(u))
			q.LinVal = append(q.LinVal, -1)
		}
		q.LinPtr = append(q.LinPtr, int32(len(q.LinIdx)))
		q.LinLo = append(q.LinLo, 1-float64(len(jg.Units)))
		q.LinHi = append(q.LinHi, 1e20)
	}
	// Terms: for every unit, one per coordinate it contributes to.
	type key struct{ unit, k int }
	terms := map[key][]int{}
	for g, jg := range p.groups {
		for _, u := range jg.Units {
			terms[key{u, jg.Coord}] = append(terms[key{u, jg.Coord}], g)
		}
	}
	keys := make([]key, 0, len(terms))
	for k := range terms {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.unit != b.unit {
			return a.unit - b.unit
		}
		return a.k - b.k
	})
	q.QuadPtr, q.TermPtr = []int32{0}, []int32{0}
	for i := 0; i < len(keys); {
		u := keys[i].unit
		for ; i < len(keys) && keys[i].unit == u; i++ {
			for _, g := range terms[keys[i]] {
				q.TermIdx = append(q.TermIdx, int32(p.n+g))
				q.TermVal = append(q.TermVal, p.groups[g].Psi/r)
			}
			q.TermPtr = append(q.TermPtr, int32(len(q.TermIdx)))
		}
		q.QuadPtr = append(q.QuadPtr, int32(len(q.TermPtr)-1))
		q.QuadHi = append(q.QuadHi, 1)
	}
	sol, err := ipopt.Solve(ctx, q, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("multi: QCQP at r = %v: %w", r, err)
	}
	y := sol.X[:p.n]
	for _, v := range y {
		e += math.Max(0, math.Min(1, v))
	}
	z = make([]float64, nz)
	for g, jg := range p.groups {
		s := 1 - float64(len(jg.Units))
		for _, u := range jg.Units {
			s += math.Max(0, math.Min(1, y[u]))
		}
		z[g] = math.Max(0, s) // (17): the tight z of the optimum
	}
	return e, z, nil
}

// RunSelfJoin is the polynomial version of Dong–Sun–Yi Alg. 2 (§5.3) for d
// queries whose join results may reference several units:
//
//  1. ĩ ← SVT(T = −(30/ε)·ln(6/β), ε/5, F̂(I, 2^0), F̂(I, 2^1), …) with the
//     jump start of Alg. 3 (F̂ is non-decreasing in r), r̃ = 2^(ĩ−1);
//  2. T = −2·F̂(I, r̃) + 2, T̂ = T + Lap(5/ε) + (5/ε)·ln(e^{3ε/5}/δ);
//  3. output round(Q̂(I, r̃)/g) + N_ℤ(0, σ²)^d with
//     σ = (T̂·r̃/g + √d)/√(2ρ), ρ the zCDP budget of (2ε/5, δ/(2e^{3ε/5})),
//     scaled back by g and rounded to integers.
//
// F̂(I, r) = Ê(I, r) − N is the QCQP relaxation of the number of units to
// delete so that every unit's contribution vector has norm ≤ r; Q̂ the
// answers of its optimal fractional solution with tight z (17), (18).
//
// # Guarantee and proof sketch
//
// (ε, δ)-DP under user-level DP (Thm. 5.11): F̂ has sensitivity 1 (Lemma
// 5.8), so step 1 is ε/5-DP and T (sensitivity 2) with Lap(5/ε) is
// 2ε/5-DP; by the Laplace tail T̂ ≥ T with probability ≥ 1 − δ/(2e^{ε/5});
// Q̂(I, r̃) has local sensitivity ≤ T·r̃ (Lemma 5.10), rounding adds ≤ √d
// grid steps in ℓ2, and the discrete Gaussian with that sensitivity is
// ρ-zCDP (CKS Thm. 14), i.e. (2ε/5, δ/(2e^{3ε/5}))-DP; Lemma 3.7 (the
// second-order Gaussian mechanism) composes them to (ε, δ). T̂ and r̃ are
// not published; the answers are integers.
//
// Numerical caveat: F̂ and Q̂ come from Ipopt at relative tolerance
// [ipopt.Tolerance]; the lemmas hold for the exact optimum, so the
// guarantee holds up to the solver's accuracy (the same caveat as an LP
// solver in R2T). Without the ipopt build tag it returns an error wrapping
// [ErrNeedsIpopt].
func RunSelfJoin(ctx context.Context, src dp.Source, groups []JoinGroup, d int, cfg Config) (SelfJoinResult, error) {
	if !ipopt.Available {
		return SelfJoinResult{}, ErrNeedsIpopt
	}
	cfg, err := cfg.validate()
	if err != nil {
		return SelfJoinResult{}, err
	}
	if d < 1 {
		return SelfJoinResult{}, invalid("d = %d queries, want ≥ 1", d)
	}
	n := 0
	norms := map[int][]float64{}
	for _, g := range groups {
		if g.Coord < 0 || g.Coord >= d || len(g.Units) == 0 || !(g.Psi >= 0) || math.IsInf(g.Psi, 0) {
			return SelfJoinResult{}, invalid("join group %+v (d = %d)", g, d)
		}
		for _, u := range g.Units {
			if u < 0 {
				return SelfJoinResult{}, invalid("unit id %d", u)
			}
			n = max(n, u+1)
			if norms[u] == nil {
				norms[u] = make([]float64, d)
			}
			norms[u][g.Coord] += g.Psi
		}
	}
	ds := 0.0
	for _, v := range norms {
		s := 0.0
		for _, x := range v {
			s += x * x
		}
		ds = math.Max(ds, math.Sqrt(s)*cfg.Quantum)
	}
	p := &program{groups: groups, n: n, d: d}
	res := SelfJoinResult{}
	cache := map[int]solved{}
	at := func(l int) (solved, error) {
		if s, ok := cache[l]; ok {
			return s, nil
		}
		t0 := time.Now()
		e, z, err := p.solve(ctx, math.Ldexp(1, l-1)/cfg.Quantum)
		res.SolveTime += time.Since(t0)
		res.Programs++
		if err != nil {
			return solved{}, err
		}
		qhat := make([]float64, d)
		for g, jg := range groups {
			qhat[jg.Coord] += z[g] * jg.Psi
		}
		cache[l] = solved{e, qhat}
		return cache[l], nil
	}
	if err := selfJoinNoise(src, at, n, d, ds, cfg, &res); err != nil {
		return SelfJoinResult{}, err
	}
	return res, nil
}

// solved is one program's Ê(I, r) and Q̂(I, r) (in grid steps).
type solved struct {
	e    float64
	qhat []float64
}

// selfJoinNoise is the randomised part of [RunSelfJoin] over the programs
// at(ℓ) (radius 2^(ℓ−1)) of an instance with n units, d coordinates and
// largest unit norm ds; the privacy audit drives it with precomputed
// programs.
func selfJoinNoise(src dp.Source, at func(l int) (solved, error), n, d int, ds float64, cfg Config, res *SelfJoinResult) error {
	f := func(l int) (float64, error) {
		s, err := at(l)
		return s.e - float64(n), err
	}
	nr := Rungs(cfg.GS)
	k := 1
	for k < nr && math.Ldexp(1, k-1) < ds {
		k++
	}
	eps1 := cfg.Epsilon / 5
	idx, err := svt(src, f, nr, k, -(6/eps1)*math.Log(6/cfg.Failure), eps1, &res.Trace, cfg.noThresholdNoise)
	if err != nil {
		return err
	}
	if idx == 0 {
		idx = nr
	}
	res.Radius = math.Ldexp(1, idx-1)
	best, err := at(idx)
	if err != nil {
		return err
	}
	T := -2*(best.e-float64(n)) + 2
	eps := cfg.Epsilon
	That := T + dp.Laplace(src, 5/eps) + (5/eps)*math.Log(math.Exp(3*eps/5)/cfg.Delta)
	if That <= 0 {
		That = dp.MinDiscreteScale // a non-positive bound: keep the smallest noise (post-processing of T̂)
	}
	rho, err := dp.RhoForBudget(dp.Budget{Epsilon: 2 * eps / 5, Delta: cfg.Delta / (2 * math.Exp(3*eps/5))})
	if err != nil {
		return err
	}
	sigma := (That*res.Radius/cfg.Quantum + math.Sqrt(float64(d))) / math.Sqrt(2*rho)
	gauss, err := dp.NewDiscreteGaussian(math.Max(sigma, dp.MinDiscreteScale))
	if err != nil {
		return invalid("noise σ = %v grid steps beyond the exact sampler's range: %v", sigma, err)
	}
	res.Values = make([]int64, d)
	for i, q := range best.qhat {
		res.Values[i] = int64(math.Round(float64(int64(math.Round(q))+gauss.Sample(src)) * cfg.Quantum))
	}
	return nil
}
