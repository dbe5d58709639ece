package dp

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// AdvancedEpsilon returns the ε of k-fold adaptive composition of ε₀-DP
// mechanisms at slack δ' by the advanced composition theorem (Dwork,
// Rothblum, Vadhan 2010; Dwork–Roth Thm. 3.20):
// ε = √(2k·ln(1/δ'))·ε₀ + k·ε₀·(e^{ε₀} − 1).
func AdvancedEpsilon(eps0 float64, k int, deltaPrime float64) float64 {
	kf := float64(k)
	return math.Sqrt(2*kf*math.Log(1/deltaPrime))*eps0 + kf*eps0*math.Expm1(eps0)
}

// PerStepEpsilon returns the largest ε₀ such that k adaptively composed
// ε₀-DP steps are (ε, δ)-DP, taking the better of basic composition
// (ε₀ = ε/k, δ unused) and advanced composition with slack δ (solved by
// bisection on the monotone [AdvancedEpsilon]). The result never exceeds
// what either theorem allows. The value is a pure function of its
// arguments and is memoised by them (see memo.go): the bisection's 200
// steps of logarithms and square roots cost about a twentieth of a whole
// PMW run on the audits' tiny universes.
func PerStepEpsilon(eps, delta float64, k int) (float64, error) {
	return memoized(perStepKey{eps, delta, k}, func() (float64, error) { return perStepEpsilon(eps, delta, k) })
}

// perStepKey is the memo key of [PerStepEpsilon].
type perStepKey struct {
	eps, delta float64
	k          int
}

// perStepEpsilon is [PerStepEpsilon] without the memo.
func perStepEpsilon(eps, delta float64, k int) (float64, error) {
	if err := checkPositive("epsilon", eps); err != nil {
		return 0, err
	}
	if k < 1 {
		return 0, fmt.Errorf("%w: k = %d steps, want ≥ 1", ErrInvalidParameter, k)
	}
	basic := eps / float64(k)
	if delta == 0 {
		return basic, nil
	}
	if err := checkDelta("delta", delta); err != nil {
		return 0, err
	}
	lo, hi := 0.0, eps
	for i := 0; i < 200; i++ {
		mid := (lo + hi) / 2
		if AdvancedEpsilon(mid, k, delta) <= eps {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Max(basic, lo), nil
}

// BasicComposition returns the (Σεᵢ, Σδᵢ) guarantee of running mechanisms
// with the given guarantees in sequence, adaptively, on the same data
// (Dwork–Roth 2014, Thm. 3.16; Ghazi et al. cite it as basic composition).
// It returns an error if any budget is invalid or none is given.
func BasicComposition(budgets ...Budget) (Budget, error) {
	return fold(budgets, func(a, b float64) float64 { return a + b })
}

// ParallelComposition returns the guarantee of running the mechanisms on
// disjoint parts of the data, where a neighbour changes only one part:
// (maxᵢ εᵢ, maxᵢ δᵢ) (McSherry, PINQ, SIGMOD 2009, Thm. 4; used by Ghazi et
// al. Lemma 4.1 for the sub-instances of a partition). Disjointness is the
// caller's claim: when a tuple may fall in up to k parts, use
// [GroupPrivacy] with k instead. [Ledger.SplitParallel] charges such a
// share once.
func ParallelComposition(budgets ...Budget) (Budget, error) {
	return fold(budgets, math.Max)
}

// fold validates every budget and combines their ε and δ with op.
func fold(budgets []Budget, op func(a, b float64) float64) (Budget, error) {
	if len(budgets) == 0 {
		return Budget{}, fmt.Errorf("%w: no budgets to compose", ErrInvalidParameter)
	}
	var out Budget
	for _, b := range budgets {
		if err := b.Validate(); err != nil {
			return Budget{}, err
		}
		out = Budget{Epsilon: op(out.Epsilon, b.Epsilon), Delta: op(out.Delta, b.Delta)}
	}
	return out, nil
}

// GroupPrivacy returns the guarantee of an (ε, δ)-DP mechanism for
// instances that differ in up to k neighbouring steps: (k·ε, k·e^((k−1)ε)·δ)
// (Dwork–Roth 2014, Thm. 2.2 for δ = 0; Vadhan 2017, Lemma 2.2 for δ > 0;
// Qiu et al. Lemma 2.4; Ghazi et al. Lemma 4.11). The δ term grows
// exponentially in k·ε; an error is returned if it reaches 1 or overflows.
func GroupPrivacy(b Budget, k int) (Budget, error) {
	if err := b.Validate(); err != nil {
		return Budget{}, err
	}
	if k < 1 {
		return Budget{}, fmt.Errorf("%w: group size k = %d, want ≥ 1", ErrInvalidParameter, k)
	}
	kf := float64(k)
	d := b.Delta
	if d > 0 {
		d = kf * math.Exp((kf-1)*b.Epsilon) * b.Delta
		if math.IsInf(d, 0) || math.IsNaN(d) || d >= 1 {
			return Budget{}, fmt.Errorf("%w: group privacy for k = %d gives delta = %v ≥ 1", ErrInvalidParameter, k, d)
		}
	}
	return Budget{Epsilon: kf * b.Epsilon, Delta: d}, nil
}

// RhoGaussian returns ρ = Δ²/(2σ²): the Gaussian mechanism N(0, σ²) on a
// value of L2 sensitivity Δ is ρ-zCDP (Bun–Steinke, TCC 2016, Prop. 1.6);
// the same holds for the discrete Gaussian N_ℤ(0, σ²) on integer values
// (Canonne–Kamath–Steinke 2020, Thm. 4).
func RhoGaussian(sens, sigma float64) (float64, error) {
	if err := checkPositive("sensitivity", sens); err != nil {
		return 0, err
	}
	if err := checkPositive("sigma", sigma); err != nil {
		return 0, err
	}
	return sens * sens / (2 * sigma * sigma), nil
}

// SigmaForRho returns σ = Δ/√(2ρ), the Gaussian noise that makes a value of
// L2 sensitivity Δ ρ-zCDP (inverse of [RhoGaussian]).
func SigmaForRho(sens, rho float64) (float64, error) {
	if err := checkPositive("sensitivity", sens); err != nil {
		return 0, err
	}
	if err := checkPositive("rho", rho); err != nil {
		return 0, err
	}
	return sens / math.Sqrt(2*rho), nil
}

// RhoPure returns ε²/2: an ε-DP mechanism is (ε²/2)-zCDP (Bun–Steinke 2016,
// Prop. 1.4), which lets pure-DP steps (Laplace, exponential mechanism)
// join a zCDP composition.
func RhoPure(eps float64) (float64, error) {
	if err := checkPositive("epsilon", eps); err != nil {
		return 0, err
	}
	return eps * eps / 2, nil
}

// ComposeRho returns Σρᵢ: zCDP composes additively under adaptive
// composition (Bun–Steinke 2016, Lemma 2.3).
func ComposeRho(rhos ...float64) (float64, error) {
	if len(rhos) == 0 {
		return 0, fmt.Errorf("%w: no rho to compose", ErrInvalidParameter)
	}
	s := 0.0
	for _, r := range rhos {
		if err := checkPositive("rho", r); err != nil {
			return 0, err
		}
		s += r
	}
	return s, nil
}

// RhoToEpsilonSimple returns ε = ρ + 2·√(ρ·ln(1/δ)): a ρ-zCDP mechanism is
// (ε, δ)-DP for every δ > 0 (Bun–Steinke 2016, Prop. 1.3). [RhoToEpsilon]
// is never worse.
func RhoToEpsilonSimple(rho, delta float64) (float64, error) {
	if err := checkPositive("rho", rho); err != nil {
		return 0, err
	}
	if err := checkDelta("delta", delta); err != nil {
		return 0, err
	}
	return rho + 2*math.Sqrt(rho*math.Log(1/delta)), nil
}

// RhoToEpsilon returns the ε for which a ρ-zCDP mechanism is (ε, δ)-DP by
// the conversion of Canonne, Kamath and Steinke 2020 (Prop. 12 / Cor. 13):
// ε = inf_{α>1} αρ + (ln(1/δ) + (α−1)·ln(1−1/α) − ln α)/(α−1).
// Every α > 1 gives a valid ε, so the function minimises over α by a
// golden-section search on ln(α−1) and returns the minimum of what it found
// and [RhoToEpsilonSimple]: an inexact minimisation is only less tight,
// never unsafe.
func RhoToEpsilon(rho, delta float64) (float64, error) {
	simple, err := RhoToEpsilonSimple(rho, delta)
	if err != nil {
		return 0, err
	}
	l1d := math.Log(1 / delta)
	at := func(u float64) float64 { // u = ln(α − 1)
		am1 := math.Exp(u)
		a := 1 + am1
		return a*rho + (l1d+am1*math.Log1p(-1/a)-math.Log(a))/am1
	}
	lo, hi := -30.0, 30.0
	phi := (math.Sqrt(5) - 1) / 2
	c, d := hi-phi*(hi-lo), lo+phi*(hi-lo)
	fc, fd := at(c), at(d)
	for i := 0; i < 200; i++ {
		if fc < fd {
			hi, d, fd = d, c, fc
			c = hi - phi*(hi-lo)
			fc = at(c)
		} else {
			lo, c, fc = c, d, fd
			d = lo + phi*(hi-lo)
			fd = at(d)
		}
	}
	best := math.Min(fc, fd)
	if math.IsNaN(best) || best > simple {
		return simple, nil
	}
	return best, nil
}

// RhoForBudget returns the largest ρ whose [RhoToEpsilon] conversion at δ
// is at most ε (to a relative 1e-12, rounded down): the zCDP budget a
// mechanism may spend inside an (ε, δ) share. δ must be > 0.
//
// The result is a pure function of the public budget, so it is memoised
// (the bisection over the golden-section search costs ~2 ms, which
// dominated a small PMW run and the audits that repeat one).
func RhoForBudget(b Budget) (float64, error) {
	if err := b.Validate(); err != nil {
		return 0, err
	}
	if err := checkDelta("delta", b.Delta); err != nil {
		return 0, err
	}
	if r, ok := rhoMemo.Load(b); ok {
		return r.(float64), nil
	}
	r, err := rhoForBudget(b)
	if err == nil && rhoMemoLen.Add(1) <= rhoMemoCap {
		rhoMemo.Store(b, r)
	}
	return r, err
}

// rhoMemo caches RhoForBudget by budget; at most rhoMemoCap entries are
// stored (later budgets are computed every time).
var (
	rhoMemo    sync.Map
	rhoMemoLen atomic.Int64
)

const rhoMemoCap = 4096

func rhoForBudget(b Budget) (float64, error) {
	conv := func(r float64) float64 { e, _ := RhoToEpsilon(r, b.Delta); return e }
	lo, hi := 0.0, b.Epsilon // RhoToEpsilon(ρ) ≥ ρ, so ρ ≤ ε
	for i := 0; i < 200 && hi-lo > 1e-12*hi; i++ {
		mid := lo + (hi-lo)/2
		if conv(mid) <= b.Epsilon {
			lo = mid
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return 0, fmt.Errorf("%w: no positive rho fits (ε=%v, δ=%v)", ErrInvalidParameter, b.Epsilon, b.Delta)
	}
	return lo, nil
}
