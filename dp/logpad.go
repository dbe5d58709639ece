package dp

import (
	"fmt"
	"math"
)

// LogGrid is the public grid of noisy log-scale bounds: [LogPad] publishes
// ln of its bound as an integer multiple of LogGrid = 2⁻²⁰ (a bound is then
// known to within a factor e^(2⁻²⁰) ≈ 1 + 10⁻⁶).
const LogGrid = 0x1p-20

// LogPad pads a positive real x upwards on a multiplicative scale when ln x
// has sensitivity β: the bound is e^(g·K) with g = [LogGrid] and K an
// integer, K = L + X, L = ⌈(ln x)/g⌉ + 1 and X ~ [TruncatedDiscreteLaplace]
// of integer sensitivity ⌈β/g⌉ + 1. It is the exact-integer form of the
// e^TLap step of Ghazi et al. Alg. 3 (Δ̃ = RS^β·e^X with ln RS^β of
// sensitivity β, Lemma 3.7), safe against floating-point attacks (DESIGN.md
// §3, invariant 6): the only random value is the integer K, drawn with
// integer arithmetic.
//
// # Guarantee
//
// (ε, δ)-DP, and the bound is ≥ x with probability 1.
//
// Proof. Let a = (ln x)/g and a′ the same for a neighbour, |a − a′| ≤ β/g.
// The computed value of a differs from a by far less than 1/2 (ln is
// correctly rounded to within an ulp and |a| < 2⁴⁰ for any finite x), so
// the computed L and L′ satisfy |L − L′| ≤ ⌈β/g⌉ + 1 (for c ≥ 0 and s < 1,
// ⌈c + s⌉ ≤ ⌈c⌉ + 1). K = L + X is then (ε, δ)-DP by the guarantee of
// [TruncatedDiscreteLaplace], and everything computed from K is
// post-processing. X ≥ 0 and the +1 in L give g·K ≥ g·⌈a⌉ + g ≥ ln x plus
// a full grid step, which covers the rounding of ln and exp, so
// e^(g·K) ≥ x. ∎
//
// For β-smooth use (residual sensitivity): since the bound is ≥ RS^β ≥ LS
// always, the mechanisms downstream that need Δ̃ ≥ LS keep their proof; the
// grid only coarsens the bound by at most e^(2g).
type LogPad struct {
	tdl *TruncatedDiscreteLaplace
}

// NewLogPad returns the padding for a positive value whose logarithm has
// sensitivity beta > 0, with budget (ε, δ).
func NewLogPad(eps, delta, beta float64) (*LogPad, error) {
	if err := checkMechanism(eps, delta, beta); err != nil {
		return nil, err
	}
	s := math.Ceil(beta/LogGrid) + 1
	if !(s < 1<<52) {
		return nil, fmt.Errorf("%w: log pad: beta = %v is too large", ErrInvalidParameter, beta)
	}
	tdl, err := NewTruncatedDiscreteLaplace(eps, delta, int64(s))
	if err != nil {
		return nil, fmt.Errorf("log pad: %w", err)
	}
	return &LogPad{tdl: tdl}, nil
}

// Noise returns the integer noise sampler (on the grid's units).
func (p *LogPad) Noise() *TruncatedDiscreteLaplace { return p.tdl }

// MaxLogFactor returns the largest value of ln(bound/x), g·(2τ′ + 2): the
// bound never exceeds x·e^MaxLogFactor. It is public (a function of ε, δ, β)
// and lets a caller refuse parameters before it reads any data.
func (p *LogPad) MaxLogFactor() float64 { return LogGrid * float64(2*p.tdl.Tau()+2) }

// Pad returns the grid index K of the DP bound e^(g·K) ≥ x and the bound
// itself. x must be finite and > 0; it panics otherwise (programmer
// error: callers clamp x to a positive public minimum first).
func (p *LogPad) Pad(src Source, x float64) (k int64, bound float64) {
	if !(x > 0) || math.IsInf(x, 0) {
		panic("dp: LogPad.Pad needs a finite x > 0")
	}
	l := int64(math.Ceil(math.Log(x)/LogGrid)) + 1
	k = l + p.tdl.Sample(src)
	return k, math.Exp(LogGrid * float64(k))
}
