package pmw

import (
	"cmp"
	"gonum.org/v1/gonum/stat/distuv"

	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/synth-dp/synth/dp"
)

// Public constants of [VariantMWEM]. They are fixed before any data is
// read; nothing here depends on data.
const (
	// mwemSelFracGauss is the share of a round's ρ spent on the selection
	// (ε_sel²/8 = 0.1·ρ_t); the other 0.9 measures. AIM's split (McKenna et
	// al. 2022, Alg. 2).
	mwemSelFracGauss = 0.1
	// mwemSelFracLaplace is the share of a round's pure ε spent on the
	// selection with [NoiseLaplace].
	mwemSelFracLaplace = 0.25
	// mwemRoundsPerCandidate and mwemMinRounds set the planned number of
	// rounds T₀ = max(mwemMinRounds, mwemRoundsPerCandidate·K) for K
	// candidate marginals: the initial per-round budget is the rounds'
	// budget over T₀ (before annealing raises it).
	mwemRoundsPerCandidate = 1
	mwemMinRounds          = 8
	// mwemRoundSweeps caps the multiplicative-weights sweeps after each
	// round, mwemFinalSweeps those of the final fit.
	mwemRoundSweeps = 6
	mwemFinalSweeps = 40
	// mwemTol stops a fit when a sweep lowers the loss by less than
	// mwemTol per measured cell (the loss is in units of the noise
	// variance, so a gain of 0.01 per cell is far below the noise).
	mwemTol = 0.01
	// mwemMinAlpha is the smallest step the line search tries.
	mwemMinAlpha = 1.0 / 64
	// mwemFloor is the floor, as a fraction of the initial noise scale,
	// added to every clamped 1-way marginal of A₀ so that no cell starts
	// at exactly 0 (a multiplicative update could never revive it).
	mwemFloor = 0.01
)

// mwemShrinkLevel is the probability that a table of pure noise keeps
// any of it after [mwemMeas.shrink]: the upper quantile of χ²_{k−1} used
// as q_k.
const mwemShrinkLevel = 1e-4

// mwemShrinkNoise is q_k of [mwemMeas.shrink] for a table of k ≥ 2 cells:
// the 1 − mwemShrinkLevel quantile of χ²_{k−1}, the spread ‖y − ȳ‖²/v
// that pure Gaussian noise exceeds with probability 1e-4 (k − 1 + 3σ, the
// normal approximation, was exceeded by 0.5% of 5-cell tables, which left
// a fifth of the noise in a near-uniform marginal of TPC-H about once in
// twenty releases).
func mwemShrinkNoise(k float64) float64 {
	if v, ok := shrinkMemo.Load(k); ok {
		return v.(float64)
	}
	q := distuv.ChiSquared{K: k - 1}.Quantile(1 - mwemShrinkLevel)
	shrinkMemo.Store(k, q)
	return q
}

// shrinkMemo caches mwemShrinkNoise, a function of the public table size
// only, whose quantile inversion cost more than the rest of a round on the
// small universes the audits run by the hundred thousand.
var shrinkMemo sync.Map // float64 → float64

// mwemMeas is the running combination of every noisy measurement of one
// marginal: the inverse-variance-weighted mean ybar of the measurements
// (the sufficient statistic of their Gaussian likelihood) and its
// per-cell precision.
type mwemMeas struct {
	p    int       // projection index in the plan
	sum  []float64 // Σ_k y_k/v_k per cell
	prec float64   // Σ_k 1/v_k
	ybar []float64 // sum/prec
	// target is ybar shrunk towards its own mean by the positive-part
	// James–Stein factor (see shrink): what the fit matches.
	target []float64
	kappa  float64 // 1/√prec: the combined noise scale, the log-ratio regulariser
	beta   float64 // overlap damping of the sweep (see prepareFit)
	lambda float64 // the shrinkage factor of target (see shrink)
	// pool makes shrink pool the noise-dominated cells (see poolRatio).
	pool bool
}

// mwem is the state of one [VariantMWEM] run.
//
// Weights are kept unnormalised: A = N·w/z with z = Σ w (maintained by
// every pass) and N the model total, so a sweep never needs a separate
// normalisation pass.
type mwem struct {
	src   dp.Source
	u     *Universe
	cfg   Config
	gauss bool

	plan    *passPlan
	iu      *Universe // u with its columns in the pass order perm
	perm    []int     // perm[i] = the column of u at position i of iu
	names   []string  // per projection: "marginal(a,b)" over u's names
	cols    [][]int   // per projection: its columns in u, increasing
	oneWay  []int     // per universe column: its 1-way projection
	cand    []int     // candidate projections, in order of first appearance
	scratch [][]float64

	// Budget, all public.
	epsN, deltaN   float64 // n̂ share
	epsR, deltaR   float64 // rounds share ((1−s)ε, (1−s)δ); δ_R = 0 for Laplace
	total          float64 // ρ (Gaussian) or ε_R (Laplace) of init + rounds
	unit           float64 // initial per-round cost total/(T₀ + measFrac·d)
	initCost       float64 // measFrac·d·unit
	roundsBudget   float64 // total − initCost
	selFrac        float64
	t0             int  // planned rounds
	fixed          bool // cfg.Rounds > 0: exactly t0 rounds of cost unit
	maxRounds      int
	nhatNoise      *dp.TruncatedDiscreteLaplace
	sensN, sensSel float64 // Δ̃ for the noise and the selection (mutation knobs aside)

	// Private: the true marginal tables (plan layout). Read only by the
	// selection scores and the measurements.
	truth []float64

	// DP state.
	nhat     float64
	nEst     float64 // unbiased estimate of |J| from the initial marginals
	nSD      float64 // its standard deviation: public (from σ₀ and the column sizes)
	floored  bool    // Rows was raised to nSD (see result)
	n        float64 // model total max(nEst, 1)
	w        []float64
	z        float64
	meas     []*mwemMeas
	measOf   []*mwemMeas // per projection
	lr, fac  []float64   // per-table log-ratios and factors of a sweep
	sc       scaleSpec
	measured int // Σ cells of the measured projections
	used     float64
	cost     float64
	t        int
	done     bool
	sels     []Selection
	avg      []float64 // testAverage only
	sweeps   int       // total sweeps (diagnostics)
}

// rhoMemo caches dp.RhoForBudget, a deterministic function of public
// parameters that costs about 0.5 ms (a bisection over a minimisation):
// more than the rest of a run on a tiny universe, which the privacy audits
// run by the ten thousand.
var rhoMemo sync.Map // dp.Budget → float64

func rhoForBudget(b dp.Budget) (float64, error) {
	if v, ok := rhoMemo.Load(b); ok {
		return v.(float64), nil
	}
	rho, err := dp.RhoForBudget(b)
	if err != nil {
		return 0, err
	}
	rhoMemo.Store(b, rho)
	return rho, nil
}

// autoRoundsMWEM is the planned number of rounds T₀ for K candidate
// marginals: public.
func autoRoundsMWEM(k int) int { return max(mwemMinRounds, mwemRoundsPerCandidate*k) }

// SelectionShare is the share of a [VariantMWEM] round's budget spent on
// its selection (the rest measures) for the given noise ("" is
// [NoiseGaussian]): public, for forecasts made from a spec.
func SelectionShare(n Noise) float64 {
	if n == NoiseLaplace {
		return mwemSelFracLaplace
	}
	return mwemSelFracGauss
}

// ShrinkQuantile is q_k of the shrinkage toward uniform for a table of
// k ≥ 2 cells: the spread, in noise variances, that pure noise exceeds
// with probability 10⁻⁴ (see mwemMeas.shrink). Public.
func ShrinkQuantile(k int) float64 { return mwemShrinkNoise(float64(k)) }

// PlannedMWEMRounds is T₀, the planned number of rounds of an adaptive
// [VariantMWEM] run (dense or factored) over k candidates, which sets its
// initial per-round budget: public, for forecasts made from a spec.
func PlannedMWEMRounds(k int) int { return autoRoundsMWEM(k) }

func newMWEM(src dp.Source, u *Universe, fams []Family, cfg Config) (*mwem, error) {
	bound, err := bindRun(src, u, fams, cfg)
	if err != nil {
		return nil, err
	}
	d := len(u.sizes)
	m := &mwem{src: src, u: u, cfg: cfg, gauss: cfg.noise() == NoiseGaussian}
	// The column sets: the 1-way marginals, then each family's marginal
	// (sorted original positions), deduplicated.
	var sets [][]int
	byKey := map[string]int{}
	add := func(cols []int) int {
		cols = slices.Clone(cols)
		slices.Sort(cols)
		var b strings.Builder
		for _, c := range cols {
			b.WriteString(strconv.Itoa(c))
			b.WriteByte(',')
		}
		k := b.String()
		if j, ok := byKey[k]; ok {
			return j
		}
		byKey[k] = len(sets)
		sets = append(sets, cols)
		m.names = append(m.names, "marginal("+u.colNames(cols)+")")
		return len(sets) - 1
	}
	for c := range d {
		m.oneWay = append(m.oneWay, add([]int{c}))
	}
	inCand := map[int]bool{}
	for _, f := range bound {
		p := f.proj()
		if p == nil {
			continue // explicit linear queries: not a marginal, no candidate
		}
		j := add(p.cols)
		if !inCand[j] {
			inCand[j] = true
			m.cand = append(m.cand, j)
		}
	}
	if len(m.cand) == 0 {
		m.cand = slices.Clone(m.oneWay)
	}
	// The dense weights live in an internal column order (see passOrder)
	// in which most tables cost one update per subtree of the scaled
	// pass's loop nest instead of one per cell; result() restores the
	// universe's order.
	var blockCells int
	m.perm, blockCells = passOrder(u.sizes, sets)
	m.iu = u
	if !isIdentity(m.perm) {
		names, sizes := make([]string, d), make([]int, d)
		for i, c := range m.perm {
			names[i], sizes[i] = u.names[c], u.sizes[c]
		}
		iu, err := NewUniverse(names, sizes, u.memCap)
		if err != nil {
			return nil, err
		}
		m.iu = iu
	}
	projs := permutedProjections(m.iu, m.perm, sets)
	m.cols = sets
	m.plan = newPassPlanMin(m.iu, projs, blockCells)
	workers := cfg.workers()
	// Memory is checked by Run (CheckMemory, which plans this layout)
	// before newMWEM is called.

	// Budget split (public).
	s := cfg.nhatShare()
	if cfg.NoNHat {
		s = 0 // the caller counts the rows: everything to the marginals
	}
	m.epsN = s * cfg.Epsilon
	m.epsR = cfg.Epsilon - m.epsN
	m.selFrac = mwemSelFracLaplace
	if m.gauss {
		m.deltaN = s * cfg.Delta
		m.deltaR = cfg.Delta - m.deltaN
		m.selFrac = mwemSelFracGauss
		rho, err := rhoForBudget(dp.Budget{Epsilon: m.epsR, Delta: m.deltaR})
		if err != nil {
			return nil, fmt.Errorf("pmw: rounds: %w", err)
		}
		m.total = rho
	} else {
		m.deltaN = cfg.Delta
		m.total = m.epsR
	}
	if !cfg.NoNHat {
		if m.nhatNoise, err = dp.CachedTruncatedDiscreteLaplace(m.epsN, m.deltaN, int64(math.Ceil(cfg.Sensitivity))); err != nil {
			return nil, fmt.Errorf("pmw: n̂: %w", err)
		}
	}
	if cfg.Rounds > 0 {
		m.fixed, m.t0, m.maxRounds = true, cfg.Rounds, cfg.Rounds
	} else {
		m.t0 = autoRoundsMWEM(len(m.cand))
		if cfg.expT0 > 0 {
			m.t0 = cfg.expT0
		}
		m.maxRounds = cfg.MaxRounds
		if m.maxRounds == 0 {
			m.maxRounds = DefaultMWEMMaxRounds
		}
	}
	measFrac := 1 - m.selFrac
	m.unit = m.total / (float64(m.t0) + measFrac*float64(d))
	m.initCost = measFrac * float64(d) * m.unit
	m.roundsBudget = m.total - m.initCost
	m.cost = m.unit
	m.sensN, m.sensSel = cfg.Sensitivity, cfg.Sensitivity
	if cfg.testNoiseSens1 {
		m.sensN = 1 // mutation knob: noise calibrated to sensitivity 1
	}
	if cfg.testSelSens1 {
		m.sensSel = 1 // mutation knob: selection sensitivity 1
	}
	// Every noise scale a run can use lies between the initial one and the
	// one of a round that spends the whole rounds' budget: check both
	// before any data is read.
	for _, s := range []float64{m.noiseScale(m.unit), m.noiseScale(m.roundsBudget), m.initScale()} {
		if err := m.checkScale(s); err != nil {
			return nil, fmt.Errorf("pmw: measurement noise: %w", err)
		}
	}
	m.scratch = make([][]float64, workers)
	for i := range m.scratch {
		m.scratch[i] = make([]float64, m.plan.tableLen)
	}
	m.measOf = make([]*mwemMeas, len(projs))
	m.lr = make([]float64, m.plan.tableLen)
	m.fac = make([]float64, m.plan.tableLen)
	return m, nil
}

// composeWith says how the rounds' share composes with the rest of the
// run's budget.
func (m *mwem) composeWith() string {
	if m.nhatNoise == nil {
		return "the caller composes it with the rest of its budget"
	}
	return "basic composition with n̂"
}

// sensNote is cfg.SensitivityNote as a sentence to append to a ledger
// description ("" without one).
func (m *mwem) sensNote() string {
	if m.cfg.SensitivityNote == "" {
		return ""
	}
	return "; Δ̃ here: " + m.cfg.SensitivityNote
}

// noiseScale returns the per-cell noise of a round of cost c: the discrete
// Gaussian σ = Δ̃/√(2·0.9·c) (c in ρ; L2 sensitivity Δ̃, so the
// measurement is (Δ̃²/(2σ²)) = 0.9c-zCDP), or the discrete Laplace scale
// Δ̃/(0.75·c) (c in ε; L1 sensitivity Δ̃, so 0.75c-DP). Both quotients
// are rounded up ([dp.NoiseScale], with the square root rounded down), so
// float rounding never spends more than the share.
func (m *mwem) noiseScale(c float64) float64 {
	meas := (1 - m.selFrac) * c
	if m.cfg.testWholeBudget {
		meas = m.total // mutation knob: the whole budget instead of the share
	}
	if m.cfg.testRhoFromEps && m.gauss {
		meas *= m.epsR / m.total // mutation knob: ρ taken to be ε
	}
	if m.gauss {
		return noiseScaleOf(m.sensN, sqrtDown(2*meas))
	}
	return noiseScaleOf(m.sensN, meas)
}

// scaleMemo caches dp.NoiseScale (exact rational arithmetic, a few
// microseconds) by its public arguments: a run asks for the same few
// scales many times, and the audits run thousands of identical runs.
var scaleMemo sync.Map // [2]float64 → float64

func noiseScaleOf(sens, x float64) float64 {
	k := [2]float64{sens, x}
	if v, ok := scaleMemo.Load(k); ok {
		return v.(float64)
	}
	b := dp.NoiseScale(sens, x)
	scaleMemo.Store(k, b)
	return b
}

// sqrtDown returns the largest float64 s with s² ≤ x (x ≥ 0 finite): √x
// rounded down, so that a scale sens/s is never below sens/√x.
func sqrtDown(x float64) float64 {
	s := math.Sqrt(x)
	if math.FMA(s, s, -x) > 0 {
		s = math.Nextafter(s, 0)
	}
	return s
}

// sqrtUp returns √x rounded up (x ≥ 0 finite).
func sqrtUp(x float64) float64 {
	s := math.Sqrt(x)
	if math.FMA(s, s, -x) < 0 {
		s = math.Nextafter(s, math.Inf(1))
	}
	return s
}

// mulUp returns a·b rounded up (a, b ≥ 0 finite): a sensitivity that is
// a product is never understated.
func mulUp(a, b float64) float64 {
	p := a * b
	if math.FMA(a, b, -p) > 0 {
		p = math.Nextafter(p, math.Inf(1))
	}
	return p
}

// initScale is the noise of the initial 1-way marginals: their
// concatenation has L2 sensitivity Δ̃·√d (L1: Δ̃·d), measured with ρ_init
// (ε_init), which is the same per-marginal scale as a round of cost unit.
func (m *mwem) initScale() float64 {
	d := float64(len(m.u.sizes))
	c := m.initCost
	if m.cfg.testWholeBudget {
		c = m.total // mutation knob
	}
	if m.cfg.testRhoFromEps && m.gauss {
		c *= m.epsR / m.total // mutation knob
	}
	sqrtD := sqrtUp(d)
	if m.cfg.testInitNoSqrtD {
		sqrtD, d = 1, 1 // mutation knob: one marginal's sensitivity
	}
	if m.gauss {
		return noiseScaleOf(mulUp(m.sensN, sqrtD), sqrtDown(2*c))
	}
	return noiseScaleOf(mulUp(m.sensN, d), c)
}

// selEpsilon is the exponential mechanism's ε for a round of cost c:
// √(8·0.1·c) (so ε²/8 = 0.1c, Cesar–Rogers bounded range) or 0.25c.
func (m *mwem) selEpsilon(c float64) float64 {
	e := m.selFrac * c
	if m.gauss {
		e = math.Sqrt(8 * m.selFrac * c)
	}
	if m.cfg.testSelEpsFactor > 0 {
		e *= m.cfg.testSelEpsFactor // mutation knob
	}
	return e
}

// variance and meanAbs of the per-cell noise of scale s (public).
func (m *mwem) variance(s float64) float64 {
	if m.gauss {
		return s * s
	}
	return 2 * s * s
}

func (m *mwem) meanAbs(s float64) float64 {
	if m.gauss {
		return math.Sqrt(2/math.Pi) * s
	}
	r := math.Exp(-1 / s) // E|X| of the discrete Laplace: 2r/(1−r²)
	return 2 * r / (1 - r*r)
}

type intSampler interface{ Sample(dp.Source) int64 }

// zeroSampler draws 0: the noise of the testInitHist lens, which measures
// a public histogram.
type zeroSampler struct{}

func (zeroSampler) Sample(dp.Source) int64 { return 0 }

// checkMemo caches the sampler constructors' verdict on a scale (public):
// newMWEM checks three scales before any data is read.
var checkMemo sync.Map // checkKey → error (nil stored as a nil error)

type checkKey struct {
	gauss bool
	scale float64
}

// checkScale reports whether the sampler of scale s can be built.
func (m *mwem) checkScale(s float64) error {
	k := checkKey{m.gauss, s}
	if v, ok := checkMemo.Load(k); ok {
		err, _ := v.(error)
		return err
	}
	_, err := m.sampler(s)
	checkMemo.Store(k, err)
	return err
}

func (m *mwem) sampler(s float64) (intSampler, error) {
	if m.gauss {
		return dp.NewDiscreteGaussian(s)
	}
	return dp.NewDiscreteLaplace(s)
}

// charge records the budget split in the ledger before any data is read,
// refusing before any charge when (ε, δ) do not remain.
func (m *mwem) charge(l *dp.Ledger) error {
	cfg := m.cfg
	rem := l.Remaining()
	if rem.Epsilon < cfg.Epsilon*(1-1e-12) || rem.Delta < cfg.Delta*(1-1e-12) {
		return fmt.Errorf("pmw: %w: needs (ε=%g, δ=%g) but (ε=%g, δ=%g) remain",
			dp.ErrBudgetExceeded, cfg.Epsilon, cfg.Delta, rem.Epsilon, rem.Delta)
	}
	d := len(m.u.sizes)
	details := map[string]any{"variant": string(VariantMWEM), "noise": string(m.cfg.noise()), "sensitivity": cfg.Sensitivity,
		"nhat_share": cfg.nhatShare(), "T0": m.t0, "candidates": len(m.cand), "columns": d}
	if m.nhatNoise == nil {
		delete(details, "nhat_share") // NoNHat: no n̂
	}
	// roundsInfo states T: fixed, or adaptive with its cap (T itself is
	// then the published output pmw_rounds).
	roundsInfo := func(extra map[string]any) map[string]any {
		d := map[string]any{"T_max": m.maxRounds, "schedule": "adaptive (budget annealing); T published as pmw_rounds"}
		if m.fixed {
			d = map[string]any{"T": m.t0}
		}
		for k, v := range extra {
			d[k] = v
		}
		return d
	}
	for k, v := range roundsInfo(nil) {
		details[k] = v
	}
	if m.nhatNoise == nil {
		// NoNHat: nothing to charge for n̂.
	} else if err := l.Charge("pmw: padded join size n̂ (truncated discrete Laplace)", dp.Budget{Epsilon: m.epsN, Delta: m.deltaN},
		fmt.Sprintf("exact truncated discrete Laplace on {0, …, 2τ′}, τ′ = %d, scale ⌈Δ̃⌉/(s·ε), added to the integer |J| "+
			"of sensitivity ⌈Δ̃⌉: (s·ε, %s)-DP and never below |J| (dp.TruncatedDiscreteLaplace; Ghazi et al. App. A); "+
			"basic composition with the rest", m.nhatNoise.Tau(), map[bool]string{true: "s·δ", false: "δ"}[m.gauss]),
		map[string]any{"sensitivity": cfg.Sensitivity, "tau": m.nhatNoise.Tau(), "nhat_share": cfg.nhatShare()}); err != nil {
		return fmt.Errorf("pmw: %w", err)
	}
	sel := m.selFrac * m.roundsBudget
	meas := m.roundsBudget - sel
	filter := "the rounds' costs are chosen adaptively from DP outputs only and stop when they add up to the " +
		"share (a privacy filter: Rogers et al. 2016, Feldman–Zrnic 2021, Whitehouse et al. 2023), so the " +
		"sequence composes to the sum of the shares"
	if m.fixed {
		filter = fmt.Sprintf("T = %d rounds of equal cost fixed before any data is read", m.t0)
	}
	if m.gauss {
		z, err := l.SplitZCDP("pmw: MWEM initial marginals and rounds (zCDP)", dp.Budget{Epsilon: m.epsR, Delta: m.deltaR},
			fmt.Sprintf("ρ = %g, the largest ρ whose zCDP-to-(ε, δ) conversion (Canonne–Kamath–Steinke 2020) fits "+
				"((1−s)·ε, (1−s)·δ) (dp.RhoForBudget); the parts below add up in ρ (Bun–Steinke 2016, Lemma 2.3); "+
				"%s", m.total, m.composeWith())+m.sensNote(), details)
		if err != nil {
			return fmt.Errorf("pmw: %w", err)
		}
		if err := z.ChargeRho("pmw: 1-way marginals of every released column (discrete Gaussian)", m.initCost,
			fmt.Sprintf("the d = %d marginals concatenated have L2 sensitivity Δ̃·√d (each of the ≤ Δ̃ changed join tuples "+
				"moves one count in each); integer counts plus discrete Gaussian noise of σ₀ = Δ̃·√d/√(2ρ₀) = %g per cell "+
				"are ρ₀-zCDP (Canonne–Kamath–Steinke 2020, Thm. 4)", d, m.initScale()),
			map[string]any{"sigma": m.initScale(), "columns": d}); err != nil {
			return fmt.Errorf("pmw: %w", err)
		}
		if err := z.ChargeRho("pmw: round selections (exponential mechanism)", sel,
			"each round selects a candidate marginal r by the exponential mechanism with score ‖M_r(A) − M_r(J)‖₁ minus a "+
				"public bias, sensitivity Δ̃ (A is fixed by past DP outputs; ≤ Δ̃ changed tuples move M_r(J) by ≤ Δ̃ in L1), "+
				"at ε_t = √(8·0.1·ρ_t): ε_t-DP with bounded range, hence ε_t²/8 = 0.1·ρ_t-zCDP (Cesar–Rogers 2021); "+filter,
			roundsInfo(map[string]any{"candidates": len(m.cand)})); err != nil {
			return fmt.Errorf("pmw: %w", err)
		}
		if err := z.ChargeRho("pmw: round measurements (discrete Gaussian on every cell of the selected marginal)", meas,
			"all cells of the selected marginal at once: L2 sensitivity Δ̃ (≤ Δ̃ changed tuples, one cell each), "+
				"discrete Gaussian σ_t = Δ̃/√(2·0.9·ρ_t): 0.9·ρ_t-zCDP (Canonne–Kamath–Steinke 2020, Thm. 4); "+filter+
				"; the multiplicative-weights fits are post-processing",
			roundsInfo(nil)); err != nil {
			return fmt.Errorf("pmw: %w", err)
		}
		return nil
	}
	p, err := l.Split("pmw: MWEM initial marginals and rounds (pure ε-DP)", dp.Budget{Epsilon: m.epsR},
		"basic composition of the parts below ((1−s)·ε, 0) with n̂", details)
	if err != nil {
		return fmt.Errorf("pmw: %w", err)
	}
	if err := p.Charge("pmw: 1-way marginals of every released column (discrete Laplace)", dp.Budget{Epsilon: m.initCost},
		fmt.Sprintf("the d = %d marginals concatenated have L1 sensitivity Δ̃·d; discrete Laplace of scale Δ̃·d/ε₀ = %g "+
			"per integer cell is ε₀-DP (the geometric mechanism)", d, m.initScale()),
		map[string]any{"scale": m.initScale(), "columns": d}); err != nil {
		return fmt.Errorf("pmw: %w", err)
	}
	if err := p.Charge("pmw: round selections (exponential mechanism)", dp.Budget{Epsilon: sel},
		"exponential mechanism with score sensitivity Δ̃ at ε = 0.25·ε_t per round; "+filter,
		roundsInfo(map[string]any{"candidates": len(m.cand)})); err != nil {
		return fmt.Errorf("pmw: %w", err)
	}
	if err := p.Charge("pmw: round measurements (discrete Laplace on every cell of the selected marginal)", dp.Budget{Epsilon: meas},
		"L1 sensitivity Δ̃ of a marginal; discrete Laplace of scale Δ̃/(0.75·ε_t) per cell is 0.75·ε_t-DP; "+filter,
		roundsInfo(nil)); err != nil {
		return fmt.Errorf("pmw: %w", err)
	}
	return nil
}

// init reads the true histogram (the only read of private data), draws
// n̂, measures the 1-way marginals and sets A₀ to their product.
func (m *mwem) init(hist []Cell) error {
	u, pl := m.u, m.plan
	truth, n, err := m.readTruth(hist)
	if err != nil {
		return err
	}
	m.truth = truth
	if m.nhatNoise == nil {
		// NoNHat: no n̂ to decide on. readTruth saturated every table
		// cell at 2⁵³ over its table's cells (as the factored model's
		// tables are, see saturate), so a total beyond 2⁵³ is neither
		// refused after the charge nor inexact.
		n = 0 // the true total is not kept, nor published
	} else {
		// n is the true total saturated at totalCap (1-Lipschitz, so n̂
		// stays a DP output); only n̂ decides and is printed.
		nhat, err := padTotal(n, m.nhatNoise, m.src, m.cfg.testExactN)
		if err != nil {
			return err
		}
		n = nhat
	}
	m.nhat = float64(n) // an integer ≤ 2⁵³: exact in float64

	// The initial 1-way marginals, one column after the other.
	s0 := m.initScale()
	smp, err := m.sampler(s0)
	if err != nil {
		return fmt.Errorf("pmw: %w", err)
	}
	if m.cfg.testInitHist != nil {
		// Lens: the initial marginals are those of a public histogram,
		// exactly, so that A₀ is the same on every input.
		if m.truth, _, err = m.readTruth(m.cfg.testInitHist); err != nil {
			return err
		}
		defer func() { m.truth = truth }()
		smp = zeroSampler{}
	}
	v0 := m.variance(s0)
	var num, den float64
	for _, p := range m.oneWay {
		y := m.measure(p, smp, v0)
		var tot float64
		for _, v := range y {
			tot += v
		}
		// The total of each noisy marginal is |J| plus the sum of n_c
		// independent zero-mean noises; weights ∝ 1/n_c (public) give the
		// inverse-variance combination, an unbiased estimate of |J|.
		k := float64(len(y))
		num += tot / k
		den += 1 / k
		m.sels = append(m.sels, m.selection(0, p, s0, m.initCost/float64(len(m.oneWay))))
	}
	m.nEst = num / den
	m.nSD = math.Sqrt(v0 / den)
	m.n = math.Max(m.nEst, 1)

	// A₀ = product of the clamped, normalised noisy 1-way marginals: one
	// scaled pass from w ≡ 1 with the 1-way factor tables.
	m.w = make([]float64, u.size)
	for i := range m.w {
		m.w[i] = 1
	}
	floor := mwemFloor * s0
	for _, p := range m.oneWay {
		me := m.measOf[p]
		off := pl.tableOff[p]
		var sum float64
		for _, y := range me.target {
			sum += math.Max(y, 0) + floor
		}
		for c, y := range me.target {
			m.fac[off+c] = (math.Max(y, 0) + floor) / sum
		}
	}
	m.setScaleLists(m.oneWay)
	m.sc.fac, m.sc.g = m.fac, float64(u.size)
	m.z = pl.runScaled(m.w, &m.sc, m.scratch)
	if m.cfg.testAverage {
		m.avg = make([]float64, u.size)
	}
	return nil
}

// readTruth returns the true marginal tables of hist (plan layout) and
// its total saturated at totalCap (see [addTotal]). It branches on no count:
// the tables are exact when the total is at most 2⁵³, and a larger total
// is refused later through n̂ alone; without n̂ (NoNHat) every table cell
// is saturated at 2⁵³ over its table's cells, as [RunFactored] does.
func (m *mwem) readTruth(hist []Cell) ([]float64, int64, error) {
	u, pl := m.u, m.plan
	truth := make([]float64, pl.tableLen)
	var n int64
	// Without n̂ (the privacy-unit release) no total decides on the run, so
	// the tables are summed in integers and saturated (see below) instead
	// of being refused beyond 2⁵³ after the charge.
	var exact []int64
	if m.nhatNoise == nil {
		exact = make([]int64, pl.tableLen)
	}
	d := make([]int, len(u.sizes))
	id := make([]int, len(u.sizes))
	for _, h := range hist {
		if h.Index < 0 || h.Index >= u.size {
			return nil, 0, fmt.Errorf("%w: histogram cell %d outside the universe [0, %d)", ErrInvalidInput, h.Index, u.size)
		}
		if h.Count < 0 {
			return nil, 0, fmt.Errorf("%w: histogram cell %d has negative count %d", ErrInvalidInput, h.Index, h.Count)
		}
		if h.Count == 0 {
			continue
		}
		n = addTotal(n, h.Count)
		u.Decode(h.Index, d)
		for i, col := range m.perm {
			id[i] = d[col]
		}
		if exact != nil {
			for p, pr := range pl.projs {
				k := pl.tableOff[p] + pr.index(id)
				exact[k] = min(exact[k]+h.Count, 1<<62) // above every cap below: no overflow
			}
			continue
		}
		c := float64(h.Count)
		for p, pr := range pl.projs {
			truth[pl.tableOff[p]+pr.index(id)] += c
		}
	}
	if exact != nil {
		// min(·, 2⁵³/cells) per cell, a public cap: 1-Lipschitz per cell,
		// so every sensitivity argument holds on the saturated tables, and
		// each table's total stays within 2⁵³ (its float sums exact).
		for p, pr := range pl.projs {
			cellCap := int64(1<<53) / int64(pr.size)
			off := pl.tableOff[p]
			for c := range pr.size {
				truth[off+c] = float64(min(exact[off+c], cellCap))
			}
		}
	}
	return truth, n, nil
}

// measure adds integer noise from smp to every cell of the true marginal
// p, folds the noisy marginal into p's measurement and returns it.
func (m *mwem) measure(p int, smp intSampler, v float64) []float64 {
	pl := m.plan
	size := pl.projs[p].size
	off := pl.tableOff[p]
	y := make([]float64, size)
	// Cells are drawn in the canonical order (mixed radix over the
	// marginal's columns in universe order), whatever the internal layout,
	// so that a seeded run does not depend on the pass order.
	for _, c := range m.canonical(p) {
		// Counts are integers < 2⁵³ held exactly in float64: the noisy
		// count is an integer computed in integer arithmetic.
		y[c] = float64(int64(m.truth[off+c]) + smp.Sample(m.src))
	}
	me := m.measOf[p]
	if me == nil {
		me = &mwemMeas{p: p, sum: make([]float64, size), ybar: make([]float64, size), target: make([]float64, size)}
		m.measOf[p] = me
		m.meas = append(m.meas, me)
		m.measured += size
	}
	me.prec += 1 / v
	for c, yc := range y {
		me.sum[c] += yc / v
		me.ybar[c] = me.sum[c] / me.prec
	}
	me.kappa = 1 / math.Sqrt(me.prec)
	me.shrink()
	if m.cfg.expNoShrink {
		copy(me.target, me.ybar)
	}
	return y
}

// shrink sets target, what the fit matches, to one of two estimates of
// the true table t from ybar (per-cell noise variance v = 1/prec, public),
// whichever has the smaller estimated risk:
//
//   - ybar shrunk towards the uniform table of the same total by the
//     positive-part James–Stein factor
//
//     λ = max(0, 1 − q_k·v / ‖ybar − ȳ‖²),  target = ȳ + λ·(ybar − ȳ),
//
//     with k cells and ȳ the mean cell: E‖ybar − ȳ‖² = ‖t − t̄‖² + (k−1)·v,
//     so with q_k = k − 1 (James–Stein) λ estimates the share of the spread
//     that is signal. We take q_k the χ²_{k−1} quantile of
//     [mwemShrinkNoise], the spread pure noise stays below with
//     probability 1 − 1e-4: with k = 5 cells of pure noise the plain
//     James–Stein factor is positive 40% of the time and leaves half the
//     noise in; this one almost never does. When the noise swamps a
//     near-uniform table (a large Δ̃ on a join at small ε), λ → 0 and the
//     marginal falls back to uniform instead of being fitted to noise.
//
//   - ybar itself, which the fit then projects onto non-negative tables of
//     the model's total. A sparse table (most rows in a few cells, as in
//     most real 1-way marginals) keeps its large cells through noise that
//     the shrinkage would flatten: on the small-data suite (docs/small-data.md)
//     shrinking every table toward uniform cost Adult and Bank at 500 rows
//     half their accuracy at ε ≤ 1.
//
// The risk of each is Stein's unbiased risk estimate, SURE(x) =
// ‖x − ybar‖² − k·v + 2v·div x (Stein 1981), with div the divergence of
// the estimate in ybar: 1 + (k−1)·λ + 2q_k·v/‖ybar − ȳ‖² for the
// shrinkage (1 when λ = 0), and for ybar the divergence of its Euclidean
// projection onto {x ≥ 0, Σx = Σ ybar}, the size of the projection's
// support (simplexProject). The choice and both estimates are
// post-processing of a DP output (ybar) with public quantities (v, k).
// SURE is itself noisy, so ybar must beat the shrinkage by one standard
// deviation of the pure-noise spread, √(2(k−1))·v: without it a
// near-uniform table of pure noise (5 cells) kept its noise about one
// draw in eleven (χ²_4 > 8), and TPC-H's unit release at ε = 0.05, where
// no marginal can carry signal, kept two of eight; with it about one draw
// in thirty-five. Three standard deviations cost Adult at 500 rows a
// fifth of the gain (docs/small-data.md).
// lambda records the shrinkage factor kept (1 when ybar is chosen).
func (me *mwemMeas) shrink() {
	k := float64(len(me.ybar))
	if k < 2 {
		copy(me.target, me.ybar)
		me.lambda = 1
		return
	}
	var mean float64
	for _, y := range me.ybar {
		mean += y / k
	}
	var ss float64
	for _, y := range me.ybar {
		ss += (y - mean) * (y - mean)
	}
	v := 1 / me.prec
	q := mwemShrinkNoise(k)
	lambda, div := 0.0, 1.0
	if noise := q * v; ss > noise {
		lambda = 1 - noise/ss
		div = 1 + (k-1)*lambda + 2*noise/ss
	}
	var rs float64
	for c, y := range me.ybar {
		me.target[c] = mean + lambda*(y-mean)
		rs += (me.target[c] - y) * (me.target[c] - y)
	}
	me.lambda = lambda
	sureShrink := rs - k*v + 2*v*div
	proj, support := simplexProject(me.ybar)
	var rp float64
	for c, y := range me.ybar {
		rp += (proj[c] - y) * (proj[c] - y)
	}
	if rp-k*v+2*v*float64(support) < sureShrink-math.Sqrt(2*(k-1))*v {
		copy(me.target, me.ybar)
		me.lambda = 1
	}
	if me.pool {
		me.poolCells(v)
	}
}

// poolCells sets the target to ybar with its noise-dominated cells
// pooled: in decreasing order of ybar, a cell is kept while it clears the
// mean of the cells below it (at least 0) by 3σ (σ² = v); the first that
// does not and every cell below it are replaced by their mean (at least
// 0), when there are at least two of them. This is MST's domain
// compression (McKenna, Miklau, Sheldon 2021, compress_domain) applied to
// the estimate instead of the domain, with the line above the level of
// the cells it would be pooled with rather than above 0: with MST's 3σ
// above 0 the tuple-level TPC-H release at ε = 1 (TestAccuracyTPCH) kept
// one cell of pure noise and pooled the rest to a negative mean, so the
// fit put nearly every row there (TV 0.81); above the level of the rest a
// cell of a near-uniform table clears it with probability about 0.13%.
// Against the rest's level, not the whole table's mean (the line until
// issue 40's third session): a large cell of a small table raised the
// mean it had to clear, so a 2-cell table with 97 of 100 rows in one cell
// at σ = 20 (Retail with 100 customers' cancellation flag at ε = 1) could
// never keep it (97 < 50 + 60). Post-processing of ybar with the public v.
func (me *mwemMeas) poolCells(v float64) {
	k := len(me.ybar)
	order := make([]int, k)
	for i := range order {
		order[i] = i
	}
	// Decreasing ybar; ties in cell order (deterministic).
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(me.ybar[b], me.ybar[a]) })
	// below[j] is the sum of ybar over order[j:].
	below := make([]float64, k+1)
	for j := k - 1; j >= 0; j-- {
		below[j] = below[j+1] + me.ybar[order[j]]
	}
	sd := math.Sqrt(v)
	kept := 0
	for kept < k-1 && me.ybar[order[kept]] >= max(below[kept+1]/float64(k-kept-1), 0)+3*sd {
		kept++
	}
	copy(me.target, me.ybar)
	me.lambda = 1
	m := k - kept
	if m < 2 {
		return
	}
	mean := max(below[kept]/float64(m), 0)
	for _, c := range order[kept:] {
		me.target[c] = mean
	}
	// Every cell pooled is the uniform table: it fell back (λ = 0, as
	// the shrinkage reports it); any cell kept is signal kept.
	if kept == 0 {
		me.lambda = 0
	}
}

// simplexProject returns the Euclidean projection of y onto {x ≥ 0,
// Σx = Σy} (all zeros when Σy ≤ 0) and the size of its support: x_i =
// max(y_i − τ, 0) with τ found by sorting (Held, Wolfe, Crowder 1974).
func simplexProject(y []float64) ([]float64, int) {
	var total float64
	for _, v := range y {
		total += v
	}
	out := make([]float64, len(y))
	if total <= 0 {
		return out, 0
	}
	u := slices.Clone(y)
	slices.Sort(u)
	slices.Reverse(u)
	var cum, tau float64
	support := 0
	for i, v := range u {
		cum += v
		if t := (cum - total) / float64(i+1); v-t > 0 {
			support, tau = i+1, t
		}
	}
	for i, v := range y {
		out[i] = math.Max(v-tau, 0)
	}
	return out, support
}

// canonical returns, for marginal p, the internal table index of each
// cell in canonical order (mixed radix over m.cols[p], first most
// significant).
func (m *mwem) canonical(p int) []int {
	pr := m.plan.projs[p]
	out := make([]int, pr.size)
	d := make([]int, len(m.u.sizes))  // bins over u's columns
	id := make([]int, len(m.u.sizes)) // the same over iu's
	cols := m.cols[p]
	for k := range out {
		x := k
		for i := len(cols) - 1; i >= 0; i-- {
			n := m.u.sizes[cols[i]]
			d[cols[i]] = x % n
			x /= n
		}
		for i, c := range m.perm {
			id[i] = d[c]
		}
		out[k] = pr.index(id)
	}
	return out
}

func (m *mwem) selection(round, p int, scale, cost float64) Selection {
	s := Selection{Round: round, Marginal: m.names[p], Columns: slices.Clone(m.cols[p]),
		Cells: m.plan.projs[p].size, Sigma: scale}
	if m.gauss {
		s.Rho = cost
	} else {
		s.Epsilon = cost
	}
	return s
}

// setScaleLists sets the scale spec's projections with factors to ps.
func (m *mwem) setScaleLists(ps []int) {
	pl := m.plan
	if m.sc.on == nil {
		m.sc.on = make([]bool, len(pl.projs))
	}
	clear(m.sc.on)
	for _, p := range ps {
		m.sc.on[p] = true
	}
	m.sc.inner = m.sc.inner[:0]
	for k, p := range pl.innerP {
		if m.sc.on[p] {
			m.sc.inner = append(m.sc.inner, k)
		}
	}
}

// marginal writes the model's marginal p, N·tab/z, into dst.
func (m *mwem) marginal(p int, dst []float64) []float64 {
	pl := m.plan
	off, size := pl.tableOff[p], pl.projs[p].size
	dst = dst[:0]
	k := m.n / m.z
	for _, v := range m.scratch[0][off : off+size] {
		dst = append(dst, k*v)
	}
	return dst
}

// roundCost returns the cost of round t of the mwem rounds (dense or
// factored) and whether it is the last: with fixed rounds, equal costs and
// the rest at round t0; otherwise the current (annealed) cost, or all that
// remains when less than two rounds' worth is left or t reaches the cap.
// Public: a function of public parameters and past DP decisions.
func roundCost(fixed bool, t, t0, maxRounds int, rem, cost float64) (float64, bool) {
	switch {
	case fixed:
		if t >= t0 {
			return rem, true
		}
	case rem < 2*cost || t >= maxRounds:
		return rem, true
	}
	return cost, false
}

// plannedRounds is the number of rounds the mwem rounds (dense or
// factored) will run if the cost stays as it is after round t: t when
// done, else t plus the rounds roundCost grants the remaining budget rem,
// at most maxRounds. It is what a progress bar shows as its total (the
// cap is only an upper bound of the adaptive schedule); annealing may
// lower it later. Public: a function of public parameters and past DP
// decisions.
func plannedRounds(done, fixed bool, t, t0, maxRounds int, rem, cost float64) int {
	switch {
	case done:
		return t
	case fixed:
		return t0
	}
	n := t
	for {
		n++
		c, last := roundCost(false, n, t0, maxRounds, rem, cost)
		if last {
			return n
		}
		rem -= c
	}
}

// round runs one round: budget, selection, measurement, fit, annealing.
func (m *mwem) round(maxSweeps int) {
	m.t++
	cost, last := roundCost(m.fixed, m.t, m.t0, m.maxRounds, m.roundsBudget-m.used, m.cost)
	scale := m.noiseScale(cost)
	pl := m.plan
	// Scores: L1 error of every candidate minus the expected L1 norm of
	// its measurement noise (public). A is a function of past DP outputs.
	// They are exact integers in steps of 1/scoreScale rows, as the
	// factored model's ([factored.score]): each model cell a_c = k·tab_c is
	// rounded to that grid (public rounding of a DP value), each true count
	// (an exact integer) and the L1 sum are capped at l1Cap rows (min(·, C)
	// is 1-Lipschitz, so a neighbour still moves a score by at most Δ̃ rows:
	// sensitivity Δ̃·scoreScale on the grid), and the integer arithmetic is
	// exact. So the exponential mechanism sees the scores without float
	// error (errBound 0): a float score's error bound grew with the true
	// total, which a run without n̂ (NoNHat: the privacy-unit release) could
	// bound only by 2⁵³, and that bound coarsened the selection's grid to
	// 256 rows a step, a selection nearly blind to the data.
	scores := make([]float64, len(m.cand))
	k := m.n / m.z
	tab := m.scratch[0]
	bias := m.meanAbs(scale)
	for i, p := range m.cand {
		off, size := pl.tableOff[p], pl.projs[p].size
		var l1 int64
		for c := range size {
			a := int64(math.Round(math.Min(k*tab[off+c], l1Cap) * scoreScale))
			d := a - int64(math.Min(m.truth[off+c], l1Cap))*scoreScale
			if d < 0 {
				d = -d
			}
			l1 = min(l1+d, l1Cap*scoreScale)
		}
		scores[i] = float64(l1 - int64(math.Round(float64(size)*bias*scoreScale)))
	}
	// Exact selection ([dp.ExponentialGrid]) at ε_t: ε_t-DP and
	// ε_t-bounded range, as the zCDP accounting above needs.
	i := dp.ExponentialGrid(m.src, scores, m.selEpsilon(cost), m.sensSel*scoreScale, 0)
	p := m.cand[i]
	smp, err := m.sampler(scale)
	if err != nil {
		panic("pmw: noise scale checked in newMWEM: " + err.Error())
	}
	before := m.marginal(p, nil)
	m.measure(p, smp, m.variance(scale))
	m.fit(maxSweeps)
	if !m.fixed && !last {
		// Budget annealing (AIM): when the model's marginal moved less
		// than the noise, measurements at this scale no longer help.
		after := m.marginal(p, nil)
		var moved float64
		for c := range after {
			moved += math.Abs(after[c] - before[c])
		}
		if moved <= float64(len(after))*m.meanAbs(scale) {
			if m.gauss {
				m.cost *= 4 // σ halves (ρ_meas ×4) and ε_sel doubles (ρ_sel ×4)
			} else {
				m.cost *= 2 // scale halves, ε_sel doubles
			}
		}
	}
	m.used += cost
	m.sels = append(m.sels, m.selection(m.t, p, scale, cost))
	if m.avg != nil {
		k := m.n / m.z
		for x, v := range m.w {
			m.avg[x] += k * v
		}
	}
	m.done = last
}

// prepareFit sets the overlap damping β and the scale lists for the
// current set of measured marginals: β_r = 1/max_{c ∈ r} (number of
// measured marginals holding column c), so that marginals sharing a
// column do not each apply the full correction along it.
func (m *mwem) prepareFit() {
	cnt := make([]int, len(m.iu.sizes))
	ps := make([]int, 0, len(m.meas))
	for _, me := range m.meas {
		for _, c := range m.plan.projs[me.p].cols {
			cnt[c]++
		}
		ps = append(ps, me.p)
	}
	for _, me := range m.meas {
		mx := 1
		for _, c := range m.plan.projs[me.p].cols {
			mx = max(mx, cnt[c])
		}
		me.beta = 1 / float64(mx)
	}
	m.setScaleLists(ps)
}

// loss is the Gaussian negative log-likelihood of the measurements (up to
// constants): Σ_r prec_r·‖M_r(A) − ybar_r‖².
func (m *mwem) loss() float64 {
	pl := m.plan
	k := m.n / m.z
	tab := m.scratch[0]
	var l float64
	for _, me := range m.meas {
		off := pl.tableOff[me.p]
		var s float64
		for c, y := range me.target {
			e := k*tab[off+c] - y
			s += e * e
		}
		l += me.prec * s
	}
	return l
}

// logRatios fills lr with β_r·(ln(max(target, 0) + κ) − ln(M_r(A) + κ)) on
// every measured table: the IPF-like direction of the sweep (a
// multiplicative update by e^{lr} moves each marginal cell to its target,
// regularised by the noise scale κ where counts are at noise level).
func (m *mwem) logRatios() {
	pl := m.plan
	k := m.n / m.z
	tab := m.scratch[0]
	for _, me := range m.meas {
		off := pl.tableOff[me.p]
		for c, y := range me.target {
			m.lr[off+c] = me.beta * (math.Log(math.Max(y, 0)+me.kappa) - math.Log(k*tab[off+c]+me.kappa))
		}
	}
}

// step multiplies w by e^{α·lr} on every measured table (and renormalises
// so that Σ w stays near |X|) in one scaled pass, which also refreshes the
// tables and z.
func (m *mwem) step(alpha float64) {
	pl := m.plan
	for _, me := range m.meas {
		off := pl.tableOff[me.p]
		for c := range me.ybar {
			m.fac[off+c] = math.Exp(alpha * m.lr[off+c])
		}
	}
	m.sc.fac, m.sc.g = m.fac, float64(m.u.size)/m.z
	m.z = pl.runScaled(m.w, &m.sc, m.scratch)
	m.sweeps++
}

// fit re-fits A to every measurement so far by multiplicative weights:
// sweeps of the multiplicative update e^{α·lr}, each one pass, with a
// backtracking line search on the loss (α halves until the loss does not
// rise; a sweep that cannot lower it is undone and ends the fit), until a
// sweep gains less than mwemTol per measured cell or maxSweeps sweeps.
// Everything here reads DP outputs only: post-processing.
func (m *mwem) fit(maxSweeps int) {
	m.prepareFit()
	loss := m.loss()
	alpha := 1.0
	tol := mwemTol * float64(m.measured)
	for range maxSweeps {
		m.logRatios()
		m.step(alpha)
		nl := m.loss()
		for nl > loss && alpha > mwemMinAlpha {
			alpha /= 2
			m.step(-alpha)
			nl = m.loss()
		}
		if nl > loss {
			m.step(-alpha) // back to the start of the sweep
			return
		}
		gain := loss - nl
		loss = nl
		if gain <= tol {
			return
		}
		alpha = math.Min(1, 2*alpha)
	}
}

// result turns the state into the Result: Rows by unbiased stochastic
// rounding of the estimate, weights scaled to Rows.
func (m *mwem) result() *Result {
	// An estimate below its own standard deviation carries no information
	// about |J| (it is noise); writing it (or 0 rows, after clamping) would
	// also throw away the marginals the file carries. Such a file gets
	// nSD rows instead — a rule on a DP value and a public number, so
	// post-processing; the count is then biased upwards, and Rows says so
	// through RowsFloored. Above the floor the count is unbiased.
	x := math.Max(m.nEst, 0)
	if x < m.nSD && !m.cfg.NoRowsFloor {
		x, m.floored = m.nSD, true
	}
	rows := math.Floor(x)
	if dp.Uniform(m.src) < x-rows {
		rows++
	}
	w := m.w
	k := rows / m.z
	if m.avg != nil {
		// The average of the iterates, rescaled to Rows.
		var s float64
		for _, v := range m.avg {
			s += v
		}
		w, k = m.avg, rows/s
		m.w = nil
	}
	if !(k > 0) || math.IsInf(k, 0) {
		k = 0
	}
	parallelChunks(len(w), m.cfg.workers(), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			w[i] *= k
		}
	})
	if m.iu != m.u {
		w = unpermute(m.u, m.perm, w)
	}
	var signals []Signal
	for _, me := range m.meas {
		signals = append(signals, Signal{Marginal: m.names[me.p], Cells: len(me.ybar), Sigma: me.kappa, Kept: me.lambda})
	}
	return &Result{Variant: VariantMWEM, Universe: m.u, NHat: m.nhat, Rows: int64(rows), RowsFloored: m.floored, RowsSD: m.nSD, Rounds: m.t,
		Weights: w, Selections: m.sels, Signals: signals, Seeded: m.src.Seeded()}
}

// permutedProjections returns the projections of iu, the universe in the
// internal column order perm (iu's column i is the universe's perm[i]),
// onto each column set of sets, given in the universe's columns.
func permutedProjections(iu *Universe, perm []int, sets [][]int) []*projection {
	inv := make([]int, len(perm))
	for i, c := range perm {
		inv[c] = i
	}
	projs := make([]*projection, len(sets))
	for j, cols := range sets {
		ic := make([]int, len(cols))
		for k, c := range cols {
			ic[k] = inv[c]
		}
		slices.Sort(ic)
		projs[j] = newProjection(iu, ic)
	}
	return projs
}

// runMWEM is [Run] for [VariantMWEM]; see Run for the guarantee.
func runMWEM(ctx context.Context, src dp.Source, u *Universe, fams []Family, hist []Cell, cfg Config) (*Result, error) {
	m, err := newMWEM(src, u, fams, cfg)
	if err != nil {
		return nil, err
	}
	nhat := &m.nhat
	if cfg.NoNHat {
		nhat = nil // nothing to publish
	}
	if err := chargeThenInit(cfg.Ledger, m.charge, func() error { return m.init(hist) }, nhat); err != nil {
		return nil, err
	}
	for !m.done {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("pmw: stopped before round %d: %w", m.t+1, err)
		}
		m.round(cmp.Or(cfg.expRoundSweeps, mwemRoundSweeps))
		if cfg.Progress != nil {
			cfg.Progress(m.t, plannedRounds(m.done, m.fixed, m.t, m.t0, m.maxRounds, m.roundsBudget-m.used, m.cost))
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pmw: stopped before the final fit: %w", err)
	}
	m.fit(cmp.Or(cfg.expFinalSweeps, mwemFinalSweeps))
	res := m.result()
	if l := cfg.Ledger; l != nil {
		if !cfg.NoNHat {
			// With NoNHat the caller counts the rows (and Rows is in the
			// histogram's units): it publishes them.
			l.Publish("pmw_rows", float64(res.Rows))
		}
		publishRun(l, res.RowsFloored, res.Rounds)
	}
	return res, nil
}

// publishRun records in the ledger what every mwem run (dense or
// factored) publishes besides its rows: whether the row estimate was
// raised to its standard deviation, and the number of rounds.
func publishRun(l *dp.Ledger, floored bool, rounds int) {
	f := 0.0
	if floored {
		f = 1
	}
	l.Publish("pmw_rows_floored", f)
	l.Publish("pmw_rounds", float64(rounds))
}

// mwemMinBlock is the smallest inner block of the scaled pass: the
// per-block work of the loop nest is amortised over at least this many
// cells.
const mwemMinBlock = 32

// passOrder returns the internal column order of the dense weights
// (perm[i] is the column of the universe at internal position i) and the
// size of its inner block. The scaled pass (see [passPlan.scaleKernel])
// walks the trailing columns (the block) per cell and the others as a loop
// nest in which a marginal costs one step per subtree of its deepest
// column; the marginals that use a block column cost per cell only while
// their other columns stay put. So: the block is made of the columns the
// fewest column sets use (larger domains first on ties) until it holds
// mwemMinBlock cells; the columns that share a set with a block column come
// first (they move least often), then the others, the most used first.
func passOrder(sizes []int, sets [][]int) ([]int, int) {
	d := len(sizes)
	use := make([]int, d)
	for _, s := range sets {
		for _, c := range s {
			use[c]++
		}
	}
	cols := make([]int, d)
	for i := range cols {
		cols[i] = i
	}
	slices.SortStableFunc(cols, func(a, b int) int {
		if use[a] != use[b] {
			return use[a] - use[b]
		}
		return sizes[b] - sizes[a]
	})
	tail := make([]bool, d)
	block := 1
	var tailCols []int
	for _, c := range cols {
		if block >= mwemMinBlock {
			break
		}
		tail[c] = true
		tailCols = append(tailCols, c)
		block *= sizes[c]
	}
	partner := make([]bool, d)
	for _, s := range sets {
		hit := false
		for _, c := range s {
			hit = hit || tail[c]
		}
		for _, c := range s {
			partner[c] = partner[c] || (hit && !tail[c])
		}
	}
	var perm []int
	for _, want := range []bool{true, false} {
		var part []int
		for c := range d {
			if !tail[c] && partner[c] == want {
				part = append(part, c)
			}
		}
		slices.SortStableFunc(part, func(a, b int) int { return use[b] - use[a] })
		perm = append(perm, part...)
	}
	slices.Sort(tailCols)
	return append(perm, tailCols...), block
}

func isIdentity(perm []int) bool {
	for i, c := range perm {
		if i != c {
			return false
		}
	}
	return true
}

// unpermute returns the dense vector w, indexed over u's columns in the
// internal order perm, re-indexed in u's own order.
func unpermute(u *Universe, perm []int, w []float64) []float64 {
	d := len(perm)
	out := make([]float64, len(w))
	sizes := make([]int, d)
	strides := make([]int64, d)
	for i, c := range perm {
		sizes[i], strides[i] = u.sizes[c], u.strides[c]
	}
	digits := make([]int, d)
	inner := sizes[d-1]
	st := strides[d-1]
	var orig int64
	for x := 0; x < len(w); x += inner {
		o := orig
		for j := range inner {
			out[o] = w[x+j]
			o += st
		}
		// Odometer over the internal columns but the last.
		for c := d - 2; c >= 0; c-- {
			digits[c]++
			orig += strides[c]
			if digits[c] < sizes[c] {
				break
			}
			orig -= int64(sizes[c]) * strides[c]
			digits[c] = 0
		}
	}
	return out
}
