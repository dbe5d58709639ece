package multi

import (
	"context"
	"errors"
	"math"
	"math/big"
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
	// Values are the d answers, integers (DP outputs).
	Values []int64
	// Radius is r̃ (a DP output; not published by [Answer]).
	Radius float64

	// The fields below are NOT differentially private: they depend on the
	// private instance (which radii the jump start skipped, how long the
	// solver took, how it behaved). They are diagnostics for the data
	// custodian only and must never be published or printed into the
	// answers' output.

	// Programs is the number of QCQPs solved, and SolveTime their total
	// time (each program is one F̂(I, r)). Not DP.
	Programs  int
	SolveTime time.Duration
	// Trace says which radii the SVT evaluated. Not DP.
	Trace SVTTrace
	// Reports has one entry per QCQP solved, in order: solver status,
	// errors, and the feasibility repair. Not DP.
	Reports []ProgramReport
}

// program is the convex QCQP of Dong–Sun–Yi §5.3 for one instance, built
// once and solved per radius.
type program struct {
	groups  []JoinGroup
	n       int // units
	d       int
	members [][]membership // per unit, its (group, coordinate) pairs by coordinate
	// solver is ipopt.Solve; tests plant a fake or perturbed one.
	solver func(context.Context, *ipopt.QCQP, []float64) (ipopt.Solution, error)
}

// solve returns Ê(I, r) = max Σ_i y_i and round(Q̂(I, r)) in grid steps
// from the canonical optimal z of (17):
//
//	max Σ_i y_i  s.t.  z_g ≥ Σ_{i∈D_g} y_i − |D_g| + 1,
//	                   Σ_k (Σ_{g∋i, coord k} ψ_g·z_g)² ≤ r²  for every unit i,
//	                   0 ≤ y, z ≤ 1,
//
// with ψ/r in the quadratic constraints (scaled to 1 on the right). The
// solver's point is not trusted: [program.feasible] makes it exactly
// feasible, and a failed solve (rep.Err) is repaired the same way from its
// last iterate (or from 0), so that the only error is ctx's — whose
// occurrence is the caller's doing, not the data's.
func (p *program) solve(ctx context.Context, r float64) (e float64, qhat []float64, rep ProgramReport, err error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, rep, err
	}
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
	q.QuadPtr, q.TermPtr = []int32{0}, []int32{0}
	for _, ms := range p.members {
		if len(ms) == 0 {
			continue
		}
		for j, m := range ms {
			q.TermIdx = append(q.TermIdx, int32(p.n+m.g))
			q.TermVal = append(q.TermVal, p.groups[m.g].Psi/r)
			if j+1 == len(ms) || ms[j+1].k != m.k {
				q.TermPtr = append(q.TermPtr, int32(len(q.TermIdx)))
			}
		}
		q.QuadPtr = append(q.QuadPtr, int32(len(q.TermPtr)-1))
		q.QuadHi = append(q.QuadHi, 1)
	}
	solver := p.solver
	if solver == nil {
		solver = ipopt.Solve
	}
	t0 := time.Now()
	sol, serr := solver(ctx, q, nil)
	if serr != nil && (errors.Is(serr, context.Canceled) || errors.Is(serr, context.DeadlineExceeded)) {
		return 0, nil, rep, serr
	}
	dt := time.Since(t0)
	y, z, rep := p.feasible(sol.X, r)
	rep.Radius, rep.Status, rep.Err, rep.Time = r, sol.Status, serr, dt
	return sumY(y), p.answers(z), rep, nil
}

// RunSelfJoin is the polynomial version of Dong–Sun–Yi Alg. 2 (§5.3) for d
// queries whose join results may reference several units:
//
//  1. ĩ ← SVT(T = −(30/ε)·ln(6/β), ε/5, F̂(I, 2^0), F̂(I, 2^1), …) with the
//     jump start of Alg. 3 (F̂ is non-decreasing in r), r̃ = 2^(ĩ−1);
//  2. T = −2·F̂(I, r̃) + 2, T̂ = T + Lap(5/ε) + (5/ε)·ln(e^{3ε/5}/δ), here
//     with the exact discrete Laplace on the grid 1/1024 ([noisyBound]);
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
// 5.8), so step 1 is ε/5-DP (the SVT compares integers on the grid 1/1024
// with exact discrete Laplace noise, [svt]) and T (sensitivity 2) with
// Lap(5/ε) is 2ε/5-DP (on the grid, [noisyBound]); by the Laplace tail T̂ ≥ T with probability ≥ 1 − δ/(2e^{ε/5});
// Q̂(I, r̃) has local sensitivity ≤ T·r̃ (Lemma 5.10), rounding adds ≤ √d
// grid steps in ℓ2, and the discrete Gaussian with that sensitivity is
// ρ-zCDP (CKS Thm. 14), i.e. (2ε/5, δ/(2e^{3ε/5}))-DP; Lemma 3.7 (the
// second-order Gaussian mechanism) composes them to (ε, δ). T̂ and r̃ are
// not published; the answers are integers.
//
// # Solver answers are checked, not trusted
//
// Each program's point comes from Ipopt and is then made exactly feasible
// in Go ([program.feasible]: y on a 2^−30 grid, z tight, every quadratic
// constraint checked in exact arithmetic, violating units' y lowered), so
// Q̂'s local-sensitivity bound (Lemma 5.10) holds for the points actually
// used. A failed solve is repaired the same way from Ipopt's last iterate
// and recorded in [SelfJoinResult].Reports (not DP); it is never an error,
// so after the budget is charged the only errors are parameter checks that
// depend on the queries alone (d, the ladder, ψ whole numbers ≥ 0 —
// JoinGroups' sums of grid steps, clamped at 2⁵³ by [clampPsi]), noise beyond the sampler's range (a
// function of DP outputs), and ctx. Numerical caveat: F̂'s sensitivity 1
// (Lemma 5.8, used by the SVT and by (20)) holds for the optimum; F̂ here
// is the objective of a feasible point within Ipopt's tolerance
// [ipopt.Tolerance] plus the repair's loss of the optimum (the same caveat
// as an LP solver in R2T; the loss is in the reports). The exact noise's
// one-step margins cover it only where the errors of neighbours' F̂
// differ by at most 2⁻¹⁰ (the SVT, [realGrid]) and 2⁻¹¹ (T̂,
// [noisyBound]). Without the ipopt build tag it returns an error wrapping
// [ErrNeedsIpopt].
func RunSelfJoin(ctx context.Context, src dp.Source, groups []JoinGroup, d int, cfg Config) (SelfJoinResult, error) {
	if !ipopt.Available {
		return SelfJoinResult{}, ErrNeedsIpopt
	}
	return runSelfJoin(ctx, src, groups, d, cfg, nil)
}

// runSelfJoin is [RunSelfJoin] with the solver as a parameter (nil:
// ipopt.Solve), for tests with a fake solver.
func runSelfJoin(ctx context.Context, src dp.Source, groups []JoinGroup, d int, cfg Config,
	solver func(context.Context, *ipopt.QCQP, []float64) (ipopt.Solution, error)) (SelfJoinResult, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return SelfJoinResult{}, err
	}
	if d < 1 {
		return SelfJoinResult{}, invalid("d = %d queries, want ≥ 1", d)
	}
	groups, n, ds, err := selfJoinInstance(groups, d, cfg)
	if err != nil {
		return SelfJoinResult{}, err
	}
	p := newProgram(groups, n, d)
	p.solver = solver
	res := SelfJoinResult{}
	cache := map[int]solved{}
	at := func(l int) (solved, error) {
		if s, ok := cache[l]; ok {
			return s, nil
		}
		e, qhat, rep, err := p.solveRung(ctx, l, cfg)
		if err != nil {
			return solved{}, err // ctx only
		}
		res.SolveTime += rep.Time
		res.Programs++
		res.Reports = append(res.Reports, rep)
		cache[l] = solved{e, qhat}
		return cache[l], nil
	}
	if err := selfJoinNoise(src, at, n, d, ds, cfg, &res); err != nil {
		return SelfJoinResult{}, err
	}
	return res, nil
}

// selfJoinInstance normalises the join groups ([normaliseGroups]) and
// returns them with the number of units n and DS, the largest unit
// contribution norm ‖S_i‖ in the query's units (grid steps × g).
func selfJoinInstance(groups []JoinGroup, d int, cfg Config) ([]JoinGroup, int, float64, error) {
	groups, n, err := normaliseGroups(groups, d)
	if err != nil {
		return nil, 0, 0, err
	}
	norms := map[int][]float64{}
	for _, g := range groups {
		for _, u := range g.Units {
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
	return groups, n, ds, nil
}

// solveRung solves the program at rung l of the radius ladder, r = 2^(l−1)
// in the query's units (r/g grid steps); the report carries r.
func (p *program) solveRung(ctx context.Context, l int, cfg Config) (float64, []float64, ProgramReport, error) {
	r := math.Ldexp(1, l-1)
	e, qhat, rep, err := p.solve(ctx, r/cfg.Quantum)
	rep.Radius = r
	return e, qhat, rep, err
}

// normaliseGroups checks the join groups and returns copies with each
// D_g as a set (units sorted, repeats dropped: a join result that
// references one unit twice is in the unit's sub-instance exactly when the
// unit is) and the number of units n (ids below n).
func normaliseGroups(groups []JoinGroup, d int) ([]JoinGroup, int, error) {
	out := make([]JoinGroup, len(groups))
	n := 0
	for i, g := range groups {
		if g.Coord < 0 || g.Coord >= d || len(g.Units) == 0 || len(g.Units) > maxUnitsPerGroup {
			return nil, 0, invalid("join group %+v (d = %d; 1 to %d units)", g, d, maxUnitsPerGroup)
		}
		psi := clampPsi(g.Psi)
		if !(psi >= 0) || psi != math.Trunc(psi) {
			return nil, 0, invalid("join group ψ = %v grid steps, want a whole number ≥ 0", g.Psi)
		}
		us := slices.Clone(g.Units)
		slices.Sort(us)
		us = slices.Compact(us)
		if us[0] < 0 {
			return nil, 0, invalid("unit id %d", us[0])
		}
		n = max(n, us[len(us)-1]+1)
		out[i] = JoinGroup{Coord: g.Coord, Units: us, Psi: psi}
	}
	return out, n, nil
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
	idx, err := svt(src, f, nr, k, -(6/eps1)*math.Log(6/cfg.Failure), eps1, realGrid, &res.Trace, cfg.noThresholdNoise)
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
	That, err := noisyBound(src, T, eps, cfg.Delta)
	if err != nil {
		return err
	}
	if That <= 0 {
		That = dp.MinDiscreteScale // a non-positive bound: keep the smallest noise (post-processing of T̂)
	}
	rho, err := dp.RhoForBudget(dp.Budget{Epsilon: 2 * eps / 5, Delta: cfg.Delta / (2 * math.Exp(3*eps/5))})
	if err != nil {
		return err
	}
	rad := res.Radius
	if cfg.noiseRadiusOne {
		rad = 1
	}
	sigma := (That*rad/cfg.Quantum + math.Sqrt(float64(d))) / math.Sqrt(2*rho)
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

// tHatGrid is the public grid of T̂: T̂ is published to the noise scale as
// an integer number of steps of 1/tHatGrid.
const tHatGrid = 1024

// noisyBound returns T̂ of Alg. 2 step 2, an upper bound of T (sensitivity
// 2) with probability ≥ 1 − δ/(2e^{3ε/5}), as an integer multiple of
// 1/[tHatGrid] drawn with integer arithmetic (DESIGN.md §3, inv. 6):
//
//	T̂ = (⌈G·T⌉ + X + s)/G,  X ~ Lap_ℤ(b),  b = 5(2G + 1)/(2ε),
//	s = ⌈b·ln(e^{3ε/5}/δ)⌉,  G = tHatGrid.
//
// The paper's T + Lap(5/ε) + (5/ε)·ln(e^{3ε/5}/δ) is (2ε/5)-DP for T of
// sensitivity 2 (Lemma 5.8: F̂ has sensitivity 1). Here ⌈G·T⌉ is an
// integer of sensitivity 2G + 1 (|⌈x⌉ − ⌈y⌉| ≤ ⌈|x − y|⌉, G·T exact: G is
// a power of two) provided the computed T's of neighbours differ by at
// most 2 + 1/G. T = −2F̂ + 2, so that holds when the errors of the two
// computed F̂ (each against the exact optimum F̂ of Lemma 5.8) differ by
// at most 2⁻¹¹ (2G·Δe ≤ 1). The error is not floating-point rounding of
// the sum — F̂ sums y values on the grid 2⁻³⁰ ([yScale]), exact in float64
// for fewer than 2²³ units — but the solver's: Ipopt stops within a
// relative tolerance ([ipopt.Tolerance], about 10⁻⁹, so near 2⁻¹⁰ in
// absolute terms once F̂ ~ 10⁶) plus the repair's loss; this is the
// "Numerical caveat" of [RunSelfJoin]. Under it Lap_ℤ with b =
// (2G + 1)/(2ε/5) makes ⌈G·T⌉ + X (2ε/5)-DP (the geometric mechanism); s
// is public. The bound: ⌈G·T⌉ ≥ G·T, so T̂ < T needs
// X ≤ −s − 1, of probability r^(s+1)/(1 + r) ≤ e^(−s/b)·r/(1 + r) <
// δ/(2e^{3ε/5}) (r = e^{−1/b}) — the continuous version's tail, ½·δ/e^{3ε/5}.
// In T's units the noise scale is b/G = (5/ε)·(1 + 1/(2G)).
func noisyBound(src dp.Source, T, eps, delta float64) (float64, error) {
	return noisyBoundScale(src, T, eps, delta, tHatScale(eps))
}

// tHatScale is b = 5(2G + 1)/(2ε) of [noisyBound], rounded up where the
// quotient rounds down ([dp.NoiseScale], so that (2G + 1)/b ≤ 2ε/5 in
// exact arithmetic; 2ε is exact) and
// raised to the exact sampler's smallest scale (more noise is still
// private).
func tHatScale(eps float64) float64 {
	return max(dp.NoiseScale(5*(2*tHatGrid+1), 2*eps), dp.MinDiscreteScale)
}

// tHatSteps is ⌈G·T⌉ of [noisyBound], G·T clamped to ±2⁵² (1-Lipschitz).
func tHatSteps(T float64) float64 {
	return math.Ceil(math.Max(-svtLimit, math.Min(svtLimit, tHatGrid*T)))
}

// noisyBoundScale is [noisyBound] with the noise scale b as a parameter
// (the statistical test plants a wrong one).
func noisyBoundScale(src dp.Source, T, eps, delta, b float64) (float64, error) {
	const g = tHatGrid
	lap, err := dp.NewDiscreteLaplace(b)
	if err != nil {
		return 0, invalid("T̂ noise for ε = %v: %v", eps, err)
	}
	shift := math.Ceil(b * (3*eps/5 - math.Log(delta))) // b·ln(e^{3ε/5}/δ), without overflowing e^{3ε/5}
	tg := tHatSteps(T)
	// The exact integer ⌈G·T⌉ + X + s, then rounded once to float64: a
	// function of the DP integer ⌈G·T⌉ + X and public values.
	sum := big.NewInt(int64(tg))
	sum.Add(sum, big.NewInt(int64(shift)))
	sum.Add(sum, big.NewInt(lap.Sample(src)))
	f, _ := new(big.Float).SetInt(sum).Float64()
	return f / g, nil
}
