package spec

import (
	"time"
)

// ColumnType is the declared type of a column.
type ColumnType string

// The column types. Only key columns may be join columns' only role; every
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
	Day   Granularity = "day"
	Month Granularity = "month"
	Year  Granularity = "year"
)

// Method is the release algorithm.
type Method string

// The release methods.
const (
	// JoinAsOne treats the join result as one table (Ghazi et al. Alg. 1/3).
	JoinAsOne Method = "join-as-one"
	// Uniformized partitions the instance by noisy degrees first (Alg. 4–7).
	Uniformized Method = "uniformized"
)

// Spec is a validated release specification. Paths in it are absolute (or
// as given when the spec was parsed from memory without a directory).
type Spec struct {
	// File is the path the spec was read from; empty when parsed from
	// memory.
	File string
	// Privacy is the budget of the whole run.
	Privacy Privacy
	// Tables lists the input tables in declaration order.
	Tables []Table
	// Join lists the join equalities. Relationships from the spec or from an
	// SDV metadata file are turned into equalities.
	Join []JoinEq
	// Release names the method and the released columns.
	Release Release
	// Workload lists the queries that must stay accurate.
	Workload Workload
	// Output is where a release is written.
	Output Output
}

// Privacy is the (ε, δ) budget of a run.
type Privacy struct {
	Epsilon float64
	Delta   float64
}

// Table is one input relation.
type Table struct {
	// Name is the relation name, unique in the spec.
	Name string
	// Source is the data file, CSV or Parquet.
	Source string
	// Format is "csv" or "parquet", from the spec or the file extension.
	Format string
	// Public tables never change between neighbouring instances.
	Public bool
	// PrimaryKey lists the primary key columns (possibly empty).
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
	// integer or numeric column: k bins [e_i, e_{i+1}), the last one closed.
	// Then Min = e0 and Max = ek.
	BinEdges []float64
	// DateMin and DateMax bound a date column (inclusive, UTC midnight).
	DateMin, DateMax time.Time
	// Granularity is a date column's bin width.
	Granularity Granularity
	// OutOfDomain is the policy for values outside the domain.
	OutOfDomain OutOfDomain
}

// ColumnRef names a column of a table.
type ColumnRef struct {
	Table  string
	Column string
}

// String renders the reference as table.column.
func (r ColumnRef) String() string { return r.Table + "." + r.Column }

// JoinEq is one join equality Left = Right.
type JoinEq struct {
	Left, Right ColumnRef
}

// Release names the method and the released columns.
type Release struct {
	Method  Method
	Columns []ColumnRef
}

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
}

// RangeQuery asks for all ranges [lo, hi] of an ordered released column
// (integer, numeric or date, in bin units), for every cell of the marginal
// over By.
type RangeQuery struct {
	Column ColumnRef
	By     []ColumnRef
}

// NumericQuery is sum(Sum) over the join rows satisfying Where.
type NumericQuery struct {
	Sum   ColumnRef
	Where []Condition
}

// Condition restricts a column: to a closed interval [Lo, Hi] for ordered
// columns, or to a set of values for categorical and boolean columns.
type Condition struct {
	Column ColumnRef
	Lo, Hi float64
	Values []string
}

// Output is where a release is written.
type Output struct {
	// Path is the output folder.
	Path string
}
