package engine

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
