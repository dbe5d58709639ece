package relational

import (
	"fmt"
	"math"
	"sync"

	"github.com/synth-dp/synth/dp"
)

// Noise names the noise of the residual-sensitivity mechanism with δ > 0.
type Noise string

// The noises of [RSConfig].
const (
	// NoiseLaplace is the discrete Laplace distribution (the default).
	NoiseLaplace Noise = "laplace"
	// NoiseGaussian is the discrete Gaussian distribution.
	NoiseGaussian Noise = "gaussian"
)

// RSConfig holds the public parameters of one run of the
// residual-sensitivity mechanism.
type RSConfig struct {
	// Epsilon and Delta are the run's budget; δ must be > 0 (see
	// [ErrPureRS]).
	Epsilon, Delta float64
	// Noise is the noise for δ > 0; empty means [NoiseLaplace].
	Noise Noise
	// Bound is the public bound B on |ψ| of one join result (1 for
	// COUNT(*); for SUM(expr) the largest |expr| over the declared
	// domains).
	Bound float64
	// Integral says the true answer is an integer (COUNT(*)); otherwise it
	// is rounded first, which adds 1 to its sensitivity.
	Integral bool

	noSmooth  bool    // mutation knob for the audit tests: LŜ^0 instead of RS^β
	noRS      bool    // mutation knob: R̂S dropped, noise for one tuple (Δ = ⌈B⌉)
	rsDivisor float64 // mutation knob: noise calibrated to R̂S/rsDivisor (0 means 1)
}

// Beta returns the smoothing parameter β of the residual sensitivity the
// mechanism needs: β = ε₁/ln(1/δ₁) with (ε₁, δ₁) = (ε/2, δ/2), join-as-one's
// β = 1/λ on the pad's half of the budget. δ = 0 is refused with
// [ErrPureRS]. The
// choice balances the pad, whose typical factor is e^{β·ln(1/δ₁)/ε₁}, against
// RS^β, which grows like 1/β when the join is small: e^{βA}/(eβ) is
// smallest at β = 1/A. On the TPC-H Q3-like count (ε = 1, δ = 10⁻⁶),
// β = 1, 1.4 and 2 times ε₁/ln(2/δ) gave noise scales within 20% of each
// other, and half of it about twice the scale.
func (c RSConfig) Beta() (float64, error) {
	if err := (dp.Budget{Epsilon: c.Epsilon, Delta: c.Delta}).Validate(); err != nil {
		return 0, fmt.Errorf("relational: %w", err)
	}
	if c.Delta == 0 {
		return 0, ErrPureRS
	}
	return (c.Epsilon / 2) / math.Log(2/c.Delta), nil
}

// RSResult is the output of [ReleaseRS].
type RSResult struct {
	// Value is the answer, an integer.
	Value int64
	// Mechanism names the mechanism.
	Mechanism string
	// NoiseScale is the scale of the noise added (the discrete Laplace
	// scale b or the discrete Gaussian σ), a DP output.
	NoiseScale float64
	// ErrorBound95 bounds |Value − Q(I)| with probability ≥ 0.95 from the
	// noise scale (there is no truncation: this is the whole error).
	ErrorBound95 float64
	// LowerGap95 is the one-sided bound: P[Value − Q(I) > LowerGap95] ≤
	// 0.05, so Value − LowerGap95 is a 95% lower bound on Q(I).
	LowerGap95 float64
	// PaddedRS is the DP upper bound on RS^β.
	PaddedRS float64
}

// ReleaseRS answers a join count or sum with the residual-sensitivity
// mechanism (Dong and Yi SIGMOD 2021; survey §3.2) under tuple-level DP (a
// neighbour adds or removes one tuple of one private relation). rs is
// RS^β of the join count of the selected sub-instance with β =
// [RSConfig.Beta] (with selections, the sub-instance is a 1-Lipschitz
// function of the instance, so its RS^β is still a β-smooth upper bound on
// the local sensitivity of the selected count), ls its LŜ^0 (used only by
// the mutation knob of the tests), q the true answer.
//
// # Why not δ = 0
//
// The pure ε-DP variant (general Cauchy noise scaled by RS^β, NRS07) needs
// a Cauchy-like sampler exact at every scale; a float sampler inverting a
// CDF at a 2⁻⁵²-grid uniform (dp had one until it was removed unused) has
// output gaps above 1 in the tails once the scale is large (≈ 10⁻⁴ of the outputs impossible on a neighbour at scale 10¹¹,
// the shape of a revenue SUM): rounding those floats is not ε-DP. It is
// refused ([ErrPureRS]); R2T (--unit) is pure ε-DP.
//
// # δ > 0: padded bound, then exact discrete noise ((ε, δ)-DP)
//
//  1. (ε/2, δ/2): R̂S = [dp.LogPad] of RS^β (ln RS^β has sensitivity β),
//     an exact-integer padding that is ≥ RS^β ≥ LS with probability 1
//     (Ghazi et al. Alg. 3 line 2). R̂S is published.
//  2. The answer gets discrete noise calibrated to Δ = ⌈B·R̂S⌉ (+1 when
//     rounded): for neighbours I, I′ every R̂S drawn from either is
//     ≥ LS of its own instance ≥ |Q(I) − Q(I′)|, so step 2 is (ε/2)-DP
//     (discrete Laplace, b = Δ/(ε/2)) or (ε/2, δ/2)-DP (discrete Gaussian,
//     σ = Δ/√(2ρ) with ρ the largest zCDP budget that converts to
//     (ε/2, δ/2), see [rsGaussianSigma]) for every value step 1 can output.
//     Basic composition gives (ε, δ).
//
// ErrorBound95 is b·ln 40 (Laplace: P[|X| ≥ x] ≤ 2e^{−x/b}) or
// σ·√(2·ln 40) (Gaussian: P[|X| ≥ x] ≤ 2e^{−x²/2σ²}), computed from R̂S and
// public parameters only; LowerGap95 is the one-sided b·ln 20 or
// σ·√(2·ln 20) (P[X ≥ x] ≤ e^{−x/b}, e^{−x²/2σ²}). A SUM rounded to an
// integer adds 1/2 to both.
func ReleaseRS(src dp.Source, q, rs, ls float64, cfg RSConfig) (RSResult, error) {
	r, err := newRSRelease(q, rs, ls, cfg)
	if err != nil {
		return RSResult{}, err
	}
	return r.run(src)
}

// rsRelease is [ReleaseRS] on fixed inputs, split into what depends on
// the inputs and the public parameters only — the checks, the pad's
// sampler, the clamped bound — built once by [newRSRelease], and the
// draws, [rsRelease.run], which draw exactly what ReleaseRS draws. The
// noise sampler of each padded bound (a DP output) is built the first
// time that bound is drawn and reused, so many runs on the same inputs
// (the privacy audits) pay for the exact rational set-up once. Safe for
// concurrent use with distinct sources.
type rsRelease struct {
	cfg      RSConfig
	pad      *dp.LogPad
	s, extra float64
	qi       int64
	noise    sync.Map // sens (float64) → *rsNoise
}

// rsNoise is the noise of one sensitivity Δ: a discrete Laplace sampler
// (safe for concurrent use) or a pool of Gaussian samplers; err is the
// set-up's error.
type rsNoise struct {
	once  sync.Once
	lap   *dp.DiscreteLaplaceSampler
	gauss *dp.DiscreteGaussianPool
	err   error
}

func newRSRelease(q, rs, ls float64, cfg RSConfig) (*rsRelease, error) {
	if err := (dp.Budget{Epsilon: cfg.Epsilon, Delta: cfg.Delta}).Validate(); err != nil {
		return nil, fmt.Errorf("relational: %w", err)
	}
	if !(cfg.Bound > 0) || math.IsInf(cfg.Bound, 0) {
		return nil, invalid("per-result bound B = %v, want a finite number > 0", cfg.Bound)
	}
	beta, err := cfg.Beta()
	if err != nil {
		return nil, err
	}
	s := rs
	if cfg.noSmooth {
		s = ls
	}
	// max(·, 1) is a public clamp: the maximum of a β-smooth bound and a
	// constant is β-smooth, and LogPad needs a positive value.
	s = math.Max(s, 1)
	extra := 0.0
	if !cfg.Integral {
		extra = 1
	}
	pad, err := dp.NewLogPad(cfg.Epsilon/2, cfg.Delta/2, beta)
	if err != nil {
		return nil, fmt.Errorf("relational: residual sensitivity pad: %w", err)
	}
	return &rsRelease{cfg: cfg, pad: pad, s: s, extra: extra, qi: int64(math.Round(q))}, nil
}

// noiseFor returns the noise of sensitivity sens, building it on first
// use.
func (r *rsRelease) noiseFor(sens float64) *rsNoise {
	v, _ := r.noise.LoadOrStore(sens, &rsNoise{})
	n := v.(*rsNoise)
	n.once.Do(func() {
		cfg := r.cfg
		switch cfg.Noise {
		case "", NoiseLaplace:
			n.lap, n.err = dp.NewDiscreteLaplace(dp.NoiseScale(sens, cfg.Epsilon/2))
		case NoiseGaussian:
			var sigma float64
			if sigma, n.err = rsGaussianSigma(cfg.Epsilon/2, cfg.Delta/2, sens); n.err == nil {
				n.gauss, n.err = dp.NewDiscreteGaussianPool(sigma)
			}
		}
		if n.err != nil {
			n.err = fmt.Errorf("relational: residual sensitivity noise: %w", n.err)
		}
	})
	return n
}

// run is one run of the mechanism (see [ReleaseRS]).
func (r *rsRelease) run(src dp.Source) (RSResult, error) {
	cfg := r.cfg
	_, padded := r.pad.Pad(src, r.s)
	scaled := padded
	if cfg.rsDivisor != 0 {
		scaled /= cfg.rsDivisor
	}
	if cfg.noRS {
		scaled = 1
	}
	sens := math.Ceil(cfg.Bound*scaled) + r.extra
	qi := r.qi
	// A rounded sum is off Q(I) by up to 1/2 before any noise.
	slack := r.extra / 2
	switch cfg.Noise {
	case "", NoiseLaplace:
		n := r.noiseFor(sens)
		if n.err != nil {
			return RSResult{}, n.err
		}
		lap := n.lap
		return RSResult{Value: qi + lap.Sample(src), Mechanism: "residual sensitivity, padded bound + discrete Laplace ((ε,δ)-DP)",
			NoiseScale: lap.Scale(), ErrorBound95: lap.Scale()*math.Log(40) + slack, LowerGap95: lap.Scale()*math.Log(20) + slack, PaddedRS: padded}, nil
	case NoiseGaussian:
		n := r.noiseFor(sens)
		if n.err != nil {
			return RSResult{}, n.err
		}
		sigma := n.gauss.Sigma()
		g := n.gauss.Get()
		v := qi + g.Sample(src)
		n.gauss.Put(g)
		return RSResult{Value: v, Mechanism: "residual sensitivity, padded bound + discrete Gaussian ((ε,δ)-DP)",
			NoiseScale: sigma, ErrorBound95: sigma*math.Sqrt(2*math.Log(40)) + slack, LowerGap95: sigma*math.Sqrt(2*math.Log(20)) + slack, PaddedRS: padded}, nil
	}
	return RSResult{}, invalid("noise %q (laplace or gaussian)", cfg.Noise)
}

// rsGaussianSigma returns the σ of the discrete Gaussian N_ℤ(0, σ²) that
// makes a value of integer sensitivity sens (eps, delta)-DP: σ = sens/√(2ρ)
// with ρ = [dp.RhoForBudget](eps, delta). N_ℤ(0, σ²) is
// (sens²/(2σ²))-zCDP for shifts up to sens (Canonne, Kamath and Steinke
// 2020, Thm. 14), and ρ-zCDP converts to (eps, delta)-DP ([dp.RhoToEpsilon]).
//
// It is not the analytic σ of the continuous Gaussian ([dp.SigmaAnalytic]):
// the discrete Gaussian with that σ has, at a shift of exactly sens, a δ up
// to 1.2–1.7 times the target (TestRSGaussianExactDelta computes it).
func rsGaussianSigma(eps, delta, sens float64) (float64, error) {
	rho, err := dp.RhoForBudget(dp.Budget{Epsilon: eps, Delta: delta})
	if err != nil {
		return 0, err
	}
	return sens / math.Sqrt(2*rho), nil
}
