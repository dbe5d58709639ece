package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/synth-dp/synth/spec"
)

// ErrUnsupported is wrapped by errors about an engine, data source or
// feature this package does not (yet) support, such as a DSN scheme other
// than duckdb.
var ErrUnsupported = errors.New("engine: unsupported")

// ErrInvalid is wrapped by errors about invalid arguments to the statistics
// methods: unknown relations or attributes, an empty or disconnected set of
// relations, histogram sizes that do not match the columns.
var ErrInvalid = errors.New("engine: invalid argument")

// ErrData is wrapped by every error caused by the contents of an input file:
// a value outside its column's declared domain ([*DataError]), a declared
// column the file lacks, a file that cannot be read.
var ErrData = errors.New("engine: bad input data")

// DataError is a value outside its column's declared domain. Row is the
// 1-based data row of the file: for a CSV file the record number with the
// header not counted, for a Parquet file the row index plus one.
type DataError struct {
	// File is the table's source as given in the spec.
	File string
	// Row is the 1-based data row.
	Row int64
	// Column is the declared column's name.
	Column string
	// Value is the raw value as text; empty for an empty (NULL) value.
	Value string
	// Problem says what is wrong: "is empty", "is not a number", "is not an
	// integer", "is out of range", "is not a declared category", "is not a
	// boolean (true/false/t/f/1/0)" or "is not a date (YYYY-MM-DD)".
	Problem string
	// Expected describes the declared domain, e.g. "numeric in [0, 600000]".
	Expected string
}

// Error renders the error as
//
//	testdata/tpch/orders.csv: row 17, column o_totalprice: value "abc" is not a number (expected numeric in [0, 600000])
//
// and an empty value with a hint at nullable: true.
func (e *DataError) Error() string {
	if e.Problem == problemEmpty {
		return fmt.Sprintf("%s: row %d, column %s: value is empty (expected %s); if the column has missing values, declare it nullable: true to load them as NULL",
			e.File, e.Row, e.Column, e.Expected)
	}
	return fmt.Sprintf("%s: row %d, column %s: value %q %s (expected %s)", e.File, e.Row, e.Column, e.Value, e.Problem, e.Expected)
}

// Unwrap returns [ErrData].
func (e *DataError) Unwrap() error { return ErrData }

// The problems a [DataError] reports; the SQL checks return the short codes.
const (
	problemEmpty = "is empty"
)

// problems maps the reason codes of the SQL domain checks to
// [DataError.Problem].
var problems = map[string]string{
	codeEmpty:    problemEmpty,
	codeNumber:   "is not a number",
	codeInteger:  "is not an integer",
	codeRange:    "is out of range",
	codeCategory: "is not a declared category",
	codeBoolean:  "is not a boolean (true/false/t/f/1/0)",
	codeDate:     "is not a date (YYYY-MM-DD)",
}

// The reason codes the SQL domain checks produce.
const (
	codeEmpty    = "empty"
	codeNumber   = "number"
	codeInteger  = "integer"
	codeRange    = "range"
	codeCategory = "category"
	codeBoolean  = "boolean"
	codeDate     = "date"
)

// StatError is the error of a statistics query — degrees, T_E, join
// sizes, histograms, bucket and partition queries, aggregates — run on the
// loaded (private) data. Its message is fixed: it names the statistic and
// holds no value, because these queries run after the budget is charged
// and an engine's own message may quote private numbers ("Overflow in
// multiplication of INT64 (140737488355328 * 65536)"), which would then
// leave the process through a log or an exit message, differently on
// neighbouring instances. The engine's error stays reachable for
// errors.Is and errors.As (it is not printed), and a cancelled or expired
// context is among the wrapped errors, so errors.Is(err,
// context.Canceled) holds after a cancellation whatever the driver
// reports.
type StatError struct {
	// Stat names the statistic, with public names only (tables,
	// attributes), e.g. "T_E of [orders lineitem]".
	Stat string
	errs []error
}

// Error returns "engine: <Stat>: the statistics query failed", and says
// so when the engine ran out of memory (a fixed sentence: DuckDB's own
// message is withheld too, its sizes depend on the data).
func (e *StatError) Error() string {
	if e.outOfMemory() {
		return "engine: " + e.Stat + ": the engine ran out of memory (the engine's message is withheld: it may quote private data): raise " +
			MemoryLimitEnv + " (e.g. 1GB) or free memory"
	}
	return "engine: " + e.Stat + ": the statistics query failed (the engine's message is withheld: it may quote private data)"
}

// Unwrap returns the context's error, when it was done, and the engine's,
// and [ErrResource] when the engine ran out of memory.
func (e *StatError) Unwrap() []error {
	if e.outOfMemory() {
		return append(slices.Clone(e.errs), ErrResource)
	}
	return e.errs
}

// outOfMemory reports whether the engine's error is DuckDB's out of
// memory.
func (e *StatError) outOfMemory() bool {
	for _, err := range e.errs {
		if isOutOfMemory(err) {
			return true
		}
	}
	return false
}

// isOutOfMemory reports whether err is DuckDB's out-of-memory error
// ("Out of Memory Error: could not allocate block …"): a query that needed
// more of memory_limit than DuckDB could free by evicting and spilling.
func isOutOfMemory(err error) bool {
	var de *duckdb.Error
	return errors.As(err, &de) && de.Type == duckdb.ErrorTypeOutOfMemory
}

// statError wraps err, the failure of the statistics query stat, into a
// [*StatError]; nil stays nil, and an error that already is one is
// returned as it is.
func statError(ctx context.Context, stat string, err error) error {
	if err == nil {
		return nil
	}
	var se *StatError
	if errors.As(err, &se) {
		return err
	}
	errs := []error{err}
	if c := ctx.Err(); c != nil && !errors.Is(err, c) {
		errs = append([]error{c}, errs...)
	}
	return &StatError{Stat: stat, errs: errs}
}

// ErrResource is wrapped when the engine runs out of scratch disk space or
// memory while it works: not a problem of the input data.
var ErrResource = errors.New("engine: out of resources")

// ResourceError is the engine running out of scratch disk space or memory
// while it reads or checks a table. Cause is the engine's first line.
type ResourceError struct {
	// Table is the table being loaded.
	Table string
	// Disk is true for a full scratch disk, false for memory.
	Disk bool
	// Cause is the engine's message (its first line).
	Cause string
}

// Error says what ran out and what to do.
func (e *ResourceError) Error() string {
	if e.Disk {
		return fmt.Sprintf("engine: table %s: the engine's scratch disk is full (%s): free space in %s, set TMPDIR to a larger disk, or give --engine duckdb:PATH on one",
			e.Table, e.Cause, os.TempDir())
	}
	return fmt.Sprintf("engine: table %s: the engine ran out of memory (%s): raise %s (e.g. 8GiB) or free memory", e.Table, e.Cause, MemoryLimitEnv)
}

// Unwrap returns [ErrResource].
func (e *ResourceError) Unwrap() error { return ErrResource }

// scratchError returns a [*ResourceError] when err is the engine running
// out of disk space or memory while loading t, nil otherwise.
func scratchError(t *spec.Table, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	first, _, _ := strings.Cut(msg, "\n")
	switch {
	case errors.Is(err, syscall.ENOSPC), strings.Contains(msg, "No space left on device"), strings.Contains(msg, "Disk full"):
		return &ResourceError{Table: t.Name, Disk: true, Cause: strings.TrimSpace(first)}
	case strings.Contains(msg, "Out of Memory Error"):
		return &ResourceError{Table: t.Name, Cause: strings.TrimSpace(first)}
	}
	return nil
}
