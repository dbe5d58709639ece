package engine

import "github.com/synth-dp/synth/spec"

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

// KeyText returns the SQL expression on which the key held in the quoted,
// possibly qualified column expression x is compared, in the engine's
// dialect: its text (see the rule above). Builders outside the engine
// call it for both sides of every key equality and every selection on a
// key.
func (e *Engine) KeyText(x string) string { return keyText(e.d, x) }

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
