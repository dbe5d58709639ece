package engine

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/synth-dp/synth/spec"
)

// dialect holds everything that differs between SQL engines. Callers build
// every statement through it, so that a second engine (PostgreSQL) needs a
// new implementation and no change elsewhere. Expressions are SQL text;
// every identifier passes through ident and every literal through str,
// float or date.
type dialect interface {
	// name is the engine's name in messages.
	// ident quotes an identifier.
	ident(name string) string
	// str renders a string literal.
	str(s string) string
	// float renders a DOUBLE literal that parses back to exactly f.
	float(f float64) string
	// date renders a DATE literal (UTC calendar day of t).
	date(t time.Time) string

	// source returns a SELECT reading the named columns of a file as text
	// (VARCHAR), in file order, plus the expression giving the 1-based data
	// row of each result row once the SELECT is stored in a table. kind is
	// the map from the file's column names to their types, from columns;
	// header is a CSV file's header (read by [csvHeader]): the engine
	// guesses nothing about a CSV file.
	source(t *spec.Table, header, cols []string, kind map[string]string) (sel string, row string)
	// columns returns a statement listing a Parquet file's columns: its
	// result rows hold (column_name, column_type) first.
	columns(t *spec.Table) string

	// replaceTable creates (or replaces) a table, temporary or not, from a
	// query.
	replaceTable(name, query string, temp bool) string
	// replaceTableDef creates (or replaces) an empty table with the given
	// column definitions ("id BIGINT, bucket INTEGER").
	replaceTableDef(name, cols string) string
	// replaceView creates (or replaces) a view.
	replaceView(name, query string) string
	// checkpoint is the statement writing committed changes to the
	// database file at [Engine.Close], "" when there is none to run.
	checkpoint() string

	// matches is a full-match regular expression test.
	matches(expr, re string) string
	// toDouble parses text to a DOUBLE, NULL when it does not parse.
	toDouble(expr string) string
	// finite tests that a DOUBLE is neither infinite nor NaN.
	finite(expr string) string
	// toDate parses text to a DATE, NULL when it does not parse.
	toDate(expr string) string
	// toBigint converts a DOUBLE holding an integer, or canonical integer
	// text, to a 64-bit integer.
	toBigint(expr string) string
	// plusZero maps a DOUBLE −0 to +0 and leaves every other value as it
	// is, in an expression the engine's optimiser cannot fold away, so that
	// DOUBLE values equal under = are also equal as text (see
	// [canonicalNumber]).
	plusZero(expr string) string
	// toText converts any value to text.
	toText(expr string) string
	// floorInt is ⌊expr⌋ as a 64-bit integer.
	floorInt(expr string) string
	// categoryIndex is the 0-based position of expr in values, NULL when
	// absent.
	categoryIndex(expr string, values []string) string
	// dateIndex is the number of whole granules from min to the DATE expr,
	// exactly as spec.Column.Bin counts them.
	dateIndex(expr string, min time.Time, g spec.Granularity) string
	// bigint is the type name of a 64-bit integer, double of a float,
	// text of a string.
	bigint() string
	double() string
	text() string
	// wide is the type name of an exact integer of at least 125 bits, in
	// which the product of two counts below [countCap] is exact.
	wide() string
}

// duckDB is the [dialect] of DuckDB 1.5.
type duckDB struct{}

var _ dialect = duckDB{}

func (duckDB) ident(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

func (duckDB) str(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

func (d duckDB) float(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "CAST('inf' AS DOUBLE)"
	case math.IsInf(f, -1):
		return "CAST('-inf' AS DOUBLE)"
	case math.IsNaN(f):
		return "CAST('nan' AS DOUBLE)"
	}
	// A bare 0.1 is a DECIMAL in DuckDB; go through text to get the double
	// that strconv would produce.
	return "CAST(" + d.str(strconv.FormatFloat(f, 'g', -1, 64)) + " AS DOUBLE)"
}

func (duckDB) date(t time.Time) string {
	return "DATE '" + t.UTC().Format(time.DateOnly) + "'"
}

func (d duckDB) columns(t *spec.Table) string {
	return "DESCRIBE SELECT * FROM " + d.reader(t, nil, false)
}

// reader is the table function reading t's source; header is a CSV
// file's header.
func (d duckDB) reader(t *spec.Table, header []string, rowNumbers bool) string {
	if format(t) == "parquet" {
		if rowNumbers {
			return "read_parquet(" + d.str(t.Source) + ", file_row_number = true)"
		}
		return "read_parquet(" + d.str(t.Source) + ")"
	}
	// Nothing is sniffed: the sniffer could guess a file whose first rows
	// hold no quote to be unquoted, skip leading rows it takes for a
	// preamble, read a "#" line as a comment, rename duplicate header
	// names. The columns are the header's, all text; a record with more or
	// fewer fields is an error, whose line DuckDB reports.
	cols := make([]string, len(header))
	for i, h := range header {
		cols[i] = d.str(h) + ": 'VARCHAR'"
	}
	return "read_csv(" + d.str(t.Source) +
		", auto_detect = false, header = true, skip = 0, columns = {" + strings.Join(cols, ", ") + "}" +
		", delim = ',', quote = '\"', escape = '\"', comment = '', strict_mode = true, null_padding = false" +
		", compression = '" + csvCompression(t.Source) + "'" +
		fmt.Sprintf(", max_line_size = %d, buffer_size = %d)", recordLimit, recordLimit)
}

func (d duckDB) source(t *spec.Table, header, cols []string, kind map[string]string) (string, string) {
	sel := make([]string, 0, len(cols)+1)
	if format(t) == "parquet" {
		sel = append(sel, "file_row_number + 1 AS "+d.ident(rowColumn))
		for _, c := range cols {
			q := d.ident(c)
			ty := strings.ToUpper(kind[c])
			var e string
			switch {
			case ty == "VARCHAR" || ty == typedKind:
				e = q
			case keyColumn(t, c) && (ty == "DOUBLE" || ty == "FLOAT" || ty == "REAL"):
				// An integral float key prints as its integer (7.0 and
				// 1e16 as 7 and 10000000000000000, −0.0 as 0), so that it
				// joins the integer key of another table; see
				// [canonicalKey]. 1e18 bounds the BIGINT cast.
				e = "CASE WHEN isfinite(" + q + ") AND " + q + " = trunc(" + q + ") AND abs(" + q + ") < 1e18 THEN CAST(CAST(" + q +
					" AS BIGINT) AS VARCHAR) ELSE CAST(" + q + " AS VARCHAR) END"
			case strings.HasPrefix(ty, "TIMESTAMP"):
				// A timestamp at midnight is a date; anything else is
				// reported as it prints.
				e = "CASE WHEN CAST(" + q + " AS DATE) = " + q + " THEN CAST(CAST(" + q + " AS DATE) AS VARCHAR) ELSE CAST(" + q + " AS VARCHAR) END"
			default:
				e = "CAST(" + q + " AS VARCHAR)"
			}
			if keyColumn(t, c) && ty != typedKind {
				e = canonicalKey(d, e)
			}
			sel = append(sel, e+" AS "+q)
		}
		return "SELECT " + strings.Join(sel, ", ") + " FROM " + d.reader(t, nil, true), d.ident(rowColumn)
	}
	for _, c := range cols {
		q := d.ident(c)
		if keyColumn(t, c) {
			q = canonicalKey(d, q) + " AS " + q
		}
		sel = append(sel, q)
	}
	// read_csv has no row-number column; the staging table keeps the file
	// order (preserve_insertion_order is set when the engine opens), so the
	// row id of a freshly created table is the record number minus one.
	return "SELECT " + strings.Join(sel, ", ") + " FROM " + d.reader(t, header, false), "(rowid + 1)"
}

func (d duckDB) replaceTable(name, query string, temp bool) string {
	if temp {
		return "CREATE OR REPLACE TEMP TABLE " + d.ident(name) + " AS " + query
	}
	return orReplaceTable(d, name, query)
}

func (d duckDB) replaceTableDef(name, cols string) string { return orReplaceTableDef(d, name, cols) }
func (d duckDB) replaceView(name, query string) string    { return orReplaceView(d, name, query) }

// orReplaceTable, orReplaceTableDef and orReplaceView are the CREATE OR
// REPLACE statements that DuckDB, Trino and Spark SQL spell alike.
func orReplaceTable(d dialect, name, query string) string {
	return "CREATE OR REPLACE TABLE " + d.ident(name) + " AS " + query
}

func orReplaceTableDef(d dialect, name, cols string) string {
	return "CREATE OR REPLACE TABLE " + d.ident(name) + " (" + cols + ")"
}

func orReplaceView(d dialect, name, query string) string {
	return "CREATE OR REPLACE VIEW " + d.ident(name) + " AS " + query
}

func (duckDB) checkpoint() string { return "CHECKPOINT" }

func (duckDB) matches(expr, re string) string {
	return "regexp_full_match(" + expr + ", " + duckDB{}.str(re) + ")"
}

func (duckDB) toDouble(expr string) string { return "TRY_CAST(" + expr + " AS DOUBLE)" }
func (duckDB) finite(expr string) string   { return "isfinite(" + expr + ")" }
func (duckDB) toDate(expr string) string   { return "TRY_CAST(" + expr + " AS DATE)" }
func (duckDB) toBigint(expr string) string { return "CAST(" + expr + " AS BIGINT)" }
func (duckDB) toText(expr string) string   { return "CAST(" + expr + " AS VARCHAR)" }
func (duckDB) floorInt(expr string) string { return "CAST(floor(" + expr + ") AS BIGINT)" }

// plusZero compares with 0 and substitutes a +0 literal: −0 = 0 is true, so
// −0 becomes +0. DuckDB 1.5 keeps this CASE as written (it does not rewrite
// it to expr), whereas arithmetic such as expr + 0.0 is the kind of identity
// an optimiser may drop; TestJoinEqualityNegativeZero fails if it is ever
// folded away.
func (d duckDB) plusZero(expr string) string { return casePlusZero(d, expr) }

// casePlusZero is the CASE mapping −0 to +0 (see duckDB.plusZero).
func casePlusZero(d dialect, expr string) string {
	return "CASE WHEN " + expr + " = 0 THEN CAST(0 AS " + d.double() + ") ELSE " + expr + " END"
}

func (d duckDB) categoryIndex(expr string, values []string) string {
	return "(list_position([" + strList(d, values) + "], " + expr + ") - 1)"
}

func (d duckDB) dateIndex(expr string, min time.Time, g spec.Granularity) string {
	return calendarIndex(expr, min, g, "date_diff('day', "+d.date(min)+", "+expr+")")
}

// calendarIndex is [dialect.dateIndex] for engines with year() and
// month(): whole months or years from min to expr, or days, the dialect's
// own day difference.
func calendarIndex(expr string, min time.Time, g spec.Granularity, days string) string {
	min = min.UTC()
	switch g {
	case spec.Month:
		return fmt.Sprintf("((year(%s) - %d) * 12 + month(%s) - %d)", expr, min.Year(), expr, int(min.Month()))
	case spec.Year:
		return fmt.Sprintf("(year(%s) - %d)", expr, min.Year())
	default:
		return days
	}
}

func (duckDB) bigint() string { return "BIGINT" }
func (duckDB) double() string { return "DOUBLE" }
func (duckDB) wide() string   { return "HUGEINT" }
func (duckDB) text() string   { return "VARCHAR" }

// format is the table's source format, from the spec or the extension.
func format(t *spec.Table) string {
	if t.Format != "" {
		return strings.ToLower(t.Format)
	}
	if f := spec.FormatOf(t.Source); f != "" {
		return f
	}
	return "csv"
}
