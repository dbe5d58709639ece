package release

import (
	"context"
	"errors"
	"fmt"
	"github.com/synth-dp/synth/output/publish"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/joinasone"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/privacyunit"
	"github.com/synth-dp/synth/spec"
	"github.com/synth-dp/synth/uniformize"
)

// A Method is one way to release the synthetic rows of a join: join-as-one
// (tuple-level DP), the uniformized partitions (tuple-level DP) and the
// privacy-unit release (user-level DP). [Run] calls its parts in order:
// Check and Memory on the spec alone, Prepare to charge its budget, all
// before any data is read; then the prepared run on the engine, which
// returns the synthetic cells.
type Method interface {
	// Name is the method's name in the spec (release.method).
	Name() spec.Method
	// Neighbours states the neighbour relation of the method's guarantee.
	Neighbours() string
	// Check refuses, with a reason, a spec the method cannot release.
	Check(p *Plan) error
	// MergeCounts reports whether the method adds up the counts of several
	// PMW runs in one dense array (see pmw.Config.MergeCounts): part of its
	// public memory plan.
	MergeCounts() bool
	// Prepare charges the method's whole budget to ledger and returns its
	// run. It reads no data.
	Prepare(p *Plan, ledger *dp.Ledger, hooks Hooks) (Prepared, error)
}

// Prepared is a method whose budget is charged, ready to read the data.
type Prepared interface {
	// Algorithm names what will run (public).
	Algorithm() string
	// Run computes the method's statistics on eng and runs its mechanisms.
	Run(ctx context.Context, src dp.Source, eng *engine.Engine) (*Output, error)
}

// Hooks are the run's progress callbacks, which a method passes to its
// mechanisms; they see public values only.
type Hooks struct {
	// Round hears of PMW's round t of T.
	Round func(t, total int)
	// Partition hears of the k-th uniformized partition or sub-instance of
	// n (n = −1 when not known in advance).
	Partition func(k, n int, config string)
}

// Output is what a method produces: DP outputs and public parameters only.
type Output struct {
	// Algorithm names what ran.
	Algorithm string
	// NHat and DeltaTilde are the DP join size and sensitivity bound (see
	// [Summary]).
	NHat, DeltaTilde float64
	// Eps0 is the paper variant's per-step ε₀ (0 otherwise).
	Eps0 float64
	// Rounds is the number of PMW rounds: an int, or one per sub-instance.
	Rounds any
	// Variant is the PMW variant that ran.
	Variant string
	// Params are the method's entries of the report's parameters.
	Params map[string]any
	// Counts emits the synthetic count of every non-empty cell (see
	// pmw.Result.Counts); post-processing.
	Counts func(dp.Source, func(cell, count int64) error) error
	// Signals says what each measured marginal carried, noise in rows (nil
	// when the method does not say: the uniformized releases).
	Signals []Signal
	// WriteTables, when set, writes the release's synthetic tables into
	// the staging folder dir through files (a tables release); called
	// after the join file is written, before anything is committed.
	WriteTables func(ctx context.Context, dir string, files *publish.Group) ([]string, error)
	// RowsSD is the standard deviation, in rows, of the Gaussian noise of
	// the DP row count (public given the DP outputs it depends on, Δ̃);
	// RowsLaplace the scale of its discrete Laplace noise instead (the
	// privacy-unit count); both 0 when the method does not say (the paper
	// variant's padded n̂, the uniformized releases). See [NearZero].
	RowsSD, RowsLaplace float64
	// RowClip is the privacy-unit release's DP row clip C (rows per unit,
	// a DP output; 0 for the other methods): the measures under the unit
	// anchor their clip ladder at it (measures_unit.go).
	RowClip int64
}

// Signal is what one measured marginal carried (see pmw.Signal): DP
// outputs and public noise scales only.
type Signal struct {
	// Marginal names it, e.g. "marginal(age,income)".
	Marginal string `json:"marginal"`
	// Cells is its number of cells.
	Cells int `json:"cells"`
	// NoisePerCell is the standard deviation of its combined noisy
	// measurement per cell, in rows (public).
	NoisePerCell float64 `json:"noise_per_cell_rows"`
	// Kept is the share of the measured spread the fit kept (λ ∈ [0, 1]);
	// 0: the marginal fell back to uniform (no signal at this ε).
	Kept float64 `json:"kept"`
}

// signals converts pmw's signals, whose noise is in units of perRow
// histogram units per row.
func signals(ss []pmw.Signal, perRow float64) []Signal {
	out := make([]Signal, len(ss))
	for i, s := range ss {
		out[i] = Signal{Marginal: s.Marginal, Cells: s.Cells, NoisePerCell: s.Sigma / perRow, Kept: s.Kept}
	}
	return out
}

// ChooseMethod returns the release method of a spec, from the spec alone,
// with the reason: privacy-unit when privacy.unit is set (a declared unit
// is never silently released at tuple level); otherwise the spec's
// release.method, or for auto the choice of uniformize.ChooseMethod
// (join-as-one, with the measurements that keep uniformized opt-in).
func ChooseMethod(s *spec.Spec) (Method, string, error) {
	if s.Privacy.Unit != "" {
		switch s.Release.Method {
		case spec.JoinAsOne, spec.Uniformized:
			return nil, "", fmt.Errorf("%w: release.method %s is tuple-level DP, but privacy.unit %s declares user-level DP: "+
				"remove release.method (or set it to %s) to protect each %s with all its rows",
				spec.ErrInvalid, s.Release.Method, s.Privacy.Unit, spec.PrivacyUnit, s.Privacy.Unit)
		}
		r := fmt.Sprintf("r = %v row(s)", s.Release.Bound())
		if s.Release.ContributionBoundAuto {
			r = fmt.Sprintf("an r chosen privately with %g%% of ε", 100*privacyunit.DefaultBoundShare)
		}
		why := fmt.Sprintf("privacy.unit %s is declared: user-level DP, each unit's rows bounded to %s in all "+
			"(release.contribution_bound)", s.Privacy.Unit, r)
		if s.Release.OutputKind() == spec.OutputTables {
			return tablesMethod{}, why + "; release.output tables: the ownership tree's tables with synthetic keys, drawn level by level", nil
		}
		return unitMethod{}, why, nil
	}
	if s.Release.Method == spec.PrivacyUnit {
		return nil, "", fmt.Errorf("%w: release.method privacy-unit needs privacy.unit", spec.ErrInvalid)
	}
	m, why, err := uniformize.ChooseMethod(s)
	if err != nil {
		return nil, "", err
	}
	switch m {
	case spec.JoinAsOne:
		return joinAsOneMethod{}, why, nil
	case spec.Uniformized:
		return uniformizedMethod{}, why, nil
	}
	return nil, "", fmt.Errorf("%w: release method %q (use join-as-one or uniformized)", ErrUnsupported, m)
}

// tupleNeighbours is the neighbour notion of the tuple-level methods.
const tupleNeighbours = "add or remove one tuple of one private table (tuple-DP, Ghazi et al. Def. 1.1); public tables never change"

// joinAsOneMethod is Ghazi et al. Alg. 1 / Alg. 3 (package joinasone).
type joinAsOneMethod struct{}

func (joinAsOneMethod) Name() spec.Method   { return spec.JoinAsOne }
func (joinAsOneMethod) Neighbours() string  { return tupleNeighbours }
func (joinAsOneMethod) MergeCounts() bool   { return false }
func (joinAsOneMethod) Check(p *Plan) error { return needDelta(p, "join-as-one") }
func (m joinAsOneMethod) Prepare(p *Plan, l *dp.Ledger, hk Hooks) (Prepared, error) {
	plan, err := joinasone.Prepare(p.Folded, p.joinConfig(hk), l)
	if err != nil {
		return nil, err
	}
	return joinAsOneRun{plan: plan, h: p.Folded, p: p}, nil
}

type joinAsOneRun struct {
	plan *joinasone.Plan
	h    *hypergraph.Hypergraph
	p    *Plan
}

func (r joinAsOneRun) Algorithm() string { return string(r.plan.Algorithm()) }

func (r joinAsOneRun) Run(ctx context.Context, src dp.Source, eng *engine.Engine) (*Output, error) {
	res, err := r.plan.Run(ctx, src, eng)
	if err != nil {
		return nil, err
	}
	if f := res.Factored; f != nil {
		return &Output{Algorithm: string(res.Algorithm) + " on a factored model", DeltaTilde: res.DeltaTilde, Rounds: f.Rounds,
			Variant: "mwem (factored)", Counts: f.Counts, Signals: signals(f.Signals, 1),
			Params: map[string]any{"pmw_model": "factored", "pmw_model_cliques": f.Cliques, "pmw_model_cells": f.ModelCells,
				"pmw_rows_dp": f.Rows}, RowsSD: f.RowsSD}, nil
	}
	out := &Output{Algorithm: string(res.Algorithm), NHat: res.PMW.NHat, DeltaTilde: res.DeltaTilde, Eps0: res.PMW.Eps0,
		Rounds: res.PMW.Rounds, Variant: string(res.PMW.Variant), Params: map[string]any{}, Counts: res.PMW.Counts,
		Signals: signals(res.PMW.Signals, 1)}
	// The mwem row estimate's own standard deviation (pmw's, not a
	// forecast of it). With pmw.noise: laplace the estimate is a weighted
	// sum of discrete Laplace noises, whose law has no closed form here:
	// no calibrated near-zero statement for it.
	if pmw.Noise(r.p.Spec.PMW.Noise) != pmw.NoiseLaplace {
		out.RowsSD = res.PMW.RowsSD
	}
	return out, nil
}

// needDelta refuses δ = 0 for the methods whose padding needs δ > 0.
func needDelta(p *Plan, name string) error {
	if !(p.Spec.Privacy.Delta > 0) {
		return fmt.Errorf("%w: %s needs δ > 0 (its truncated Laplace padding is (ε, δ)-DP), the spec has δ = %v", ErrUnsupported, name, p.Spec.Privacy.Delta)
	}
	return nil
}

// uniformizedMethod is Alg. 4 with Alg. 5 (two relations after folding) or
// Alg. 6 + 7 (hierarchical joins) of Ghazi et al. (package uniformize).
type uniformizedMethod struct{}

func (uniformizedMethod) Name() spec.Method  { return spec.Uniformized }
func (uniformizedMethod) Neighbours() string { return tupleNeighbours }
func (uniformizedMethod) MergeCounts() bool  { return true }
func (uniformizedMethod) Check(p *Plan) error {
	if len(p.Spec.Release.Measures) > 0 {
		return fmt.Errorf("%w: release.measures with the %s method: the measures reuse join-as-one's Δ̃ (use method join-as-one)", ErrUnsupported, spec.Uniformized)
	}
	return needDelta(p, "uniformized")
}

func (uniformizedMethod) Prepare(p *Plan, l *dp.Ledger, hk Hooks) (Prepared, error) {
	h, jcfg := p.Folded, p.joinConfig(hk)
	// Two relations: Alg. 4 + 5; more, when hierarchical: Alg. 4 with
	// Alg. 6 + 7 (the choice reads the folded join, the spec alone).
	uplan, err := uniformize.PrepareTwoTable(h, uniformize.TwoTableConfig{Config: jcfg, OnBucket: func(k, n, b int) {
		if hk.Partition != nil {
			hk.Partition(k, n, fmt.Sprintf("bucket %d", b))
		}
	}}, l)
	switch {
	case err == nil:
		return twoTableRun{plan: uplan}, nil
	case errors.Is(err, uniformize.ErrNotTwoTable) && h.Len() < 3:
		return nil, fmt.Errorf("%w: release method uniformized on %d relations after folding: %v (use join-as-one)", ErrUnsupported, h.Len(), err)
	case !errors.Is(err, uniformize.ErrNotTwoTable):
		return nil, fmt.Errorf("release: method uniformized: %w", err)
	}
	hcfg := uniformize.HierConfig{Config: jcfg, OnSub: func(k, n int, config string) {
		if hk.Partition != nil {
			hk.Partition(k, n, config)
		}
	}}
	hplan, err := uniformize.PrepareHier(h, hcfg, l)
	if errors.Is(err, uniformize.ErrNotHierarchical) {
		return nil, fmt.Errorf("%w: release method uniformized on %d relations after folding: %w (use join-as-one)", ErrUnsupported, h.Len(), err)
	}
	if err != nil {
		return nil, fmt.Errorf("release: method uniformized: %w", err)
	}
	return hierRun{plan: hplan, h: h}, nil
}

type twoTableRun struct {
	plan *uniformize.TwoTablePlan
}

func (twoTableRun) Algorithm() string { return uniformize.TwoTableAlgorithm }

func (r twoTableRun) Run(ctx context.Context, src dp.Source, eng *engine.Engine) (*Output, error) {
	res, err := r.plan.Run(ctx, src, uniformize.TwoTableEngine(eng))
	if err != nil {
		return nil, err
	}
	out := subOutput(uniformize.TwoTableAlgorithm, res.NHat, res.DeltaTilde, res.Counts, res.Runs())
	out.Params = map[string]any{
		"uniformized_partitions": res.Partitions,
		"uniformized_lambda":     res.Lambda,
		"uniformized_always_run": res.AlwaysRun,
	}
	return out, nil
}

// subOutput is the Output of a uniformized release: its totals, its
// counts, and the rounds of every sub-instance's PMW run.
func subOutput(alg string, nhat, deltaTilde float64, counts func(dp.Source, func(cell, count int64) error) error, runs []*joinasone.Result) *Output {
	out := &Output{Algorithm: alg, NHat: nhat, DeltaTilde: deltaTilde, Counts: counts}
	var rounds []int
	for _, run := range runs {
		rounds = append(rounds, run.PMW.Rounds)
		out.Variant = string(run.PMW.Variant)
	}
	out.Rounds = rounds
	return out
}

type hierRun struct {
	plan *uniformize.HierPlan
	h    *hypergraph.Hypergraph
}

func (hierRun) Algorithm() string { return uniformize.HierAlgorithm }

func (r hierRun) Run(ctx context.Context, src dp.Source, eng *engine.Engine) (*Output, error) {
	res, err := r.plan.Run(ctx, src, uniformize.HierEngine(eng, r.h))
	if err != nil {
		return nil, err
	}
	out := subOutput(uniformize.HierAlgorithm, res.NHat, res.DeltaTilde, res.Counts, res.Runs())
	out.Params = map[string]any{
		"uniformized_partitions":     res.Partitions,
		"uniformized_attribute_tree": res.Tree,
		"uniformized_levels":         res.Levels,
		"uniformized_lambda":         res.Lambda,
		"uniformized_k":              res.K,
		"uniformized_k_deg":          res.KDeg,
		"uniformized_composition": fmt.Sprintf("partition (ε/2, δ/2): every noisy degree (ε/(2·K_deg), δ/(2·K_deg)), "+
			"K_deg = %d; sub-instances (ε/2, δ/2): every one of the %d runs with (ε/(2K), δ/(2K)), one tuple in at most K = %d "+
			"(basic composition, Ghazi et al. Lemmas 4.10 and 4.11)", res.KDeg, len(res.Partitions), res.K),
	}
	return out, nil
}

// unitMethod is the privacy-unit release (package privacyunit).
type unitMethod struct{}

func (unitMethod) Name() spec.Method  { return spec.PrivacyUnit }
func (unitMethod) Neighbours() string { return privacyunit.Neighbours }
func (unitMethod) MergeCounts() bool  { return false }
func (unitMethod) Check(p *Plan) error {
	s := p.Spec
	switch {
	case s.PMW.Variant == string(pmw.VariantPaper):
		return fmt.Errorf("%w: pmw.variant paper with privacy.unit: the privacy-unit release runs the mwem rounds (remove pmw.variant)", ErrUnsupported)
	case !(s.Privacy.Delta > 0) && pmw.Noise(s.PMW.Noise) != pmw.NoiseLaplace:
		return fmt.Errorf("%w: privacy.unit with δ = 0 needs pmw.noise: laplace (the Gaussian rounds are (ε, δ)-DP)", ErrUnsupported)
	}
	return nil
}

func (unitMethod) Prepare(p *Plan, l *dp.Ledger, hk Hooks) (Prepared, error) {
	s := p.Spec
	plan, err := privacyunit.Prepare(s, p.Folding, privacyunit.Config{
		Epsilon: p.RowsBudget.Epsilon, Delta: p.RowsBudget.Delta,
		Columns: spec.FoldColumns(p.Folding, s.Release.Columns), Universe: p.Universe, Families: p.Families,
		Bound: s.Release.Bound(), AutoBound: s.Release.ContributionBoundAuto, Noise: pmw.Noise(s.PMW.Noise), Rounds: p.Rounds, MaxRounds: p.MaxRounds, Progress: hk.Round,
		Factored: p.Factored, Names: p.Names, Sizes: p.Sizes, L2: unitL2(s, p.Factored),
		KeysChecked: true, // Run checked them before the charge (run.load)
	}, l)
	if err != nil {
		return nil, err
	}
	return unitRun{plan: plan}, nil
}

// unitL2 reports whether a privacy-unit release clips its measured
// marginals in L2: when the spec's norm is l2 — the default applies on the
// factored model only (the dense model has no per-set measurement), an
// explicit l2 on the dense model is refused by privacyunit.Prepare.
func unitL2(s *spec.Spec, factored bool) bool {
	return s.Release.Norm() == spec.NormL2 && (factored || s.Release.ContributionNorm != "")
}

type unitRun struct{ plan *privacyunit.Plan }

func (r unitRun) Algorithm() string { return r.plan.Algorithm() }

func (r unitRun) Run(ctx context.Context, src dp.Source, eng *engine.Engine) (*Output, error) {
	res, err := r.plan.Run(ctx, src, eng)
	if err != nil {
		return nil, err
	}
	unit, _ := r.plan.Unit()
	out := &Output{Algorithm: r.plan.Algorithm(), NHat: float64(res.Rows), DeltaTilde: 1, Params: map[string]any{
		"privacy_unit":                unit,
		"contribution_bound":          r.plan.Bound(),
		"contribution_norm":           string(r.plan.Norm()),
		"row_count_clip":              res.Clip,
		"row_count_noise_scale":       res.CountScale,
		"bounded_share_of_row_weight": res.BoundedShare,
		"row_count_share_of_epsilon":  res.CountShare,
	}, RowsLaplace: res.CountScale, RowClip: res.Clip}
	if res.Units > 0 {
		out.Params["dp_unit_count"] = res.Units
	}
	if f := res.Factored; f != nil {
		out.Algorithm += " on a factored model"
		out.Rounds, out.Variant, out.Counts, out.Signals = f.Rounds, "mwem (factored)", f.Counts, signals(f.Signals, privacyunit.Grid)
		out.Params["pmw_model"], out.Params["pmw_model_cliques"], out.Params["pmw_model_cells"] = "factored", f.Cliques, f.ModelCells
		return out, nil
	}
	out.Rounds, out.Variant, out.Counts, out.Signals = res.PMW.Rounds, string(res.PMW.Variant), res.PMW.Counts, signals(res.PMW.Signals, privacyunit.Grid)
	return out, nil
}
