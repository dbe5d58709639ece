package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// ColumnType is the declared type of a column.
type ColumnType string

// The column types. Key columns only serve joins and primary keys; every
// other type declares a public domain.
const (
	// Key columns hold identifiers used in joins. They are never released
	// and have no declared domain.
	Key ColumnType = "key"
	// Categorical columns take one of a declared list of values.
	Categorical ColumnType = "categorical"
	// Integer columns take integer values in [Min, Max].
	Integer ColumnType = "integer"
	// Numeric columns take real values in [Min, Max].
	Numeric ColumnType = "numeric"
	// Date columns take dates in [DateMin, DateMax], binned by Granularity.
	Date ColumnType = "date"
	// Boolean columns take true or false.
	Boolean ColumnType = "boolean"
)

// OutOfDomain says what to do with a value outside a column's declared
// domain.
type OutOfDomain string

// The out-of-domain policies.
const (
	// OutOfDomainError rejects the data with an error naming file, row,
	// column and value. It is the default.
	OutOfDomainError OutOfDomain = "error"
	// OutOfDomainClamp moves a numeric or date value to the nearest end of
	// its range. Categorical and boolean columns cannot be clamped.
	OutOfDomainClamp OutOfDomain = "clamp"
	// OutOfDomainDrop removes the row.
	OutOfDomainDrop OutOfDomain = "drop"
)

// Granularity of a date column's bins.
type Granularity string

// The date granularities.
const (
	// Day bins hold one day each. It is the default.
	Day Granularity = "day"
	// Month bins hold one calendar month each.
	Month Granularity = "month"
	// Year bins hold one calendar year each.
	Year Granularity = "year"
)

// Method is the release algorithm.
type Method string

// The release methods.
const (
	// JoinAsOne treats the join result as one table (Ghazi et al. Alg. 1/3).
	JoinAsOne Method = "join-as-one"
	// Uniformized partitions the instance by noisy degrees first (Alg. 4–7).
	Uniformized Method = "uniformized"
	// PrivacyUnit releases under user-level DP (privacy.unit): every unit's
	// contribution to the join is bounded, then measured (package
	// privacyunit). It is what auto picks whenever privacy.unit is set.
	PrivacyUnit Method = "privacy-unit"
	// Auto (the default) picks the method from the spec alone, never from
	// the data: privacy-unit when privacy.unit is set, join-as-one
	// otherwise (uniformized is opt-in; see release.ChooseMethod).
	Auto Method = "auto"
)

// Spec is a validated release specification, built by [Load] or [Parse].
// Paths in it are absolute: relative paths of the spec file resolve against
// the file's folder, or against the current directory when the spec was
// parsed from memory without a name. URLs (anything with "://") are kept as
// written.
type Spec struct {
	// File is the path the spec was read from, as given to [Load] or
	// [Parse]; empty when parsed from memory.
	File string
	// SDVMetadata is the SDV metadata file the spec names, as written in
	// the spec; empty when there is none.
	SDVMetadata string
	// Privacy is the budget of the whole run.
	Privacy Privacy
	// Tables lists the input tables in declaration order.
	Tables []Table
	// Join lists the join equalities. Relationships from the spec or from an
	// SDV metadata file are turned into equalities.
	Join []JoinEq
	// Orphans is the policy for foreign-key rows that reference no parent
	// row (join.orphans); OrphansError unless the spec says drop.
	Orphans Orphans
	// Release names the method and the released columns.
	Release Release
	// Workload lists the queries that must stay accurate.
	Workload Workload
	// PMW holds the options of the release's PMW step.
	PMW PMW
	// Output is where a release is written.
	Output Output

	raw []byte // the spec file's bytes, for Digest
}

// Digest is the SHA-256 (hex) of the spec file's bytes as read by [Load] or
// [Parse], for the privacy report. It does not cover the SDV metadata file
// or the data. A Spec built by hand (no file bytes) has no digest: "".
func (s *Spec) Digest() string {
	if s.raw == nil {
		return ""
	}
	sum := sha256.Sum256(s.raw)
	return hex.EncodeToString(sum[:])
}

// Weak privacy thresholds: a budget above either is accepted, with a
// warning ([Privacy.Warnings]).
const (
	WeakEpsilon = 10
	WeakDelta   = 1e-3
)

// Warnings returns the warnings about a budget that is valid but gives weak
// privacy: ε > [WeakEpsilon] or δ > [WeakDelta].
func (p Privacy) Warnings() []string {
	var out []string
	if p.Epsilon > WeakEpsilon {
		out = append(out, fmt.Sprintf("ε = %s > %d: this setting gives weak privacy", formatFloat(p.Epsilon), WeakEpsilon))
	}
	if p.Delta > WeakDelta {
		out = append(out, fmt.Sprintf("δ = %s > %s: this setting gives weak privacy", formatFloat(p.Delta), formatFloat(WeakDelta)))
	}
	return out
}

// Privacy is the (ε, δ) budget of a run: ε > 0 and 0 ≤ δ < 1, both finite.
type Privacy struct {
	// Epsilon is ε of the whole run.
	Epsilon float64
	// Delta is δ of the whole run; 0 asks for pure ε-DP.
	Delta float64
	// Unit names the primary private relation for user-level DP
	// (privacy.unit; synth answer's R2T): a tuple of any other relation
	// belongs to the unit it references by foreign keys. Empty means
	// tuple-level DP, which is what releases use.
	Unit string
	// MaxUnitRows is a public bound on the join rows one unit reaches
	// (privacy.max_unit_rows; 0 when not declared): the top of the clip
	// ladder of synth answer's clipped mechanism and R2T's GS_Q of a
	// count. It is public knowledge, never checked against the data (that
	// would leak): a unit with more rows is clipped to it, which only
	// lowers the answers, never the privacy.
	MaxUnitRows int64
	// Ledger is the lifetime budget ledger (privacy.ledger), an absolute
	// path resolved against the spec's folder; empty when the spec names
	// none. Every release and answer run on the spec appends its budget
	// there before it reads data (package dp/lifetime).
	Ledger string
	// Lifetime is the budget that all the runs recorded in the ledger may
	// spend together (privacy.lifetime); nil when the spec gives none.
	Lifetime *Lifetime
}

// Lifetime is a lifetime (ε, δ) budget: ε > 0 finite, 0 ≤ δ < 1.
type Lifetime struct {
	// Epsilon is the lifetime ε.
	Epsilon float64
	// Delta is the lifetime δ.
	Delta float64
}

// Table is one input relation.
type Table struct {
	// Name is the relation name, unique in the spec.
	Name string
	// Source is the data file, CSV or Parquet.
	Source string
	// Format is "csv" or "parquet", from the spec or the file extension
	// (.csv, .parquet or .pq, optionally followed by .gz or .zst).
	Format string
	// Public tables never change between neighbouring instances.
	Public bool
	// PrimaryKey lists the primary key columns (possibly empty). Each is a
	// declared column.
	PrimaryKey []string
	// Columns lists the declared columns in declaration order. Columns of
	// the file that are not declared are ignored.
	Columns []Column
}

// Column is a declared column and its public domain.
type Column struct {
	// Name is the column's name in the source file.
	Name string
	// Type is the declared type.
	Type ColumnType
	// Values lists a categorical column's values, in order.
	Values []string
	// Min and Max bound an integer or numeric column (inclusive).
	Min, Max float64
	// Bins is the number of equal-width bins of an integer or numeric
	// column; 0 when BinEdges is given. An integer column with neither has
	// one bin per integer.
	Bins int
	// BinEdges are explicit increasing bin edges e0 < e1 < ... < ek of an
	// integer or numeric column: k bins [e_i, e_{i+1}). For a numeric
	// column the last bin is closed, Min = e0 and Max = ek; for an integer
	// column the edges are whole numbers, every bin is half-open, Min = e0
	// and Max = ek − 1 (edges [1, 10, 25, 51] cover 1..50).
	BinEdges []float64
	// DateMin and DateMax bound a date column (inclusive, UTC midnight).
	DateMin, DateMax time.Time
	// Granularity is a date column's bin width. Month and year bins are
	// calendar months and years, so the first and last bins hold only the
	// part of their month or year inside [DateMin, DateMax].
	Granularity Granularity
	// OutOfDomain is the policy for values outside the domain; empty for
	// key columns, OutOfDomainError by default for the others.
	OutOfDomain OutOfDomain
	// Nullable (nullable: true) makes NULL a value of the column's public
	// domain: an empty CSV field or a Parquet null is loaded as NULL, which
	// takes one extra cell, the last ([Column.NullCell]), and is released
	// as NULL. Without it an empty value is refused. The declaration, not
	// the data, puts NULL in the domain: the domain stays public whether
	// or not the data holds a NULL. Key columns, join columns and primary
	// key columns cannot be nullable (a NULL key joins nothing), nor can a
	// release measure.
	Nullable bool
}

// ColumnRef names a column of a table.
type ColumnRef struct {
	// Table is the table's name.
	Table string
	// Column is the column's name in the table.
	Column string
}

// String renders the reference as table.column.
func (r ColumnRef) String() string { return r.Table + "." + r.Column }

// JoinEq is one join equality Left = Right between columns of two different
// tables. Equalities from relationships read child foreign key = parent
// primary key.
type JoinEq struct {
	// Left and Right are the equated columns.
	Left, Right ColumnRef
}

// Release names the method and the released columns: at least one,
// distinct, none of type key.
type Release struct {
	// Method is the release algorithm; Auto by default.
	Method Method
	// Beta is the smoothing parameter β of residual sensitivity used by
	// join-as-one on three or more relations; 0 means the paper's
	// β = 1/λ = ε/ln(1/δ). It must be public: chosen without looking at
	// the data.
	Beta float64
	// Columns lists the released columns in release order.
	Columns []ColumnRef
	// Rows, when > 0, is the number of synthetic rows to write, sampled
	// from the synthetic distribution (post-processing); --rows overrides
	// it. 0 writes the DP row count (up to the release's cap).
	Rows int64
	// Measures lists integer or numeric columns of the join (released or
	// not, each with its declared domain) whose sums are carried into the
	// output by the numerical-queries mechanism (Qiu et al., package
	// numerical): one float64 column per measure. Empty: no measure.
	Measures []ColumnRef
	// MeasuresShare is the share of ε spent on the measures, in (0, 1):
	// [DefaultMeasuresShare] when Measures is not empty and the spec gives
	// none; 0 when Measures is empty (the release is then unchanged).
	MeasuresShare float64
	// ContributionBound is r of a privacy-unit release
	// (release.contribution_bound): every unit's join rows together weigh
	// at most r rows; a unit with n > r rows has each row weighted r/n.
	// 0 means [DefaultContributionBound]. Public: chosen without looking at
	// the data.
	ContributionBound float64
	// ContributionBoundAuto (release.contribution_bound: auto) chooses r
	// privately in the release, with a small share of ε: a noisy quantile
	// of the units' join rows (package privacyunit). ContributionBound is
	// then 0.
	ContributionBoundAuto bool
	// ContributionNorm (release.contribution_norm) is how a privacy-unit
	// release bounds each unit in the marginals its rounds measure:
	// [NormL1] (each unit's rows weigh at most r in all, the same weight
	// in every marginal) or [NormL2] (each unit's vector over a measured
	// marginal's cells is clipped to L2 norm r, Dong–Sun–Yi's clipping;
	// selection and the 1-way marginals stay L1). "" means
	// [DefaultContributionNorm].
	ContributionNorm Norm
	// Output (release.output) is what a privacy-unit release writes:
	// [OutputTables] (the synthetic tables with their keys, and their
	// join) or [OutputJoin] (the join alone). "" means [OutputJoin]; see
	// [Release.OutputKind].
	Output OutputKind
	// SiblingClasses (release.sibling_classes, tables output only) gives
	// every parent row of the tables release a sibling class per child
	// table: the most frequent value of the child's first small released
	// column among its children, released with the parent and conditioned
	// on by the children, so siblings are alike as often as in the data.
	// Off by default: it spends budget on the class at two levels, which
	// costs the join marginals at small ε (docs/relational.md).
	SiblingClasses bool
}

// OutputKind is what a release writes (release.output).
type OutputKind string

// The output kinds.
const (
	// OutputJoin writes one Parquet file of the join's released columns.
	OutputJoin OutputKind = "join"
	// OutputTables also writes every private table of the unit's
	// ownership tree with synthetic keys (tables/<table>.parquet), and
	// the join file as the join of those tables. It needs privacy.unit.
	OutputTables OutputKind = "tables"
)

// OutputKind returns the release's output kind: Output, or [OutputJoin]
// when it is "".
func (r Release) OutputKind() OutputKind {
	if r.Output == "" {
		return OutputJoin
	}
	return r.Output
}

// Norm is the norm of a privacy-unit release's contribution bound.
type Norm string

// The contribution norms (release.contribution_norm).
const (
	NormL1 Norm = "l1"
	NormL2 Norm = "l2"
)

// DefaultContributionNorm is the contribution norm when the spec gives
// none: L2 measured better than L1 on TPC-H and Online Retail at every ε
// (docs/privacy-units.md). It needs the factored model; a release on the
// dense model without an explicit norm bounds in L1.
const DefaultContributionNorm = NormL2

// Norm returns the contribution norm of a privacy-unit release:
// ContributionNorm, or [DefaultContributionNorm] when it is "".
func (r Release) Norm() Norm {
	if r.ContributionNorm == "" {
		return DefaultContributionNorm
	}
	return r.ContributionNorm
}

// DefaultContributionBound is r of a privacy-unit release when the spec
// gives none: every unit counts as at most one row. Measured on TPC-H
// customer ⋈ orders ⋈ lineitem (docs/privacy-units.md): r = 1 was within
// noise of the best r chosen in hindsight.
const DefaultContributionBound = 1.0

// Bound returns r of a privacy-unit release: ContributionBound, or
// [DefaultContributionBound] when it is 0.
func (r Release) Bound() float64 {
	if r.ContributionBound == 0 {
		return DefaultContributionBound
	}
	return r.ContributionBound
}

// DefaultMeasuresShare is the share of ε a release spends on its measures
// when release.measures is set and release.measures_share is not; each of
// m measures gets DefaultMeasuresShare·ε/m, the rows the rest.
//
// 0.6 (0.2 before issue 38): a measure's whole-file sum is measured
// directly at 40% of its share (release.MeasureTotalShare), with Laplace
// noise of scale Δ/ε_T for a tuple that moves it by up to Δ. On Adult
// (capital-loss, Δ = 4,356, truth 2.84 M, ε = 1) the targets — the
// whole-file sum within 2% in 9 runs of 10 and the workload boxes' median
// relative error at most 5% — need ε_T ≥ 0.23 or so: at 0.2 the sum was
// within 2% in 5 of 10 seeds (box error 0.088), at 0.5 and 0.6 in 10 of
// 10 (0.043, 0.036); 0.6 because the targets must hold beyond those seeds
// (9 runs of 10 within 2% with probability 0.93 at 0.6, 0.83 at 0.5). The
// price is the rows' ε, (1 − share)·ε: the same release's count
// marginals' mean TVD rose from 0.0039 to 0.0074 (docs/measures.md).
const DefaultMeasuresShare = 0.6

// PMW holds the public options of private multiplicative weights (the
// spec's pmw section). Empty fields take the pmw package's defaults.
type PMW struct {
	// Model is how PMW stores its distribution: "auto" (or empty: dense
	// weights when the universe fits the memory cap, else the factored
	// model), "dense" or "factored" (a graphical model whose factors are
	// the measured column sets; package pmw).
	Model string
	// Variant is "mwem" (whole-marginal rounds, zCDP; the default) or
	// "paper" (Ghazi et al. App. A as stated: one query per round, half
	// the budget on n̂).
	Variant string
	// Noise is "gaussian" (the default) or "laplace": the measurement noise
	// and accounting of the mwem variant.
	Noise string
	// NHatShare is the share of (ε, δ) the mwem variant spends on the
	// padded join size n̂, in (0, 1); 0 means the default (0.05).
	NHatShare float64
}

// PMW variants and noises accepted in the spec.
const (
	PMWVariantMWEM  = "mwem"
	PMWVariantPaper = "paper"
	PMWNoiseGauss   = "gaussian"
	PMWNoiseLaplace = "laplace"
	// PMW models (pmw.model).
	PMWModelAuto     = "auto"
	PMWModelDense    = "dense"
	PMWModelFactored = "factored"
)

// Workload lists the queries that must stay accurate.
type Workload struct {
	// Marginals are sets of released columns whose marginal tables (every
	// cell a counting query) must stay accurate.
	Marginals [][]ColumnRef
	// Ranges are range queries over one ordered released column, optionally
	// inside a marginal.
	Ranges []RangeQuery
	// Numeric are sums of a numeric column over the rows that satisfy a
	// conjunction of per-column conditions.
	Numeric []NumericQuery
	// NoOneWay is set by one_way: false. By default the release adds the
	// 1-way marginal of every released column to the workload (a column no
	// query covers comes out near uniform); NoOneWay keeps the workload to
	// the listed queries. It needs at least one listed query.
	NoOneWay bool
}

// Empty reports whether the workload lists no query; the release then
// uses every 1-way and 2-way marginal of the released columns.
func (w Workload) Empty() bool {
	return len(w.Marginals) == 0 && len(w.Ranges) == 0 && len(w.Numeric) == 0
}

// RangeQuery asks for all ranges [lo, hi] of an ordered released column
// (integer, numeric or date, in bin units), for every cell of the marginal
// over By.
type RangeQuery struct {
	// Column is the released ordered column the ranges run over.
	Column ColumnRef
	// By lists released columns whose every cell gets its own ranges;
	// empty for plain ranges.
	By []ColumnRef
}

// NumericQuery is sum(Sum) over the join rows satisfying Where.
type NumericQuery struct {
	// Sum is a declared integer or numeric column. It need not be
	// released: the numerical-query mechanisms (Qiu et al.) carry it
	// through their universe reduction.
	Sum ColumnRef
	// Where is a conjunction of conditions on released columns; empty
	// sums over every row.
	Where []Condition
}

// Condition restricts a column: to a closed interval [Lo, Hi] for integer
// and numeric columns, to [DateLo, DateHi] for date columns, or to a set of
// values for categorical and boolean columns (booleans as "true" and
// "false").
type Condition struct {
	// Column is the released column the condition restricts.
	Column ColumnRef
	// Lo and Hi bound an integer or numeric column's condition
	// (inclusive).
	Lo, Hi float64
	// DateLo and DateHi bound a date column's condition (inclusive, UTC
	// midnight).
	DateLo, DateHi time.Time
	// Values lists the accepted values of a categorical or boolean column.
	Values []string
}

// Output is where a release is written.
type Output struct {
	// Path is the output folder; empty when the spec has no output
	// section.
	Path string
}
