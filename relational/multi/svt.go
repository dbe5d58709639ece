package multi

import (
	"math"
	"math/big"

	"github.com/synth-dp/synth/dp"
)

// SVTTrace records which queries an [SVT] run evaluated.
//
// NOT differentially private: with the jump start the walk begins at a
// guess k that may be computed from the private data (Alg. 3), and which
// f(ℓ) were computed depends on the unnoised values. Only the index [SVT]
// returns is DP. A trace is for the data custodian's diagnostics and tests
// only; never publish it.
type SVTTrace struct {
	// Evaluated lists the indices ℓ whose f(ℓ) was computed, in order.
	Evaluated []int
	// Skipped is the number of indices ℓ ≤ k the jump start never
	// computed.
	Skipped int
}

// SVT is the sparse vector technique with jump start (Dong–Sun–Yi Alg. 3)
// over the queries f(1), …, f(n) of sensitivity 1 that are non-decreasing
// in ℓ, run exactly on a public grid: with F(ℓ) = ⌊1024·f(ℓ)⌋ (integer
// grid steps of 1/1024, sensitivity K = 1025 steps, see [svt]) it draws
// T̃ = ⌈1024·T⌉ + Lap_ℤ(2K/ε), then v_1, …, v_k ~ Lap_ℤ(4K/ε) (exact
// discrete Laplace, [dp.DiscreteLaplaceSampler]), walks back from k
// computing f(ℓ) only while F′ + v_ℓ ≥ T̃ for the last computed F′ (a
// skipped F(ℓ) ≤ F′ stays below the threshold), and returns the first ℓ
// with F(ℓ) + v_ℓ ≥ T̃, or 0. With k = 0 it is plain AboveThreshold, and on
// the same source every k gives the same index.
//
// # Guarantee
//
// ε-DP for every instance when each f(ℓ) has sensitivity 1 (Lyu et al.
// 2017, Alg. 1 with c = 1; Dong–Sun–Yi Lemma 3.8; the integer form in
// [svt]): the output is that of plain AboveThreshold, only fewer queries
// are computed, and that saving needs f non-decreasing (for a
// non-monotone f the walk would substitute a later value for a skipped
// one, which the proof does not cover). k may depend on the private data.
// Only the index is released, and every comparison is between integers
// drawn with integer arithmetic (DESIGN.md §3, invariant 6).
func SVT(src dp.Source, f func(l int) (float64, error), n, k int, threshold, eps float64, trace *SVTTrace) (int, error) {
	return svt(src, f, n, k, threshold, eps, realGrid, trace, false)
}

// svtGrid is the public grid the SVT compares on: F(ℓ) = ⌊scale·f(ℓ)⌋,
// of sensitivity sens grid steps when f has sensitivity 1.
type svtGrid struct {
	scale float64 // a power of two
	sens  int64
}

var (
	// countGrid is for integer-valued f of sensitivity 1 (Alg. 1's
	// Count(I, r) − N): F = f exactly.
	countGrid = svtGrid{scale: 1, sens: 1}
	// realGrid is for real-valued f of sensitivity 1 (Alg. 2's F̂):
	// |⌊1024·f⌋ − ⌊1024·f′⌋| ≤ ⌈1024·|f − f′|⌉ (1024·f is exact, a power
	// of two), which is ≤ 1025 when the computed f, f′ of neighbours
	// differ by at most 1 + 2⁻¹⁰ — their errors against the exact F̂ of
	// Lemma 5.8 differ by at most 2⁻¹⁰. That error is the solver's, not
	// float rounding (F̂ sums y on the grid 2⁻³⁰, exact for fewer than
	// 2²³ units): Ipopt's relative tolerance, about 2⁻¹⁰ in absolute
	// terms once F̂ ~ 10⁶ (the "Numerical caveat" of [RunSelfJoin]). The
	// noise is that of sensitivity 1 + 2⁻¹⁰ in f's units.
	realGrid = svtGrid{scale: 1024, sens: 1025}
)

// svtLimit bounds |scale·f| and |scale·T|: values are clamped to ±2⁵²
// (1-Lipschitz, so sensitivities hold) and converted exactly; the
// comparisons add the noise in big integers, so no draw can overflow.
const svtLimit = 1 << 52

func (g svtGrid) at(x float64) int64 {
	return int64(math.Floor(math.Max(-svtLimit, math.Min(svtLimit, g.scale*x))))
}

// svt is [SVT] on the grid g, with the mutation knob of the audit test:
// noThresholdNoise compares against the bare threshold T (the flawed SVT
// whose privacy loss grows with the number of queries below the
// threshold).
//
// Proof of ε-DP on the grid. F(ℓ) = ⌊g.scale·f(ℓ)⌋ is an integer of
// sensitivity K = g.sens, non-decreasing when f is. F + v ≥ T̃ compares
// integers, and ⌈g.scale·T⌉ is a public threshold. The AboveThreshold
// proof (Dwork–Roth 2014, Thm. 3.23; Lyu et al. 2017, Thm. 2) uses only two
// facts about the noise, both true of the discrete Laplace Lap_ℤ(b), whose
// pmf changes by at most e^(d/b) under an integer shift d: fixing the
// threshold noise ρ, the events {F(i) + v_i < T + ρ} for i < ℓ only grow
// when ρ is shifted by K (each F(i) moves by ≤ K), at a cost of
// P[ρ = x] ≤ e^(K/b_T)·P[ρ = x + K]; and {F(ℓ) + v_ℓ ≥ T + ρ} after that
// shift needs v_ℓ shifted by ≤ 2K, at a cost of e^(2K/b_V). The sum over
// ρ ∈ ℤ replaces the integral; with b_T = 2K/ε and b_V = 4K/ε the costs are
// ε/2 each. The paper's continuous Laplace on f(ℓ) is Lap(2/ε), Lap(4/ε):
// in f's units the grid's noise is K/g.scale times that (×1 for counts,
// ×1.001 for real f).
func svt(src dp.Source, f func(l int) (float64, error), n, k int, threshold, eps float64, g svtGrid, trace *SVTTrace, noThresholdNoise bool) (int, error) {
	if !(eps > 0) || math.IsInf(eps, 0) {
		return 0, invalid("SVT ε = %v, want a finite number > 0", eps)
	}
	if math.IsNaN(threshold) || math.IsInf(threshold, 0) {
		return 0, invalid("SVT threshold = %v, want a finite number", threshold)
	}
	if n < 0 {
		return 0, invalid("SVT over %d queries", n)
	}
	s, err := newSVTNoise(threshold, eps, g)
	if err != nil {
		return 0, err
	}
	return s.run(src, f, n, k, trace, noThresholdNoise)
}

// svtNoise is the part of [svt] that depends on the public parameters
// only — the two samplers and the threshold on the grid — built once so
// that repeated runs with the same parameters (Alg. 1 on one instance, as
// the audits run it) skip the exact rational conversions; [svtNoise.run]
// then draws exactly what [svt] draws. Safe for concurrent use with
// distinct sources.
type svtNoise struct {
	g          svtGrid
	lapT, lapV *dp.DiscreteLaplaceSampler
	tGrid      int64 // ⌈g.scale·T⌉, clamped to ±svtLimit
}

// newSVTNoise builds the samplers of [svt] (ε and T already checked).
func newSVTNoise(threshold, eps float64, g svtGrid) (*svtNoise, error) {
	// A scale below the sampler's smallest is raised to it: more noise is
	// still ε-DP (only huge ε, as in tests, get there).
	// The scales 2K/ε and 4K/ε are rounded up where the quotient rounds
	// down ([dp.NoiseScale]), so that K/b_T ≤ ε/2 and 2K/b_V ≤ ε/2 hold in
	// exact arithmetic.
	lapT, err := dp.NewDiscreteLaplace(max(dp.NoiseScale(2*float64(g.sens), eps), dp.MinDiscreteScale))
	if err != nil {
		return nil, invalid("SVT ε = %v: threshold noise: %v", eps, err)
	}
	lapV, err := dp.NewDiscreteLaplace(max(dp.NoiseScale(4*float64(g.sens), eps), dp.MinDiscreteScale))
	if err != nil {
		return nil, invalid("SVT ε = %v: query noise: %v", eps, err)
	}
	tGrid := int64(math.Ceil(math.Max(-svtLimit, math.Min(svtLimit, g.scale*threshold))))
	return &svtNoise{g: g, lapT: lapT, lapV: lapV, tGrid: tGrid}, nil
}

// aboveThreshold reports F + v − ρ ≥ t exactly, for |F|, |t| ≤ svtLimit
// and any v, ρ: in int64 when v and ρ lie within ±2⁶² (then
// |v − ρ| ≤ 2⁶³ − 2⁶² and t − F ∈ ±2⁵³, no overflow), in big integers
// otherwise.
func aboveThreshold(fl, v, rho, t int64) bool {
	const lim = 1 << 62
	if v > -lim && v < lim && rho > -lim && rho < lim {
		return v-rho >= t-fl
	}
	s := new(big.Int).SetInt64(fl)
	s.Add(s, big.NewInt(v))
	s.Sub(s, big.NewInt(rho))
	return s.Cmp(big.NewInt(t)) >= 0
}

// run is the walk of [svt] over f(1..n) with the jump-start guess k
// (n ≥ 0).
func (s *svtNoise) run(src dp.Source, f func(l int) (float64, error), n, k int, trace *SVTTrace, noThresholdNoise bool) (int, error) {
	if trace == nil {
		trace = &SVTTrace{}
	}
	g := s.g
	k = max(0, min(k, n))
	tGrid := s.tGrid
	rho := s.lapT.Sample(src)
	if noThresholdNoise {
		rho = 0
	}
	// T̃ = tGrid + ρ, kept as the pair: F + v ≥ T̃ ⟺ F + v − ρ ≥ tGrid.
	above := func(fl, v int64) bool { return aboveThreshold(fl, v, rho, tGrid) }
	v := make([]int64, k+1)
	for l := 1; l <= k; l++ {
		v[l] = s.lapV.Sample(src)
	}
	fv := make([]int64, k+1)
	var fprime int64
	havePrime := false // F′ = +∞ before the first computed value
	for l := k; l >= 1; l-- {
		if havePrime && !above(fprime, v[l]) {
			fv[l] = fprime // F(ℓ) ≤ F′ and F′ + v_ℓ < T̃
			trace.Skipped++
			continue
		}
		fl, err := f(l)
		if err != nil {
			return 0, err
		}
		trace.Evaluated = append(trace.Evaluated, l)
		fv[l], fprime, havePrime = g.at(fl), g.at(fl), true
	}
	for l := 1; l <= n; l++ {
		var vl, fl int64
		if l <= k {
			vl, fl = v[l], fv[l]
		} else {
			vl = s.lapV.Sample(src)
			x, err := f(l)
			if err != nil {
				return 0, err
			}
			fl = g.at(x)
			trace.Evaluated = append(trace.Evaluated, l)
		}
		if above(fl, vl) {
			return l, nil
		}
	}
	return 0, nil
}
