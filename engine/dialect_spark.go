package engine

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/synth-dp/synth/spec"
)

// spark is the [dialect] of Spark SQL 3.4 and later, for the statistics
// SQL only. It is NOT run against a live engine: no Spark cluster is
// available where synth is tested, so its output is checked by golden
// files of the generated statements (TestGoldenStatisticsSQL,
// testdata/golden/), not by executing them. [Open] has no scheme for it.
//
// Loading does not go through this dialect: Spark reads files through its
// own data sources, so [spark.source] and [spark.columns] return
// statements that fail with a "not supported" message. The statistics
// need only the expression methods, identifiers, literals and plain
// SELECT … JOIN … GROUP BY, which Spark SQL supports as generated (GROUP BY
// ordinals, spark.sql.groupByOrdinal, are on by default). Replacing a
// table (CREATE OR REPLACE TABLE … AS) needs a catalog that supports it,
// such as Delta Lake's.
type spark struct{}

var _ dialect = spark{}

// ident quotes with backticks, doubling a backtick inside.
func (spark) ident(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// str escapes a backslash and a quote with a backslash: Spark SQL reads
// backslash escapes in literals (spark.sql.parser.escapedStringLiterals is
// off by default).
func (spark) str(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func (d spark) float(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "CAST('Infinity' AS DOUBLE)"
	case math.IsInf(f, -1):
		return "CAST('-Infinity' AS DOUBLE)"
	case math.IsNaN(f):
		return "CAST('NaN' AS DOUBLE)"
	}
	return "CAST(" + d.str(strconv.FormatFloat(f, 'g', -1, 64)) + " AS DOUBLE)"
}

func (spark) date(t time.Time) string { return duckDB{}.date(t) }

func (d spark) source(*spec.Table, []string, []string, map[string]string) (string, string) {
	return notSupported(d, "Spark SQL", "loading a source file"), "NULL"
}

func (d spark) columns(*spec.Table) string {
	return notSupported(d, "Spark SQL", "reading a file's columns")
}

// replaceTable has no TEMP form here: a temporary view would re-run its
// query at every use.
func (d spark) replaceTable(name, query string, _ bool) string { return orReplaceTable(d, name, query) }
func (d spark) replaceTableDef(name, cols string) string       { return orReplaceTableDef(d, name, cols) }
func (d spark) replaceView(name, query string) string          { return orReplaceView(d, name, query) }

func (spark) checkpoint() string { return "" }

// matches uses RLIKE (Java regular expressions, found anywhere, hence the
// anchors).
func (d spark) matches(expr, re string) string {
	return "(" + expr + " RLIKE " + d.str("^(?:"+re+")$") + ")"
}

func (spark) toDouble(expr string) string { return "TRY_CAST(" + expr + " AS DOUBLE)" }

// finite: abs(NaN) is NaN, which Spark orders above every number.
func (spark) finite(expr string) string {
	return "(abs(" + expr + ") < CAST('Infinity' AS DOUBLE))"
}
func (spark) toDate(expr string) string   { return "TRY_CAST(" + expr + " AS DATE)" }
func (spark) toBigint(expr string) string { return "CAST(" + expr + " AS BIGINT)" }
func (spark) toText(expr string) string   { return "CAST(" + expr + " AS STRING)" }
func (spark) floorInt(expr string) string { return "CAST(floor(" + expr + ") AS BIGINT)" }

func (d spark) plusZero(expr string) string { return casePlusZero(d, expr) }

// categoryIndex: array_position is 1-based and 0 when absent, which
// NULLIF turns into NULL.
func (d spark) categoryIndex(expr string, values []string) string {
	return "(NULLIF(array_position(array(" + strList(d, values) + "), " + expr + "), 0) - 1)"
}

func (d spark) dateIndex(expr string, min time.Time, g spec.Granularity) string {
	return calendarIndex(expr, min, g, "datediff("+expr+", "+d.date(min)+")")
}

func (spark) bigint() string { return "BIGINT" }
func (spark) double() string { return "DOUBLE" }
func (spark) wide() string   { return "DECIMAL(38, 0)" }
func (spark) text() string   { return "STRING" }
