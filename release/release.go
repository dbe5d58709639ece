package release

import (
	"errors"
	"log/slog"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/spec"
)

// ErrUnsupported is returned for a spec feature this version cannot run
// yet (e.g. the uniformized method).
var ErrUnsupported = errors.New("release: not supported yet")

// DefaultMaxRounds caps the automatic number of rounds of the paper PMW
// variant: a round costs about two passes over the universe, so 500 rounds
// over a universe of 10⁶ cells take seconds. The mwem variant (the default)
// has its own cap, pmw.DefaultMWEMMaxRounds.
const DefaultMaxRounds = 500

// RoundsLimit is the most PMW rounds a release may ask for (--rounds,
// --max-rounds): a public limit on the work. A round costs one selection
// and one measurement, each with a share of the budget that shrinks as
// the rounds grow (about 1/√T under advanced composition or zCDP), so at
// 10⁴ rounds every measurement is already far noisier than with the
// defaults (100 for mwem, 500 for paper); at the ~800 rounds/s measured on
// a small universe (issue 36) 10⁹ rounds would have run for two weeks.
const RoundsLimit = 10_000

// MinMemoryCap is the smallest memory cap (--memory-cap) a release
// accepts: the factored model's junction tree, [pmw.DefaultFactoredCells]
// float64 beliefs (16 MiB). Below it the factored model could never run,
// and only a tiny dense universe would fit.
const MinMemoryCap = 8 * pmw.DefaultFactoredCells

// testHookAdd, when set by a test, is called before every cell is added to
// the Parquet writer with the number of rows written so far.
var testHookAdd func(rows int64)

// Neighbours is the neighbour notion of the tuple-level releases
// (join-as-one, uniformized); see [Method.Neighbours] for each method's.
const Neighbours = tupleNeighbours

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
	// BeforeCharge, when set, is called once every check that can refuse
	// the run has passed — the plan's public checks, the output folder (a
	// previous release without Overwrite, the folder's lock), the load,
	// and a privacy unit's key checks — and before any statistic is read:
	// the CLI charges the lifetime ledger there, so that a refused run
	// spends nothing (the in-run ledger, charged before the load from
	// public parameters, is discarded with a refused run). An error stops
	// the run.
	BeforeCharge func() error
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
	// Signals says what each measured marginal carried (nil when the
	// method does not say); see [Headline].
	Signals []Signal
	// Headline is [Headline]'s sentence for this release ("" without
	// Signals), as its report states it.
	Headline string
	// NearZero, when not empty, says that the DP row count is within noise
	// of zero (see [NearZero]): the release must say so loudly.
	NearZero string
}
