package dp

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"sync"
)

// This file holds the exact samplers of Canonne, Kamath and Steinke, "The
// Discrete Gaussian for Differential Privacy" (NeurIPS 2020): Bernoulli(e^−γ)
// for rational γ (their Alg. 1), the discrete Laplace (Alg. 2) and the
// discrete Gaussian (Alg. 3). They use only integer arithmetic (uint64 and
// math/big) on random words from a [Source]; no floating-point value enters
// the sampling, so their outputs are exactly distributed given the rational
// parameter, and they are safe against the floating-point attack of Mironov
// (CCS 2012). Each loop below ends with probability 1 per iteration bounded
// away from 0, so the expected number of random words is a small constant;
// they are rejection samplers and have no deterministic bound on running
// time.

// Limits on the float64 parameters of the discrete samplers. Within them the
// rational parameter fits the integer arithmetic exactly and the only
// approximation left is a resample with probability below e^(−2²³) when an
// intermediate value would overflow int64.
const (
	// MinDiscreteScale is the smallest discrete Laplace scale and discrete
	// Gaussian σ accepted.
	MinDiscreteScale = 0x1p-11
	// MaxDiscreteScale is the largest discrete Laplace scale and discrete
	// Gaussian σ accepted.
	MaxDiscreteScale = 0x1p40
)

// uniformN returns a uniform integer in [0, n), n > 0, by Lemire's
// multiply-and-reject method (exact; each round rejects with probability
// < n/2⁶⁴ ≤ 1/2).
func uniformN(src Source, n uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}

// bernoulli returns true with probability num/den exactly (0 ≤ num ≤ den,
// den > 0).
func bernoulli(src Source, num, den uint64) bool {
	return uniformN(src, den) < num
}

// bernoulliExpFrac returns true with probability e^(−num/den) for
// 0 ≤ num ≤ den: CKS Alg. 1, case γ ∈ [0, 1]. Bernoulli(γ/K) is drawn as
// Bernoulli(1/K) ∧ Bernoulli(num/den), independent, so that den·K never
// overflows.
func bernoulliExpFrac(src Source, num, den uint64) bool {
	k := uint64(1)
	for {
		if k > 1 && !bernoulli(src, 1, k) {
			break
		}
		if !bernoulli(src, num, den) {
			break
		}
		k++
	}
	return k%2 == 1
}

// bernoulliExpNeg1Times returns true with probability e^(−n): n independent
// Bernoulli(e^−1) draws that all succeed (CKS Alg. 1, case γ > 1). It stops
// at the first failure, so it draws about 1.6 times on average whatever n.
func bernoulliExpNeg1Times(src Source, n uint64) bool {
	for i := uint64(0); i < n; i++ {
		if !bernoulliExpFrac(src, 1, 1) {
			return false
		}
	}
	return true
}

// bernoulliExp returns true with probability e^(−num/den) exactly (den > 0):
// CKS Alg. 1.
func bernoulliExp(src Source, num, den uint64) bool {
	if !bernoulliExpNeg1Times(src, num/den) {
		return false
	}
	return bernoulliExpFrac(src, num%den, den)
}

// BernoulliExp returns true with probability exactly e^(−num/den), using
// only integer arithmetic on random words (Canonne–Kamath–Steinke 2020,
// Alg. 1). It is the building block of [DiscreteLaplace] and
// [DiscreteGaussian]. It panics if den = 0.
func BernoulliExp(src Source, num, den uint64) bool {
	if den == 0 {
		panic("dp: BernoulliExp with zero denominator")
	}
	return bernoulliExp(src, num, den)
}

// discreteLaplace draws from the discrete Laplace distribution with scale
// t/s: P[X = x] ∝ e^(−|x|·s/t) on ℤ (CKS Alg. 2). A value whose magnitude
// would overflow int64 is resampled.
func discreteLaplace(src Source, t, s uint64) int64 {
	for {
		u := uniformN(src, t)
		if !bernoulliExpFrac(src, u, t) {
			continue
		}
		var v uint64
		for bernoulliExpFrac(src, 1, 1) {
			v++
		}
		// x = u + t·v in 128 bits, y = ⌊x/s⌋.
		hi, lo := bits.Mul64(t, v)
		var c uint64
		lo, c = bits.Add64(lo, u, 0)
		hi += c
		if hi >= s {
			continue // ⌊x/s⌋ ≥ 2⁶⁴: see MaxDiscreteScale
		}
		y, _ := bits.Div64(hi, lo, s)
		if y > math.MaxInt64 {
			continue
		}
		neg := src.Uint64()&1 == 1
		if neg && y == 0 {
			continue
		}
		if neg {
			return -int64(y)
		}
		return int64(y)
	}
}

// DiscreteLaplaceSampler draws from the discrete Laplace distribution
// Lap_ℤ(b): P[X = x] = ((e^(1/b) − 1)/(e^(1/b) + 1))·e^(−|x|/b) for x ∈ ℤ.
// Adding it with b = Δ/ε to an integer value of L1 sensitivity Δ is ε-DP
// (the geometric mechanism, Ghosh–Roughgarden–Sundararajan 2009; CKS 2020
// §2). The float64 scale is converted exactly to a rational t/s and the
// sampler is exact (CKS Alg. 2): safe against floating-point attacks.
// Safe for concurrent use with distinct sources.
type DiscreteLaplaceSampler struct {
	scale float64
	t, s  uint64 // scale = t/s exactly
}

// NewDiscreteLaplace returns a sampler of Lap_ℤ(scale). The scale must lie
// in [[MinDiscreteScale], [MaxDiscreteScale]].
func NewDiscreteLaplace(scale float64) (*DiscreteLaplaceSampler, error) {
	if err := CheckScale("discrete laplace scale", scale); err != nil {
		return nil, err
	}
	r := new(big.Rat).SetFloat64(scale)
	// A float64 in [2⁻¹¹, 2⁴⁰] is m·2^e with m < 2⁵³ and e ≥ −63 (or an
	// integer < 2⁴¹), so both parts of the reduced fraction fit a uint64;
	// the check below is defensive.
	if !r.Num().IsUint64() || !r.Denom().IsUint64() {
		return nil, fmt.Errorf("%w: discrete laplace scale = %v is not a ratio of 64-bit integers", ErrInvalidParameter, scale)
	}
	return &DiscreteLaplaceSampler{scale: scale, t: r.Num().Uint64(), s: r.Denom().Uint64()}, nil
}

// NoiseScale returns the smallest float64 b ≥ sens/eps in exact
// arithmetic (sens, eps finite and > 0): the scale of noise for a value of
// sensitivity sens at privacy eps, with sens/b ≤ eps exactly. The float64
// quotient sens/eps is rounded to nearest and may fall 2⁻⁵³ below the
// true quotient (a true loss of eps·(1 + 10⁻¹⁶)); it is then raised by
// one ulp. A quotient that is not finite and > 0 (sens or eps 0, infinite
// or NaN) is returned as it is, for the sampler's own validation to refuse.
func NoiseScale(sens, eps float64) float64 {
	b := sens / eps
	if !(b > 0) || math.IsInf(b, 0) || math.IsInf(eps, 0) {
		return b
	}
	prod := new(big.Rat).SetFloat64(b)
	prod.Mul(prod, new(big.Rat).SetFloat64(eps))
	if prod.Cmp(new(big.Rat).SetFloat64(sens)) < 0 {
		b = math.Nextafter(b, math.Inf(1))
	}
	return b
}

// Scale returns the sampler's scale b.
func (d *DiscreteLaplaceSampler) Scale() float64 { return d.scale }

// Sample draws one value.
func (d *DiscreteLaplaceSampler) Sample(src Source) int64 { return discreteLaplace(src, d.t, d.s) }

// DiscreteLaplace draws one value from Lap_ℤ(scale); see
// [DiscreteLaplaceSampler] for the guarantee. It panics on a scale that
// [NewDiscreteLaplace] rejects (programmer error); build a sampler once to
// validate parameters and to avoid the conversion on every draw.
func DiscreteLaplace(src Source, scale float64) int64 {
	d, err := NewDiscreteLaplace(scale)
	if err != nil {
		panic(err.Error())
	}
	return d.Sample(src)
}

// DiscreteGaussianSampler draws from the discrete Gaussian N_ℤ(0, σ²):
// P[X = x] ∝ e^(−x²/(2σ²)) for x ∈ ℤ (CKS 2020, Alg. 3: rejection from a
// discrete Laplace of scale ⌊σ⌋+1). Adding it to an integer vector of L2
// sensitivity Δ is (Δ²/(2σ²))-zCDP (CKS Thm. 4), which converts to
// (ε, δ)-DP by [RhoToEpsilon]. σ² is the exact square of the float64 σ,
// held as a rational; the sampler is exact and safe against
// floating-point attacks. The expected number of rejection rounds is below
// about 1.6 for σ ≥ 1 (CKS Prop. 5 and §5). Not safe for concurrent use
// (it keeps big.Int scratch space); build one per goroutine.
type DiscreteGaussianSampler struct {
	sigma float64
	t     uint64   // ⌊σ⌋ + 1
	p, q  *big.Int // σ² = p/q
	qt    *big.Int // q·t
	den   *big.Int // 2·p·q·t²: exponent = (q·t·|y| − p)² / den
	// scratch
	num, quo, rem, tmp *big.Int
	buf                []byte
}

// NewDiscreteGaussian returns a sampler of N_ℤ(0, σ²). σ must lie in
// [[MinDiscreteScale], [MaxDiscreteScale]].
func NewDiscreteGaussian(sigma float64) (*DiscreteGaussianSampler, error) {
	if err := CheckScale("discrete gaussian sigma", sigma); err != nil {
		return nil, err
	}
	r := new(big.Rat).SetFloat64(sigma)
	r.Mul(r, r)
	g := &DiscreteGaussianSampler{
		sigma: sigma,
		t:     uint64(math.Floor(sigma)) + 1,
		p:     new(big.Int).Set(r.Num()),
		q:     new(big.Int).Set(r.Denom()),
		num:   new(big.Int), quo: new(big.Int), rem: new(big.Int), tmp: new(big.Int),
	}
	tb := new(big.Int).SetUint64(g.t)
	g.qt = new(big.Int).Mul(g.q, tb)
	g.den = new(big.Int).Mul(g.p, g.qt)
	g.den.Mul(g.den, tb)
	g.den.Lsh(g.den, 1)
	g.buf = make([]byte, (g.den.BitLen()+7)/8+8)
	return g, nil
}

// Sigma returns the sampler's σ.
func (g *DiscreteGaussianSampler) Sigma() float64 { return g.sigma }

// Sample draws one value.
func (g *DiscreteGaussianSampler) Sample(src Source) int64 {
	for {
		y := discreteLaplace(src, g.t, 1)
		ay := uint64(y)
		if y < 0 {
			ay = uint64(-y)
		}
		// γ = (|y| − σ²/t)²/(2σ²) = (q·t·|y| − p)² / (2·p·q·t²).
		g.num.SetUint64(ay)
		g.num.Mul(g.num, g.qt)
		g.num.Sub(g.num, g.p)
		g.num.Mul(g.num, g.num)
		g.quo.QuoRem(g.num, g.den, g.rem)
		n := uint64(math.MaxUint64)
		if g.quo.IsUint64() {
			n = g.quo.Uint64()
		}
		if !bernoulliExpNeg1Times(src, n) {
			continue
		}
		if g.bernoulliExpFracBig(src) {
			return y
		}
	}
}

// bernoulliExpFracBig is CKS Alg. 1 for γ = rem/den ∈ [0, 1) in big
// integers.
func (g *DiscreteGaussianSampler) bernoulliExpFracBig(src Source) bool {
	k := uint64(1)
	for {
		if k > 1 && !bernoulli(src, 1, k) {
			break
		}
		if !g.bernoulliBig(src) {
			break
		}
		k++
	}
	return k%2 == 1
}

// bernoulliBig returns true with probability rem/den: a uniform integer in
// [0, den) by rejection on den.BitLen() random bits (accepts with
// probability > 1/2 per round), compared with rem.
func (g *DiscreteGaussianSampler) bernoulliBig(src Source) bool {
	if g.rem.Sign() == 0 {
		return false
	}
	nbits := g.den.BitLen()
	nbytes := (nbits + 7) / 8
	b := g.buf[:nbytes]
	for {
		for i := 0; i < nbytes; i += 8 {
			w := src.Uint64()
			for j := 0; j < 8 && i+j < nbytes; j++ {
				b[i+j] = byte(w >> (8 * j))
			}
		}
		if extra := nbytes*8 - nbits; extra > 0 {
			b[0] &= 0xff >> extra
		}
		g.tmp.SetBytes(b)
		if g.tmp.Cmp(g.den) < 0 {
			return g.tmp.Cmp(g.rem) < 0
		}
	}
}

// DiscreteGaussian draws one value from N_ℤ(0, σ²); see
// [DiscreteGaussianSampler] for the guarantee. It panics on a σ that
// [NewDiscreteGaussian] rejects (programmer error); build a sampler once to
// validate parameters and to avoid the set-up on every draw.
func DiscreteGaussian(src Source, sigma float64) int64 {
	g, err := NewDiscreteGaussian(sigma)
	if err != nil {
		panic(err.Error())
	}
	return g.Sample(src)
}

// DiscreteGaussianPool hands out samplers of N_ℤ(0, σ²) for one σ to
// callers on several goroutines: a [DiscreteGaussianSampler] keeps scratch
// space and is not safe for concurrent use, and building one sets up exact
// rationals, so a mechanism run many times at the same σ (the privacy
// audits) takes one from the pool and puts it back after its draws.
type DiscreteGaussianPool struct {
	sigma float64
	pool  sync.Pool
}

// NewDiscreteGaussianPool returns a pool of samplers of N_ℤ(0, σ²), or
// [NewDiscreteGaussian]'s error for σ.
func NewDiscreteGaussianPool(sigma float64) (*DiscreteGaussianPool, error) {
	g, err := NewDiscreteGaussian(sigma)
	if err != nil {
		return nil, err
	}
	p := &DiscreteGaussianPool{sigma: sigma}
	p.pool.Put(g)
	return p, nil
}

// Sigma returns σ.
func (p *DiscreteGaussianPool) Sigma() float64 { return p.sigma }

// Get returns a sampler the caller alone uses until it calls [Put].
func (p *DiscreteGaussianPool) Get() *DiscreteGaussianSampler {
	if g, ok := p.pool.Get().(*DiscreteGaussianSampler); ok {
		return g
	}
	// Cannot fail: the same σ was accepted by NewDiscreteGaussianPool, and
	// the check is a function of σ alone.
	g, _ := NewDiscreteGaussian(p.sigma)
	return g
}

// Put returns a sampler from [Get] to the pool.
func (p *DiscreteGaussianPool) Put(g *DiscreteGaussianSampler) { p.pool.Put(g) }
