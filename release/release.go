package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/internal/version"
	"github.com/synth-dp/synth/joinasone"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/spec"
	"github.com/synth-dp/synth/uniformize"
)

// File names inside the output folder.
const (
	ParquetName = "synthetic.parquet"
	ReportName  = "privacy-report.json"
	// MetadataKey is the Parquet key-value metadata entry holding the
	// privacy report.
	MetadataKey = "synth.privacy"
)

// ErrUnsupported is returned for a spec feature this version cannot run
// yet (e.g. the uniformized method).
var ErrUnsupported = errors.New("release: not supported yet")

// DefaultMaxRounds caps the automatic number of rounds of the paper PMW
// variant: a round costs about two passes over the universe, so 500 rounds
// over a universe of 10⁶ cells take seconds. The mwem variant (the default)
// has its own cap, pmw.DefaultMWEMMaxRounds.
const DefaultMaxRounds = 500

// testHookAdd, when set by a test, is called before every cell is added to
// the Parquet writer with the number of rows written so far.
var testHookAdd func(rows int64)

// Neighbours is the neighbour notion of every release.
const Neighbours = "add or remove one tuple of one private table (tuple-DP, Ghazi et al. Def. 1.1); public tables never change"

// Options configures a release run.
type Options struct {
	// Spec is the validated spec.
	Spec *spec.Spec
	// OutDir is the output folder; empty means Spec.Output.Path.
	OutDir string
	// Engine is the engine DSN ("duckdb", "duckdb:PATH").
	Engine string
	// Source draws all noise; nil means dp.NewSource() (crypto/rand).
	Source dp.Source
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
	// Rounds is PMW's T; 0 means automatic: chosen from the DP n̂ by
	// Ghazi et al. App. A's rule (pmw.AutoRounds), at most MaxRounds.
	Rounds int
	// MaxRounds caps the automatic T; 0 means DefaultMaxRounds.
	MaxRounds int
	// MemoryCap bounds PMW's arrays in bytes — the universe's dense cells
	// and every workload family's tables and arrays (pmw.CheckMemory),
	// checked before any data is read — and each measure's numerical
	// universe; 0 means the defaults (pmw.DefaultMemoryCap for PMW).
	MemoryCap int64
	// Overwrite allows replacing a previous release in the output folder;
	// without it such a folder is refused before any data is read (a rerun
	// spends the privacy budget again).
	Overwrite bool
	// Rows, when > 0, is the exact number of rows written: drawn from the
	// synthetic distribution (without replacement when the DP row count is
	// at least Rows, by multinomial sampling otherwise). Post-processing.
	Rows int64
	// MaxRows caps the number of rows written when Rows is 0; 0 means
	// DefaultMaxRows. A larger DP row count writes a uniform random sample
	// of MaxRows rows, and the report says so.
	MaxRows int64
	// BudgetOverride records in the report that the spec's (ε, δ) was
	// replaced from the command line.
	BudgetOverride bool
	// Progress, when set, receives the run's progress (see [ProgressFunc]).
	Progress ProgressFunc
}

// DefaultMaxRows is the public default cap on the rows of a release whose
// row count is not given (Options.MaxRows).
const DefaultMaxRows = 10_000_000

// Summary describes a finished release. Its fields are public parameters
// and DP outputs only.
type Summary struct {
	// Dir, Parquet and Report are the written paths.
	Dir, Parquet, Report string
	// Rows is the number of synthetic rows written: Options.Rows when
	// given, else the PMW result's DP row count (mwem: an unbiased estimate
	// of the join size; paper: n̂), at most the row cap.
	Rows int64
	// NHat and DeltaTilde are the DP join size and sensitivity bound
	// (uniformized: the sum of the buckets' n̂ and the largest Δ̃).
	NHat, DeltaTilde float64
	// Privacy is the report written beside the file.
	Privacy dp.Report
	// Measures describes the release.measures columns (nil without).
	Measures []MeasureSummary
}

// ColumnNames returns the names of the released columns in the output
// file: the bare column name when it is unique among the released columns,
// else table_column.
func ColumnNames(s *spec.Spec) []string {
	count := map[string]int{}
	for _, r := range s.Release.Columns {
		count[r.Column]++
	}
	names := make([]string, len(s.Release.Columns))
	for i, r := range s.Release.Columns {
		names[i] = r.Column
		if count[r.Column] > 1 {
			names[i] = r.Table + "_" + r.Column
		}
	}
	return names
}

// Run performs a release: spec → engine → statistics → mechanism → rows →
// files. The whole budget is charged to the run's ledger before any data is
// read, and the output folder is checked (and a locked staging folder made
// beside it) before that too. Output is atomic as a whole: every file is
// written into the staging folder, which is then published as the output
// folder by one rename (see [NewStage]); on error, cancellation or a kill,
// the output folder is as it was.
func Run(ctx context.Context, o Options) (*Summary, error) {
	started := createdAt()
	s := o.Spec
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	src := o.Source
	if src == nil {
		src = dp.NewSource()
	}
	// The method is chosen from the spec alone (uniformize.ChooseMethod;
	// auto keeps join-as-one, uniformized is opt-in).
	method, methodReason, err := uniformize.ChooseMethod(s)
	if err != nil {
		return nil, err
	}
	if method != spec.JoinAsOne && method != spec.Uniformized {
		return nil, fmt.Errorf("%w: release method %q (use join-as-one or uniformized)", ErrUnsupported, method)
	}
	if len(s.Release.Measures) > 0 && method != spec.JoinAsOne {
		return nil, fmt.Errorf("%w: release.measures with the %s method: the measures reuse join-as-one's Δ̃ (use method join-as-one)", ErrUnsupported, method)
	}
	dir := o.OutDir
	if dir == "" {
		dir = s.Output.Path
	}
	if dir == "" {
		return nil, fmt.Errorf("release: %w: no output folder: give --out or output.path in the spec", spec.ErrInvalid)
	}
	if !(s.Privacy.Delta > 0) {
		return nil, fmt.Errorf("%w: join-as-one needs δ > 0 (its truncated Laplace padding is (ε, δ)-DP), the spec has δ = %v", ErrUnsupported, s.Privacy.Delta)
	}
	// Output folder first, before any data is read: a file in the way, an
	// unwritable parent, a full disk or a previous release (without
	// Overwrite) stops the run here. The release is written into a fresh,
	// locked staging folder beside dir and published by one atomic rename
	// (see NewStage). Killed runs' staging folders are cleaned first;
	// failing to remove one is not a reason to stop.
	if removed, err := CleanStale(dir); err != nil {
		log.Warn("could not clean stale temporary files", "dir", dir, "removed", removed, "err", err)
	} else if len(removed) > 0 {
		log.Info("removed stale temporary files left by a killed run", "files", removed)
	}
	stage, err := NewStage(dir, o.Overwrite)
	if err != nil {
		return nil, err
	}
	defer stage.Abort()

	// Everything public first: budget, universe, workload.
	ledger, err := dp.NewLedger(dp.Budget{Epsilon: s.Privacy.Epsilon, Delta: s.Privacy.Delta})
	if err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	// Public tables joined on their primary key (lossless lookups) are
	// folded into their private neighbour: the folded join is the same and
	// its statistics keep their guarantees (hypergraph.Fold proves both);
	// the folding depends on the spec only.
	folding, err := s.Folding()
	if err != nil {
		return nil, err
	}
	h := folding.Folded()
	names := ColumnNames(s)
	cols := s.ReleaseColumns()
	sizes := s.ReleaseSizes()
	memCap := o.MemoryCap
	if memCap == 0 {
		memCap = pmw.DefaultMemoryCap
	}
	u, err := pmw.NewUniverse(names, sizes, memCap)
	if err != nil {
		return nil, err
	}
	fams, err := Families(s)
	if err != nil {
		return nil, err
	}
	variant := pmw.Variant(s.PMW.Variant)
	// The memory of PMW's arrays — dense cells, the histogram, every
	// family's tables, queries and bound arrays, and a uniformized
	// release's merged counts — is counted from the spec alone and refused
	// here, before any data is read, rather than after the load and the
	// statistics (the count is the one pmw.Run checks, see pmw.CheckMemory).
	mem, err := pmw.CheckMemory(u, fams, pmw.Config{Variant: variant, MergeCounts: method == spec.Uniformized})
	if err != nil {
		return nil, err
	}

	maxRounds := o.MaxRounds
	if maxRounds == 0 && variant == pmw.VariantPaper {
		maxRounds = DefaultMaxRounds
	}
	// The whole budget is charged here, before any data is read: the
	// measures' share (s·ε, 0) when there are measures, the rest to the
	// synthetic rows.
	dec, err := NewDecoder(names, cols)
	if err != nil {
		return nil, err
	}
	mplan, err := planMeasures(s, folding, names, dec, o.MemoryCap, ledger)
	if err != nil {
		return nil, err
	}
	rowsEps := s.Privacy.Epsilon
	if mplan != nil {
		rowsEps -= mplan.share.Epsilon
	}
	jcfg := joinasone.Config{
		Epsilon:   rowsEps,
		Delta:     s.Privacy.Delta,
		Beta:      s.Release.Beta,
		Columns:   spec.FoldColumns(folding, s.Release.Columns),
		Universe:  u,
		Families:  fams,
		Variant:   variant,
		Noise:     pmw.Noise(s.PMW.Noise),
		NHatShare: s.PMW.NHatShare,
		Rounds:    o.Rounds,
		MaxRounds: maxRounds,
		Progress: func(t, total int) {
			o.progress(PhasePMW, int64(t), int64(total))
			if t == total || t%max(1, total/10) == 0 {
				log.Info("PMW round", "round", t, "of", total)
			}
		},
	}
	var (
		plan   *joinasone.Plan
		uplan  *uniformize.TwoTablePlan
		hplan  *uniformize.HierPlan
		algStr string
	)
	if method == spec.Uniformized {
		// Two relations: Alg. 4 + 5; more, when hierarchical: Alg. 4 with
		// Alg. 6 + 7 (the choice reads the folded join, the spec alone).
		uplan, err = uniformize.PrepareTwoTable(h, uniformize.TwoTableConfig{Config: jcfg}, ledger)
		algStr = uniformize.TwoTableAlgorithm
		switch {
		case errors.Is(err, uniformize.ErrNotTwoTable) && h.Len() < 3:
			return nil, fmt.Errorf("%w: release method uniformized on %d relations after folding: %v (use join-as-one)",
				ErrUnsupported, h.Len(), err)
		case errors.Is(err, uniformize.ErrNotTwoTable):
			hcfg := uniformize.HierConfig{Config: jcfg, OnSub: func(k, n int, config string) {
				o.progress(PhasePartitions, int64(k), -1)
				log.Info("sub-instance", "sub_instance", k, "of", n, "configuration", config)
			}}
			uplan, algStr = nil, uniformize.HierAlgorithm
			if hplan, err = uniformize.PrepareHier(h, hcfg, ledger); errors.Is(err, uniformize.ErrNotHierarchical) {
				return nil, fmt.Errorf("%w: release method uniformized on %d relations after folding: %w (use join-as-one)",
					ErrUnsupported, h.Len(), err)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("release: method uniformized: %w", err)
		}
	} else {
		if plan, err = joinasone.Prepare(h, jcfg, ledger); err != nil {
			return nil, err
		}
		algStr = string(plan.Algorithm())
	}
	log.Info("release planned", "method", string(method), "why", methodReason, "algorithm", algStr, "relations", h.Len(), "universe_cells", u.Len(),
		"pmw_memory_bytes", mem.Total(),
		"families", len(fams), "epsilon", s.Privacy.Epsilon, "delta", s.Privacy.Delta, "seeded", src.Seeded())

	// Data: load and check, then the mechanism.
	// The inputs' SHA-256 for the custodian's records (stderr only): a hash
	// of private data is not DP and never enters the report.
	// Hashed beside the load (a gigabyte is most of a second): Run waits
	// for it before it returns, so the lines are always logged.
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
	log.Info("loading tables", "engine", engine.Redact(o.Engine))
	o.progress(PhaseLoad, 0, 1)
	eng, err := engine.Open(ctx, o.Engine)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	if err := eng.Load(ctx, s); err != nil {
		return nil, err
	}
	// The folded relations, once the folded public tables' keys are checked
	// unique (a check on public data only).
	if err := eng.Fold(ctx, folding); err != nil {
		return nil, err
	}
	o.progress(PhaseLoad, 1, 1)
	log.Info("computing join statistics and running PMW")
	// out gathers what the report and the writer need from either method:
	// DP outputs and public parameters only.
	var out struct {
		nhat, deltaTilde, eps0 float64
		rounds                 any
		variant                string
		counts                 func(dp.Source, func(cell, count int64) error) error
	}
	params := map[string]any{}
	if uplan != nil {
		ures, err := uplan.Run(ctx, src, &partitionProgress{TwoTableData: uniformize.TwoTableEngine(eng), o: &o})
		if err != nil {
			return nil, err
		}
		var rounds []int
		for _, r := range ures.Runs() {
			rounds = append(rounds, r.PMW.Rounds)
			out.variant = string(r.PMW.Variant)
		}
		out.nhat, out.deltaTilde, out.rounds, out.counts = ures.NHat, ures.DeltaTilde, rounds, ures.Counts
		params["uniformized_partitions"] = ures.Partitions
		params["uniformized_lambda"] = ures.Lambda
		params["uniformized_always_run"] = ures.AlwaysRun
		log.Info("mechanism done", "algorithm", algStr, "buckets", len(ures.Partitions), "max_delta_tilde", ures.DeltaTilde,
			"n_hat", ures.NHat, "rows", ures.Rows, "pmw_variant", out.variant)
	} else if hplan != nil {
		hres, err := hplan.Run(ctx, src, uniformize.HierEngine(eng, h))
		if err != nil {
			return nil, err
		}
		var rounds []int
		for _, r := range hres.Runs() {
			rounds = append(rounds, r.PMW.Rounds)
			out.variant = string(r.PMW.Variant)
		}
		out.nhat, out.deltaTilde, out.rounds, out.counts = hres.NHat, hres.DeltaTilde, rounds, hres.Counts
		params["uniformized_partitions"] = hres.Partitions
		params["uniformized_attribute_tree"] = hres.Tree
		params["uniformized_levels"] = hres.Levels
		params["uniformized_lambda"] = hres.Lambda
		params["uniformized_k"] = hres.K
		params["uniformized_k_deg"] = hres.KDeg
		params["uniformized_composition"] = fmt.Sprintf("partition (ε/2, δ/2): every noisy degree (ε/(2·K_deg), δ/(2·K_deg)), "+
			"K_deg = %d; sub-instances (ε/2, δ/2): every one of the %d runs with (ε/(2K), δ/(2K)), one tuple in at most K = %d "+
			"(basic composition, Ghazi et al. Lemmas 4.10 and 4.11)", hres.KDeg, len(hres.Partitions), hres.K)
		log.Info("mechanism done", "algorithm", algStr, "sub_instances", len(hres.Partitions), "k", hres.K,
			"sum_delta_tilde", hres.DeltaTilde, "n_hat", hres.NHat, "rows", hres.Rows, "pmw_variant", out.variant)
	} else {
		res, err := plan.Run(ctx, src, eng)
		if err != nil {
			return nil, err
		}
		out.nhat, out.deltaTilde, out.rounds, out.variant, out.counts = res.PMW.NHat, res.DeltaTilde, res.PMW.Rounds, string(res.PMW.Variant), res.PMW.Counts
		out.eps0 = res.PMW.Eps0
		algStr = string(res.Algorithm)
		log.Info("mechanism done", "algorithm", algStr, "delta_tilde", res.DeltaTilde, "n_hat", res.PMW.NHat,
			"rows", res.PMW.Rows, "pmw_variant", string(res.PMW.Variant), "pmw_rounds", res.PMW.Rounds)
	}
	if mplan != nil {
		if err := mplan.run(ctx, src, eng, h, s, folding, out.deltaTilde); err != nil {
			return nil, err
		}
		if err := mplan.finite(); err != nil {
			return nil, err
		}
		log.Info("measures done", "measures", len(mplan.ms), "delta_tilde", out.deltaTilde)
	}
	// Nothing reads the private tables from here on: the engine is closed
	// now, so that its buffers and the memory its queries freed go back
	// before the rows are written, rather than add to the writer's (the
	// deferred Close then does nothing). A failure is logged, as the
	// deferred Close's was ignored: the outputs are already drawn.
	if err := eng.Close(); err != nil {
		log.Warn("closing the engine", "err", err)
	}

	// The synthetic rows: the mechanism's counts (DP outputs) are gathered
	// once, then rows are drawn from them in a random order with the run's
	// randomness (post-processing). How many rows depends only on the DP
	// row count and public parameters (Options.Rows, the cap).
	var cells, counts []int64
	var dpRows int64
	if err := out.counts(src, func(cell, count int64) error {
		cells, counts = append(cells, cell), append(counts, count)
		dpRows += count
		return nil
	}); err != nil {
		return nil, err
	}
	if o.Rows == 0 {
		o.Rows = s.Release.Rows // the spec's release.rows; --rows overrides it
	}
	rows, mode := dpRows, SampleAll
	rowCap := o.MaxRows
	if rowCap == 0 {
		rowCap = DefaultMaxRows
	}
	capped := false
	switch {
	case o.Rows > 0 && dpRows == 0:
		log.Warn("the synthetic distribution is empty (the DP row count is 0): no rows to sample", "rows_asked", o.Rows)
		rows = 0
	case o.Rows > 0:
		rows = o.Rows
		if rows > dpRows {
			mode = SampleWithReplacement
		} else if rows < dpRows {
			mode = SampleWithoutReplacement
		}
	case dpRows > rowCap:
		rows, mode, capped = rowCap, SampleWithoutReplacement, true
		log.Warn("the DP row count exceeds the row cap: writing a uniform random sample of the cap (give --rows N to choose the number of rows)",
			"dp_rows", dpRows, "cap", rowCap)
	}

	orig := folding.Original()
	params["release_method"] = string(method)
	params["release_method_reason"] = methodReason
	params["release_columns"] = names
	params["universe_size"] = u.Len()
	params["pmw_rounds"] = out.rounds
	params["pmw_variant"] = out.variant
	if out.eps0 > 0 {
		// The paper variant's per-step ε₀, a function of the DP T and the
		// public budget.
		params["pmw_eps0"] = out.eps0
	}
	params["relations"] = orig.Names(orig.All())
	params["public_relations"] = append([]string{}, orig.Names(orig.All()&^orig.Private())...)
	params["folded_relations"] = h.Names(h.All())
	params["rows_dp"] = dpRows
	params["rows_written"] = rows
	params["rows_sampling"] = string(mode)
	params["rows_cap"] = rowCap
	params["rows_capped"] = capped
	if o.Rows > 0 {
		params["rows_requested"] = o.Rows
	}
	params["row_order"] = "uniformly random (post-processing with the run's randomness)"
	// With measures, the rows are drawn first (post-processing, the same
	// draws as below) so that every row's measure value SUMhat(g)/rows(g)
	// is known before the file is written.
	var drawn []int64
	if mplan != nil {
		drawn = make([]int64, 0, rows)
		if err := Shuffle(rand.New(src), cells, counts, rows, mode, func(cell int64) error {
			drawn = append(drawn, cell)
			return nil
		}); err != nil {
			return nil, err
		}
		if err := mplan.count(dec, sizes, drawn); err != nil {
			return nil, err
		}
		params["measures"] = mplan.params()
		for _, m := range mplan.summaries() {
			log.Info("measure written", "column", m.Column.String(), "output_column", m.OutputColumn, "grid_cells", len(m.CellSums),
				"cells_without_rows", m.CellsWithoutRows, "lost_sum", m.LostSum)
		}
	}
	if o.BudgetOverride {
		params["budget_source"] = "command line (--epsilon/--delta), overriding the spec's privacy section"
	}
	report := ledger.Report(dp.ReportMeta{
		Neighbours:      Neighbours,
		Mechanism:       algStr,
		Seeded:          src.Seeded(),
		SoftwareVersion: version.String(),
		SpecDigest:      s.Digest(),
		Parameters:      params,
		CreatedAt:       started.Format(time.RFC3339),
		Columns:         names,
		Inputs:          InputFiles(s),
	})
	reportJSON, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}

	// Every file goes into the staging folder; Publish makes the folder
	// the release at once.
	parquetPath := filepath.Join(stage.Dir(), ParquetName)
	reportPath := filepath.Join(stage.Dir(), ReportName)
	var measureCols []MeasureColumn
	if mplan != nil {
		measureCols = mplan.columns(sizes)
	}
	w, err := NewMeasureWriter(parquetPath, names, cols, measureCols, map[string]string{MetadataKey: string(reportJSON)})
	if err != nil {
		return nil, err
	}
	defer w.Abort()
	log.Info("writing synthetic rows", "rows", rows, "sampling", string(mode), "folder", stage.Target())
	// Progress every 10% on stderr (the log), for outputs large enough to
	// take a moment.
	// The progress function hears of every progressEvery rows and of the
	// last one.
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
		o.progress(PhaseWrite, n, rows)
		if d := n * 10 / rows; rows >= progressRows && d > decile {
			decile = d
			log.Info("writing synthetic rows", "written", n, "of", rows, "percent", n*100/rows)
		}
		return nil
	}
	if mplan != nil {
		for _, c := range drawn {
			if err = emit(c); err != nil {
				break
			}
		}
	} else {
		err = Shuffle(rand.New(src), cells, counts, rows, mode, emit)
	}
	cells, counts, drawn = nil, nil, nil
	if err != nil {
		return nil, err
	}
	pf, err := w.Finish()
	if err != nil {
		return nil, err
	}
	var files Group
	files.Add(pf)
	rf, err := files.Create(reportPath, 0o644)
	if err != nil {
		files.Abort()
		return nil, err
	}
	if _, err := rf.Write(append(reportJSON, '\n')); err != nil {
		files.Abort()
		return nil, fmt.Errorf("release: %w", err)
	}
	// The same report for a compliance reader, published with the rest.
	mf, err := files.Create(filepath.Join(stage.Dir(), MarkdownName), 0o644)
	if err != nil {
		files.Abort()
		return nil, err
	}
	if _, err := mf.Write(MarkdownReport(report, FactsFor(s, w.Rows()))); err != nil {
		files.Abort()
		return nil, fmt.Errorf("release: %w", err)
	}
	if err := ctx.Err(); err != nil {
		files.Abort()
		return nil, err
	}
	if err := files.Commit(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	replaced, err := stage.Publish(o.Overwrite)
	if err != nil {
		return nil, err
	}
	dir = stage.Target()
	parquetPath, reportPath = filepath.Join(dir, ParquetName), filepath.Join(dir, ReportName)
	log.Info("release written", "rows", w.Rows(), "folder", dir, "replaced_previous_release", replaced)
	sum := &Summary{
		Dir: dir, Parquet: parquetPath, Report: reportPath, Rows: w.Rows(),
		NHat: out.nhat, DeltaTilde: out.deltaTilde, Privacy: report,
	}
	if mplan != nil {
		sum.Measures = mplan.summaries()
	}
	return sum, nil
}
