package dp

import (
	"fmt"
	"math"
)

// TruncatedDiscreteLaplace is the integer analogue of [TLap]: the discrete
// Laplace distribution of scale b = Δ/ε centred at an integer τ′ and
// truncated to {0, 1, …, 2τ′}:
//
//	P[X = k] = r^|k−τ′| / Z,  r = e^(−1/b),  k ∈ {0, …, 2τ′},
//	Z = 1 + 2r(1 − r^τ′)/(1 − r).
//
// It pads an integer statistic of integer sensitivity Δ upwards: n + X ≥ n
// always, and the published value is an integer drawn with integer
// arithmetic only (Canonne–Kamath–Steinke's exact discrete Laplace,
// conditioned by rejection on |Y| ≤ τ′), so it is safe against the
// floating-point attack of Mironov (CCS 2012) that a float64 [TLap] output
// is open to (DESIGN.md §3, invariant 6).
//
// # Guarantee
//
// Let f be integer-valued with |f(D) − f(D′)| ≤ Δ for neighbours D, D′,
// and M(D) = f(D) + X. Then M is (ε, δ)-DP, where τ′ = [TDLapTau](ε, δ, Δ)
// is the smallest integer ≥ Δ with P[X ≤ Δ−1] ≤ δ.
//
// Proof. Write n = f(D), n′ = f(D′) and let d = n′ − n, 0 < |d| ≤ Δ (d = 0
// is trivial); by symmetry take d > 0. Both output distributions have the
// same normaliser Z (the support has the same width 2τ′ + 1 around both).
// For an output y in both supports, P[M(D) = y] / P[M(D′) = y] =
// r^(|y−n−τ′| − |y−n′−τ′|) ≤ r^(−d) = e^(d/b) ≤ e^(Δ/b) = e^ε by the
// triangle inequality, and the same bound holds the other way. The outputs
// of M(D) outside the support of M(D′) are y ∈ [n, n′−1], i.e. X ≤ d−1 ≤
// Δ−1, of probability at most δ by the choice of τ′; symmetrically the
// outputs of M(D′) outside the support of M(D) are X ≥ 2τ′−d+1, of the same
// mass by symmetry of the pmf. So for every set S, P[M(D) ∈ S] ≤
// e^ε·P[M(D′) ∈ S] + δ, and the same with D, D′ exchanged. ∎
//
// The scale b is the float64 Δ/ε rounded up by one ulp, so that Δ/b ≤ ε
// holds in exact arithmetic; τ′ is computed from that b with a relative
// safety margin on δ (the float error of the tail formula is far below it),
// and a test recomputes the tail mass by direct summation.
type TruncatedDiscreteLaplace struct {
	sens int64
	tau  int64
	lap  *DiscreteLaplaceSampler
}

// tdlapMargin is the relative margin on δ that absorbs the float64 error of
// the closed-form tail (a few ulps of the logarithms involved).
const tdlapMargin = 1e-9

// NewTruncatedDiscreteLaplace returns the sampler for an integer statistic
// of sensitivity sens ≥ 1 with budget (ε, δ). It returns an error wrapping
// [ErrInvalidParameter] for a bad ε, δ or sensitivity, or when the scale
// Δ/ε lies outside [[MinDiscreteScale], [MaxDiscreteScale]].
func NewTruncatedDiscreteLaplace(eps, delta float64, sens int64) (*TruncatedDiscreteLaplace, error) {
	if sens < 1 {
		return nil, fmt.Errorf("%w: truncated discrete laplace sensitivity = %d, want an integer ≥ 1", ErrInvalidParameter, sens)
	}
	if err := checkMechanism(eps, delta, float64(sens)); err != nil {
		return nil, err
	}
	b := math.Nextafter(float64(sens)/eps, math.Inf(1))
	lap, err := NewDiscreteLaplace(b)
	if err != nil {
		return nil, err
	}
	tau, err := tdlapTau(b, delta, sens)
	if err != nil {
		return nil, err
	}
	return &TruncatedDiscreteLaplace{sens: sens, tau: tau, lap: lap}, nil
}

// TDLapTau returns τ′, the centre of [TruncatedDiscreteLaplace] for (ε, δ)
// and integer sensitivity sens: the smallest integer τ′ ≥ sens with
// P[X ≤ sens−1] ≤ δ. The support is {0, …, 2τ′}.
func TDLapTau(eps, delta float64, sens int64) (int64, error) {
	t, err := NewTruncatedDiscreteLaplace(eps, delta, sens)
	if err != nil {
		return 0, err
	}
	return t.tau, nil
}

// logTail returns ln P[X ≤ Δ−1] for the truncated discrete Laplace of
// scale b centred at tau (tau ≥ Δ): r^(τ−Δ+1)·(1 − r^Δ)/((1 − r)·Z).
func logTail(b float64, sens, tau int64) float64 {
	lr := -1 / b                                  // ln r
	oneMinusR := -math.Expm1(lr)                  // 1 − r
	oneMinusRD := -math.Expm1(lr * float64(sens)) // 1 − r^Δ
	oneMinusRT := -math.Expm1(lr * float64(tau))  // 1 − r^τ
	logZ := math.Log1p(2 * math.Exp(lr) * oneMinusRT / oneMinusR)
	return float64(tau-sens+1)*lr + math.Log(oneMinusRD) - math.Log(oneMinusR) - logZ
}

// tdlapTau finds the smallest τ ≥ sens with tail ≤ δ·(1 − margin) by
// bisection: the tail decreases in τ (its numerator falls and Z grows).
func tdlapTau(b, delta float64, sens int64) (int64, error) {
	target := math.Log(delta) + math.Log1p(-tdlapMargin)
	ok := func(tau int64) bool { return logTail(b, sens, tau) <= target }
	lo := sens
	if ok(lo) {
		return lo, nil
	}
	// Z ≥ 1 gives a sufficient τ in closed form; double until it holds in
	// case float rounding says otherwise.
	lr := -1 / b
	need := (target - math.Log(-math.Expm1(lr*float64(sens))) + math.Log(-math.Expm1(lr))) / lr
	hiF := float64(sens-1) + math.Ceil(need) + 1
	if !(hiF < 1<<61) {
		return 0, fmt.Errorf("%w: truncated discrete laplace: τ′ for scale %v and δ = %v overflows", ErrInvalidParameter, b, delta)
	}
	hi := max(int64(hiF), lo+1)
	for !ok(hi) {
		if hi > 1<<60 {
			return 0, fmt.Errorf("%w: truncated discrete laplace: τ′ for scale %v and δ = %v overflows", ErrInvalidParameter, b, delta)
		}
		hi *= 2
	}
	for hi-lo > 1 { // invariant: !ok(lo), ok(hi)
		mid := lo + (hi-lo)/2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// Tau returns τ′; the support is {0, …, 2τ′}.
func (t *TruncatedDiscreteLaplace) Tau() int64 { return t.tau }

// Scale returns the scale b (Δ/ε rounded up by one ulp).
func (t *TruncatedDiscreteLaplace) Scale() float64 { return t.lap.Scale() }

// Sensitivity returns Δ.
func (t *TruncatedDiscreteLaplace) Sensitivity() int64 { return t.sens }

// Sample draws X ∈ {0, …, 2τ′}: an exact discrete Laplace Y conditioned on
// |Y| ≤ τ′ by rejection, shifted by τ′. A draw is rejected with
// probability P[|Y| > τ′] = 2r^(τ′+1)/(1 + r), which τ′ keeps tiny.
func (t *TruncatedDiscreteLaplace) Sample(src Source) int64 {
	for {
		y := t.lap.Sample(src)
		if y >= -t.tau && y <= t.tau {
			return t.tau + y
		}
	}
}

// PMF returns P[X = k] computed in float64 (for tests and documentation;
// never used to sample).
func (t *TruncatedDiscreteLaplace) PMF(k int64) float64 {
	if k < 0 || k > 2*t.tau {
		return 0
	}
	lr := -1 / t.lap.Scale()
	logZ := math.Log1p(2 * math.Exp(lr) * -math.Expm1(lr*float64(t.tau)) / -math.Expm1(lr))
	d := k - t.tau
	if d < 0 {
		d = -d
	}
	return math.Exp(float64(d)*lr - logZ)
}
