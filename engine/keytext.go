package engine

import (
	"context"
	"fmt"

	"github.com/synth-dp/synth/spec"
)

// Keys compare as text. This is a privacy rule, written here once: every
// SQL builder that joins or selects on a key column — the engine's count
// plans, relational's mechanisms, relational/multi's contributions,
// numerical's join points — compares [Engine.KeyText] of both sides, never
// the raw columns.
//
// Why text. The load stores a key column as BIGINT when every value is a
// canonical integer and as text otherwise, a choice one tuple can flip
// (see [Engine.Load]). Comparing raw columns would let the SQL engine cast
// text to a number ("07" = 7) or refuse the comparison (PostgreSQL: bigint
// = text), so that the join reached other rows than the ones whose degrees
// the sensitivity bounds count: one added tuple could change an answer by
// more than Δ̃ or RS^β. A stored BIGINT prints canonically, so text equality
// is the same equality on both storages.
//
// What the text is. The load makes every stored key canonical per value
// (see [canonicalKey]): an integral numeric value — 7.0 from a Parquet
// DOUBLE, 7.00 from a DECIMAL, a pandas-style "7.0" in a CSV file, −0.0 —
// is stored as its integer text ("7", "0"), so that it joins the integer 7
// of another table; any other text is kept byte for byte ("07", "7.5",
// "-0" and "1e3" are keys of their own). −0 is thereby normalised before a
// key is ever compared, and KeyText need only cast: the dialect's text of
// a BIGINT or of a text value, the same bytes on DuckDB and PostgreSQL
// (TestKeyTextSameOnEngines).

// One exception, which changes no result: two key columns that the load
// stored as integers (see [integerType]) may be compared as stored. A
// stored integer key is canonical (the load stores a key as BIGINT only
// when its text is a canonical integer of at most 18 digits, see
// [Engine.Load]), and the text of an integer is its canonical decimal, an
// injective function of the value: for two integer columns a and b,
// a = b exactly when text(a) = text(b), and both are NULL when either side
// is NULL. So an integer equality reaches the same rows as the text
// equality, on every instance, and grouping by a stored integer forms the
// same groups as grouping by its text (its text read back in Go,
// strconv.FormatInt, is the same bytes as the SQL cast). Equality of a
// hash join on integers is several times cheaper than on text (TPC-H SF 1
// Q18: see relational's Keys). The form chosen depends on the stored types,
// which depend on the data, but the result does not: only the time does,
// as with the engine's own statistics ([joinValue]). Any other pair — an
// integer and a text column, two texts, anything else — compares as text.

// KeyText returns the SQL expression on which the key held in the quoted,
// possibly qualified column expression x is compared, in the engine's
// dialect: its text (see the rule above). Builders outside the engine
// call it for both sides of every key equality and every selection on a
// key.
func (e *Engine) KeyText(x string) string { return keyText(e.d, x) }

// StoredAsInteger reports whether the column named column of the loaded
// table (or view) named table is stored as an integer type that compares
// exactly as its canonical text ([integerType]): two such key columns may be
// joined as stored (see the rule above). It reads the table's schema (cached),
// no row. The answer depends on the data (one non-canonical key makes a
// column text); it decides the form of a comparison, never its result.
func (e *Engine) StoredAsInteger(ctx context.Context, table, column string) (bool, error) {
	cols, err := e.columnTypes(ctx, table)
	if err != nil {
		return false, err
	}
	t, ok := cols[column]
	if !ok {
		return false, fmt.Errorf("engine: table %q has no column %q", table, column)
	}
	return integerType(t), nil
}

// integerType reports whether the SQL type t (upper case, as
// information_schema names it on DuckDB or PostgreSQL) is a signed integer
// of at most 64 bits or an unsigned one of at most 32: every pair of them
// compares exactly after DuckDB's and PostgreSQL's implicit widening to
// BIGINT, and each prints as its canonical decimal. UBIGINT and HUGEINT
// are left out (their common type with BIGINT is wider or a DOUBLE).
func integerType(t string) bool {
	switch t {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER":
		return true
	}
	return false
}

// keyText is [Engine.KeyText] in dialect d.
func keyText(d dialect, x string) string { return d.toText(x) }

// integralKeyRE is the text of an integral number as numeric writers
// print it: a canonical integer (see canonIntRE, here of any length and
// with −0) followed by a decimal point and zeros — 7.0 (pandas, DuckDB's
// DOUBLE), 7.00 (a DECIMAL(p, 2)), -0.0.
const integralKeyRE = `-?(0|[1-9][0-9]*)\.0+`

// canonicalKey is the stored text of a key whose text is v (a text
// expression), the per-value rule every load applies before it decides a
// key column's storage: the text of an integral number (integralKeyRE) is
// its integer's text, −0 being 0, so that 7.0 in a Parquet DOUBLE or
// "76.0" in a CSV file written by pandas join 7 and 76 of another table;
// every other text is kept as it is — "07", "7.5", "-0", "1e3" and " 7"
// are keys of their own, as text comparison says. Parquet FLOAT and DOUBLE
// keys reach it through [dialect.source], which prints an integral float
// as its integer first. The rule is one SQL expression on text, so
// DuckDB, PostgreSQL and the sharded cluster (which stages like
// PostgreSQL) store the same keys (TestKeysIntegralOracle); it is
// idempotent, as the PostgreSQL load of a Parquet file applies it twice.
//
// Privacy: the rule reads one value and no other, so it changes no
// neighbour relation; a key's storage (BIGINT or text) may still depend
// on every value of its column, which [keyText] makes harmless.
func canonicalKey(d dialect, v string) string {
	ip := "split_part(" + v + ", '.', 1)"
	// LIKE first: most keys end in no zero after a dot, and the regular
	// expression then never runs.
	return "CASE WHEN " + v + " LIKE '%.%0' AND " + d.matches(v, integralKeyRE) + " THEN CASE WHEN " + ip + " = '-0' THEN '0' ELSE " + ip +
		" END ELSE " + v + " END"
}

// keyColumn reports whether the column named c of t is declared a key.
func keyColumn(t *spec.Table, c string) bool {
	for i := range t.Columns {
		if t.Columns[i].Name == c {
			return t.Columns[i].Type == spec.Key
		}
	}
	return false
}
