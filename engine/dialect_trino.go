package engine

import (
	"math"
	"strconv"
	"time"

	"github.com/synth-dp/synth/spec"
)

// trino is the [dialect] of Trino (and Presto), for the statistics SQL
// only. It is NOT run against a live engine: no Trino server is available
// where synth is tested, so its output is checked by golden files of the
// generated statements (TestGoldenStatisticsSQL, testdata/golden/), not by
// executing them. [Open] has no scheme for it.
//
// Loading does not go through this dialect: Trino reads files through its
// own connectors (Hive, Iceberg, Delta Lake catalogs), so [trino.source]
// and [trino.columns] return statements that fail with a "not supported"
// message rather than a file reader. The statistics need only the
// expression methods, identifiers, literals and plain SELECT … JOIN …
// GROUP BY, which Trino supports as generated (GROUP BY ordinals included).
type trino struct{}

var _ dialect = trino{}

// notSupported is a statement that fails, naming what is not supported
// and why, on engines that read files through their own connectors.
func notSupported(d dialect, engine, what string) string {
	return "SELECT CAST(" + d.str("synth: "+what+" is not supported on "+engine+
		" (read the files through a catalog of the engine)") + " AS INTEGER)"
}

func (trino) ident(name string) string { return duckDB{}.ident(name) }

// str renders a literal: Trino strings have no backslash escapes.
func (trino) str(s string) string { return duckDB{}.str(s) }

// float renders a DOUBLE through a typed literal of its shortest
// round-trip text (a bare 0.1 would be a DECIMAL).
func (d trino) float(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "infinity()"
	case math.IsInf(f, -1):
		return "-infinity()"
	case math.IsNaN(f):
		return "nan()"
	}
	return "DOUBLE " + d.str(strconv.FormatFloat(f, 'g', -1, 64))
}

func (trino) date(t time.Time) string { return duckDB{}.date(t) }

func (d trino) source(*spec.Table, []string, []string, map[string]string) (string, string) {
	return notSupported(d, "Trino", "loading a source file"), "NULL"
}

func (d trino) columns(*spec.Table) string {
	return notSupported(d, "Trino", "reading a file's columns")
}

// replaceTable has no TEMP form: Trino has no temporary tables.
func (d trino) replaceTable(name, query string, _ bool) string { return orReplaceTable(d, name, query) }
func (d trino) replaceTableDef(name, cols string) string       { return orReplaceTableDef(d, name, cols) }
func (d trino) replaceView(name, query string) string          { return orReplaceView(d, name, query) }

func (trino) checkpoint() string { return "" }

// matches uses Java regular expressions (Trino's default library), which
// agree with RE2 on the loader's patterns; regexp_like finds a match
// anywhere, hence the anchors.
func (d trino) matches(expr, re string) string {
	return "regexp_like(" + expr + ", " + d.str("^(?:"+re+")$") + ")"
}

func (trino) toDouble(expr string) string { return "TRY_CAST(" + expr + " AS DOUBLE)" }
func (trino) finite(expr string) string   { return "is_finite(" + expr + ")" }
func (trino) toDate(expr string) string   { return "TRY_CAST(" + expr + " AS DATE)" }
func (trino) toBigint(expr string) string { return "CAST(" + expr + " AS BIGINT)" }
func (trino) toText(expr string) string   { return "CAST(" + expr + " AS VARCHAR)" }
func (trino) floorInt(expr string) string { return "CAST(floor(" + expr + ") AS BIGINT)" }

func (d trino) plusZero(expr string) string {
	return "CASE WHEN " + expr + " = 0 THEN CAST(0 AS " + d.double() + ") ELSE " + expr + " END"
}

// categoryIndex: array_position is 1-based and 0 when absent, which
// NULLIF turns into NULL.
func (d trino) categoryIndex(expr string, values []string) string {
	return "(NULLIF(array_position(ARRAY[" + strList(d, values) + "], " + expr + "), 0) - 1)"
}

func (d trino) dateIndex(expr string, min time.Time, g spec.Granularity) string {
	return calendarIndex(expr, min, g, "date_diff('day', "+d.date(min)+", "+expr+")")
}

func (trino) bigint() string { return "BIGINT" }
func (trino) double() string { return "DOUBLE" }
func (trino) wide() string   { return "DECIMAL(38, 0)" }
func (trino) text() string   { return "VARCHAR" }
