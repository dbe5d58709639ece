package relational

import (
	"context"
	"fmt"
	"math"

	"github.com/synth-dp/synth/dp"
)

// R2TFailure is the failure probability β of R2T's race: with probability
// ≥ 1 − β every noise value stays below its shift, so the answer does not
// exceed Q(I) (Dong et al. Thm. 5.1 with β = 0.05, matching the 95% error
// bounds of synth answer).
const R2TFailure = 0.05

// R2TConfig holds the public parameters of one R2T run.
type R2TConfig struct {
	// Epsilon is the budget ε of the run (pure ε-DP).
	Epsilon float64
	// GS is GS_Q, the public bound on one unit's total contribution; the
	// ladder is τ = 2, 4, …, 2^L with L = max(1, ⌈log₂ GS⌉).
	GS float64
	// Base is the ratio of successive thresholds, a power of two ≥ 2; 0
	// means 2, the ladder τ = 2, 4, 8, … of the paper's analysis. A larger
	// base runs fewer rungs (L = ⌈log_Base GS_Q⌉, so ε/L is larger) but
	// may overshoot DS_Q(I) by up to the base (the authors' code uses 5.5).
	Base float64
	// Quantum is the public grid g (a power of two; 0 means 1) on which
	// tr measures ψ: tr.At takes τ and returns Q(I, τ) in grid steps. The
	// ladder keeps the rungs τ ≥ g, the noise and shifts are whole grid
	// steps, and the result is converted back to the integers
	// ([Quantum]).
	Quantum float64
	// Integral says that Q(I, τ) is an integer for every integer τ: true
	// for integer ψ with one or two units (the closed form, and max flows
	// of integer capacities, are integral; synth answer measures ψ on an
	// integer grid, see [Quantum]). Otherwise (an LP of three or more
	// units) Q(I, τ) is rounded to the nearest integer, whose sensitivity
	// is τ + 1.
	Integral bool

	noShift      bool    // mutation knob for the audit test: no downward shift
	wholeEpsilon bool    // mutation knob: the whole ε on every rung, not ε/L
	noiseFactor  float64 // mutation knob: every rung's scale times noiseFactor (0 means 1)
}

// R2TResult is the output of [RaceToTheTop]: the DP answer and the public
// parameters of the winning rung (post-processing of DP outputs).
type R2TResult struct {
	// Value is the answer, an integer ≥ 0 (rounded from the grid).
	Value int64
	// Tau is the τ of the winning rung, 0 when the race's floor Q(I, 0) = 0
	// won.
	Tau float64
	// Scale is the discrete Laplace scale of the winning rung.
	Scale float64
	// Shift is the downward shift of the winning rung.
	Shift float64
	// Rungs is L, the number of thresholds tried.
	Rungs int
	// BoundTau is the τ that NoiseBound95 refers to: Tau, or the first
	// rung's τ when the floor won.
	BoundTau float64
	// NoiseBound95 bounds |Value − Q(I, BoundTau)| with probability ≥ 0.95:
	// 2·Shift of the rung, plus rounding (see [RaceToTheTop]); NaN when no
	// rung ran. It does not cover the truncation bias Q(I) − Q(I, BoundTau).
	NoiseBound95 float64
}

// Rungs returns L = max(1, ⌈log₂ GS⌉), the number of thresholds of the
// R2T race for GS_Q = gs.
func Rungs(gs float64) (int, error) {
	if !(gs >= 1) || math.IsInf(gs, 0) {
		return 0, invalid("GS_Q = %v, want a finite number ≥ 1", gs)
	}
	return max(1, int(math.Ceil(math.Log2(gs)))), nil
}

// rungsRun is the number L of rungs [RaceToTheTop] runs for GS_Q = gs on
// the grid g with ratio 2^k between rungs: the τ = 2^{kj} ≥ g,
// j = 1..⌈log₂(gs)/k⌉ (at least one).
func rungsRun(gs, g float64, k int) int {
	all, err := Rungs(gs)
	if err != nil {
		return 0
	}
	return max(1, (all+k-1)/k-ladderStart(g, k)+1)
}

// ladderStart is the smallest j ≥ 1 with 2^{kj} ≥ g.
func ladderStart(g float64, k int) int {
	first := 1
	for math.Ldexp(1, k*first) < g {
		first++
	}
	return first
}

// baseExponent returns k with base = 2^k (base 0 means 2).
func baseExponent(base float64) (int, error) {
	if base == 0 {
		return 1, nil
	}
	frac, exp := math.Frexp(base)
	if !(base >= 2) || math.IsInf(base, 0) || frac != 0.5 {
		return 0, invalid("R2T ladder base %v, want a power of two ≥ 2", base)
	}
	return exp - 1, nil
}

// RaceToTheTop runs R2T (Dong, Fang, Yi, Tao and Machanavajjhala, SIGMOD
// 2022, Alg. 1; Dong–Yi survey §4.2) on the truncation tr:
//
//	Q̃(I, τ_j) = Q(I, τ_j) + Lap_ℤ(b_j) − ⌈b_j·ln(L/β)⌉,  b_j = Δ_j·L/ε,
//	output max{ max_j Q̃(I, τ_j), Q(I, 0) = 0 },
//
// for τ_j = 2^j, j = 1..[Rungs](GS_Q) (or τ_j = Base^j, see
// [R2TConfig.Base]; only τ_j ≥ g on a grid g, see [R2TConfig.Quantum]; L
// counts the rungs run), β = [R2TFailure],
// Δ_j = τ_j (τ_j + 1 when Q(I, τ) is rounded, see [R2TConfig.Integral]).
//
// # Guarantee
//
// ε-DP under user-level DP (a neighbour deletes one unit and every tuple
// referencing it), whatever the data: GS_Q only sets the ladder and needs
// no check against the data. Each Q(I, τ_j) has sensitivity ≤ τ_j (≤ Δ_j
// after rounding) on every instance, so each noisy rung is (ε/L)-DP by the
// discrete Laplace mechanism (an exact integer sampler), the L rungs
// compose to ε, and the maximum is post-processing. Budget consumed: ε,
// δ = 0.
//
// Utility (Dong et al. Thm. 5.1): with probability ≥ 1 − β every noise
// value is at most its shift (P[Lap_ℤ(b) ≥ x] ≤ e^{−x/b}, union bound over
// L rungs), so the output is ≤ Q(I); and the rung with the smallest
// τ* ≥ DS_Q(I) gives output ≥ Q(I) − 2·shift(τ*). DS_Q(I) is private, so
// that two-sided bound cannot be published (see [Result] for why no DP
// output can bound the truncation bias from above). What is published:
//
//   - the output itself as a 95% lower bound on Q(I) (the event above);
//   - NoiseBound95 = 2·shift of the winning rung τ_w (of the first rung
//     when the floor won), which bounds |output − Q(I, τ_w)| with
//     probability ≥ 0.95. Proof: Lap_ℤ(b) has P[X = k] ∝ p^|k|,
//     p = e^{−1/b}, so P[X > s] = P[X < −s] = p^{s+1}/(1+p), and with
//     s = ⌈b·ln(L/β)⌉ both tails of a rung together have probability
//     ≤ (2p/(1+p))·β/L ≤ β/L; by the union bound, with probability ≥ 1 − β
//     every rung has |noise| ≤ shift, and then output ∈
//     [Q(I, τ_w) − 2·shift, Q(I, τ_w)] (for the floor: 0 ≥ Q(I, τ_1) −
//     2·shift(τ_1)). Rounding adds 1/2 on a grid g < 1 and 1/2 a grid step
//     when Q(I, τ) is rounded ([R2TConfig.Integral]).
//
// NoiseBound95 is the noise part only: the truncation bias
// Q(I) − Q(I, τ_w) ≥ 0 is not in it.
//
// The rungs are computed in increasing τ (the flow is augmented, not
// restarted). Errors come from the truncation or from ctx.
func RaceToTheTop(ctx context.Context, src dp.Source, tr Truncation, cfg R2TConfig) (R2TResult, error) {
	if !(cfg.Epsilon > 0) || math.IsInf(cfg.Epsilon, 0) {
		return R2TResult{}, invalid("ε = %v, want a finite number > 0", cfg.Epsilon)
	}
	g := cfg.Quantum
	if g == 0 {
		g = 1
	}
	if frac, _ := math.Frexp(g); !(g > 0) || math.IsInf(g, 0) || frac != 0.5 {
		return R2TResult{}, invalid("grid g = %v, want a power of two", g)
	}
	if _, err := Rungs(cfg.GS); err != nil {
		return R2TResult{}, err
	}
	k, err := baseExponent(cfg.Base)
	if err != nil {
		return R2TResult{}, err
	}
	// The rungs are τ = 2^{kj} ≥ g, j = 1..⌈log₂(GS_Q)/k⌉: a threshold
	// below one grid step truncates every term to nothing. L counts the
	// rungs run.
	first, L := ladderStart(g, k), rungsRun(cfg.GS, g, k)
	epsRung := cfg.Epsilon / float64(L)
	if cfg.wholeEpsilon {
		epsRung = cfg.Epsilon
	}
	res := R2TResult{Rungs: L}
	best := int64(0)
	floorShift, ran := 0.0, false
	for j := first; j < first+L; j++ {
		tau := math.Ldexp(1, k*j) / g // in grid steps, a whole number
		sens := tau
		if !cfg.Integral {
			sens = tau + 1
		}
		b := dp.NoiseScale(sens, epsRung)
		if cfg.noiseFactor != 0 {
			b *= cfg.noiseFactor
		}
		if b > dp.MaxDiscreteScale {
			// The rungs from here on have noise beyond the exact sampler's
			// range (and far beyond any useful answer): they are not run.
			// The decision depends on τ, L and ε only, and the budget of
			// the skipped rungs stays counted in L.
			break
		}
		q, err := tr.At(ctx, tau)
		if err != nil {
			return R2TResult{}, err
		}
		lap, err := dp.NewDiscreteLaplace(b)
		if err != nil {
			return R2TResult{}, fmt.Errorf("relational: R2T rung τ = %v: %w", tau*g, err)
		}
		shift := math.Ceil(lap.Scale() * math.Log(float64(L)/R2TFailure))
		if cfg.noShift {
			shift = 0
		}
		if j == first {
			floorShift, ran = shift, true
		}
		v := int64(math.Round(q)) + lap.Sample(src) - int64(shift)
		if v > best {
			best = v
			res.Tau, res.Scale, res.Shift = tau*g, lap.Scale()*g, shift*g
		}
	}
	// Back from grid steps to the integers: post-processing of the DP
	// value on the public grid.
	res.Value = int64(math.Round(float64(best) * g))
	slack := 0.0
	if g < 1 {
		slack += 0.5 // round(best·g)
	}
	if !cfg.Integral {
		slack += 0.5 * g // Q(I, τ) rounded to whole grid steps
	}
	res.BoundTau = res.Tau
	res.NoiseBound95 = math.Ceil(2*res.Shift + slack)
	if res.Tau == 0 {
		// The floor won: Q(I, τ_1) + noise − shift ≤ 0, so with
		// probability ≥ 1 − β, Q(I, τ_1) ≤ 2·shift(τ_1).
		res.BoundTau = math.Ldexp(1, k*first)
		res.NoiseBound95 = math.Ceil(2*floorShift*g + slack)
		if !ran {
			// Not even the first rung was run (its noise is beyond the
			// sampler): nothing bounds Q(I, τ_1).
			res.NoiseBound95 = math.NaN()
		}
	}
	return res, nil
}
