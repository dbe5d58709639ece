package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/internal/failpoint"
	"github.com/synth-dp/synth/internal/version"
	"github.com/synth-dp/synth/joinasone"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/output/publish"
	"github.com/synth-dp/synth/output/synthfile"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/privacyunit"
	"github.com/synth-dp/synth/spec"
	"github.com/synth-dp/synth/workload"
)

// Run performs a release as a list of stages: plan (public) → check the
// output folder → charge the budget → load and check a unit's keys →
// [Options].BeforeCharge (the lasting charge: the CLI's lifetime ledger) →
// the method's statistics and mechanism → measures → rows → write →
// publish. The whole budget is charged to the run's ledger in one place
// (charge), from public parameters before any data is read, and the output
// folder is checked (and a locked staging folder made beside it) before
// that too; a run refused by the load or a key check discards that
// in-memory ledger and never reaches BeforeCharge. Output is atomic as a whole: every file is
// written into the staging folder, which is then published as the output
// folder by one rename (see [publish.NewStage]); on error, cancellation or a kill,
// the output folder is as it was.
func Run(ctx context.Context, o Options) (*Summary, error) {
	started := createdAt()
	r := newRun(o)
	p, err := NewPlan(o.Spec, o.MemoryCap, o.Rounds, o.MaxRounds)
	if err != nil {
		return nil, err
	}
	stage, err := r.openStage(o.OutDir)
	if err != nil {
		return nil, err
	}
	defer stage.Abort()
	// The in-run ledger's split, from public parameters before any data
	// is read (its refusals, a noise scale out of range, come first): it
	// lives in memory and a refused run discards it, spending nothing.
	c, err := r.charge(p)
	if err != nil {
		return nil, err
	}
	// Then the data is loaded and a unit's keys checked, and only then is
	// the lasting charge made (BeforeCharge: the lifetime ledger): a run
	// refused on its inputs (a folder that holds a release or whose lock
	// is lost, above; a load error, a duplicated key) spends nothing.
	eng, err := r.load(ctx, p)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	if o.BeforeCharge != nil {
		if err := o.BeforeCharge(); err != nil {
			return nil, err
		}
	}
	r.log.Info("release planned", "method", string(p.Method.Name()), "why", p.Reason, "algorithm", c.run.Algorithm(),
		"relations", p.Folded.Len(), "factored", p.Factored, "pmw_memory_bytes", p.Memory,
		"families", len(p.Families), "epsilon", p.Spec.Privacy.Epsilon, "delta", p.Spec.Privacy.Delta, "seeded", r.src.Seeded())
	out, err := r.mechanism(ctx, p, c, eng)
	if err != nil {
		return nil, err
	}
	rows, err := r.drawRows(ctx, p, c, out)
	if err != nil {
		return nil, err
	}
	report, reportJSON, err := r.report(p, c, out, rows, started)
	if err != nil {
		return nil, err
	}
	n, err := r.write(ctx, p, c, out, rows, stage.Dir(), report, reportJSON)
	if err != nil {
		return nil, err
	}
	return r.publish(stage, c, out, report, n)
}

// run is the state a release's stages share.
type run struct {
	o   Options
	log *slog.Logger
	src dp.Source
}

func newRun(o Options) *run {
	r := &run{o: o, log: o.Logger, src: o.Source}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.src == nil {
		r.src = dp.NewSource()
	}
	return r
}

// Plan is everything public a release decides from its spec alone,
// before the output folder is touched or any data read.
type Plan struct {
	// Spec is the validated spec.
	Spec *spec.Spec
	// Method is the release method and Reason why it was chosen.
	Method Method
	Reason string
	// Folding folds public lookup tables into their private neighbours;
	// Folded is the folded join (hypergraph.Fold proves both keep every
	// statistic's guarantee).
	Folding *hypergraph.Folding
	Folded  *hypergraph.Hypergraph
	// Names and Columns are the released columns (output names and spec
	// columns); Sizes their domain sizes.
	Names   []string
	Columns []*spec.Column
	Sizes   []int
	// Universe and Families are PMW's universe and workload.
	Universe *pmw.Universe
	Families []pmw.Family
	// Variant is the PMW variant.
	Variant pmw.Variant
	// Memory is the bytes of PMW's arrays (pmw.CheckMemory), or the
	// factored model's cap.
	Memory int64
	// Factored runs PMW on the factored model (Universe is nil).
	Factored bool
	// Rounds and MaxRounds are PMW's rounds (Options).
	Rounds, MaxRounds int
	// MemoryCap is the cap of PMW's arrays and of each measure's universe.
	MemoryCap int64
	// RowsBudget is the method's budget: the spec's, less the measures'
	// share. Set by the charge stage.
	RowsBudget dp.Budget
}

// NewPlan chooses the method and sizes everything public: the universe,
// the workload and the memory of PMW's arrays (refused above memCap, with
// the bytes named). It reads no data. memCap 0 means the defaults;
// maxRounds 0 means the variant's default cap.
func NewPlan(s *spec.Spec, memCap int64, rounds, maxRounds int) (*Plan, error) {
	m, why, err := ChooseMethod(s)
	if err != nil {
		return nil, err
	}
	p := &Plan{Spec: s, Method: m, Reason: why, Rounds: rounds, MaxRounds: maxRounds, MemoryCap: memCap}
	if err := m.Check(p); err != nil {
		return nil, err
	}
	if p.Folding, err = s.Folding(); err != nil {
		return nil, err
	}
	p.Folded = p.Folding.Folded()
	p.Names, p.Columns, p.Sizes = layout.ColumnNames(s), s.ReleaseColumns(), s.ReleaseSizes()
	pmwCap := memCap
	if pmwCap == 0 {
		pmwCap = pmw.DefaultMemoryCap
	}
	if p.Families, err = workload.Families(s); err != nil {
		return nil, err
	}
	p.Variant = pmw.Variant(s.PMW.Variant)
	if err := p.chooseModel(pmwCap); err != nil {
		return nil, err
	}
	if p.MaxRounds == 0 && p.Variant == pmw.VariantPaper {
		p.MaxRounds = DefaultMaxRounds
	}
	return p, nil
}

// chooseModel decides between PMW's dense weights and the factored model,
// from the spec alone: pmw.model dense or factored when the spec says so;
// otherwise dense when the universe and the workload's arrays fit the
// memory cap (counted by pmw.CheckMemory: dense cells, the histogram,
// every family's tables, queries and bound arrays, a uniformized release's
// merged counts), factored when they do not and the method and workload
// allow it. Refusals name the bytes and the reason, before any data is
// read.
func (p *Plan) chooseModel(memCap int64) error {
	s := p.Spec
	model := s.PMW.Model
	dense := func() error {
		u, err := pmw.NewUniverse(p.Names, p.Sizes, memCap)
		if err != nil {
			return err
		}
		mem, err := pmw.CheckMemory(u, p.Families, pmw.Config{Variant: p.Variant, MergeCounts: p.Method.MergeCounts()})
		if err != nil {
			return err
		}
		p.Universe, p.Memory = u, mem.Total()
		return nil
	}
	if model == spec.PMWModelDense {
		return dense()
	}
	if model != spec.PMWModelFactored {
		// auto: the factored model wherever it can run (it fits every
		// measurement to convergence, draws no n̂ and scores AIM's weighted
		// candidates: on Adult's 8 columns its released TVD at ε = 0.5 / 1
		// / 4 is 0.0029 / 0.0015 / 0.0005 against the dense model's
		// 0.0043 / 0.0026 / 0.0007), else (or when the memory cap is
		// below the factored model's) dense weights.
		why := p.factoredRefusal()
		if why == "" && memCap > 0 && 8*pmw.DefaultFactoredCells > memCap {
			why = fmt.Sprintf("its junction tree may take %d bytes, above the memory cap of %d bytes", 8*pmw.DefaultFactoredCells, memCap)
		}
		if why != "" {
			err := dense()
			var tooLarge *pmw.TooLargeError
			if err == nil || !errors.As(err, &tooLarge) {
				return err
			}
			return fmt.Errorf("%w; the factored model (pmw.model: factored), which needs no dense universe, cannot run this release: %s", err, why)
		}
	} else if why := p.factoredRefusal(); why != "" {
		return fmt.Errorf("%w: pmw.model factored: %s", ErrUnsupported, why)
	}
	p.Factored = true
	p.Memory = 8 * pmw.DefaultFactoredCells
	if memCap > 0 && p.Memory > memCap {
		cells, _ := s.UniverseSize()
		return fmt.Errorf("%w: the universe of %d cells (columns %v, sizes %v) is too large for dense weights, and the factored model needs %d bytes "+
			"(a junction tree of up to %d cells) but the memory cap is %d bytes: raise --memory-cap, or release fewer columns or coarser bins",
			pmw.ErrTooLarge, cells, p.Names, p.Sizes, p.Memory, pmw.DefaultFactoredCells, memCap)
	}
	return nil
}

// factoredRefusal says why the factored model cannot run this release
// ("" when it can).
func (p *Plan) factoredRefusal() string {
	s := p.Spec
	switch {
	case p.Method.Name() != spec.JoinAsOne && p.Method.Name() != spec.PrivacyUnit:
		return fmt.Sprintf("it runs with the join-as-one and privacy-unit methods only (this release: %s)", p.Method.Name())
	case len(s.Release.Measures) > 0:
		return "release.measures need the dense universe"
	case s.PMW.Variant == spec.PMWVariantPaper || s.PMW.Noise == spec.PMWNoiseLaplace:
		return "it runs the mwem variant with Gaussian noise (remove pmw.variant and pmw.noise)"
	}
	if _, _, err := pmw.FactoredCandidates(len(p.Sizes), p.Families); err != nil {
		return err.Error()
	}
	return ""
}

// joinConfig is the tuple-level methods' configuration.
func (p *Plan) joinConfig(hk Hooks) joinasone.Config {
	s := p.Spec
	return joinasone.Config{
		Epsilon:   p.RowsBudget.Epsilon,
		Delta:     p.RowsBudget.Delta,
		Beta:      s.Release.Beta,
		Columns:   spec.FoldColumns(p.Folding, s.Release.Columns),
		Universe:  p.Universe,
		Families:  p.Families,
		Variant:   p.Variant,
		Noise:     pmw.Noise(s.PMW.Noise),
		NHatShare: s.PMW.NHatShare,
		Rounds:    p.Rounds,
		MaxRounds: p.MaxRounds,
		Progress:  hk.Round,
		Factored:  p.Factored,
		Names:     p.Names,
		Sizes:     p.Sizes,
	}
}

// openStage checks the output folder before any data is read — a file in
// the way, an unwritable parent, a full disk or a previous release
// (without Overwrite) stops the run — and makes the fresh, locked staging
// folder beside it (see NewStage). Killed runs' staging folders are
// cleaned first; failing to remove one is not a reason to stop.
func (r *run) openStage(dir string) (*publish.Stage, error) {
	s := r.o.Spec
	if dir == "" {
		dir = s.Output.Path
	}
	if dir == "" {
		return nil, fmt.Errorf("release: %w: no output folder: give --out or output.path in the spec", spec.ErrInvalid)
	}
	if removed, err := publish.CleanStale(dir); err != nil {
		r.log.Warn("could not clean stale temporary files", "dir", dir, "removed", removed, "err", err)
	} else if len(removed) > 0 {
		r.log.Info("removed stale temporary files left by a killed run", "files", removed)
	}
	return publish.NewStage(dir, r.o.Overwrite)
}

// charged is the outcome of the charge stage.
type charged struct {
	ledger *dp.Ledger
	run    Prepared
	mplan  *measurePlan
	dec    *synthfile.Decoder
}

// charge is the one place where the budget is charged: the measures' share
// (s·ε, 0) when there are measures, the rest to the method. Nothing here
// reads data.
func (r *run) charge(p *Plan) (*charged, error) {
	s := p.Spec
	ledger, err := dp.NewLedger(dp.Budget{Epsilon: s.Privacy.Epsilon, Delta: s.Privacy.Delta})
	if err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	c := &charged{ledger: ledger}
	if c.dec, err = synthfile.NewDecoder(p.Names, p.Columns); err != nil {
		return nil, err
	}
	if c.mplan, err = planMeasures(s, p.Folding, p.Names, c.dec, p.MemoryCap, ledger); err != nil {
		return nil, err
	}
	p.RowsBudget = dp.Budget{Epsilon: s.Privacy.Epsilon, Delta: s.Privacy.Delta}
	if c.mplan != nil {
		p.RowsBudget.Epsilon -= c.mplan.share.Epsilon
	}
	hooks := Hooks{
		Round: func(t, total int) {
			r.o.progress(PhasePMW, int64(t), int64(total))
			if t == total || t%max(1, total/10) == 0 {
				r.log.Info("PMW round", "round", t, "of", total)
			}
		},
		Partition: func(k, n int, config string) {
			r.o.progress(PhasePartitions, int64(k), int64(n)) // n = −1: not known in advance
			if n >= 0 {
				r.log.Info("sub-instance", "sub_instance", k, "of", n, "configuration", config)
			}
		},
	}
	if c.run, err = p.Method.Prepare(p, ledger, hooks); err != nil {
		return nil, err
	}
	return c, nil
}

// load opens the engine, loads and folds the tables, and runs the checks
// that refuse a run on a property of its inputs (a privacy unit's keys,
// privacyunit.CheckKeys): all before the charge. The caller closes the
// engine.
func (r *run) load(ctx context.Context, p *Plan) (*engine.Engine, error) {
	s, log := p.Spec, r.log
	// The inputs' SHA-256 for the custodian's records (stderr only): a
	// hash of private data is not DP and never enters the report. Hashed
	// beside the load; the lines are logged before this stage returns.
	hashed := make(chan struct{})
	go func() {
		defer close(hashed)
		if hashes, err := HashInputs(ctx, s); err == nil {
			for _, in := range hashes {
				log.Info("input file (custodian only, not published)", "table", in.Table, "file", in.File, "sha256", in.SHA256)
			}
		} else if ctx.Err() == nil {
			log.Warn("could not hash the input files", "err", err)
		}
	}()
	defer func() { <-hashed }()
	log.Info("loading tables", "engine", engine.Redact(r.o.Engine))
	// The load bar counts the tables, then the folding of public lookups
	// as one more step (public: the spec's table count).
	steps := int64(len(s.Tables)) + 1
	r.o.progress(PhaseLoad, 0, steps)
	eng, err := engine.Open(ctx, r.o.Engine)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			eng.Close()
		}
	}()
	eng.OnTableLoaded(func(k, _ int) { r.o.progress(PhaseLoad, int64(k), steps) })
	if err := eng.Load(ctx, s); err != nil {
		return nil, err
	}
	// The folded relations, once the folded public tables' keys are
	// checked unique (a check on public data only).
	if err := eng.Fold(ctx, p.Folding); err != nil {
		return nil, err
	}
	// Declared keys against the data: unique, non-NULL primary keys on
	// every table and foreign keys that resolve (unless join.orphans:
	// drop). Bad input fails the run here, before any statistic or
	// mechanism reads the data.
	if err := eng.CheckPrimaryKeys(ctx, s, p.Folding.Original()); err != nil {
		return nil, err
	}
	if err := eng.CheckOrphans(ctx, s, p.Folding.Original()); err != nil {
		return nil, err
	}
	r.o.progress(PhaseLoad, steps, steps)
	// Key columns stored or typed differently across a join edge, for the
	// custodian (the log only: the stored types depend on the data, and
	// nothing here changes what is released).
	if types, err := eng.KeyColumnTypes(ctx, s); err == nil {
		for _, w := range engine.KeyTypeWarnings(s, types) {
			log.Warn(w)
		}
	}
	if err := privacyunit.CheckKeys(ctx, s, p.Folding.Original(), eng); err != nil {
		return nil, err
	}
	ok = true
	return eng, nil
}

// mechanism runs the method's statistics and mechanism and the measures
// on the loaded engine, and closes it: nothing reads the private tables
// after it.
func (r *run) mechanism(ctx context.Context, p *Plan, c *charged, eng *engine.Engine) (*Output, error) {
	s, log := p.Spec, r.log
	log.Info("computing join statistics and running PMW")
	out, err := c.run.Run(ctx, r.src, eng)
	if err != nil {
		return nil, err
	}
	log.Info("mechanism done", "algorithm", out.Algorithm, "delta_tilde", countValue(out.DeltaTilde), "n_hat", countValue(out.NHat),
		"pmw_variant", out.Variant, "pmw_rounds", out.Rounds)
	if c.mplan != nil {
		if err := c.mplan.run(ctx, r.src, eng, p.Folded, s, p.Folding, out.DeltaTilde, out.RowClip, r.o.progress, log); err != nil {
			return nil, err
		}
		if err := c.mplan.finite(); err != nil {
			return nil, err
		}
		log.Info("measures done", "measures", len(c.mplan.ms), "delta_tilde", countValue(out.DeltaTilde))
	}
	// The engine is closed now, so that its buffers go back before the
	// rows are written (the deferred Close then does nothing). A failure
	// is logged: the outputs are already drawn.
	if err := eng.Close(); err != nil {
		log.Warn("closing the engine", "err", err)
	}
	return out, nil
}

// rowPlan is how many rows are written and how they are drawn.
type rowPlan struct {
	cells, counts []int64
	dpRows, rows  int64
	mode          synthfile.Sampling
	rowCap        int64
	capped        bool
	requested     int64
	drawn         []int64 // with measures: the rows' cells, drawn first
}

// drawRows gathers the method's counts (DP outputs) and decides the rows
// to write: a function of the DP row count and public parameters only
// (Options.Rows or release.rows, the cap). With measures, the rows are
// drawn here (post-processing, the same draws as the writer's) so that
// every row's measure value is known before the file is written.
func (r *run) drawRows(ctx context.Context, p *Plan, c *charged, out *Output) (*rowPlan, error) {
	rp := &rowPlan{mode: synthfile.SampleAll}
	r.o.progress(PhaseDraw, 0, 1)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := out.Counts(r.src, func(cell, count int64) error {
		rp.cells, rp.counts = append(rp.cells, cell), append(rp.counts, count)
		rp.dpRows += count
		return nil
	}); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rp.requested = r.o.Rows
	if rp.requested == 0 {
		rp.requested = p.Spec.Release.Rows // --rows overrides release.rows
	}
	rp.rows = rp.dpRows
	rp.rowCap = r.o.MaxRows
	if rp.rowCap == 0 {
		rp.rowCap = DefaultMaxRows
	}
	switch {
	case rp.requested > 0 && rp.dpRows == 0:
		r.log.Warn("the synthetic distribution is empty (the DP row count is 0): no rows to sample", "rows_asked", rp.requested)
		rp.rows = 0
	case rp.requested > 0:
		rp.rows = rp.requested
		if rp.rows > rp.dpRows {
			rp.mode = synthfile.SampleWithReplacement
		} else if rp.rows < rp.dpRows {
			rp.mode = synthfile.SampleWithoutReplacement
		}
	case rp.dpRows > rp.rowCap:
		rp.rows, rp.mode, rp.capped = rp.rowCap, synthfile.SampleWithoutReplacement, true
		r.log.Warn("the DP row count exceeds the row cap: writing a uniform random sample of the cap (give --rows N to choose the number of rows)",
			"dp_rows", rp.dpRows, "cap", rp.rowCap)
	}
	if c.mplan == nil {
		r.o.progress(PhaseDraw, 1, 1)
		return rp, nil
	}
	rp.drawn = make([]int64, 0, rp.rows)
	if err := synthfile.ShuffleBlocks(ctx, rand.New(r.src), rp.cells, rp.counts, rp.rows, rp.mode, func(cell int64) error {
		rp.drawn = append(rp.drawn, cell)
		return nil
	}); err != nil {
		return nil, err
	}
	if err := c.mplan.count(c.dec, p.Sizes, rp.drawn); err != nil {
		return nil, err
	}
	r.o.progress(PhaseDraw, 1, 1)
	for _, m := range c.mplan.summaries() {
		r.log.Info("measure written", "column", m.Column.String(), "output_column", m.OutputColumn, "grid_cells", len(m.CellSums),
			"cells_without_rows", m.CellsWithoutRows, "lost_sum", m.LostSum)
	}
	return rp, nil
}

// report builds the privacy report: public parameters and DP outputs only.
func (r *run) report(p *Plan, c *charged, out *Output, rp *rowPlan, started time.Time) (dp.Report, []byte, error) {
	s := p.Spec
	orig := p.Folding.Original()
	params := map[string]any{}
	for k, v := range out.Params {
		params[k] = v
	}
	params["release_method"] = string(p.Method.Name())
	params["release_method_reason"] = p.Reason
	params["release_columns"] = p.Names
	if p.Universe != nil {
		params["universe_size"] = p.Universe.Len()
	} else {
		params["pmw_model"] = "factored"
	}
	params["pmw_rounds"] = out.Rounds
	params["pmw_variant"] = out.Variant
	if out.Eps0 > 0 {
		// The paper variant's per-step ε₀, a function of the DP T and the
		// public budget.
		params["pmw_eps0"] = out.Eps0
	}
	params["relations"] = orig.Names(orig.All())
	params["public_relations"] = append([]string{}, orig.Names(orig.All()&^orig.Private())...)
	params["folded_relations"] = p.Folded.Names(p.Folded.All())
	params["rows_dp"] = rp.dpRows
	params["rows_written"] = rp.rows
	params["rows_sampling"] = string(rp.mode)
	params["rows_cap"] = rp.rowCap
	params["rows_capped"] = rp.capped
	if rp.requested > 0 {
		params["rows_requested"] = rp.requested
	}
	params["row_order"] = "uniformly random (post-processing with the run's randomness)"
	if c.mplan != nil {
		params["measures"] = c.mplan.params()
	}
	if r.o.BudgetOverride {
		params["budget_source"] = "command line (--epsilon/--delta), overriding the spec's privacy section"
	}
	if out.Signals != nil {
		params["marginals_signal"] = out.Signals
		params["signal_headline"] = Headline(out.Signals, p.Method.Name() == spec.PrivacyUnit)
	}
	if t := NearZeroThreshold(out.RowsSD, out.RowsLaplace); t > 0 {
		// Public given the DP outputs they depend on (Δ̃, the clip),
		// rounded up to whole rows.
		sd := out.RowsSD
		if out.RowsLaplace > 0 {
			sd = laplaceSD(out.RowsLaplace)
		}
		params["rows_noise_sd"] = math.Ceil(sd)
		params["rows_near_zero_threshold"] = math.Ceil(t)
		params["rows_near_zero_rates"] = fmt.Sprintf("an empty join is at or below the threshold with probability ≥ %g%%; a join of twice the threshold or more falls to it with probability ≤ %g%%",
			100*(1-NearZeroRate), 100*NearZeroRate)
		if w := NearZero(rp.dpRows, out.RowsSD, out.RowsLaplace); w != "" {
			params["rows_near_zero"] = w
			r.log.Warn("the DP row count is within noise of zero", "rows_dp", rp.dpRows, "threshold", math.Ceil(t), "noise_sd", math.Ceil(sd))
		}
	}
	report := c.ledger.Report(dp.ReportMeta{
		Neighbours:      p.Method.Neighbours(),
		Mechanism:       out.Algorithm,
		Seeded:          r.src.Seeded(),
		SoftwareVersion: version.String(),
		SpecDigest:      s.Digest(),
		Parameters:      params,
		CreatedAt:       started.Format(time.RFC3339),
		Columns:         p.Names,
		Inputs:          InputFiles(s),
	})
	js, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		return report, nil, fmt.Errorf("release: %w", err)
	}
	return report, js, nil
}

// write writes the Parquet file and both reports into the staging folder
// dir and commits them (each file synced and in place); it returns the
// rows written.
func (r *run) write(ctx context.Context, p *Plan, c *charged, out *Output, rp *rowPlan, dir string, report dp.Report, reportJSON []byte) (int64, error) {
	var measureCols []synthfile.MeasureColumn
	if c.mplan != nil {
		measureCols = c.mplan.columns(p.Sizes)
	}
	w, err := synthfile.NewMeasureWriter(filepath.Join(dir, layout.ParquetName), p.Names, p.Columns, measureCols, map[string]string{layout.MetadataKey: string(reportJSON)})
	if err != nil {
		return 0, err
	}
	defer w.Abort()
	rows := rp.rows
	r.log.Info("writing synthetic rows", "rows", rows, "sampling", string(rp.mode), "folder", filepath.Dir(dir))
	// Progress every 10% in the log for outputs large enough to take a
	// moment; the progress function hears of every progressEvery rows and
	// of the last one.
	const progressRows, progressEvery = 100_000, 4096
	var decile int64 // of the rows, logged last
	nextProgress := int64(progressEvery)
	emit := func(cell int64) error {
		if testHookAdd != nil {
			testHookAdd(w.Rows())
		}
		if err := w.AddRow(ctx, cell); err != nil {
			return err
		}
		n := w.Rows()
		if n < nextProgress && n < rows {
			return nil
		}
		nextProgress = n + progressEvery
		r.o.progress(PhaseWrite, n, rows)
		if d := n * 10 / rows; rows >= progressRows && d > decile {
			decile = d
			r.log.Info("writing synthetic rows", "written", n, "of", rows, "percent", n*100/rows)
		}
		return nil
	}
	if rp.drawn != nil {
		for _, cell := range rp.drawn {
			if err = emit(cell); err != nil {
				break
			}
		}
	} else {
		err = synthfile.ShuffleBlocks(ctx, rand.New(r.src), rp.cells, rp.counts, rows, rp.mode, emit)
	}
	rp.cells, rp.counts, rp.drawn = nil, nil, nil
	if err != nil {
		return 0, err
	}
	failpoint.HitContext(ctx, failpoint.RowsWritten)
	pf, err := w.Finish()
	if err != nil {
		return 0, err
	}
	var files publish.Group
	if out.WriteTables != nil {
		names, err := out.WriteTables(ctx, dir, &files)
		if err != nil {
			files.Abort()
			pf.Abort()
			return 0, err
		}
		r.log.Info("synthetic tables written", "tables", names)
	}
	files.Add(pf)
	if err := writeFile(&files, filepath.Join(dir, layout.ReportName), append(reportJSON, '\n')); err != nil {
		return 0, err
	}
	// The same report for a compliance reader, published with the rest.
	if err := writeFile(&files, filepath.Join(dir, layout.MarkdownName), MarkdownReport(report, FactsFor(p.Spec, w.Rows()))); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		files.Abort()
		return 0, err
	}
	if err := files.Commit(); err != nil {
		return 0, err
	}
	return w.Rows(), ctx.Err()
}

// writeFile creates path in the group and writes b, aborting the group on
// failure.
func writeFile(files *publish.Group, path string, b []byte) error {
	f, err := files.Create(path, 0o644)
	if err != nil {
		files.Abort()
		return err
	}
	if _, err := f.Write(b); err != nil {
		files.Abort()
		return fmt.Errorf("release: %w", err)
	}
	return nil
}

// publish makes the staging folder the release by one rename.
func (r *run) publish(stage *publish.Stage, c *charged, out *Output, report dp.Report, rows int64) (*Summary, error) {
	replaced, err := stage.Publish(r.o.Overwrite)
	if err != nil {
		return nil, err
	}
	dir := stage.Target()
	r.log.Info("release written", "rows", rows, "folder", dir, "replaced_previous_release", replaced)
	sum := &Summary{
		Dir: dir, Parquet: filepath.Join(dir, layout.ParquetName), Report: filepath.Join(dir, layout.ReportName), Rows: rows,
		NHat: out.NHat, DeltaTilde: out.DeltaTilde, Privacy: report, Signals: out.Signals,
	}
	if w, ok := report.Parameters["rows_near_zero"].(string); ok {
		sum.NearZero = w
	}
	if h, ok := report.Parameters["signal_headline"].(string); ok {
		sum.Headline = h
	}
	if c.mplan != nil {
		sum.Measures = c.mplan.summaries()
	}
	return sum, nil
}

// Headline says in one sentence how many measured marginals carried
// signal: "all 9 measured marginals carry signal" or "7 of 9 measured
// marginals carry no signal at this ε (they fell back to uniform): …".
//
// The suggestions name a privacy.unit only when unit is false (a release
// that already bounds each person's contribution is told of ε, bins and
// columns).
func Headline(ss []Signal, unit bool) string {
	var none []string
	for _, s := range ss {
		if s.Kept == 0 {
			none = append(none, s.Marginal)
		}
	}
	switch {
	case len(ss) == 0:
		return "no marginal was measured"
	case len(none) == 0:
		return fmt.Sprintf("all %d measured marginals carry signal", len(ss))
	}
	help := "more ε, coarser bins, fewer columns or, for a join, a privacy.unit would help"
	if unit {
		help = "more ε, coarser bins or fewer columns would help"
	}
	return fmt.Sprintf("%d of %d measured marginals carry no signal at this ε: their measured spread was within their noise, so they "+
		"fell back to uniform (the data may be near-uniform there, or the noise swamps it; %s): %s", len(none), len(ss), help, strings.Join(none, ", "))
}
