// Package joinasone releases synthetic data for a multi-table join by
// treating the join result as one table: Algorithms 1 and 3 of Ghazi, Hu,
// Kumar and Manurangsi, "Differentially Private Data Release over Multiple
// Tables" (PODS 2023), §3.
//
// # Guarantee
//
// [Run] is (ε, δ)-DP for neighbouring instances that differ by adding or
// removing one tuple of one private relation (their Def. 1.1; relations
// marked public never change). The budget is split as in the paper:
//
//   - (ε/2, δ/2) for Δ̃, a private upper bound on how much one neighbour
//     changes the join:
//     two relations (Alg. 1): Δ̃ = Δ + X, where Δ is the maximum degree of
//     a join value (its global sensitivity is 1) and X the exact integer
//     TLap (dp.TruncatedDiscreteLaplace with budget (ε/2, δ/2));
//     any join (Alg. 3): Δ̃ = ⌈e^{g·K}⌉ with K = ⌈ln RS^β / g⌉ + 1 + X on
//     the public grid g = 2⁻²⁰ (dp.LogPad), β = 1/λ = ε/ln(1/δ) by
//     default, since ln RS^β has global sensitivity β (Lemma 3.7): the
//     paper's RS^β·e^{TLap} with the noise drawn as an integer number of
//     grid steps;
//
// Δ̃ is an integer drawn with integer arithmetic, so publishing it is safe
// against floating-point attacks (DESIGN.md §3, invariant 6).
//   - (ε/2, δ/2) for PMW_{ε/2,δ/2,Δ̃} on the join's histogram over the
//     released columns (App. A), which pads the join size to n̂ before it
//     starts (the fix of the two flawed ideas of §3.1).
//
// The padding never lowers the value it pads, so Δ̃ ≥ Δ (resp. ≥ RS^β ≥
// LS) holds always, not only with high probability.
//
// A single relation is the one-table case: one tuple changes the join by
// exactly one row, Δ̃ = 1 is public and PMW gets the whole (ε, δ).
package joinasone

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/residual"
	"github.com/synth-dp/synth/spec"
)

// ErrNoPrivateRelation is returned when every relation is public: there is
// nothing to protect and no neighbour notion to calibrate to.
var ErrNoPrivateRelation = errors.New("joinasone: every relation is public")

// maxLogFactor bounds ln of Alg. 3's noise factor Δ̃/RS^β: 40·ln 2. A β
// whose factor can exceed 2⁴⁰ is refused before any data is read.
const maxLogFactor = 40 * math.Ln2

// Stats is what the mechanism reads from the data: aggregates only.
// *engine.Engine implements it.
type Stats interface {
	// MaxDegree is the largest number of tuples of relation rel that share
	// one value of attrs.
	MaxDegree(ctx context.Context, h *hypergraph.Hypergraph, rel int, attrs []string) (int64, error)
	// Histogram is the sparse histogram of the join over the binned columns.
	Histogram(ctx context.Context, h *hypergraph.Hypergraph, cols []spec.ColumnRef, sizes []int) ([]engine.Cell, error)
	residual.BoundaryCounter
}

var _ Stats = (*engine.Engine)(nil)

// Algorithm names which of the paper's algorithms a run used.
type Algorithm string

// The algorithms.
const (
	OneTable Algorithm = "one-table PMW (Δ̃ = 1)"
	TwoTable Algorithm = "Ghazi et al. Alg. 1 (two tables, Δ̃ from the max degree)"
	General  Algorithm = "Ghazi et al. Alg. 3 (any join, Δ̃ from residual sensitivity)"
)

// Config holds the public parameters of a run.
type Config struct {
	// Epsilon and Delta are the budget of the whole mechanism; Delta > 0.
	Epsilon, Delta float64
	// Columns are the released columns, in universe order.
	Columns []spec.ColumnRef
	// Beta is β of residual sensitivity for Alg. 3; 0 means the paper's
	// β = 1/λ = ε/ln(1/δ). Any public β > 0 keeps the guarantee (ln RS^β
	// has sensitivity β and the TLap noise is calibrated to it); a smaller
	// β shrinks the e^{TLap} factor of Δ̃ (its shift τ(ε/2, δ/2, β) grows
	// linearly in β) but can raise RS^β. It must not be chosen by looking
	// at the data.
	Beta float64
	// Universe is the product of the released columns' binned domains.
	Universe *pmw.Universe
	// Families is the workload PMW keeps accurate.
	Families []pmw.Family
	// Variant, Noise and NHatShare choose PMW's algorithm, its
	// measurement noise and n̂'s share (pmw.Config); zero values take the
	// pmw defaults (the mwem variant, Gaussian noise, 5% for n̂).
	Variant   pmw.Variant
	Noise     pmw.Noise
	NHatShare float64
	// Rounds is PMW's T; 0 means automatic when MaxRounds > 0, else the
	// pmw default.
	Rounds int
	// MaxRounds caps the automatic choice of T (pmw.Config.MaxRounds).
	MaxRounds int
	// Reapply re-applies past measurements each round (post-processing).
	Reapply bool
	// Progress receives PMW's round count (pmw.Config.Progress).
	Progress func(round, rounds int)
	// Workers bounds PMW's parallelism; 0 means the pmw default.
	Workers int
	// NoRowsFloor is passed to pmw.Config.NoRowsFloor (for callers that
	// add up many runs, such as the buckets of a uniformized release).
	NoRowsFloor bool
	// Factored runs PMW on a factored model (pmw.RunFactored) over the
	// columns of Sizes, reading the join's marginals over candidate column
	// sets instead of its histogram over the whole universe; Universe is
	// then nil. For universes too large for dense weights.
	Factored bool
	// Names and Sizes are the released columns' names and domain sizes
	// (needed with Factored).
	Names []string
	Sizes []int

	// mutation plants a known privacy bug for the audits' mutation tests.
	// Unexported: only this package's tests can set it; no production path
	// does.
	mutation mutation
}

// mutation names a planted privacy bug (audit tests only).
type mutation int

const (
	honest mutation = iota
	// mutNoDeltaNoise publishes Δ̃ = Δ (resp. RS^β) without noise.
	mutNoDeltaNoise
	// mutRSNoMax uses the local sensitivity LŜ⁰ instead of RS^β = max_k
	// e^{−βk}·LŜ^k (Alg. 3 without the max over k).
	mutRSNoMax
)

// Result is a run's output: DP values only.
type Result struct {
	// Algorithm is the algorithm used.
	Algorithm Algorithm
	// DeltaTilde is Δ̃, the DP upper bound on the join's change.
	DeltaTilde float64
	// PMW is the PMW result: n̂ and the synthetic counts (nil with
	// Config.Factored).
	PMW *pmw.Result
	// Factored is the factored model's result (with Config.Factored).
	Factored *pmw.FactoredResult
}

// Plan is a join-as-one run whose budget is charged and which has not read
// any data yet. It runs once.
type Plan struct {
	h   *hypergraph.Hypergraph
	cfg Config
	alg Algorithm
	// pad (Alg. 1) or logPad and beta (Alg. 3) draw the noise of Δ̃
	// (unused for one table).
	pad    *dp.TruncatedDiscreteLaplace
	logPad *dp.LogPad
	beta   float64
	// root is the run's share of the ledger (Δ̃ is published there) and
	// pmwLedger the share reserved for PMW, whose ε and δ it is run with.
	root, pmwLedger *dp.Ledger
	ran             bool
}

// Algorithm is the algorithm the plan runs.
func (p *Plan) Algorithm() Algorithm { return p.alg }

// Prepare validates cfg for the join h, picks the algorithm and charges the
// whole budget to ledger, part by part — without reading any data, so that
// a run the budget cannot afford stops before it touches data (DESIGN.md §3).
// It returns an error wrapping dp.ErrBudgetExceeded if the ledger cannot
// afford (Epsilon, Delta).
func Prepare(h *hypergraph.Hypergraph, cfg Config, ledger *dp.Ledger) (*Plan, error) {
	if err := (dp.Budget{Epsilon: cfg.Epsilon, Delta: cfg.Delta}).Validate(); err != nil {
		return nil, fmt.Errorf("joinasone: %w", err)
	}
	if cfg.Delta == 0 {
		return nil, fmt.Errorf("joinasone: %w: delta must be > 0 (TLap padding needs it)", dp.ErrInvalidParameter)
	}
	if h.Private() == 0 {
		return nil, ErrNoPrivateRelation
	}
	if math.IsNaN(cfg.Beta) || math.IsInf(cfg.Beta, 0) || cfg.Beta < 0 {
		return nil, fmt.Errorf("joinasone: %w: beta = %v, want a finite number > 0 (or 0 for ε/ln(1/δ))", dp.ErrInvalidParameter, cfg.Beta)
	}
	if (cfg.Universe == nil && !cfg.Factored) || len(cfg.Columns) == 0 || (cfg.Factored && len(cfg.Sizes) != len(cfg.Columns)) {
		return nil, errors.New("joinasone: no released columns")
	}
	eps, delta := cfg.Epsilon, cfg.Delta
	p := &Plan{h: h, cfg: cfg, alg: General}
	switch h.Len() {
	case 1:
		p.alg = OneTable
	case 2:
		p.alg = TwoTable
	}
	// The parameters first, so that nothing is charged for a run that
	// cannot start. Two or more tables: half the budget for Δ̃ (one TLap
	// charge), half for PMW; one table: all of it for PMW.
	half := dp.Budget{Epsilon: eps / 2, Delta: delta / 2}
	pmwBudget := half
	var mechanism, rule string
	var err error
	switch p.alg {
	case OneTable:
		pmwBudget = dp.Budget{Epsilon: eps, Delta: delta}
	case TwoTable:
		if p.pad, err = dp.CachedTruncatedDiscreteLaplace(eps/2, delta/2, 1); err != nil {
			return nil, fmt.Errorf("joinasone: Δ̃: %w", err)
		}
		mechanism, rule = "truncated discrete Laplace: noisy max degree Δ̃",
			"exact integer TLap on the max degree, of sensitivity 1 (Ghazi et al. Alg. 1 line 1; dp.TruncatedDiscreteLaplace)"
	default:
		p.beta = eps / math.Log(1/delta)
		if cfg.Beta != 0 {
			p.beta = cfg.Beta
		}
		// Refuse before any data is read a β whose noise factor alone could
		// reach e^MaxLogFactor > 2⁴⁰ (the factor grows linearly in β; at
		// ε = 1 the product overflowed float64 from β ≈ 13): Δ̃ would make
		// PMW pure noise, or overflow. The continuous τ screens absurd β
		// cheaply; the exact factor of the integer sampler decides.
		tooLarge := func(f float64) error {
			return fmt.Errorf("joinasone: %w: beta = %v makes the noise factor of Δ̃ up to e^%.4g (above 2⁴⁰); "+
				"choose beta ≤ %.3g at ε = %v, δ = %v (β must be fixed without looking at the data)",
				dp.ErrInvalidParameter, p.beta, f, p.beta*maxLogFactor/f, eps, delta)
		}
		if tau, err := dp.Tau(eps/2, delta/2, p.beta); err != nil {
			return nil, fmt.Errorf("joinasone: beta = %v: %w", p.beta, err)
		} else if 2*tau > 2*maxLogFactor {
			return nil, tooLarge(2 * tau)
		}
		if p.logPad, err = dp.CachedLogPad(eps/2, delta/2, p.beta); err != nil {
			return nil, fmt.Errorf("joinasone: Δ̃: %w", err)
		}
		if f := p.logPad.MaxLogFactor(); f > maxLogFactor {
			return nil, tooLarge(f)
		}
		mechanism, rule = "truncated discrete Laplace on a log grid: noisy residual sensitivity Δ̃",
			"ln Δ̃ = ln RS^β (sensitivity β, Lemma 3.7) snapped up to the grid 2⁻²⁰ plus exact integer TLap noise "+
				"(Ghazi et al. Alg. 3 line 2; dp.LogPad)"
	}
	if p.root, err = ledger.Split("join-as-one", dp.Budget{Epsilon: eps, Delta: delta}, "basic composition of its parts",
		map[string]any{"algorithm": string(p.alg)}); err != nil {
		return nil, err
	}
	if mechanism != "" {
		var details map[string]any
		if p.alg == General {
			n := p.logPad.Noise()
			details = map[string]any{"tau": n.Tau(), "scale": n.Scale(), "grid": dp.LogGrid,
				"grid_sensitivity": n.Sensitivity(), "beta": p.beta}
		} else {
			details = map[string]any{"tau": p.pad.Tau(), "scale": p.pad.Scale()}
		}
		if err := p.root.Charge(mechanism, half, rule, details); err != nil {
			return nil, err
		}
	}
	if p.pmwLedger, err = p.root.Split("pmw", pmwBudget, "PMW_{ε,δ,Δ̃} of Ghazi et al. App. A", nil); err != nil {
		return nil, err
	}
	return p, nil
}

// Run executes join-as-one on the join h whose data stats reads:
// [Prepare] then [Plan.Run].
func Run(ctx context.Context, src dp.Source, h *hypergraph.Hypergraph, stats Stats, cfg Config, ledger *dp.Ledger) (*Result, error) {
	p, err := Prepare(h, cfg, ledger)
	if err != nil {
		return nil, err
	}
	return p.Run(ctx, src, stats)
}

// ErrPlanUsed is returned by a second [Plan.Run]: its budget was spent by
// the first.
var ErrPlanUsed = errors.New("joinasone: plan already ran; its budget is spent")

// Run reads the statistics and runs the mechanism. It may be called once.
func (p *Plan) Run(ctx context.Context, src dp.Source, stats Stats) (*Result, error) {
	if p.ran {
		return nil, ErrPlanUsed
	}
	p.ran = true
	h, cfg := p.h, p.cfg

	deltaTilde, err := p.deltaTilde(ctx, src, stats)
	if err != nil {
		return nil, err
	}
	p.root.Publish("delta_tilde", deltaTilde)

	if cfg.Factored {
		return p.runFactored(ctx, src, stats, deltaTilde)
	}
	cells, err := stats.Histogram(ctx, h, cfg.Columns, cfg.Universe.Sizes())
	if err != nil {
		return nil, err
	}
	hist := make([]pmw.Cell, len(cells))
	for i, c := range cells {
		hist[i] = pmw.Cell{Index: c.Index, Count: c.Count}
	}
	res, err := pmw.Run(ctx, src, cfg.Universe, cfg.Families, hist, pmw.Config{
		Epsilon:     p.pmwLedger.Total().Epsilon,
		Delta:       p.pmwLedger.Total().Delta,
		Sensitivity: deltaTilde,
		Variant:     cfg.Variant,
		Noise:       cfg.Noise,
		NHatShare:   cfg.NHatShare,
		Rounds:      cfg.Rounds,
		MaxRounds:   cfg.MaxRounds,
		Reapply:     cfg.Reapply,
		Ledger:      p.pmwLedger,
		Workers:     cfg.Workers,
		Progress:    cfg.Progress,
		NoRowsFloor: cfg.NoRowsFloor,
	})
	if err != nil {
		return nil, err
	}
	return &Result{Algorithm: p.alg, DeltaTilde: deltaTilde, PMW: res}, nil
}

// deltaTilde reads the statistics Δ̃ needs and returns Δ̃: an integer ≥ 1
// drawn with integer arithmetic (DESIGN.md §3, invariant 6). It is
// [Plan.noisyDelta] of [Plan.exactDelta].
func (p *Plan) deltaTilde(ctx context.Context, src dp.Source, stats Stats) (float64, error) {
	x, err := p.exactDelta(ctx, stats)
	if err != nil {
		return 0, err
	}
	return p.noisyDelta(src, x)
}

// exactDelta reads the statistics and returns the exact quantity Δ̃ pads:
// with two tables the largest degree of a join value in a relation facing
// a private one (Alg. 1 line 1), otherwise RS^β (Alg. 3). It draws no
// noise: a function of the data and the public plan only.
func (p *Plan) exactDelta(ctx context.Context, stats Stats) (float64, error) {
	h := p.h
	switch p.alg {
	case TwoTable:
		// With two relations, the boundary of the first is exactly the
		// join attributes they share.
		shared := h.Boundary(1)
		var maxDeg int64
		// A tuple added to relation i changes the join by the degree of its
		// join value in the other relation: only private relations move.
		for i := 0; i < 2; i++ {
			if !h.Private().Has(i) {
				continue
			}
			d, err := stats.MaxDegree(ctx, h, 1-i, shared)
			if err != nil {
				return 0, err
			}
			maxDeg = max(maxDeg, d)
		}
		return float64(maxDeg), nil
	case General:
		sens, err := residual.Compute(ctx, h, stats, p.beta)
		if err != nil {
			return 0, err
		}
		if p.cfg.mutation == mutRSNoMax {
			return sens.LocalSensitivity, nil
		}
		return sens.RS, nil
	}
	return 0, nil
}

// noisyDelta draws Δ̃ from x = [Plan.exactDelta]: the algorithm's noise
// added to x (nothing for one table: Δ̃ = 1).
func (p *Plan) noisyDelta(src dp.Source, x float64) (float64, error) {
	deltaTilde := 1.0
	switch p.alg {
	case TwoTable:
		deltaTilde = x
		if p.cfg.mutation != mutNoDeltaNoise {
			deltaTilde += float64(p.pad.Sample(src))
		}
	case General:
		// max(RS, 1) keeps the logarithm finite for an empty join; it is
		// 1-Lipschitz on the log scale, so ln max(RS, 1) still has
		// sensitivity β.
		rs := x
		_, bound := p.logPad.Pad(src, math.Max(rs, 1))
		if p.cfg.mutation == mutNoDeltaNoise {
			bound = math.Max(rs, 1)
		}
		// Deciding on a DP output is post-processing.
		if !(bound <= 1<<53) {
			return 0, fmt.Errorf("joinasone: the DP sensitivity bound Δ̃ = %.4g is too large for PMW (> 2⁵³): "+
				"one tuple can reach too much of the join; release fewer relations or use a smaller beta", bound)
		}
		deltaTilde = math.Ceil(bound)
	}
	// Δ̃ ≥ 1 keeps PMW's sensitivity meaningful when the true bound is 0
	// (an empty join): raising a DP value by a public rule is
	// post-processing.
	deltaTilde = math.Max(deltaTilde, 1)
	return deltaTilde, nil
}

// runFactored is Run's PMW step on a factored model: the join's marginal
// over each candidate column set is one histogram query over those
// columns (the candidates are public, pmw.FactoredCandidates).
func (p *Plan) runFactored(ctx context.Context, src dp.Source, stats Stats, deltaTilde float64) (*Result, error) {
	cfg := p.cfg
	truth := func(ctx context.Context, set []int) ([]int64, error) {
		cols := make([]spec.ColumnRef, len(set))
		sizes := make([]int, len(set))
		for i, c := range set {
			cols[i], sizes[i] = cfg.Columns[c], cfg.Sizes[c]
		}
		cells, err := stats.Histogram(ctx, p.h, cols, sizes)
		if err != nil {
			return nil, err
		}
		n := 1
		for _, s := range sizes {
			n *= s
		}
		tab := make([]int64, n)
		for _, c := range cells {
			tab[c.Index] = c.Count
		}
		return tab, nil
	}
	res, err := pmw.RunFactored(ctx, src, cfg.Names, cfg.Sizes, cfg.Families, truth, pmw.Config{
		Epsilon:     p.pmwLedger.Total().Epsilon,
		Delta:       p.pmwLedger.Total().Delta,
		Sensitivity: deltaTilde,
		Rounds:      cfg.Rounds,
		MaxRounds:   cfg.MaxRounds,
		Ledger:      p.pmwLedger,
		Progress:    cfg.Progress,
		NoRowsFloor: cfg.NoRowsFloor,
		NoNHat:      true,
		// Row counts: the workload may be measured once (pmw.Config.MeasureWorkload).
		MeasureWorkload: true,
	})
	if err != nil {
		return nil, err
	}
	p.pmwLedger.Publish("pmw_rows", float64(res.Rows))
	return &Result{Algorithm: p.alg, DeltaTilde: deltaTilde, Factored: res}, nil
}
