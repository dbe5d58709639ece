package pmw

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/synth-dp/synth/dp"
)

// DefaultFactoredCells is the largest junction tree (in clique cells) the
// factored model grows to: 2²¹ cells, 16 MiB of beliefs. The cap a round
// may use grows with the budget spent (AIM): (spent/total)·cap.
const DefaultFactoredCells = 1 << 21

// ErrNotMarginal is returned by [RunFactored] for a workload family that is
// not a marginal, a range or a weighted family (explicit linear queries
// need the dense model).
var ErrNotMarginal = errors.New("pmw: the factored model answers marginal, range and weighted families only")

// Truth returns the true (or, for a privacy-unit release, bounded)
// marginal of the data over the sorted universe columns cols: integer
// counts in mixed radix (the first column most significant). Every value
// must be ≥ 0 and the total below 2⁵³.
type Truth func(ctx context.Context, cols []int) ([]int64, error)

// FamilyColumns returns the universe columns a family's queries depend on
// (sorted), or false for explicit linear queries.
func FamilyColumns(f Family) ([]int, bool) {
	var cols []int
	switch f := f.(type) {
	case *MarginalFamily:
		cols = slices.Clone(f.cols)
	case *RangeFamily:
		cols = append(slices.Clone(f.by), f.col)
	case *WeightedFamily:
		cols = slices.Clone(f.cols)
	default:
		return nil, false
	}
	slices.Sort(cols)
	return slices.Compact(cols), true
}

// FactoredCandidates returns the column sets the factored run may measure,
// public and fixed before any data is read: every 1-way set, and every
// non-empty subset of every workload family's columns, in order of first
// appearance; with weights w_r = Σ_W |r ∩ W| over the workload's sets W
// (AIM's weighting).
func FactoredCandidates(d int, fams []Family) (sets [][]int, weights []float64, err error) {
	var work [][]int
	for _, f := range fams {
		cols, ok := FamilyColumns(f)
		if !ok {
			return nil, nil, ErrNotMarginal
		}
		for _, c := range cols {
			if c < 0 || c >= d {
				return nil, nil, fmt.Errorf("%w: column %d outside 0..%d", ErrInvalidInput, c, d-1)
			}
		}
		work = append(work, cols)
	}
	seen := map[string]bool{}
	add := func(s []int) {
		k := fmt.Sprint(s)
		if !seen[k] {
			seen[k] = true
			sets = append(sets, s)
		}
	}
	for c := range d {
		add([]int{c})
	}
	for _, w := range work {
		if len(w) > 16 {
			return nil, nil, fmt.Errorf("%w: a workload family over %d columns", ErrInvalidInput, len(w))
		}
		for mask := 1; mask < 1<<len(w); mask++ {
			var s []int
			for i, c := range w {
				if mask&(1<<i) != 0 {
					s = append(s, c)
				}
			}
			add(s)
		}
	}
	for _, s := range sets {
		var wt float64
		for _, w := range work {
			wt += float64(len(intersect(s, w)))
		}
		weights = append(weights, math.Max(wt, 1))
	}
	return sets, weights, nil
}

// factored is the state of one factored run.
type factored struct {
	src     dp.Source
	names   []string
	sizes   []int
	cfg     Config
	sets    [][]int
	weights []float64
	truth   [][]int64       // per candidate set (private)
	mtruth  map[int][]int64 // MeasureTruth's tables, by candidate, read when first measured (private)
	ctx     context.Context // for MeasureTruth's reads during the rounds
	wmax    float64
	maxCell int64

	total, unit, initCost, roundsBudget, used, cost float64
	t0, maxRounds                                   int
	fixed                                           bool

	model    *graphical
	meas     map[string]*mwemMeas // by set key
	measSet  map[string][]int
	order    []string // measured set keys, in order
	n        float64  // model total (rows)
	nEst     float64
	nSD      float64
	nInit    float64   // n̂ after the init's first 1-way measurement
	shares   []float64 // InitShares(sizes), without Config.Own
	fewRows  bool      // nInit < poolRatio·σ₀ (see init)
	again    bool      // poolRatio·σ₀ ≤ nInit < againRatio·σ₀: the 1-ways measured again (see init)
	whole    bool      // the workload measured once instead of rounds (see measureWorkload)
	floored  bool
	t        int
	done     bool
	sels     []Selection
	eta      float64
	measured int
}

// poolRatio: when the 1-way marginals' DP total n̂ is below poolRatio
// times their per-cell noise σ₀ (fewer than three cells of any 1-way
// marginal can then hold 3σ₀ rows), each 1-way estimate pools the cells
// below 3σ into their mean ([mwemMeas.poolCells]) instead of taking the
// shrinkage or the noisy table. Measured (docs/small-data.md, 10 seeds):
// Retail with 100 customers at ε = 1 (n̂/σ₀ ≈ 4.6; its country marginal
// has 90% of its rows in one of 38 cells) 0.449 → 0.401; the Adult and Bank subsamples (n̂/σ₀ ≥ 9.9 at 500 rows and ε =
// 0.5) and the large examples (≥ 24) do not reach it. Pooled always, the
// 500-row tables lost up to 12%. The choice reads n̂ and σ₀ only (a DP
// output and a public scale): post-processing. n̂ ≤ 0 (nothing measurable)
// leaves the shrinkage alone.
const poolRatio = 8

// fewRowsRemeasure is the share of the rounds' budget that measures every
// 1-way marginal again, right after the init, when the init found few rows
// (n̂ < poolRatio·σ₀); the rounds run on the rest. Where the 1-ways' own
// total is below 8σ₀ no 2-way cell can carry signal, and the 1-ways carry
// what there is only if their large cells clear the pooling line: with
// the init's noise a 38-cell country marginal with 88 of its 100 units
// in one cell (Retail with 100 customers at ε = 1, σ₀ ≈ 30) kept that
// cell in about half of the runs. Measured (docs/small-data.md, 40 seeds,
// with the sequential pooling line): Retail with 100 customers at ε = 1
// 0.377 (none) / 0.336 (0.6) / 0.314 (0.75) / 0.318 (0.9). The decision
// reads n̂ and σ₀ only (a DP output and a public scale), and the budget
// comes out of the rounds' measurement share (the rounds' selections
// leave 10% of it unspent): the rounds' total stays what was charged.
const fewRowsRemeasure = 0.75

// againRatio and againCost: when the init's DP total n̂ is at least
// poolRatio·σ₀ but below againRatio·σ₀ (a 500-row table at ε ≤ 1: 1-way
// marginals whose large cells stand a few σ₀ above the rest, which the
// shrinkage may flatten), every 1-way marginal is measured again right
// after the init at againCost times the init's ρ₀ (so at three times its
// precision in all), taken from the rounds' budget (at most half of their
// measurement share). Measured (docs/small-data.md, seeds 1–20, before →
// after): Adult at 500 rows and ε = 0.5 0.166 → 0.156, Bank at 500 rows
// 0.144 → 0.138 (ε = 0.5) and 0.0787 → 0.0747 (ε = 1); the TPC-H unit
// release at ε = 0.3 (n̂/σ₀ ≈ 17) 0.0434 → 0.0416. Adult at 500 rows and
// ε = 1, every 2,000-row table and every large example at ε ≥ 0.5 are
// above the line and unchanged. The choice reads n̂ and σ₀ only (a DP
// output and a public scale). Not per column: measuring again only the
// 1-ways whose first spread looked like signal kept that first noise
// (the choice selects on it) and cost TPC-H a third at ε = 0.3.
const (
	againRatio = 20
	againCost  = 2
)

// The workload measured once: when the init's DP total n̂ is at least
// againRatio·σ₀ (neither small-data regime above), the caller's tables
// count rows (Config.MeasureWorkload: the join-as-one release, a flat
// table among them), the run is every column's (no Config.Own), chooses
// its rounds (no Config.Rounds) and the workload's multi-column marginals
// fit the junction-tree cap together, no adaptive round runs: the whole
// rounds' budget (their selections' share too) measures each of those
// marginals once, the one of k cells at ρ ∝ k^(2/3) (the init's Lagrange
// argument: it minimises the
// noise-limited L1 errors Σ k_r·σ_r for a fixed Σ ρ_r), and the fit reads
// them with the 1-ways ([factored.measureWorkload]). MST's plan (McKenna,
// Miklau, Sheldon 2021) on the workload's own marginals rather than a
// tree: the adaptive rounds spent a tenth of their budget on selections
// whose noise, at a few thousand rows, picked 1-ways already measured,
// measured some workload marginals twice and left others unmeasured, and
// their annealing put up to a third of ρ on one marginal. Measured
// (docs/small-data.md, seeds 1–20, ε = 1): Adult at 5,000 rows 0.0100 →
// 0.0091, Bank at 5,000 rows 0.0103 → 0.0082, Adult with 8 columns
// (45,222 rows, seeds 1–10) 0.00160 → 0.00146. Not under a privacy
// unit: TPC-H's unit release, whose workload pairs are near independent,
// went 0.0248 → 0.0295 (0.0264 → 0.0404 with contribution_norm l1) and
// the Retail example 0.1005 → 0.1099 when measured whole (seeds 1–10):
// there the rounds' selection declines to measure pairs whose dependence
// is below their noise and spends the budget on the 1-ways. Not in the
// againRatio regime: there a 2-way's cells are mostly below its noise
// (Bank at 500 rows and ε = 0.5: 0.123 → 0.138). The choice reads n̂ and
// σ₀ (a DP output and a public scale) and public parameters only; the
// budgets are public functions of the declared domain sizes.

// PoolRatio, FewRowsRemeasure, AgainRatio and AgainCost are poolRatio,
// fewRowsRemeasure, againRatio and againCost, for forecasts made from a
// spec (public).
const (
	PoolRatio        = poolRatio
	FewRowsRemeasure = fewRowsRemeasure
	AgainRatio       = againRatio
	AgainCost        = againCost
)

// factoredRoundIters and factoredFinalIters cap the mirror-descent steps
// of the fit after each round and of the final fit; factoredTol stops a
// fit when a step gains less than that per measured cell (the loss is in
// units of the noise variance). Private-PGM runs its estimator to
// convergence; a fit stopped early (40 and 200 steps at a gain of 0.01
// per cell, as before) left the final model far from the measurements' best
// fit: on Adult with 12 columns the released TVD at ε = 0.5 / 1 / 4 was
// 0.0083 / 0.0050 / 0.0027, and with these caps it is 0.0059 / 0.0029 /
// 0.0009, for well under a second more per release.
const (
	factoredRoundIters = 200
	factoredFinalIters = 3000
	factoredTol        = 1e-6
)

// scoreScale is the fixed-point scale of the selection scores: model
// cells are rounded to 1/scoreScale rows (public rounding of DP values).
const scoreScale = 256

// l1Cap caps a score's L1 error, in the units of the truth's counts
// (rows for a join release; grid steps, 1/privacyunit.Grid of a row, for
// a privacy-unit release, so 2³⁶ steps are 2²⁰ rows there), and each model
// cell and true count before their difference: min(·, 2³⁶) is
// 1-Lipschitz, so the score's sensitivity is unchanged, and it keeps every
// score an integer below 2⁵³ in steps of 1/scoreScale of a count (for
// weights below 512), so the exponential mechanism sees it without float
// error.
const l1Cap = 1 << 36

// score is candidate i's AIM score in steps of 1/scoreScale rows, an exact
// integer held in a float64: w_i·(min(Σ_c |⌊N·μ_c·S⌉ − S·t_c|, S·2³⁶) −
// ⌊cells·bias·S⌉) with S = scoreScale. A neighbour moves Σ_c t_c by at
// most Δ̃ in L1 and nothing else (the model's cells and the bias are
// functions of DP outputs and public parameters): sensitivity w_max·Δ̃·S.
func (f *factored) score(i int, mu []float64, bias float64) float64 {
	var l1 int64
	for c, m := range mu {
		a := int64(math.Round(math.Min(f.n*m, l1Cap) * scoreScale))
		d := a - min(f.truth[i][c], l1Cap)*scoreScale
		if d < 0 {
			d = -d
		}
		l1 = min(l1+d, l1Cap*scoreScale)
	}
	b := int64(math.Round(float64(len(mu)) * bias * scoreScale))
	return f.weights[i] * float64(l1-b)
}

func setKey(s []int) string {
	var b strings.Builder
	for _, c := range s {
		b.WriteString(strconv.Itoa(c))
		b.WriteByte(',')
	}
	return b.String()
}

func setName(names []string, s []int) string {
	var parts []string
	for _, c := range s {
		parts = append(parts, names[c])
	}
	return "marginal(" + strings.Join(parts, ",") + ")"
}

// FactoredResult is the output of [RunFactored]: DP outputs and public
// parameters only.
type FactoredResult struct {
	// Rows is the number of synthetic rows [FactoredResult.Counts] writes:
	// an unbiased DP estimate of the total (raised to its public standard
	// deviation when below it, see RowsFloored).
	Rows        int64
	RowsFloored bool
	// RowsSD is the public standard deviation of the estimate behind Rows
	// (from σ₀ and the column sizes).
	RowsSD float64
	// FewRows reports that the init found few rows against the 1-ways'
	// noise (n̂ < PoolRatio·σ₀, a DP decision): their noise-dominated
	// cells were pooled and every 1-way measured again at
	// FewRowsRemeasure of the rounds' budget. RowsSD is then the combined
	// measurements'.
	FewRows bool
	// OneWaysAgain reports that n̂ was at least PoolRatio·σ₀ but below
	// againRatio·σ₀ (a DP decision): every 1-way was measured again
	// right after the init (published as pmw_one_ways_again).
	OneWaysAgain bool
	// WorkloadOnce reports that no adaptive round ran: the workload's
	// multi-column marginals were each measured once with the rounds'
	// budget (a DP decision on n̂ and public conditions; published as
	// pmw_workload_once; see [factored.measureWorkload]). Rounds is then 1.
	WorkloadOnce bool
	// Rounds is the number of rounds run.
	Rounds int
	// Selections and Signals are as in [Result].
	Selections []Selection
	Signals    []Signal
	// Cliques names the junction tree's cliques; ModelCells their cells.
	Cliques    []string
	ModelCells int64
	// Seeded reports a seeded source (not private).
	Seeded bool

	model *graphical
}

// RunFactored is the mwem variant of [Run] on a factored model (see
// [graphical]) instead of dense weights: the universe over sizes need not
// fit in memory, only the model's cliques do. Rounds select a candidate
// column set ([FactoredCandidates]) as AIM does (McKenna, Mullins, Sheldon,
// Miklau 2022): score w_r·(‖M_r(model) − M_r(data)‖₁ − √(2/π)·σ·cells_r),
// among the sets that keep the junction tree within (spent/total) of
// DefaultFactoredCells; measure it with discrete Gaussian noise; refit all
// measurements at once by mirror descent on the potentials (Private-PGM,
// McKenna, Sheldon, Miklau 2019), warm-started; anneal the per-round
// budget as mwem does.
//
// Privacy: as [Run]'s mwem variant, with the Gaussian noise only (zCDP):
// n̂ (unless NoNHat) with (s·ε, s·δ); the rest converted to ρ; each
// initial 1-way marginal has L2 sensitivity Δ̃ and takes its public share
// of the init's ρ₀ (initSizePower; Σ = ρ₀); a
// round's selection is the exponential mechanism at ε_t = √(8·0.1·ρ_t)
// with score sensitivity max_r w_r·Δ̃ (a neighbour moves M_r(data) by ≤ Δ̃
// in L1, and the model and the bias are functions of DP outputs and
// public parameters); its measurement has L2 sensitivity Δ̃ at
// σ_t = Δ̃/√(2·0.9·ρ_t). Which sets are eligible depends on public sizes
// and the budget spent only. When n̂ ≥ againRatio·σ₀ and the workload
// qualifies ([factored.workloadSets]), no round runs: the rounds' whole
// budget measures the workload's multi-column marginals once each at
// public ρ_r adding up to it ([factored.measureWorkload]). Fitting and
// sampling are post-processing.
func RunFactored(ctx context.Context, src dp.Source, names []string, sizes []int, fams []Family, truth Truth, cfg Config) (*FactoredResult, error) {
	f, err := startFactored(ctx, src, names, sizes, fams, truth, cfg)
	if err != nil {
		return nil, err
	}
	for !f.done {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("pmw: stopped before round %d: %w", f.t+1, err)
		}
		if err := f.round(); err != nil {
			return nil, err
		}
		if cfg.Progress != nil {
			cfg.Progress(f.t, plannedRounds(f.done, f.fixed, f.t, f.t0, f.maxRounds, f.roundsBudget-f.used, f.cost))
		}
	}
	f.fit(factoredFinalIters)
	res := f.result()
	if l := cfg.Ledger; l != nil {
		// The caller publishes the rows (NoNHat).
		publishRun(l, res.RowsFloored, res.Rounds)
		few := 0.0
		if res.FewRows {
			few = 1
		}
		l.Publish("pmw_few_rows", few)
		again := 0.0
		if res.OneWaysAgain {
			again = 1
		}
		l.Publish("pmw_one_ways_again", again)
		whole := 0.0
		if res.WorkloadOnce {
			whole = 1
		}
		l.Publish("pmw_workload_once", whole)
	}
	return res, nil
}

// startFactored is RunFactored up to its first round: the checks, the
// budget split (charged), the true marginals of the candidates and the
// initial 1-way measurements and fit.
func startFactored(ctx context.Context, src dp.Source, names []string, sizes []int, fams []Family, truth Truth, cfg Config) (*factored, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.variant() != VariantMWEM || cfg.noise() != NoiseGaussian {
		return nil, fmt.Errorf("%w: the factored model runs the mwem variant with Gaussian noise", ErrInvalidConfig)
	}
	if !cfg.NoNHat {
		return nil, fmt.Errorf("%w: the factored model counts its rows from the 1-way marginals; set NoNHat", ErrInvalidConfig)
	}
	d := len(sizes)
	var total int64 = 1
	for _, s := range sizes {
		if s < 1 || total > math.MaxInt64/4/int64(s) {
			return nil, fmt.Errorf("%w: universe of %v cells overflows int64", ErrInvalidInput, sizes)
		}
		total *= int64(s)
	}
	sets, weights, err := FactoredCandidates(d, fams)
	if err != nil {
		return nil, err
	}
	f := &factored{src: src, names: names, sizes: sizes, cfg: cfg, sets: sets, weights: weights, ctx: ctx,
		maxCell: DefaultFactoredCells, meas: map[string]*mwemMeas{}, measSet: map[string][]int{}, mtruth: map[int][]int64{}}
	for _, w := range weights {
		f.wmax = math.Max(f.wmax, w)
	}
	// Sets whose own table exceeds the cap can never be measured: drop
	// them now (public).
	var keep [][]int
	var kw []float64
	for i, s := range sets {
		if int64(cellsOf(sizes, s)) <= f.maxCell {
			keep = append(keep, s)
			kw = append(kw, weights[i])
		}
	}
	f.sets, f.weights = keep, kw
	if len(cfg.Own) > 0 {
		own := map[int]bool{}
		for _, c := range cfg.Own {
			if c < 0 || c >= d {
				return nil, fmt.Errorf("%w: own column %d of %d", ErrInvalidConfig, c, d)
			}
			own[c] = true
		}
		keep, kw = nil, nil
		for i, s := range f.sets {
			if slices.ContainsFunc(s, func(c int) bool { return own[c] }) || (len(s) == 1 && slices.Contains(cfg.InitLow, s[0])) {
				keep = append(keep, s)
				kw = append(kw, f.weights[i])
			}
		}
		f.sets, f.weights = keep, kw
	}
	rho, err := rhoForBudget(dp.Budget{Epsilon: cfg.Epsilon, Delta: cfg.Delta})
	if err != nil {
		return nil, fmt.Errorf("pmw: rounds: %w", err)
	}
	f.total = rho
	if cfg.Rounds > 0 {
		f.fixed, f.t0, f.maxRounds = true, cfg.Rounds, cfg.Rounds
	} else {
		f.t0 = autoRoundsMWEM(len(fams))
		f.maxRounds = cfg.MaxRounds
		if f.maxRounds == 0 {
			f.maxRounds = DefaultMWEMMaxRounds
		}
	}
	measFrac := 1 - mwemSelFracGauss
	di := f.initWeight()
	f.unit = f.total / (float64(f.t0) + measFrac*di)
	f.initCost = measFrac * di * f.unit
	f.roundsBudget = f.total - f.initCost
	f.cost = f.unit
	for _, c := range []float64{f.unit, f.roundsBudget} {
		if _, err := dp.NewDiscreteGaussian(f.noiseScale(c)); err != nil {
			return nil, fmt.Errorf("pmw: measurement noise: %w", err)
		}
	}
	if _, err := dp.NewDiscreteGaussian(f.initScale()); err != nil {
		return nil, fmt.Errorf("pmw: measurement noise: %w", err)
	}
	if l := cfg.Ledger; l != nil {
		if err := f.charge(l); err != nil {
			return nil, err
		}
	}
	// The true marginals of every candidate (the only read of the data):
	// one query per candidate that no larger candidate contains, the others
	// summed from a superset's table (exact integers). Which sets are
	// queried depends on the public candidates only.
	f.truth = make([][]int64, len(f.sets))
	order := make([]int, len(f.sets))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return len(f.sets[order[a]]) > len(f.sets[order[b]]) })
	for _, i := range order {
		s := f.sets[i]
		if j := slices.IndexFunc(order, func(j int) bool { return f.truth[j] != nil && subset(s, f.sets[j]) }); j >= 0 {
			sup := order[j]
			tab := make([]int64, cellsOf(sizes, s))
			for c, k := range projectCells(sizes, f.sets[sup], s) {
				tab[k] += f.truth[sup][c]
			}
			f.truth[i] = tab
			continue
		}
		tab, err := truth(ctx, s)
		if err != nil {
			return nil, err
		}
		if err := saturate(sizes, s, tab); err != nil {
			return nil, err
		}
		f.truth[i] = tab
	}
	if err := f.init(); err != nil {
		return nil, err
	}
	if idx := f.workloadSets(); idx != nil && f.nInit >= againRatio*f.initScale() {
		if err := f.measureWorkload(idx); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// saturate checks a true table of set s and saturates each count at a
// public cap, 2⁵³ over the table's cells, so that every table's total
// stays within 2⁵³ (counts and their float sums exact) without a branch on
// the data after the charge: min(·, C) is 1-Lipschitz per cell, so every
// sensitivity argument holds on the saturated tables. Counts are never
// negative (an aggregate's COUNT or bounded weights): a negative one is a
// caller's bug.
func saturate(sizes, s []int, tab []int64) error {
	if len(tab) != cellsOf(sizes, s) {
		return fmt.Errorf("%w: marginal %v has %d cells, want %d", ErrInvalidInput, s, len(tab), cellsOf(sizes, s))
	}
	cellCap := int64(1<<53) / int64(len(tab))
	for c, v := range tab {
		if v < 0 {
			return fmt.Errorf("%w: marginal %v: a negative count", ErrInvalidInput, s)
		}
		tab[c] = min(v, cellCap)
	}
	return nil
}

func (f *factored) noiseScale(c float64) float64 {
	s := f.cfg.Sensitivity / math.Sqrt(2*(1-mwemSelFracGauss)*c)
	if f.cfg.testNoiseSens1 {
		s /= f.cfg.Sensitivity // mutation knob: noise calibrated to one row
	}
	return s
}

// initColumns are the columns whose 1-way marginals the init measures:
// Config.Own and Config.InitLow, or every
// column.
func (f *factored) initColumns() []int {
	if len(f.cfg.Own) > 0 {
		out := slices.Clone(f.cfg.Own)
		for _, c := range f.cfg.InitLow {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
		return out
	}
	all := make([]int, len(f.sizes))
	for i := range all {
		all[i] = i
	}
	return all
}

// isOwn reports whether column c is one the run is for (Config.Own; every
// column without it).
func (f *factored) isOwn(c int) bool {
	return len(f.cfg.Own) == 0 || slices.Contains(f.cfg.Own, c)
}

// initSizePower: without Config.Own (every column the run's own: the
// flat and privacy-unit releases), column c's share of the init's ρ₀ is
// proportional to k_c^initSizePower, k_c its cells ([InitShares]). A
// 1-way marginal measured with noise σ per cell is off the truth by
// about √(2/π)·σ·k_c rows in L1 (its TVD grows with its cells), and σ_c ∝
// 1/√ρ_c, so the shares that minimise Σ_c k_c/√ρ_c for a fixed Σ_c ρ_c
// are ρ_c ∝ k_c^{2/3} (Lagrange): a 16-cell column gets 2.5 times the ρ of
// a 2-cell one instead of the same. The exponent is that arithmetic, not
// fitted. Measured (docs/small-data.md, seeds 1–20): Adult at 2,000 rows
// 0.0538 / 0.0271 / 0.0075 → 0.0493 / 0.0261 / 0.0072 at ε = 0.5 / 1 / 4,
// at 5,000 rows 0.0208 / 0.0110 / 0.0030 → 0.0192 / 0.0108 / 0.0030.
// Privacy: the shares are functions of the declared domain sizes
// (public); the init measures column c at σ_c = σ₀/√s_c, ρ₀·s_c/W
// each, Σ_c = ρ₀ (see initNote). The tables release (Config.Own) keeps
// equal shares.
const initSizePower = 2.0 / 3

// InitShares is the factored model's init share of each column of sizes
// when every column is the run's own (no Config.Own): k_c^(2/3) scaled
// so that the shares add up to len(sizes) (see initSizePower). Public:
// for forecasts made from a spec.
func InitShares(sizes []int) []float64 {
	out := make([]float64, len(sizes))
	var sum float64
	for c, k := range sizes {
		out[c] = math.Pow(float64(max(k, 1)), initSizePower)
		sum += out[c]
	}
	for c := range out {
		out[c] *= float64(len(sizes)) / sum
	}
	return out
}

// initShare is column c's weight in the initial step: Config.InitLowShare
// for a column of Config.InitLow, 1 for another with Config.Own, else its
// [InitShares] share.
func (f *factored) initShare(c int) float64 {
	switch {
	case slices.Contains(f.cfg.InitLow, c):
		return f.cfg.InitLowShare
	case len(f.cfg.Own) > 0:
		return 1
	}
	if f.shares == nil {
		f.shares = InitShares(f.sizes)
	}
	return f.shares[c]
}

// initWeight is the sum of the init columns' shares (d when they are all
// own columns).
func (f *factored) initWeight() float64 {
	var w float64
	for _, c := range f.initColumns() {
		w += f.initShare(c)
	}
	return w
}

// initScale is σ₀, the noise scale in the initial step of a column of
// share 1: ρ₀·1/W of the init's ρ₀ (W = [factored.initWeight]), so σ₀ =
// Δ̃·√W/√(2ρ₀); a column's at share s is σ₀/√s ([factored.initScaleOf]).
// The small-data regimes (poolRatio, againRatio) compare n̂ with σ₀.
func (f *factored) initScale() float64 {
	return f.cfg.Sensitivity * math.Sqrt(f.initWeight()) / math.Sqrt(2*f.initCost)
}

// initScaleOf is column c's noise scale in the initial step.
func (f *factored) initScaleOf(c int) float64 {
	return f.initScale() / math.Sqrt(f.initShare(c))
}

func (f *factored) selEpsilon(c float64) float64 { return math.Sqrt(8 * mwemSelFracGauss * c) }

// initNote states the init's noise and why it is ρ₀-zCDP.
func (f *factored) initNote(d int) string {
	if len(f.cfg.Own) == 0 {
		var lo, hi float64 = math.Inf(1), 0
		for _, c := range f.initColumns() {
			lo, hi = math.Min(lo, f.initShare(c)), math.Max(hi, f.initShare(c))
		}
		return fmt.Sprintf("d = %d marginals, each of L2 sensitivity Δ̃; column c at σ_c = σ₀/√s_c, σ₀ = Δ̃·√W/√(2ρ₀) = %g, "+
			"its share s_c ∝ (its cells)^(2/3) (public domain sizes; s_c from %.3g to %.3g, W = Σ s_c = %g), discrete Gaussian per integer cell: "+
			"Σ_c Δ̃²/(2σ_c²) = ρ₀, so ρ₀-zCDP (Canonne–Kamath–Steinke 2020, Thm. 4; Bun–Steinke 2016, Lemma 2.3)",
			d, f.initScale(), lo, hi, f.initWeight())
	}
	if w := f.initWeight(); w != float64(d) {
		low := 0
		for _, c := range f.initColumns() {
			if f.initShare(c) != 1 {
				low++
			}
		}
		return fmt.Sprintf("d = %d marginals, each of L2 sensitivity Δ̃ (a unit's vector over one column's cells has L1 and so L2 norm ≤ Δ̃); "+
			"%d of them at σ₀ = Δ̃·√W/√(2ρ₀) = %g, the other %d (context and derived columns) at σ₀/√%g (W = %g, their share %g each), discrete Gaussian per integer cell: "+
			"Σ_c Δ̃²/(2σ_c²) = ρ₀, so ρ₀-zCDP (Canonne–Kamath–Steinke 2020, Thm. 4; Bun–Steinke 2016, Lemma 2.3)",
			d, d-low, f.initScale(), low, f.cfg.InitLowShare, w, f.cfg.InitLowShare)
	}
	return fmt.Sprintf("the d = %d marginals concatenated have L2 sensitivity Δ̃·√d; discrete Gaussian noise of σ₀ = Δ̃·√d/√(2ρ₀) = %g "+
		"per integer cell is ρ₀-zCDP (Canonne–Kamath–Steinke 2020, Thm. 4)", d, f.initScale())
}

// charge records the split, before any data is read.
func (f *factored) charge(l *dp.Ledger) error {
	cfg := f.cfg
	rem := l.Remaining()
	if rem.Epsilon < cfg.Epsilon*(1-1e-12) || rem.Delta < cfg.Delta*(1-1e-12) {
		return fmt.Errorf("pmw: %w: needs (ε=%g, δ=%g) but (ε=%g, δ=%g) remain", dp.ErrBudgetExceeded, cfg.Epsilon, cfg.Delta, rem.Epsilon, rem.Delta)
	}
	d := len(f.initColumns())
	details := map[string]any{"variant": "mwem (factored model)", "noise": string(NoiseGaussian), "sensitivity": cfg.Sensitivity,
		"T0": f.t0, "T_max": f.maxRounds, "candidates": len(f.sets), "columns": d, "max_model_cells": f.maxCell,
		"score_weight_max": f.wmax}
	z, err := l.SplitZCDP("pmw: factored MWEM initial marginals and rounds (zCDP)", dp.Budget{Epsilon: cfg.Epsilon, Delta: cfg.Delta},
		fmt.Sprintf("ρ = %g, the largest ρ whose zCDP-to-(ε, δ) conversion (Canonne–Kamath–Steinke 2020) fits (ε, δ) "+
			"(dp.RhoForBudget); the parts below add up in ρ (Bun–Steinke 2016, Lemma 2.3)", f.total)+sensNoteOf(cfg), details)
	if err != nil {
		return fmt.Errorf("pmw: %w", err)
	}
	if err := z.ChargeRho("pmw: 1-way marginals of every released column (discrete Gaussian)", f.initCost,
		f.initNote(d),
		map[string]any{"sigma": f.initScale(), "columns": d}); err != nil {
		return fmt.Errorf("pmw: %w", err)
	}
	sel := mwemSelFracGauss * f.roundsBudget
	if err := z.ChargeRho("pmw: round selections (exponential mechanism, AIM's weighted scores)", sel,
		"each round selects a candidate column set r among those that keep the junction tree within a public size cap "+
			"growing with the budget spent, by the exponential mechanism with score w_r·(‖M_r(model) − M_r(data)‖₁ − √(2/π)·σ_t·cells_r), "+
			"sensitivity max_r w_r·Δ̃, at ε_t = √(8·0.1·ρ_t): ε_t²/8 = 0.1·ρ_t-zCDP (Cesar–Rogers 2021); the rounds' costs are "+
			"chosen from DP outputs only and add up to the share (a privacy filter); when the workload is measured once "+
			"(see the round measurements) no selection runs and this share measures too", map[string]any{"candidates": len(f.sets)}); err != nil {
		return fmt.Errorf("pmw: %w", err)
	}
	if err := z.ChargeRho("pmw: round measurements (discrete Gaussian on every cell of the selected set)", f.roundsBudget-sel,
		"L2 sensitivity Δ̃, σ_t = Δ̃/√(2·0.9·ρ_t): 0.9·ρ_t-zCDP; when the init's DP total n̂ is below 8σ₀ (public σ₀), "+
			fmt.Sprintf("every 1-way marginal is first measured again at %g of this share, as the init measures them (each of L2 sensitivity Δ̃ at the init's share), ", fewRowsRemeasure)+
			fmt.Sprintf("and when n̂ is at least that but below %dσ₀, at min(%d·ρ₀, half of this share) (ρ₀ the init's), ", againRatio, againCost)+
			"and the rounds run on the rest (their selections then leave that part of theirs unspent); "+
			fmt.Sprintf("when n̂ is at least %dσ₀ (n̂ DP, σ₀ public) and the workload's multi-column marginals (public) fit the model's cap with every 1-way, ", againRatio)+
			"no round runs: each of those marginals, of k_r cells, is measured once at ρ_r ∝ k_r^(2/3) "+
			"(L2 sensitivity Δ̃, σ_r = Δ̃/√(2ρ_r)), the ρ_r adding up to this share and the selections' (the workload measured once; "+
			"a release whose tables count rows, with no fixed number of rounds); "+
			"the mirror-descent fits of the factored model (Private-PGM) and the sampling of rows are post-processing", nil); err != nil {
		return fmt.Errorf("pmw: %w", err)
	}
	return nil
}

// sensNoteOf is [mwem.sensNote] for a config.
func sensNoteOf(cfg Config) string {
	if cfg.SensitivityNote == "" {
		return ""
	}
	return "; Δ̃ here: " + cfg.SensitivityNote
}

// measure adds discrete Gaussian noise of scale s to candidate i's true
// table (with round set and Config.MeasureTruth, to that table instead)
// and folds it into that set's measurement. It returns the measurement's
// noise scale on the model's scale (s, or a·s when rescaled).
//
// A MeasureTruth table (each unit's vector clipped to L2 norm ≤ Δ̃ in this
// marginal) weighs every unit at least as much as the truth does (its
// row-count bound: ‖v‖₂ ≤ ‖v‖₁), so its total T may exceed the model's
// total n, which the 1-way marginals of the truth estimate. The noisy
// table y is rescaled by a = n / max(Σ y, n) ≤ 1 before the fit, its
// noise variance by a²: a distribution measured with more weight, put on
// the model's scale. Post-processing of the DP measurement y and the DP
// estimate n.
func (f *factored) measure(i int, s float64, round bool) (float64, error) {
	smp, err := dp.NewDiscreteGaussian(s)
	if err != nil {
		return 0, fmt.Errorf("pmw: %w", err)
	}
	set := f.sets[i]
	tab, rescale := f.truth[i], false
	if !round && f.cfg.testInitTruth != nil {
		if tab, err = f.cfg.testInitTruth(f.ctx, set); err != nil {
			return 0, err
		}
	}
	if round && f.cfg.MeasureTruth != nil {
		if tab, err = f.measureTable(i); err != nil {
			return 0, err
		}
		rescale = true
	}
	k := setKey(set)
	me := f.meas[k]
	size := len(tab)
	if me == nil {
		me = &mwemMeas{p: i, sum: make([]float64, size), ybar: make([]float64, size), target: make([]float64, size)}
		f.meas[k], f.measSet[k] = me, set
		f.order = append(f.order, k)
		f.measured += size
	}
	y := make([]float64, size)
	var tot float64
	for c, t := range tab {
		y[c] = float64(t + smp.Sample(f.src))
		tot += y[c]
		if f.cfg.testL2TrueTotal {
			tot += float64(t) - y[c] // mutation knob: the true total
		}
	}
	v := s * s
	if rescale {
		a := f.n / math.Max(tot, f.n)
		for c := range y {
			y[c] *= a
		}
		v *= a * a
		s *= a
	}
	me.prec += 1 / v
	for c := range y {
		me.sum[c] += y[c] / v
		me.ybar[c] = me.sum[c] / me.prec
	}
	me.kappa = 1 / math.Sqrt(me.prec)
	me.shrink()
	return s, nil
}

// measureTable returns Config.MeasureTruth's table of candidate i, read
// once, when first measured (which sets are read depends on the DP
// selections only).
func (f *factored) measureTable(i int) ([]int64, error) {
	if tab, ok := f.mtruth[i]; ok {
		return tab, nil
	}
	tab, err := f.cfg.MeasureTruth(f.ctx, f.sets[i])
	if err != nil {
		return nil, err
	}
	if err := saturate(f.sizes, f.sets[i], tab); err != nil {
		return nil, err
	}
	f.mtruth[i] = tab
	return tab, nil
}

// rebuild makes the model's factors the measured sets, keeping the
// potentials of the sets it had (warm start).
func (f *factored) rebuild() error {
	old := map[string][]float64{}
	if f.model != nil {
		for i, s := range f.model.sets {
			old[setKey(s)] = f.model.theta[i]
		}
	}
	var sets [][]int
	covered := make([]bool, len(f.sizes))
	for _, k := range f.order {
		sets = append(sets, f.measSet[k])
		for _, c := range f.measSet[k] {
			covered[c] = true
		}
	}
	// A context column no measured set holds yet (Config.Own) enters the
	// model as a zero factor: uniform, independent of the rest.
	for c, ok := range covered {
		if !ok {
			sets = append(sets, []int{c})
		}
	}
	g, err := newGraphical(f.sizes, sets)
	if err != nil {
		return err
	}
	for i, s := range g.sets {
		if th, ok := old[setKey(s)]; ok {
			copy(g.theta[i], th)
		}
	}
	g.calibrate()
	f.model = g
	return nil
}

// init measures every 1-way marginal, estimates the total and fits. When
// the total is small against the 1-ways' noise (see poolRatio) it pools
// their noise-dominated cells and measures them all again at
// fewRowsRemeasure of the rounds' budget.
func (f *factored) init() error {
	cols := f.initColumns()
	if err := f.measureOneWays(cols, f.initScale(), f.initCost); err != nil {
		return err
	}
	f.estimateTotal(func(c int) float64 { s := f.initScaleOf(c); return s * s })
	f.nInit = f.nEst
	nDecide := f.nEst
	if f.cfg.testAgainTrueN {
		// Mutation knob: the regime read from the true total.
		var tot int64
		for _, v := range f.truth[slices.IndexFunc(f.sets, func(s []int) bool { return len(s) == 1 && s[0] == cols[0] })] {
			tot += v
		}
		nDecide = float64(tot)
	}
	if nDecide > 0 && nDecide < poolRatio*f.initScale() {
		// Few rows against the 1-ways' noise: pool their noise-dominated
		// cells (see poolRatio), now and whenever a round measures one of
		// them again; and measure them again.
		f.fewRows = true
		for _, c := range cols {
			me := f.meas[setKey([]int{c})]
			me.pool = true
			me.shrink()
		}
		x := fewRowsRemeasure * f.roundsBudget
		m := (1 - mwemSelFracGauss) * x
		if err := f.measureOneWays(cols, f.cfg.Sensitivity*math.Sqrt(f.initWeight())/math.Sqrt(2*m), m); err != nil {
			return err
		}
		f.used += x
		if f.fixed {
			// A fixed number of rounds shares what is left.
			f.cost *= 1 - fewRowsRemeasure
		}
		f.estimateTotal(func(c int) float64 { return 1 / f.meas[setKey([]int{c})].prec })
	} else if nDecide > 0 && nDecide < againRatio*f.initScale() {
		// Moderately few rows (see againRatio): every 1-way again.
		f.again = true
		m := math.Min(againCost*f.initCost, (1-mwemSelFracGauss)*f.roundsBudget/2)
		sens := f.cfg.Sensitivity
		if f.cfg.testAgainSens1 {
			sens = 1 // mutation knob: noise calibrated to one row
		}
		if err := f.measureOneWays(cols, sens*math.Sqrt(f.initWeight())/math.Sqrt(2*m), m); err != nil {
			return err
		}
		x := m / (1 - mwemSelFracGauss)
		f.used += x
		if f.fixed {
			f.cost *= 1 - x/f.roundsBudget
		}
		f.estimateTotal(func(c int) float64 { return 1 / f.meas[setKey([]int{c})].prec })
	}
	f.n = math.Max(f.nEst, 1)
	if f.cfg.testFixedN > 0 {
		f.n = f.cfg.testFixedN // a lens: the same n on every input
	}
	if err := f.rebuild(); err != nil {
		return err
	}
	f.fit(100)
	return nil
}

// workloadSets returns the candidates the workload's single measurement
// measures (see the workload measured once, above): every candidate of two
// or more columns that no other candidate contains, in candidate order;
// nil when the run does not qualify (Config.MeasureWorkload unset,
// Config.MeasureTruth, Config.Own or Config.Rounds set, no such
// candidate, or those with every 1-way beyond the junction-tree cap).
// Public: a function of the workload, the domain sizes and the config.
func (f *factored) workloadSets() []int {
	if !f.cfg.MeasureWorkload || f.cfg.MeasureTruth != nil || len(f.cfg.Own) > 0 || f.fixed {
		return nil
	}
	return maximalSets(f.sizes, f.sets, f.maxCell)
}

// maximalSets returns the indices of the sets of two or more columns that
// no other set contains, in order, or nil when there is none or they do
// not fit a junction tree of maxCell cells with every 1-way.
func maximalSets(sizes []int, sets [][]int, maxCell int64) []int {
	var idx []int
	tree := make([][]int, 0, len(sizes))
	for c := range sizes {
		tree = append(tree, []int{c})
	}
	for i, s := range sets {
		if len(s) < 2 || slices.ContainsFunc(sets, func(t []int) bool { return len(t) > len(s) && subset(s, t) }) {
			continue
		}
		idx = append(idx, i)
		tree = append(tree, s)
	}
	if len(idx) == 0 || JunctionTreeSize(sizes, tree) > maxCell {
		return nil
	}
	return idx
}

// WorkloadOnceSets returns the column sets a factored run over sizes and
// fams measures once each when it measures the workload once (see
// [FactoredResult.WorkloadOnce]), and each one's share of the rounds'
// budget (cells^(2/3), adding up to 1); nil when it cannot. Public: for
// forecasts made from a spec (the run decides on its DP n̂ as well).
func WorkloadOnceSets(sizes []int, fams []Family) ([][]int, []float64, error) {
	sets, _, err := FactoredCandidates(len(sizes), fams)
	if err != nil {
		return nil, nil, err
	}
	var keep [][]int
	for _, s := range sets {
		if int64(cellsOf(sizes, s)) <= DefaultFactoredCells {
			keep = append(keep, s)
		}
	}
	idx := maximalSets(sizes, keep, DefaultFactoredCells)
	out := make([][]int, len(idx))
	shares := make([]float64, len(idx))
	var sum float64
	for j, i := range idx {
		out[j] = keep[i]
		shares[j] = math.Pow(float64(cellsOf(sizes, keep[i])), initSizePower)
		sum += shares[j]
	}
	for j := range shares {
		shares[j] /= sum
	}
	if len(idx) == 0 {
		return nil, nil, nil
	}
	return out, shares, nil
}

// measureWorkload measures the candidates idx ([factored.workloadSets])
// once each with all that is left of the rounds' budget, candidate r of
// k_r cells at ρ_r ∝ k_r^(2/3) (L2 sensitivity Δ̃, σ_r = Δ̃/√(2ρ_r),
// discrete Gaussian), fits, and ends the rounds: one round, recorded as
// round 1's selections.
func (f *factored) measureWorkload(idx []int) error {
	f.whole = true
	var sum float64
	for _, i := range idx {
		sum += math.Pow(float64(len(f.truth[i])), initSizePower)
	}
	budget := f.roundsBudget - f.used
	for _, i := range idx {
		rho := budget * math.Pow(float64(len(f.truth[i])), initSizePower) / sum
		sigma, err := f.measure(i, f.cfg.Sensitivity/math.Sqrt(2*rho), true)
		if err != nil {
			return err
		}
		f.sels = append(f.sels, Selection{Round: 1, Marginal: setName(f.names, f.sets[i]), Columns: slices.Clone(f.sets[i]),
			Cells: len(f.truth[i]), Sigma: sigma, Rho: rho})
	}
	f.used += budget
	f.t, f.done = 1, true
	if err := f.rebuild(); err != nil {
		return err
	}
	f.fit(factoredRoundIters)
	return nil
}

// measureOneWays measures the 1-way marginals of cols at ρ = cost in all:
// column c at scale/√share_c (scale = Δ̃·√W/√(2·cost), W the columns'
// shares, as [factored.initScale] for the init), and records them as
// round 0's selections.
func (f *factored) measureOneWays(cols []int, scale, cost float64) error {
	var w float64
	for _, c := range cols {
		w += f.initShare(c)
	}
	for _, c := range cols {
		s0 := scale / math.Sqrt(f.initShare(c))
		i := slices.IndexFunc(f.sets, func(s []int) bool { return len(s) == 1 && s[0] == c })
		if _, err := f.measure(i, s0, false); err != nil {
			return err
		}
		me := f.meas[setKey([]int{c})]
		f.sels = append(f.sels, Selection{Round: 0, Marginal: setName(f.names, []int{c}), Columns: []int{c}, Cells: len(me.ybar),
			Sigma: s0, Rho: cost * f.initShare(c) / w})
	}
	return nil
}

// estimateTotal sets n̂ to the inverse-variance weighted mean of the
// 1-way marginals' totals (a total over k cells each of variance v(c) has
// variance k·v(c)) and nSD to its standard deviation.
func (f *factored) estimateTotal(v func(c int) float64) {
	var num, den float64
	for _, c := range f.initColumns() {
		me := f.meas[setKey([]int{c})]
		var tot float64
		for _, y := range me.ybar {
			tot += y
		}
		kv := float64(len(me.ybar)) * v(c)
		num += tot / kv
		den += 1 / kv
	}
	f.nEst = num / den
	f.nSD = math.Sqrt(1 / den)
}

// loss is ½ Σ_m prec_m·‖N·μ_m − target_m‖² with its gradient in the
// potentials of each measured set (d loss/dθ_m = prec_m·N·(N·μ_m − t_m)
// projected by the exponential family's mean map: mirror descent uses the
// gradient in the mean parameters as the step on θ, as Private-PGM does).
func (f *factored) loss(grad bool) (float64, [][]float64) {
	var l float64
	var g [][]float64
	if grad {
		g = make([][]float64, len(f.model.sets))
	}
	for i, s := range f.model.sets {
		me := f.meas[setKey(s)]
		if me == nil {
			// A zero factor of an unmeasured context column (Config.Own):
			// no term, no gradient; it stays uniform.
			if grad {
				g[i] = make([]float64, len(f.model.theta[i]))
			}
			continue
		}
		mu := f.model.marginalIn(f.model.home[i], s, f.model.factorProj[i])
		if grad {
			g[i] = make([]float64, len(mu))
		}
		for c, m := range mu {
			r := f.n*m - me.target[c]
			l += 0.5 * me.prec * r * r
			if grad {
				g[i][c] = me.prec * f.n * r
			}
		}
	}
	return l, g
}

// fit runs mirror descent on the potentials with a backtracking step: at
// most iters steps, stopping when a step gains less than mwemTol per
// measured cell (the loss is in units of the noise variance).
func (f *factored) fit(iters int) {
	g := f.model
	cur, grad := f.loss(true)
	if f.eta == 0 {
		maxPrec := 0.0
		for _, k := range f.order {
			maxPrec = math.Max(maxPrec, f.meas[k].prec)
		}
		f.eta = 1 / (maxPrec * f.n * f.n)
	}
	for range iters {
		old := make([][]float64, len(g.theta))
		for i := range g.theta {
			old[i] = slices.Clone(g.theta[i])
		}
		eta := f.eta * 2
		var next float64
		for {
			for i := range g.theta {
				for c := range g.theta[i] {
					g.theta[i][c] = old[i][c] - eta*grad[i][c]
				}
			}
			g.calibrate()
			next, _ = f.loss(false)
			if next < cur || eta < 1e-30 {
				break
			}
			eta /= 2
		}
		if !(next < cur) {
			for i := range g.theta {
				copy(g.theta[i], old[i])
			}
			g.calibrate()
			return
		}
		f.eta = eta
		gain := cur - next
		cur, grad = f.loss(true)
		if gain < factoredTol*float64(f.measured) {
			return
		}
	}
}

// eligible reports whether adding set s keeps the junction tree within
// the size cap for the budget spent so far (public).
func (f *factored) eligible(s []int, spent float64) bool {
	limit := float64(f.maxCell) * math.Min(1, spent/f.total)
	if _, ok := f.meas[setKey(s)]; ok {
		return true
	}
	sets := [][]int{s}
	for _, k := range f.order {
		sets = append(sets, f.measSet[k])
	}
	return float64(JunctionTreeSize(f.sizes, sets)) <= limit
}

// round runs one round: budget, selection, measurement, fit, annealing.
func (f *factored) round() error {
	f.t++
	cost, last := roundCost(f.fixed, f.t, f.t0, f.maxRounds, f.roundsBudget-f.used, f.cost)
	scale := f.noiseScale(cost)
	if f.cfg.testWholeBudget {
		scale = f.noiseScale(f.roundsBudget) // mutation knob: every round's noise from the whole rounds budget
	}
	bias := math.Sqrt(2/math.Pi) * scale
	spent := f.initCost + f.used + cost
	var idx []int
	var scores []float64
	for i, s := range f.sets {
		if !slices.ContainsFunc(s, f.isOwn) || !f.eligible(s, spent) {
			continue // a context 1-way (Config.InitLow) is measured in the init only
		}
		mu, err := f.model.marginal(s)
		if err != nil {
			// Not inside one clique yet: the model's marginal by
			// building the model with the set added (public structure).
			mu, err = f.marginalWith(s)
			if err != nil {
				return err
			}
		}
		idx = append(idx, i)
		scores = append(scores, f.score(i, mu, bias))
	}
	if len(idx) == 0 {
		return fmt.Errorf("pmw: no candidate fits the factored model's size cap")
	}
	// Scores are exact integers in steps of 1/scoreScale rows (see
	// score), so their float error is 0.
	sens := f.wmax * f.cfg.Sensitivity * scoreScale
	if f.cfg.testSelSens1 {
		sens = scoreScale // mutation knob: the score's sensitivity taken to be one row
	}
	if f.cfg.testSelSensHalf {
		sens /= 2 // mutation knob: the score's sensitivity halved
	}
	k := dp.ExponentialGrid(f.src, scores, f.selEpsilon(cost), sens, 0)
	i := idx[k]
	s := f.sets[i]
	before, err := f.modelMarginal(s)
	if err != nil {
		return err
	}
	sigma, err := f.measure(i, scale, true)
	if err != nil {
		return err
	}
	if err := f.rebuild(); err != nil {
		return err
	}
	f.fit(factoredRoundIters)
	if !f.fixed && !last {
		after, err := f.model.marginal(s)
		if err != nil {
			return err
		}
		var moved float64
		for c := range after {
			moved += math.Abs(f.n * (after[c] - before[c]))
		}
		if moved <= float64(len(after))*bias {
			f.cost *= 4
		}
	}
	f.used += cost
	f.sels = append(f.sels, Selection{Round: f.t, Marginal: setName(f.names, s), Columns: slices.Clone(s), Cells: len(f.truth[i]),
		Sigma: sigma, Rho: cost})
	f.done = last
	return nil
}

// modelMarginal is the model's marginal over s, through a model with s
// added when s spans several cliques.
func (f *factored) modelMarginal(s []int) ([]float64, error) {
	if mu, err := f.model.marginal(s); err == nil {
		return mu, nil
	}
	return f.marginalWith(s)
}

// marginalWith computes the current distribution's marginal over s by a
// copy of the model with a zero factor on s (the same distribution).
func (f *factored) marginalWith(s []int) ([]float64, error) {
	sets := slices.Clone(f.model.sets)
	sets = append(sets, s)
	g, err := newGraphical(f.sizes, sets)
	if err != nil {
		return nil, err
	}
	for i := range f.model.sets {
		copy(g.theta[i], f.model.theta[i])
	}
	g.calibrate()
	return g.marginal(s)
}

func (f *factored) result() *FactoredResult {
	x := math.Max(f.nEst, 0)
	if x < f.nSD && !f.cfg.NoRowsFloor {
		x, f.floored = f.nSD, true
	}
	rows := math.Floor(x)
	if dp.Uniform(f.src) < x-rows {
		rows++
	}
	r := &FactoredResult{Rows: int64(rows), RowsFloored: f.floored, RowsSD: f.nSD, FewRows: f.fewRows, OneWaysAgain: f.again, WorkloadOnce: f.whole, Rounds: f.t, Selections: f.sels, Seeded: f.src.Seeded(), model: f.model}
	for _, k := range f.order {
		me := f.meas[k]
		r.Signals = append(r.Signals, Signal{Marginal: setName(f.names, f.measSet[k]), Cells: len(me.ybar), Sigma: me.kappa, Kept: me.lambda})
	}
	for i, c := range f.model.cliques {
		var parts []string
		for _, col := range c {
			parts = append(parts, f.names[col])
		}
		r.Cliques = append(r.Cliques, "{"+strings.Join(parts, ",")+"}")
		r.ModelCells += int64(f.model.cells[i])
	}
	return r
}

// Marginal returns the model's distribution over the sorted universe
// columns cols (mixed radix, the first column most significant; shares
// summing to 1), or an error when cols lie in no one clique of the
// junction tree. Post-processing of the DP fit.
func (r *FactoredResult) Marginal(cols []int) ([]float64, error) {
	if r.model == nil {
		return nil, fmt.Errorf("%w: no model", ErrInvalidInput)
	}
	return r.model.marginal(cols)
}

// Counts draws Rows rows from the model and emits the count of every
// non-empty cell of the full universe (mixed radix over the columns, the
// first most significant), in increasing cell order, by forward sampling
// through the junction tree with controlled rounding (see
// [graphical.drawCounts]): post-processing, with src's randomness.
func (r *FactoredResult) Counts(src dp.Source, emit func(cell, count int64) error) error {
	if r.Rows <= 0 || r.model == nil {
		return nil
	}
	return r.model.drawCounts(src, r.Rows, emit)
}

// systematic splits n into integer counts proportional to the weights w by
// systematic rounding with one uniform offset: each count is the floor or
// the ceiling of its expectation, the total is n. It returns the non-zero
// counts by index.
func systematic(src dp.Source, w []float64, n int64) []idxCount {
	var tot float64
	for _, v := range w {
		tot += math.Max(v, 0)
	}
	var out []idxCount
	if !(tot > 0) || n == 0 {
		if n > 0 && len(w) > 0 {
			out = append(out, idxCount{0, n}) // a zero-weight group keeps its rows on the first cell
		}
		return out
	}
	u := dp.Uniform(src)
	var cum float64
	var prev int64
	for i, v := range w {
		cum += math.Max(v, 0) / tot * float64(n)
		c := cum
		if i == len(w)-1 {
			c = float64(n)
		}
		f := int64(math.Floor(c + u))
		if f > n {
			f = n
		}
		if k := f - prev; k > 0 {
			out = append(out, idxCount{i, k})
		}
		prev = f
	}
	return out
}

// idxCount is one non-zero count of [systematic], by index.
type idxCount struct {
	i int
	n int64
}
