package pmw

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"sort"

	"github.com/synth-dp/synth/dp"
)

// Cell is one non-empty cell of the true histogram of the join over the
// universe: Count join tuples fall in cell Index. It is private data.
type Cell struct {
	Index int64
	Count int64
}

// Measurement is one round's public output: the query selected by the
// exponential mechanism and its noisy answer m_t, the true answer on a
// public grid γ plus exact discrete Laplace noise of scale ≈ Δ̃/ε₀ (see
// [Run]).
type Measurement struct {
	// Round is t, from 1.
	Round int
	// Family and Query locate q_t: fams[Family], query index Query.
	Family, Query int
	// Query description, e.g. "marginal(a,b)[a=3,b=7]".
	Describe string
	// Value is m_t (not clamped): γ times a DP integer.
	Value float64
}

// Result is the output of [Run]. Everything exported is a DP output or a
// public parameter (the noisy values of the [VariantPaper] measurements
// are DP integers times a public grid, drawn with the exact samplers of
// package dp).
type Result struct {
	// Variant is the algorithm that ran.
	Variant Variant
	// Universe is the universe the weights live on.
	Universe *Universe
	// NHat is n̂ = |J| + X, X the exact truncated discrete Laplace of
	// integer sensitivity ⌈Δ̃⌉, never below |J|: the padded DP join size,
	// an integer (held in a float64, exactly). Budget: (ε/2, δ/2) for
	// [VariantPaper], (s·ε, s·δ) for [VariantMWEM] ((s·ε, δ) with
	// [NoiseLaplace]).
	NHat float64
	// Rows is the number of synthetic rows [Result.Counts] writes, a DP
	// integer ≥ 0. [VariantPaper]: n̂. [VariantMWEM]: an unbiased estimate
	// of |J| (see [Run]), which the Weights sum to — unless RowsFloored.
	Rows int64
	// RowsFloored ([VariantMWEM]) reports that the estimate fell below its
	// own standard deviation (it carried no information about |J|) and
	// Rows was raised to that public standard deviation, so that the file
	// still carries the marginals; Rows is then biased upwards.
	RowsFloored bool
	// RowsSD ([VariantMWEM]) is the public standard deviation of the
	// estimate behind Rows (from σ₀ and the column sizes); 0 for
	// [VariantPaper], whose Rows is the padded n̂.
	RowsSD float64
	// Rounds is T, the number of rounds run.
	Rounds int
	// Eps0 is the per-step ε₀ of the [VariantPaper] rounds (0 for
	// [VariantMWEM]).
	Eps0 float64
	// Weights is the output histogram: non-negative, dense over the
	// universe (len |X|), summing to Rows up to rounding. [VariantPaper]:
	// the average of the iterates A_1..A_T. [VariantMWEM]: the final
	// iterate.
	Weights []float64
	// Measurements lists the [VariantPaper] selected queries and their
	// noisy answers (nil for [VariantMWEM], whose noisy marginals stay
	// inside the run).
	Measurements []Measurement
	// Selections lists the [VariantMWEM] measurements: the initial 1-way
	// marginals (round 0) and the marginal each round selected, with the
	// noise it was measured with (nil for [VariantPaper]). Public: the
	// selection is a DP output and the noise scale a function of the
	// annealing decisions, themselves functions of DP outputs.
	Selections []Selection
	// Signals ([VariantMWEM]) says, for every measured marginal, how much
	// of its noisy measurements the fit kept (nil for [VariantPaper]).
	Signals []Signal
	// Seeded reports that the source was seeded: the run is not private.
	Seeded bool

	// roundErr[t] is max_q |q(A_t) − q(J)| for t = 0..T−1: internal
	// diagnostics on the TRUE data for tests, never published.
	roundErr []float64
}

// Signal is what one marginal measured by [VariantMWEM] carried: Kept is
// the positive-part James–Stein factor λ ∈ [0, 1] of its combined noisy
// measurement (the share of the measured spread around the mean cell that
// the fit matches). Kept = 0 means the spread was within what noise alone
// produces, and the marginal fell back to uniform: the release carries no
// signal about it beyond its total. λ is a function of the DP measurements
// and public noise scales: post-processing.
type Signal struct {
	// Marginal names the marginal, e.g. "marginal(age,income)".
	Marginal string
	// Cells is its number of cells.
	Cells int
	// Sigma is the per-cell noise of its combined measurements, in the
	// histogram's units (public).
	Sigma float64
	// Kept is λ.
	Kept float64
}

// Selection is one marginal [VariantMWEM] measured: which, when, and with
// what noise. It holds no noisy value.
type Selection struct {
	// Round is the round, 0 for the initial 1-way marginals.
	Round int
	// Marginal names the measured marginal, e.g. "marginal(age,income)".
	Marginal string
	// Columns are its universe column positions, increasing.
	Columns []int
	// Cells is the number of cells measured.
	Cells int
	// Sigma is the discrete Gaussian σ per cell ([NoiseGaussian]), or the
	// discrete Laplace scale ([NoiseLaplace]).
	Sigma float64
	// Rho is the zCDP cost of the round (selection and measurement;
	// [NoiseGaussian]), or Epsilon its pure ε ([NoiseLaplace]); for round 0
	// each initial marginal's equal share of their joint cost.
	Rho, Epsilon float64
}

// Run releases a synthetic histogram of the join J over the universe u by
// private multiplicative weights, the algorithm of Hardt–Ligett–McSherry
// (2012) run on the join result as in Ghazi et al. (Alg. 2 and App. A).
// hist is the sparse true histogram of J (cells out of range or negative
// counts are errors; repeated cells add up); Q is the union of the
// families' queries. cfg.Variant chooses the algorithm: [VariantMWEM] (the
// default) or [VariantPaper]. Both are (ε, δ)-DP under the tuple-DP
// neighbour relation (add or remove one tuple of one private relation)
// whenever a neighbour changes J by at most cfg.Sensitivity = Δ̃ tuples.
//
// # Variant mwem (default)
//
// Practical MWEM with the engineering of AIM (McKenna, Mullins, Sheldon,
// Miklau 2022). The candidates are the distinct marginals (column sets) of
// the workload: a marginal family its own, a range or weighted family the
// marginal it is computed from (explicit [Linear] queries are kept in the
// workload but are no candidates). With s = cfg.NHatShare (default 0.05):
//
//  1. n̂ = |J| + X, X ~ dp.TruncatedDiscreteLaplace(s·ε, s·δ, ⌈Δ̃⌉): (s·ε,
//     s·δ)-DP, an integer never below |J| (App. A needs n̂ ≥ |J|). With
//     [NoiseLaplace] it gets (s·ε, δ).
//  2. The rest, ((1−s)·ε, (1−s)·δ), becomes ρ = dp.RhoForBudget of it (its
//     zCDP-to-(ε, δ) conversion, Canonne–Kamath–Steinke 2020, is at most
//     (1−s)·ε at (1−s)·δ), spent as follows (zCDP composes additively,
//     Bun–Steinke 2016 Lemma 2.3). With [NoiseLaplace], the pure
//     ε_R = (1−s)·ε is spent the same way with ε for ρ, by basic
//     composition. With T₀ the planned rounds (cfg.Rounds, or 2 per
//     candidate, at least 8) and d the number of columns, the unit cost is
//     ρ/(T₀ + 0.9·d) (Laplace: ε_R/(T₀ + 0.75·d)).
//  3. Initialisation: the 1-way marginal of every column, each cell an
//     integer count plus a discrete Gaussian. The d marginals concatenated
//     have L2 sensitivity Δ̃·√d (each of the ≤ Δ̃ changed join tuples moves
//     one count in each), so σ₀ = Δ̃·√d/√(2ρ₀) is ρ₀-zCDP (CKS Thm. 4) with
//     ρ₀ = 0.9·d·unit (Laplace: L1 sensitivity Δ̃·d, scale Δ̃·d/ε₀). A₀ is
//     the product of these noisy marginals, clamped at 0 plus a floor of
//     σ₀/100 (so that no cell starts at exactly 0) and normalised.
//  4. Round t, of cost ρ_t: select a candidate r by the exponential
//     mechanism with score ‖M_r(A) − M_r(J)‖₁ − √(2/π)·σ_t·|cells of r|
//     (the second term, AIM's bias correction, is public). A is a function
//     of past DP outputs and a neighbour moves M_r(J) by at most Δ̃ in L1,
//     so the score has sensitivity Δ̃; at ε_t = √(8·0.1·ρ_t) the mechanism
//     is ε_t-DP with bounded range, hence ε_t²/8 = 0.1·ρ_t-zCDP (Cesar–
//     Rogers 2021). Then measure ALL cells of M_r(J) at once with the
//     discrete Gaussian σ_t = Δ̃/√(2·0.9·ρ_t): L2 sensitivity Δ̃, so
//     0.9·ρ_t-zCDP. (Laplace: selection at 0.25·ε_t, every cell plus the
//     discrete Laplace of scale Δ̃/(0.75·ε_t), L1 sensitivity Δ̃.) The
//     noisy counts are integers drawn with integer arithmetic.
//  5. After every round, A is re-fitted to every measurement so far by
//     multiplicative weights (post-processing; see "Fitting"). Rounds:
//     with cfg.Rounds = T > 0, exactly T rounds of cost unit (the last
//     spends what remains, the same up to rounding), fixed before any data
//     is read. Otherwise (budget annealing, AIM Alg. 2): ρ_t starts at the
//     unit; when the selected marginal of the fitted A moved by less than
//     its expected noise √(2/π)·σ_t·|cells|, ρ_t is multiplied by 4 (σ
//     halves, ε_sel doubles; Laplace: ε_t doubles); the round whose
//     remaining budget is below 2·ρ_t, or the cfg.MaxRounds-th (default
//     [DefaultMWEMMaxRounds]), spends all that remains and is the last.
//     Each decision reads DP outputs only, and the costs never add up to
//     more than the rounds' share: the adaptive sequence is a privacy
//     filter, and a ρ-zCDP (or pure ε-DP) filter composes to its bound
//     even when the costs are chosen adaptively (Rogers–Roth–Ullman–
//     Vadhan 2016 for pure DP; Feldman–Zrnic 2021 and Whitehouse et al.
//     2023 for Rényi DP and so zCDP). So the rounds and the initialisation
//     are ρ-zCDP, which is ((1−s)·ε, (1−s)·δ)-DP; basic composition with
//     n̂ gives (ε, δ).
//  6. Rows: the noisy total of every initial marginal is |J| plus
//     zero-mean noise of variance |cells_c|·σ₀²; their inverse-variance
//     combination, with weights ∝ 1/|cells_c| fixed before any data is
//     read, is an unbiased estimate of |J|, turned into an integer by
//     unbiased stochastic rounding (one uniform from src) after clamping
//     at 0: [Result.Rows]. (The rounds' totals are left out: their
//     weights would depend on the adaptive σ_t, which depend on earlier
//     noise, and break exact unbiasedness.) The output weights are the
//     final A scaled to sum to Rows. Post-processing.
//
// Published: n̂, Rows and the number of rounds T, all integers
// (DESIGN.md §3, invariants 5 and 6), and [Result.Selections] (the
// selected marginals and their noise scales, functions of DP outputs).
// The noisy marginals never leave the run. The selection is
// [dp.ExponentialGrid], the exponential mechanism sampled exactly on a
// public score grid (ε_t-DP and ε_t-bounded range given the scores' float
// error bound, see mwem.round).
//
// Fitting. The loss is the Gaussian negative log-likelihood of the
// measurements, L(A) = Σ_r prec_r·‖M_r(A) − ȳ_r‖² (ȳ_r the
// inverse-variance mean of r's measurements, prec_r their per-cell
// precision). A sweep multiplies A(x) by exp(α·Σ_r β_r·ln((max(ȳ_r, 0)+κ_r)/
// (M_r(A)+κ_r)) at x's cell of r) — IPF-like log-ratios, regularised by
// the noise scale κ_r = prec_r^(−1/2), damped by β_r = 1/(the largest
// number of measured marginals sharing a column of r) — with a
// backtracking line search on L (α halves until L does not rise); the fit
// stops when a sweep gains less than 0.01 per measured cell, after 6
// sweeps per round and 40 at the end. The output is the final iterate,
// not the average of the iterates: on Adult (3 seeds, ε = 0.5 / 1 / 4)
// the mean TVD of the workload's 1- and 2-way marginals is 0.0059 /
// 0.0031 / 0.0008 for the final iterate against 0.0117 / 0.0087 / 0.0074
// for the average of the iterates after each round
// (TestMWEMFinalVersusAverage): the early iterates, fitted to few
// measurements, only dilute the last.
//
// Cost (mwem): every sweep is ONE pass over the dense weights that
// multiplies each cell by its factors and, in the same pass, accumulates
// every marginal of the new weights (scaleKernel in pass.go); the weights
// are stored in an internal column order that makes most marginals cost
// per subtree of a loop nest instead of per cell, and put back in the
// universe's order at the end (one more pass). Memory: 8 bytes a cell
// for the weights, 8 more for the reordered copy at the end, plus small
// tables.
//
// # Variant paper
//
// PMW_{ε,δ,Δ̃}(J, Q, T) of DESIGN.md §4, as Ghazi et al. state it (Thm.
// A.1), for any number of queries, each with values in [−1, 1]:
//
//   - n̂ = |J| + X with X ~ dp.TruncatedDiscreteLaplace(ε/2, δ/2, ⌈Δ̃⌉)
//     (the integer TLap) is (ε/2, δ/2)-DP (|J| is an integer of
//     sensitivity ≤ Δ̃) and never below |J|; it is an integer drawn with
//     integer arithmetic, so it may be published (DESIGN.md §3, inv. 6);
//   - conditioned on n̂, each of the T rounds selects q_t by the
//     exponential mechanism with score |q(A_{t−1}) − q(J)| (sensitivity Δ̃)
//     and measures m_t = q_t(J) + Lap(Δ̃/ε₀): 2T ε₀-DP steps, with ε₀ =
//     dp.PerStepEpsilon(ε/2, δ/2, 2T) (the better of basic and advanced
//     composition), together (ε/2, δ/2)-DP;
//   - basic composition of the two halves gives (ε, δ).
//
// Everything after the measurements — the multiplicative updates
// A_t(x) ∝ A_{t−1}(x)·exp(q_t(x)·(m_t − q_t(A_{t−1}))/(2n̂)) rescaled to
// total n̂, the re-application of past measurements (cfg.Reapply), the
// clamping of m_t to [−n̂, n̂] for the update (which keeps the exponent in
// [−1, 1] as the utility proof assumes), and the averaging of A_1..A_T — is
// post-processing. Utility (App. A): with probability 1 − 1/poly(|Q|) every
// query is answered within O(n̂·√(log|X|/T) + Δ̃·√T·log|Q|·√log(1/δ)/ε).
// Rows = n̂.
//
// Exact noise (DESIGN.md §3, invariant 6): the selection is
// [dp.ExponentialGrid] — the exponential mechanism on the scores snapped
// to a public grid of at most Δ̃/1024, sampled exactly, ε₀-DP given the
// scores' float error bound (engine.initNoise) — and the measurement is
// the true answer rounded to a public grid γ ≤ max(Δ̃/1024, …) plus the
// exact discrete Laplace of K = ⌈Δ̃/γ⌉ + 1 steps over ε₀ (engine.measure
// proves it ε₀-DP). Each is an ε₀-DP step as in the paper, at a noise
// scale within 0.2% of its Δ̃/ε₀, so the composition above is unchanged.
//
// Cost (paper): memory 16 bytes per cell (float64 weights and running
// average) plus per-worker marginal tables. Time per round: O(|Q|) for the
// scores and the selection, a pass over the selected query's support for
// the update, and the answers: one fused pass over the dense array for all
// marginal-like families (O(|X|·#tables), not O(|X|·|Q|)) — or, when the
// updated support is at most |X|/8 cells, the tables are patched by two
// passes over that support instead (a full pass still runs every 16
// rounds to bound rounding drift). The average of the iterates is kept
// lazily on the updated cells only and finished by one pass at the end.
//
// # Both
//
// When cfg.Ledger is set, Run checks that (ε, δ) remain and charges the
// whole split before reading hist (a refused run charges nothing), then
// publishes n̂ (and, for mwem, the rows and T; for paper with automatic T,
// T). Before that, [CheckMemory] — the count a release makes before any
// data is read — refuses a need above the universe's cap with
// [ErrTooLarge]. ctx is checked between rounds.
func Run(ctx context.Context, src dp.Source, u *Universe, fams []Family, hist []Cell, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MeasureTruth != nil {
		return nil, fmt.Errorf("%w: MeasureTruth needs the factored model (RunFactored)", ErrInvalidConfig)
	}
	// The one memory count (the one a release checks up front): refused
	// before anything is allocated or hist is read.
	if _, err := CheckMemory(u, fams, cfg); err != nil {
		return nil, err
	}
	if cfg.variant() == VariantMWEM {
		return runMWEM(ctx, src, u, fams, hist, cfg)
	}
	e, err := newEngine(src, u, fams, cfg)
	if err != nil {
		return nil, err
	}
	if err := chargeThenInit(cfg.Ledger, e.charge, func() error { return e.init(hist) }, &e.nhat); err != nil {
		return nil, err
	}
	if cfg.Ledger != nil && cfg.autoRounds() {
		cfg.Ledger.Publish("pmw_rounds", float64(e.rounds))
	}
	for t := 0; t < e.rounds; t++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("pmw: stopped before round %d: %w", t+1, err)
		}
		e.round()
		if cfg.Progress != nil {
			cfg.Progress(t+1, e.rounds)
		}
	}
	return e.result(), nil
}

// chargeThenInit is the privacy-critical opening of both variants: when l
// is set, charge the whole split (refused before any charge if it does not
// remain) before init reads the private histogram, then publish n̂, which
// init sets through nhat (nil: no n̂ to publish).
func chargeThenInit(l *dp.Ledger, charge func(*dp.Ledger) error, init func() error, nhat *float64) error {
	if l != nil {
		if err := charge(l); err != nil {
			return err
		}
	}
	if err := init(); err != nil {
		return err
	}
	if l != nil && nhat != nil {
		l.Publish("n_hat", *nhat)
	}
	return nil
}

// totalCap is the public bound at which the true histogram total
// saturates: one more than 2⁵³, the largest n̂ a run accepts, so that a
// total beyond 2⁵³ always gives an n̂ beyond it (the truncated Laplace pad
// is ≥ 0), and a total of at most 2⁵³ is kept exactly.
const totalCap = 1<<53 + 1

// addTotal returns min(n + c, totalCap) for 0 ≤ n ≤ totalCap and c ≥ 0,
// without overflow: the running histogram total, saturated. Saturation at
// a public cap is 1-Lipschitz, so the count keeps its sensitivity.
func addTotal(n, c int64) int64 {
	if c >= totalCap-n {
		return totalCap
	}
	return n + c
}

// padTotal returns n̂ = n + pad (pad from the truncated Laplace; n itself
// when exact, the testExactN knob), n the saturated true total, and
// refuses an n̂ beyond 2⁵³ with an error that names n̂ only: after the
// charge, nothing but the DP output n̂ decides or is printed. n̂ is held
// at math.MaxInt64 should n + pad overflow (post-processing of the exact
// n + pad).
func padTotal(n int64, noise *dp.TruncatedDiscreteLaplace, src dp.Source, exact bool) (int64, error) {
	nhat := n
	if !exact {
		pad := noise.Sample(src)
		if pad > math.MaxInt64-n {
			nhat = math.MaxInt64
		} else {
			nhat = n + pad
		}
	}
	if nhat > 1<<53 {
		return 0, fmt.Errorf("%w: n̂ = %d is beyond 2⁵³", ErrInvalidInput, nhat)
	}
	return nhat, nil
}

// engine is the state of one PMW run.
//
// Weights are kept unnormalised: A_t = n̂·w/Z with Z = Σ w, so an update
// rescales nothing outside the query's support. The average of the
// iterates is kept lazily: with R_t = Σ_{s ≤ t} 1/Z_s, the invariant
//
//	V_t(x) := Σ_{s ≤ t} w_s(x)/Z_s = S(x) + w_t(x)·R_t
//
// holds if every change of w(x) during round t adds (w_old − w_new)·R_{t−1}
// to S(x): untouched cells need no work. The output average is
// (n̂/T)·V_T(x).
type engine struct {
	src    dp.Source
	u      *Universe
	fams   []Queries
	cfg    Config
	rounds int
	eps0   float64
	// nhatNoise pads |J| into n̂.
	nhatNoise *dp.TruncatedDiscreteLaplace

	plan    *passPlan
	projOf  []int // per family: projection index in plan, −1 for none
	scratch [][]float64
	famOff  []int // famOff[f] = first concatenated query index of family f
	nq      int

	fresh      bool // scratch[0] holds the tables of the current w
	sinceFull  int  // rounds since the last full pass
	base, step []int

	truth, ans, scores []float64
	w, s               []float64
	// Exact noise of the rounds, set in init once n̂ and ε₀ are known
	// (see measure and select): the measurement grid γ, its discrete
	// Laplace sampler, and the float error bounds of the truths and the
	// scores.
	measGrid           float64
	measNoise          *dp.DiscreteLaplaceSampler
	truthErr, scoreErr float64
	z, r               float64
	nhat               float64
	meas               []Measurement
	roundErr           []float64
}

// bindRun validates the arguments both variants share and binds every
// family to u, refusing nil and empty families.
func bindRun(src dp.Source, u *Universe, fams []Family, cfg Config) ([]Queries, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, fmt.Errorf("%w: nil randomness source", ErrInvalidInput)
	}
	if u == nil {
		return nil, fmt.Errorf("%w: nil universe", ErrInvalidInput)
	}
	if len(fams) == 0 {
		return nil, fmt.Errorf("%w: no query families", ErrInvalidInput)
	}
	out := make([]Queries, len(fams))
	for i, ff := range fams {
		if ff == nil {
			return nil, fmt.Errorf("%w: family %d is nil", ErrInvalidInput, i)
		}
		f, err := ff.Bind(u)
		if err != nil {
			return nil, fmt.Errorf("pmw: family %d: %w", i, err)
		}
		if f.Len() == 0 {
			return nil, fmt.Errorf("%w: family %d (%s) has no queries", ErrInvalidInput, i, f.Name())
		}
		out[i] = f
	}
	return out, nil
}

func newEngine(src dp.Source, u *Universe, fams []Family, cfg Config) (*engine, error) {
	bound, err := bindRun(src, u, fams, cfg)
	if err != nil {
		return nil, err
	}
	e := &engine{src: src, u: u, cfg: cfg, rounds: cfg.rounds(), projOf: make([]int, len(fams)), fams: bound}
	var projs []*projection
	byKey := map[string]int{}
	for i, f := range bound {
		e.famOff = append(e.famOff, e.nq)
		e.nq += f.Len()
		e.projOf[i] = -1
		if p := f.proj(); p != nil {
			k := p.key()
			j, ok := byKey[k]
			if !ok {
				j = len(projs)
				byKey[k] = j
				projs = append(projs, p)
			}
			e.projOf[i] = j
		}
	}
	e.plan = newPassPlan(u, projs)
	workers := cfg.workers()
	// Memory is checked by Run (CheckMemory) before newEngine is called.
	e.scratch = make([][]float64, workers)
	for i := range e.scratch {
		e.scratch[i] = make([]float64, e.plan.tableLen)
	}
	eps, delta := cfg.Epsilon/2, cfg.Delta/2
	// |J| is an integer of sensitivity Δ̃, hence of integer sensitivity
	// ⌈Δ̃⌉: the exact integer TLap pads it, so n̂ is an integer drawn with
	// integer arithmetic (DESIGN.md §3, invariant 6).
	if e.nhatNoise, err = dp.CachedTruncatedDiscreteLaplace(eps, delta, int64(math.Ceil(cfg.Sensitivity))); err != nil {
		return nil, fmt.Errorf("pmw: n̂: %w", err)
	}
	if cfg.autoRounds() {
		// T and ε₀ are set in init, once n̂ is known.
		return e, nil
	}
	if e.eps0, err = dp.PerStepEpsilon(eps, delta, 2*e.rounds); err != nil {
		return nil, fmt.Errorf("pmw: rounds: %w", err)
	}
	return e, nil
}

// charge records the budget split in the ledger, refusing before any
// charge when (ε, δ) do not remain.
func (e *engine) charge(l *dp.Ledger) error {
	rem := l.Remaining()
	if rem.Epsilon < e.cfg.Epsilon*(1-1e-12) || rem.Delta < e.cfg.Delta*(1-1e-12) {
		return fmt.Errorf("pmw: %w: needs (ε=%g, δ=%g) but (ε=%g, δ=%g) remain",
			dp.ErrBudgetExceeded, e.cfg.Epsilon, e.cfg.Delta, rem.Epsilon, rem.Delta)
	}
	half := dp.Budget{Epsilon: e.cfg.Epsilon / 2, Delta: e.cfg.Delta / 2}
	details := func(extra map[string]any) map[string]any {
		d := map[string]any{"T": e.rounds, "eps0": e.eps0, "sensitivity": e.cfg.Sensitivity}
		if e.cfg.autoRounds() {
			// T and ε₀ are chosen after n̂ is drawn: the charge states the
			// cap and the rule; T is published as pmw_rounds and ε₀ is
			// dp.PerStepEpsilon(ε/2, δ/2, 2T) (the release reports it).
			d = map[string]any{"T_max": e.cfg.MaxRounds, "T_rule": "Ghazi et al. App. A from the DP n̂ (published as pmw_rounds)",
				"eps0_rule": "dp.PerStepEpsilon(ε/2, δ/2, 2T)", "sensitivity": e.cfg.Sensitivity}
		}
		for k, v := range extra {
			d[k] = v
		}
		return d
	}
	roundsRule := fmt.Sprintf("%d ε₀-DP steps (selection and measurement in each of T = %d rounds), ε₀ = %g from "+
		"the better of basic and advanced composition to (ε/2, δ/2) (dp.PerStepEpsilon); "+
		"conditioned on n̂ (Ghazi et al. App. A)", 2*e.rounds, e.rounds, e.eps0)
	if e.cfg.autoRounds() {
		roundsRule = "2T ε₀-DP steps (selection and measurement in each of T rounds), T chosen from the DP n̂ by " +
			"Ghazi et al. App. A's rule and ε₀ from the better of basic and advanced composition to (ε/2, δ/2) " +
			"(dp.PerStepEpsilon); conditioned on n̂ (Ghazi et al. App. A)"
	}
	if err := l.Charge("pmw: noisy join size n̂ (truncated Laplace)", half,
		fmt.Sprintf("truncated discrete Laplace (exact, integer) on {0, …, 2τ′}, τ′ = %d, scale ⌈Δ̃⌉/(ε/2), on the integer |J| "+
			"of sensitivity ⌈Δ̃⌉; (ε/2, δ/2)-DP (dp.TruncatedDiscreteLaplace); basic composition with the rounds "+
			"(Ghazi et al. App. A)", e.nhatNoise.Tau()),
		details(map[string]any{"tau": e.nhatNoise.Tau()})); err != nil {
		return fmt.Errorf("pmw: %w", err)
	}
	if err := l.Charge("pmw: rounds (exponential mechanism + Laplace measurement)", half, roundsRule,
		details(map[string]any{"queries": e.nq})); err != nil {
		return fmt.Errorf("pmw: %w", err)
	}
	return nil
}

// init reads the true histogram, draws n̂ and sets A_0 uniform.
func (e *engine) init(hist []Cell) error {
	u := e.u
	e.truth = make([]float64, e.nq)
	trueTab := make([]float64, e.plan.tableLen)
	var sparse map[int64]float64
	needSparse := false
	for i := range e.fams {
		needSparse = needSparse || e.projOf[i] < 0
	}
	if needSparse {
		sparse = make(map[int64]float64, len(hist))
	}
	var n int64
	d := make([]int, len(u.sizes))
	for _, h := range hist {
		if h.Index < 0 || h.Index >= u.size {
			return fmt.Errorf("%w: histogram cell %d outside the universe [0, %d)", ErrInvalidInput, h.Index, u.size)
		}
		if h.Count < 0 {
			return fmt.Errorf("%w: histogram cell %d has negative count %d", ErrInvalidInput, h.Index, h.Count)
		}
		if h.Count == 0 {
			continue
		}
		n = addTotal(n, h.Count)
		c := float64(h.Count)
		u.Decode(h.Index, d)
		for p, pr := range e.plan.projs {
			trueTab[e.plan.tableOff[p]+pr.index(d)] += c
		}
		if sparse != nil {
			sparse[h.Index] += c
		}
	}
	for i, f := range e.fams {
		out := e.truth[e.famOff[i] : e.famOff[i]+f.Len()]
		if p := e.projOf[i]; p >= 0 {
			f.finish(trueTab[e.plan.tableOff[p]:e.plan.tableOff[p]+e.plan.projs[p].size], out)
		} else {
			f.directSparse(sparse, out)
		}
	}
	// n is the true total saturated at totalCap; only n̂ decides and is
	// printed.
	n, err := padTotal(n, e.nhatNoise, e.src, e.cfg.testExactN)
	if err != nil {
		return err
	}
	e.nhat = float64(n) // an integer ≤ 2⁵³: exact in float64
	if e.cfg.testNHat > 0 {
		e.nhat = e.cfg.testNHat
	}
	if e.cfg.autoRounds() {
		e.rounds = AutoRounds(e.nhat, e.cfg.Epsilon/2, e.cfg.Delta/2, e.cfg.Sensitivity, u.size, e.nq, e.cfg.MaxRounds)
		var err error
		if e.eps0, err = dp.PerStepEpsilon(e.cfg.Epsilon/2, e.cfg.Delta/2, 2*e.rounds); err != nil {
			return fmt.Errorf("pmw: rounds: %w", err)
		}
	}
	if err := e.initNoise(); err != nil {
		return err
	}
	e.ans = make([]float64, e.nq)
	e.scores = make([]float64, e.nq)
	e.w = make([]float64, u.size)
	for i := range e.w {
		e.w[i] = 1
	}
	e.s = make([]float64, u.size)
	e.z = float64(u.size)
	return nil
}

// refreshEvery bounds the rounds between two full passes while the
// tables are kept incrementally, so float rounding in the deltas cannot
// accumulate.
const refreshEvery = 16

// incrementalShare: an update of a support of at most |X|/incrementalShare
// cells patches the tables (two passes over the support) instead of
// leaving them to the next full pass.
const incrementalShare = 8

// answers fills e.ans with q(w) for every query. The marginal tables come
// from one fused pass over w (which also refreshes Z = Σ w exactly) unless
// they were kept up to date incrementally by the last updates.
func (e *engine) answers() {
	if !e.fresh || e.sinceFull >= refreshEvery {
		e.z = e.plan.run(e.w, e.scratch)
		e.fresh, e.sinceFull = true, 0
	}
	e.sinceFull++
	tab := e.scratch[0]
	for i, f := range e.fams {
		out := e.ans[e.famOff[i] : e.famOff[i]+f.Len()]
		if p := e.projOf[i]; p >= 0 {
			f.finish(tab[e.plan.tableOff[p]:e.plan.tableOff[p]+e.plan.projs[p].size], out)
		} else {
			f.direct(e.w, out)
		}
	}
}

// round runs one PMW round: answer, select, measure, update.
func (e *engine) round() {
	e.answers()
	scale := e.nhat / e.z
	maxErr := 0.0
	for i, a := range e.ans {
		s := math.Abs(scale*a - e.truth[i])
		e.scores[i] = s
		maxErr = math.Max(maxErr, s)
	}
	e.roundErr = append(e.roundErr, maxErr)
	selSens := e.cfg.Sensitivity
	if e.cfg.testSelSens1 {
		selSens = 1 // mutation knob: wrong selection sensitivity
	}
	var qi int
	var m float64
	if e.cfg.testNoiseless {
		for i, s := range e.scores {
			if s > e.scores[qi] {
				qi = i
			}
		}
		m = e.truth[qi]
	} else {
		qi = dp.ExponentialGrid(e.src, e.scores, e.eps0, selSens, e.scoreErr)
		m = e.measure(e.truth[qi])
	}
	fi := sort.Search(len(e.famOff), func(k int) bool { return e.famOff[k] > qi }) - 1
	e.meas = append(e.meas, Measurement{Round: len(e.meas) + 1, Family: fi, Query: qi - e.famOff[fi],
		Describe: e.fams[fi].Describe(qi - e.famOff[fi]), Value: m})
	if e.cfg.Reapply {
		for _, mt := range e.meas {
			f := e.fams[mt.Family]
			e.apply(f, mt.Query, mt.Value, e.nhat/e.z*f.sum(e.w, mt.Query))
		}
	} else {
		e.apply(e.fams[fi], qi-e.famOff[fi], m, scale*e.ans[qi])
	}
	e.r += 1 / e.z
	e.renormalise()
}

// unitRoundoff is u = 2⁻⁵³, the relative error of one float64 operation.
const unitRoundoff = 0x1p-53

// initNoise sets the exact noise of the rounds from public values (the
// universe, the families' kinds, Δ̃, ε₀ and the DP n̂):
//
//   - truthErr bounds the float error of every computed true answer q(J).
//     Marginal and range answers are sums of integer counts below 2⁵³:
//     exact. A weighted or linear answer is the recursive sum of its own
//     query's m products weight·count only (a weighted query's table
//     entries, one per cell of the weight columns outside cols: m =
//     p.size/pc.size; a linear query's m = len(Terms)), each count an
//     exact integer, |weight| ≤ 1, and its counts over disjoint cells, so
//     Σ|weight·count| ≤ |J| ≤ n̂ (n̂ pads |J| upwards). The dot-product
//     bound (Higham 2002 §3.1, eq. 3.5) gives error ≤ γ_m·n̂, γ_m =
//     m·u/(1 − m·u) ≤ (m + 1)·u when m(m + 1)·u ≤ 1 (m ≤ 9·10⁷; above it
//     γ_m ≤ 2m·u, m·u ≤ ½). With M the largest m over the weighted and
//     linear families — public: the universe's shape and the queries —
//     truthErr = (M + 1)·u·n̂ (or 2M·u·n̂); it does not grow with |X|.
//   - scoreErr bounds the error of every computed score |c − q(J)|, where
//     c = (n̂/Z)·q(A) is computed identically on neighbours (A is a
//     function of DP outputs): truthErr plus the rounding of the
//     subtraction, u·(|c| + |q(J)|) ≤ u·(2n̂ + n̂ + truthErr) — |q(A)|
//     ≤ n̂ up to rounding, bounded by 2n̂.
//   - The measurement grid γ = [dp.ExpGrid](Δ̃, max(truthErr, n̂·2⁻⁴³)): a
//     power of two ≥ Δ̃/1024 and ≥ 8·truthErr (and ≥ n̂·2⁻⁴⁰, so that
//     q(J)/γ stays below 2⁴²), with K = ⌈Δ̃/γ⌉ + 1 grid steps of
//     sensitivity ([dp.ExpGridSensitivity]) and the exact discrete Laplace
//     of scale K/ε₀ (see measure).
func (e *engine) initNoise() error {
	if e.rounds == 0 {
		return nil
	}
	if m := maxTerms(e.fams); m > 0 {
		g := float64(m+1) * unitRoundoff
		if float64(m)*float64(m+1) > 1/unitRoundoff {
			g = 2 * float64(m) * unitRoundoff
		}
		e.truthErr = g * e.nhat
	}
	e.scoreErr = e.truthErr + unitRoundoff*(3*e.nhat+e.truthErr)
	sens := e.cfg.Sensitivity
	if e.cfg.testMeasSens1 {
		sens = 1 // mutation knob: wrong measurement sensitivity
	}
	e.measGrid = dp.ExpGrid(sens, max(e.truthErr, e.nhat*0x1p-43))
	k := dp.ExpGridSensitivity(sens, e.measGrid)
	var err error
	// A scale below the sampler's smallest is raised (more noise is still
	// private); one above its largest (ε₀ < 10⁻⁹) is an error that depends
	// on public values and n̂ only.
	// b = K/ε₀ rounded up where the quotient rounds down
	// ([dp.NoiseScale]), so that K/b ≤ ε₀ in exact arithmetic.
	if e.measNoise, err = dp.NewDiscreteLaplace(max(dp.NoiseScale(float64(k), e.eps0), dp.MinDiscreteScale)); err != nil {
		return fmt.Errorf("pmw: measurement noise for ε₀ = %g: %w", e.eps0, err)
	}
	return nil
}

// maxTerms returns the largest number of products weight·count in one
// computed true answer of a weighted or linear family (0 when every family
// sums integer counts only); see [engine.initNoise].
func maxTerms(fams []Queries) int64 {
	var m int64
	for _, f := range fams {
		switch q := f.(type) {
		case *weightedQ:
			m = max(m, int64(q.p.size/q.pc.size))
		case *linearQ:
			for _, lq := range q.qs {
				m = max(m, int64(len(lq.Terms)))
			}
		}
	}
	return m
}

// measure returns the noisy answer m_t of a query whose computed true
// answer is truth: m_t = γ·(round(truth/γ) + Z), Z ~ Lap_ℤ(K/ε₀) exact
// (CKS 2020 Alg. 2), in place of the paper's q_t(J) + Lap(Δ̃/ε₀).
//
// Proof of ε₀-DP. A neighbour moves q(J) by at most Δ̃ and each computed
// value is within truthErr ≤ γ/8 of the exact one, so the computed values
// differ by at most Δ̃ + γ/4; |round(x) − round(y)| ≤ ⌊|x − y|⌋ + 1 and
// ⌊Δ̃/γ + 1/4⌋ ≤ ⌈Δ̃/γ⌉, so the integer round(truth/γ) has sensitivity
// K = ⌈Δ̃/γ⌉ + 1, and adding Lap_ℤ(K/ε₀) is ε₀-DP (the geometric
// mechanism). The result is the DP integer round(truth/γ) + Z, formed
// exactly, times the public power of two γ: rounded once to float64, a
// function of that integer alone, so no float from a continuous sampler
// enters the run (DESIGN.md §3, invariant 6). In q's units the noise
// scale is γK/ε₀ ≤ (Δ̃ + 2γ)/ε₀, within 0.2% of the paper's Δ̃/ε₀ when
// γ ≤ Δ̃/1024 — the usual case; γ is coarser only when 8·truthErr or
// n̂·2⁻⁴⁰ exceeds Δ̃/1024, i.e. (M + 1)·n̂ > Δ̃·2⁴⁰ (M of initNoise) or
// n̂ > Δ̃·2³⁰, and then the scale is at most (Δ̃ + 2γ)/ε₀.
func (e *engine) measure(truth float64) float64 {
	k := big.NewInt(int64(math.Round(truth / e.measGrid)))
	k.Add(k, big.NewInt(e.measNoise.Sample(e.src)))
	m, _ := new(big.Float).SetInt(k).Float64()
	return m * e.measGrid
}

// apply does one multiplicative update with measurement m of query i of f,
// whose answer on the current A is cur.
func (e *engine) apply(f Queries, i int, m, cur float64) {
	if !(e.nhat > 0) {
		return // n̂ = 0: A is identically 0, nothing to update
	}
	m = math.Max(-e.nhat, math.Min(e.nhat, m))
	eta := (m - cur) / (2 * e.nhat)
	if eta == 0 {
		return
	}
	incr := e.fresh && len(e.plan.projs) > 0 && f.supportSize(i) <= e.u.size/incrementalShare
	if incr {
		e.patch(f, i, -1)
	} else {
		e.fresh = false
	}
	e.z += f.update(e.w, e.s, i, eta, e.r)
	if incr {
		e.patch(f, i, 1)
	}
}

// patch adds sign·w(x) into every projection table for the cells x of
// q_i's support: called with −1 before and +1 after an update, it keeps
// the tables equal to those of the current w at the cost of two passes
// over the support instead of one over the universe.
func (e *engine) patch(f Queries, i int, sign float64) {
	pl := e.plan
	tab := e.scratch[0]
	if e.base == nil {
		e.base, e.step = make([]int, len(pl.projs)), make([]int, len(pl.projs))
	}
	base, step, w := e.base, e.step, e.w
	f.runs(i, func(start, stride int64, n int, d []int, col int) {
		for p, pr := range pl.projs {
			base[p] = pl.tableOff[p] + pr.index(d)
			step[p] = pr.stride[col]
		}
		for p, b := range base {
			st := step[p]
			x := start
			for k := 0; k < n; k++ {
				tab[b] += sign * w[x]
				b += st
				x += stride
			}
		}
	})
}

// renormalise rescales w when Z drifts far from |X| (possible only after
// many re-applied updates), keeping V = S + w·R unchanged.
func (e *engine) renormalise() {
	ratio := e.z / float64(e.u.size)
	if ratio > 1e-100 && ratio < 1e100 {
		return
	}
	c := 1 / ratio
	for i := range e.w {
		e.w[i] *= c
	}
	e.z *= c
	e.r /= c
	e.fresh = false // the cached tables hold the old scale
}

// result finishes the average (n̂/T)·(S + w·R) into S and returns it.
func (e *engine) result() *Result {
	k := e.nhat / float64(len(e.meas))
	if len(e.meas) == 0 {
		k = 0
	}
	r := e.r
	w, s := e.w, e.s
	parallelChunks(len(s), e.cfg.workers(), func(lo, hi int) {
		ss, ww := s[lo:hi], w[lo:hi]
		for i := range ss {
			v := k * (ss[i] + ww[i]*r)
			if v < 0 {
				v = 0 // cancellation can leave −ε where V is mathematically ≥ 0
			}
			ss[i] = v
		}
	})
	e.w = nil
	return &Result{Variant: VariantPaper, Universe: e.u, NHat: e.nhat, Rows: int64(e.nhat), Rounds: len(e.meas), Eps0: e.eps0, Weights: s,
		Measurements: e.meas, Seeded: e.src.Seeded(), roundErr: e.roundErr}
}

// parallelChunks runs fn over [0, n) split into contiguous chunks.
func parallelChunks(n, workers int, fn func(lo, hi int)) {
	if n < parallelCells || workers <= 1 {
		fn(0, n)
		return
	}
	done := make(chan struct{}, workers)
	for k := 0; k < workers; k++ {
		lo, hi := n*k/workers, n*(k+1)/workers
		go func() {
			fn(lo, hi)
			done <- struct{}{}
		}()
	}
	for k := 0; k < workers; k++ {
		<-done
	}
}
