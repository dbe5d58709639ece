package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/synth-dp/synth/spec"
)

// The one-scan load of an engine that reads the files itself (DuckDB; see
// [Engine.loadScanned]). The data table it writes holds no flag column:
// every value the load accepts is stored non-NULL, so a NULL in a column
// of an error or clamp policy marks a failing value, a NULL in a column of
// the drop policy a dropped row, and a key stored as BIGINT holds
// [keySentinel] where its text is not a canonical integer. Categorical
// columns are stored as their cell only and the engine table's view maps
// the cell back to the category (unless the column is joined: then its
// text is stored too, so that joins compare stored values).
//
// Every check is the one [reason] states (the error path still reports a
// failing value through [Engine.checkDomains] on the source read as
// text), computed more cheaply where the text allows:
//   - a key is canonical when its TRY_CAST to BIGINT is within 18 digits
//     and prints back to the same text (exactly canonIntRE's language:
//     TRY_CAST alone also accepts " 5", "+5", "05", "1e2", "1.5", "0x10",
//     "1_000", which print back differently);
//   - an integer column's text that is a canonical integer (TRY_CAST to
//     BIGINT printing back to it) matches numberRE, parses to a finite
//     integral DOUBLE, and that DOUBLE is its integer's nearest double, as
//     TRY_CAST of the text to DOUBLE gives; other texts take [reason]'s
//     regular-expression path;
//   - a date whose text is what its TRY_CAST prints back, with a year in
//     1..9999, matches dateRE; other texts take the regular-expression
//     path;
//   - Parquet columns of an integer type of at most 64 bits (not UBIGINT),
//     DATE or BOOLEAN declared as key, integer or numeric, date and
//     boolean are read typed instead of through their text: their text
//     (what [dialect.source] casts them to) is a canonical integer, a
//     YYYY-MM-DD date for years 1..9999 or true/false, which parses back
//     to the same value, so only NULL (empty), the key's 18 digits and the
//     date's years need testing.
//
// Rows are numbered by the data table's row id plus one, for Parquet as for
// CSV: the scan is stored in file order (preserve_insertion_order), and
// reading the file's row numbers would cost a column
// (TestLoadParquetRowOrder loads a file of many row groups).

// keySentinel is stored for a key value that is not a canonical integer
// in a key column the scan stores as BIGINT: it is outside the canonical
// integers (18 digits at most), so it never stands for a key value, and it
// tells [Engine.scanCheck] that the column must be text.
const keySentinel = math.MinInt64

// maxCanonKey is the largest canonical integer key: canonIntRE allows 18
// digits.
const maxCanonKey = "999999999999999999"

// sniffRows is the number of rows read to guess the key types.
const sniffRows = 1000

// dataPrefix starts the names of the tables holding loaded rows.
const dataPrefix = ReservedPrefix + "data_"

// Prefixes of the columns of the scan's inner levels.
const (
	intPrefix  = ReservedPrefix + "int_"  // the text's TRY_CAST to BIGINT
	fastPrefix = ReservedPrefix + "fast_" // the text is what the cast prints back
	numPrefix  = ReservedPrefix + "num_"  // the number or date the value parses to
	okPrefix   = ReservedPrefix + "ok_"   // the value parses (range aside)
	nullPrefix = ReservedPrefix + "null_" // the value is NULL in a nullable column
)

// typedKind is the type [Engine.scanSource] claims, towards
// [dialect.source], for a Parquet column the scan reads typed: the source
// selects it as it is.
const typedKind = "SYNTH_TYPED" // upper case: source compares the upper-cased type

// Native kinds of a Parquet column the scan reads typed.
const (
	nativeInt  = "int"
	nativeDate = "date"
	nativeBool = "bool"
)

// nativeKind is the kind under which the scan reads a Parquet column of
// type ty declared as c, "" for reading it through its text.
func nativeKind(c *spec.Column, ty string) string {
	switch strings.ToUpper(ty) {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER":
		if c.Type == spec.Key || c.Type == spec.Integer || c.Type == spec.Numeric {
			return nativeInt
		}
	case "DATE":
		if c.Type == spec.Date {
			return nativeDate
		}
	case "BOOLEAN":
		if c.Type == spec.Boolean {
			return nativeBool
		}
	}
	return ""
}

// scanSource is the SELECT the scan reads t's declared columns from, with
// the expression of the 1-based data row, the CSV header (nil for
// Parquet), the declared columns and, per column read typed, its native
// kind ([nativeKind]); every other column is text, as [Engine.sourceSelect]
// reads it.
//
// With direct set, a Parquet source keeps the file's row number (the
// engine table is then a view of the file itself, see [Engine.scanTable]);
// otherwise the row is the row id of the data table the scan is stored in.
func (e *Engine) scanSource(ctx context.Context, q querier, t *spec.Table, direct bool) (sel, row string, header, cols []string, native map[string]string, err error) {
	header, kinds, err := csvKinds(e.d, t)
	if err != nil {
		return "", "", nil, nil, nil, err
	}
	native = map[string]string{}
	if header == nil {
		if kinds, err = fileColumns(ctx, q, e.d, t); err != nil {
			return "", "", nil, nil, nil, err
		}
	}
	if cols, err = declaredColumns(t, kinds); err != nil {
		return "", "", nil, nil, nil, err
	}
	if header == nil {
		// A column the source selects as it is when its type is
		// typedKind: claiming that type for the columns read typed keeps
		// them typed.
		kinds = maps.Clone(kinds)
		for i := range t.Columns {
			c := &t.Columns[i]
			if k := nativeKind(c, kinds[c.Name]); k != "" {
				native[c.Name] = k
				kinds[c.Name] = typedKind
			}
		}
	}
	sel, row = e.d.source(t, header, cols, kinds)
	if header == nil && row == e.d.ident(rowColumn) && !direct {
		// The data table is stored in file order, as for CSV: its row id
		// numbers the rows without reading the file's row numbers.
		q := make([]string, len(cols))
		for i, c := range cols {
			q[i] = e.d.ident(c)
		}
		sel, row = "SELECT "+strings.Join(q, ", ")+" FROM ("+sel+") AS p", "(rowid + 1)"
	}
	return sel, row, header, cols, native, nil
}

// scanTable reads, checks and types t (the i-th table of s) and returns
// the SELECT of the engine table's view, and the data table it reads
// ("" when it reads the file itself). A value failing the load is
// reported by [Engine.domainError].
//
// A Parquet source is read straight from the file when [Engine.direct]
// says so: the view is the scan itself, over the file, and the checks run
// as one aggregate over the scan (counts of failing values and the key
// checks), with nothing stored; the first failing row is looked up only
// when a count is not zero. Otherwise the scan is stored in the data
// table data and checked there.
func (e *Engine) scanTable(ctx context.Context, conn *sql.Conn, s *spec.Spec, i int, data string) (view, stored string, err error) {
	d := e.d
	t := &s.Tables[i]
	direct := e.direct(t)
	sel, row, header, cols, native, err := e.scanSource(ctx, conn, t, direct)
	if err != nil {
		return "", "", err
	}
	joined := map[string]bool{}
	for _, eq := range s.Join {
		for _, r := range []spec.ColumnRef{eq.Left, eq.Right} {
			if r.Table == t.Name {
				joined[r.Column] = true
			}
		}
	}
	if direct {
		// Every key is taken for BIGINT, and the check says which hold a
		// text that is not a canonical integer: the view, built after the
		// check, needs no second scan.
		bigint := map[string]bool{}
		for _, c := range t.Columns {
			if c.Type == spec.Key {
				bigint[c.Name] = true
			}
		}
		scan := "(" + scanSelect(d, t, sel, row, bigint, native, joined, false) + ") AS " + d.ident(dataPrefix+"scan")
		bad, text, err := e.scanCheck(ctx, conn, t, scan, "", bigint)
		if err != nil {
			return "", "", readError(t, header, cols, err)
		}
		if bad.Valid {
			return "", "", e.domainError(ctx, conn, t, 0)
		}
		for _, k := range text {
			bigint[k] = false
		}
		// The check passed: the view need not test again what it proved.
		scan = "(" + scanSelect(d, t, sel, row, bigint, native, joined, true) + ") AS " + d.ident(dataPrefix+"scan")
		return viewSelect(d, t, scan, row, joined), "", nil
	}
	// Key columns are stored as BIGINT when all their values are canonical
	// integers (see keyTypes). The scan stores the type the first rows
	// suggest and the check tells whether it was right; when it was not,
	// the table is scanned again with the right types.
	bigint, err := e.sniffKeys(ctx, conn, t, sel, native)
	if err != nil {
		return "", "", err
	}
	for range 2 {
		if _, err := conn.ExecContext(ctx, d.replaceTable(data, scanSelect(d, t, sel, row, bigint, native, joined, false), false)); err != nil {
			return "", "", readError(t, header, cols, err)
		}
		bad, text, err := e.scanCheck(ctx, conn, t, d.ident(data), row, bigint)
		if err != nil {
			return "", "", &fileError{table: t.Name, file: t.Source, msg: "checking the declared domains", err: err}
		}
		if bad.Valid {
			return "", "", e.domainError(ctx, conn, t, bad.Int64)
		}
		if len(text) == 0 {
			return viewSelect(d, t, d.ident(data), row, joined), data, nil
		}
		for _, k := range text {
			bigint[k] = false
		}
	}
	return "", "", fmt.Errorf("engine: load: table %s: the key types changed between two scans of the source", t.Name)
}

// canonKey is true when the key text v is empty or a canonical integer
// (see keyTypes).
func canonKey(d dialect, v string) string {
	return "(" + v + " IS NULL OR " + v + " = '' OR " + d.matches(v, canonIntRE) + ")"
}

// sniffKeys guesses from the first rows of the source which key columns
// hold canonical integers only: a key read as text holding a value that is
// not is certainly text; the guess for the others is checked by
// [Engine.scanCheck]. A source the engine cannot read is reported by the
// scan, not here.
func (e *Engine) sniffKeys(ctx context.Context, q querier, t *spec.Table, sel string, native map[string]string) (map[string]bool, error) {
	d := e.d
	out := map[string]bool{}
	var keys []string
	for _, c := range t.Columns {
		switch {
		case c.Type != spec.Key:
		case native[c.Name] != "":
			out[c.Name] = true
		default:
			keys = append(keys, c.Name)
		}
	}
	ok, err := canonKeys(ctx, q, d, keys, fmt.Sprintf("(SELECT * FROM (%s) AS s LIMIT %d) AS s", sel, sniffRows))
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("engine: load: %w", err)
	}
	for i, k := range keys {
		out[k] = err != nil || ok[i]
	}
	return out, nil
}

// canonKeys tells, for each key column of the relation from (a table name
// or a subquery), whether every value of it is empty or a canonical
// integer ([canonKey]): one aggregate over from.
func canonKeys(ctx context.Context, q querier, d dialect, keys []string, from string) ([]bool, error) {
	ok := make([]bool, len(keys))
	if len(keys) == 0 {
		return ok, nil
	}
	agg := make([]string, len(keys))
	dst := make([]any, len(keys))
	for i, k := range keys {
		agg[i] = "COALESCE(bool_and(" + canonKey(d, d.ident(k)) + "), TRUE)"
		dst[i] = &ok[i]
	}
	err := q.QueryRowContext(ctx, "SELECT "+strings.Join(agg, ", ")+" FROM "+from).Scan(dst...)
	return ok, err
}

// scanSelect is the one scan of a source: the SELECT storing the row
// number (when the source gives it), every key (as BIGINT or text as
// bigint says; [keySentinel] for a value that is not a canonical integer
// in a BIGINT key), every other declared column typed, NULL where the
// value fails the load (categorical columns as their cell, and their text
// too when joined), and the cell of every other non-key column, NULL
// where the value is NULL.
//
// With checked set, the scan is of a source whose check passed (every
// value of a column of the error or clamp policy parses and, under the
// error policy, is in range; no BIGINT key holds a value that is not a
// canonical integer): those values are typed without testing them again,
// so that a view reading the file itself costs no more than the typing.
// Columns of the drop policy are still tested, row by row.
func scanSelect(d dialect, t *spec.Table, sel, row string, bigint map[string]bool, native map[string]string, joined map[string]bool, checked bool) string {
	// Level 0 casts the text to BIGINT, level 1 tests the cast, level 2
	// parses the value, level 3 tests it, level 4 types it, level 5 bins it.
	var l0, l1, l2, l3, l4, l5 []string
	pass := func(x string, levels ...*[]string) {
		for _, l := range levels {
			*l = append(*l, x)
		}
	}
	if row == d.ident(rowColumn) {
		pass(row, &l1, &l2, &l3, &l4, &l5)
	}
	for i := range t.Columns {
		c := &t.Columns[i]
		v := d.ident(c.Name)
		n := d.ident(fmt.Sprintf("%s%d", intPrefix, i))
		fast := d.ident(fmt.Sprintf("%s%d", fastPrefix, i))
		x := d.ident(fmt.Sprintf("%s%d", numPrefix, i))
		ok := d.ident(fmt.Sprintf("%s%d", okPrefix, i))
		kind := native[c.Name]
		if c.Type == spec.Key {
			var canon, value string
			if kind == nativeInt {
				canon = v + " BETWEEN -" + maxCanonKey + " AND " + maxCanonKey
				value = d.toBigint(v)
				pass(v, &l1, &l2, &l3)
			} else {
				l0 = append(l0, "TRY_CAST("+v+" AS BIGINT) AS "+n)
				pass(v, &l1, &l2, &l3)
				pass(n, &l1, &l2, &l3)
				canon = n + " BETWEEN -" + maxCanonKey + " AND " + maxCanonKey + " AND " + d.toText(n) + " = " + v
				value = n
			}
			key := "NULLIF(" + v + ", '')"
			switch {
			case bigint[c.Name] && kind == nativeInt && checked:
				key = value
			case bigint[c.Name] && kind == nativeInt:
				key = "CASE WHEN " + v + " IS NULL THEN NULL WHEN " + canon + " THEN " + value + " ELSE " + strconv.Itoa(keySentinel) + " END"
			case bigint[c.Name]:
				key = "CASE WHEN " + v + " IS NULL OR " + v + " = '' THEN NULL WHEN " + canon + " THEN " + value + " ELSE " + strconv.Itoa(keySentinel) + " END"
			case kind == nativeInt:
				key = d.toText(v)
			}
			l4 = append(l4, key+" AS "+v)
			l5 = append(l5, v)
			continue
		}
		p := policy(c)
		// x is the parsed value, ok whether the value parses.
		switch {
		case kind == nativeInt:
			pass(v, &l1, &l2)
			l2 = append(l2, "CAST("+v+" AS "+d.double()+") AS "+x)
			l3 = append(l3, v+" IS NOT NULL AS "+ok, x)
		case kind == nativeDate:
			pass(v, &l1, &l2, &l3)
			l3 = append(l3, v+" BETWEEN DATE '0001-01-01' AND DATE '9999-12-31' AS "+ok, v+" AS "+x)
		case kind == nativeBool:
			pass(v, &l1, &l2, &l3)
			l3 = append(l3, v+" IS NOT NULL AS "+ok, v+" AS "+x)
		case c.Type == spec.Integer:
			// A canonical integer text skips the regular expression.
			l0 = append(l0, "TRY_CAST("+v+" AS BIGINT) AS "+n)
			pass(v, &l1, &l2)
			l1 = append(l1, n, d.toText(n)+" = "+v+" AS "+fast)
			l2 = append(l2, fast, "CASE WHEN "+fast+" THEN CAST("+n+" AS "+d.double()+") ELSE "+d.toDouble(v)+" END AS "+x)
			l3 = append(l3, "CASE WHEN "+fast+" THEN TRUE ELSE "+parses(d, c, v, x)+" END AS "+ok, x)
		case c.Type == spec.Date:
			// A date text that prints back the same skips the regular
			// expression.
			l0 = append(l0, d.toDate(v)+" AS "+x)
			pass(v, &l1)
			pass(x, &l1, &l2)
			l1 = append(l1, "("+d.toText(x)+" = "+v+" AND "+x+" BETWEEN DATE '0001-01-01' AND DATE '9999-12-31') AS "+fast)
			pass(v, &l2)
			l2 = append(l2, fast)
			l3 = append(l3, "CASE WHEN "+fast+" THEN TRUE ELSE "+parses(d, c, v, x)+" END AS "+ok, x)
		default:
			pass(v, &l1)
			switch c.Type {
			case spec.Categorical:
				l1 = append(l1, d.categoryIndex(v, c.Values)+" AS "+x)
			case spec.Boolean:
				l1 = append(l1, v+" AS "+x)
			default:
				l1 = append(l1, parsed(d, c, v)+" AS "+x)
			}
			pass(v, &l2)
			pass(x, &l2)
			l3 = append(l3, parses(d, c, v, x)+" AS "+ok, x)
			if c.Type == spec.Categorical || c.Type == spec.Boolean {
				pass(v, &l3)
			}
		}
		// null is whether the value is NULL in a nullable column: stored
		// NULL, its cell the NULL cell (a failing value has no cell).
		null := d.ident(fmt.Sprintf("%s%d", nullPrefix, i))
		if c.Nullable {
			isNull := v + " IS NULL"
			if kind == "" {
				isNull = isEmpty(v)
			}
			l3 = append(l3, isNull+" AS "+null)
			l4 = append(l4, null)
		}
		// The stored value: typed (clamped) where it passes, else NULL.
		cond := ok
		if p != spec.OutOfDomainClamp {
			if r := inRange(d, c, x); r != "" {
				cond = ok + " AND " + r
			}
		}
		if checked && p != spec.OutOfDomainDrop {
			cond = "TRUE"
		}
		var typedV string
		switch {
		case kind == nativeBool:
			typedV = v
		case c.Type == spec.Categorical:
			typedV = x // the cell
		default:
			typedV = typedOf(d, c, v, x)
		}
		bin := d.ident(BinColumn(c.Name))
		whenNull := ""
		if c.Nullable {
			whenNull = " WHEN " + null + " THEN NULL"
		}
		if c.Type == spec.Categorical {
			if c.Nullable {
				whenNull = " WHEN " + null + " THEN " + strconv.Itoa(c.NullCell())
			}
			l4 = append(l4, "CASE"+whenNull+" WHEN "+cond+" THEN "+typedV+" END AS "+bin)
			l5 = append(l5, bin)
			if joined[c.Name] {
				l4 = append(l4, "CASE WHEN "+cond+" THEN "+v+" END AS "+v)
				l5 = append(l5, v)
			}
			continue
		}
		l4 = append(l4, "CASE"+whenNull+" WHEN "+cond+" THEN "+typedV+" END AS "+v)
		if c.Nullable {
			// A failing value has no cell (a CASE over the edges would put
			// NULL in the last bin).
			l5 = append(l5, v, "CASE WHEN "+null+" THEN "+strconv.Itoa(c.NullCell())+" WHEN "+v+" IS NULL THEN NULL ELSE "+scanBinExpr(d, c, v)+" END AS "+bin)
			continue
		}
		l5 = append(l5, v, scanBinExpr(d, c, v)+" AS "+bin)
	}
	q := "(" + sel + ") AS s"
	if len(l0) > 0 {
		q = "(SELECT *, " + strings.Join(l0, ", ") + " FROM " + q + ") AS s0"
	}
	for k, l := range [][]string{l1, l2, l3, l4} {
		q = fmt.Sprintf("(SELECT %s FROM %s) AS s%d", strings.Join(l, ", "), q, k+1)
	}
	return "SELECT " + strings.Join(l5, ", ") + " FROM " + q
}

// parses is true when the text v of a non-key column parses to x and has
// the declared syntax: [reason] without the range test.
func parses(d dialect, c *spec.Column, v, x string) string {
	switch c.Type {
	case spec.Integer, spec.Numeric:
		cond := v + " <> '' AND " + d.matches(v, numberRE) + " AND " + d.finite(x)
		if c.Type == spec.Integer {
			cond += " AND " + x + " = floor(" + x + ")"
		}
		return "COALESCE(" + cond + ", FALSE)"
	case spec.Categorical:
		return "COALESCE(" + v + " <> '' AND " + x + " IS NOT NULL, FALSE)"
	case spec.Boolean:
		return "COALESCE(lower(" + v + ") IN (" + strList(d, append(append([]string{}, booleanTrue...), booleanFalse...)) + "), FALSE)"
	case spec.Date:
		return "COALESCE(" + v + " <> '' AND " + d.matches(v, dateRE) + " AND " + x + " IS NOT NULL, FALSE)"
	}
	return "FALSE"
}

// inRange is true when the parsed value x is inside the declared range, ""
// when the column has none.
func inRange(d dialect, c *spec.Column, x string) string {
	switch c.Type {
	case spec.Integer, spec.Numeric:
		return x + " BETWEEN " + d.float(c.Min) + " AND " + d.float(c.Max)
	case spec.Date:
		return x + " BETWEEN " + d.date(c.DateMin) + " AND " + d.date(c.DateMax)
	}
	return ""
}

// scanBinExpr is [binExpr] on a stored value; an integer column binned by
// a CASE over its edges compares the BIGINT with the edges rounded up,
// which is the same test: the stored integer is an exact double, and for
// an integer n, n < e exactly when n < ⌈e⌉.
//
// It is the cell of a value, NULL where v is NULL: the scan tells a NULL
// of a nullable column from a failing value itself (see [scanSelect]).
func scanBinExpr(d dialect, c *spec.Column, v string) string {
	if c.Type != spec.Integer || (len(c.BinEdges) == 0 && c.Bins <= 0) {
		return valueBinExpr(d, c, v)
	}
	e := c.Edges()
	k := len(e) - 1
	if k == 1 || len(c.BinEdges) == 0 && k > caseBins {
		return valueBinExpr(d, c, v)
	}
	var b strings.Builder
	b.WriteString("CASE")
	for i := 0; i < k-1; i++ {
		up := math.Ceil(e[i+1])
		if math.Abs(up) >= 1<<62 {
			return binExpr(d, c, v)
		}
		fmt.Fprintf(&b, " WHEN %s < %d THEN %d", v, int64(up), i)
	}
	fmt.Fprintf(&b, " ELSE %d END", k-1)
	return b.String()
}

// scanCheck reads the scan's rows in from (a data table or the scan
// itself as a subquery): the first data row holding a value that fails
// the load (NULL when there is none) and the keys stored as BIGINT that
// hold a value which is not a canonical integer ([keySentinel]). With row
// "" it counts the failing values instead of finding the first, and the
// row it returns is valid, and 0, when the count is not: reading the row
// numbers would cost a column of the file.
func (e *Engine) scanCheck(ctx context.Context, q querier, t *spec.Table, from, row string, bigint map[string]bool) (sql.NullInt64, []string, error) {
	d := e.d
	var bad, keys []string
	sel := []string{""}
	for i := range t.Columns {
		c := &t.Columns[i]
		v := d.ident(c.Name)
		switch {
		case c.Type == spec.Key:
			if bigint[c.Name] {
				keys = append(keys, c.Name)
				sel = append(sel, fmt.Sprintf("COALESCE(min(%s) = %d, FALSE)", v, keySentinel))
			}
		case policy(c) == spec.OutOfDomainDrop:
		case c.Type == spec.Categorical || c.Nullable:
			// A nullable column stores NULL for NULL too: its cell tells.
			bad = append(bad, d.ident(BinColumn(c.Name))+" IS NULL")
		default:
			bad = append(bad, v+" IS NULL")
		}
	}
	if len(bad) == 0 {
		bad = []string{"FALSE"}
	}
	if row == "" {
		sel[0] = "CASE WHEN count(*) FILTER (WHERE " + strings.Join(bad, " OR ") + ") > 0 THEN 0 END"
	} else {
		sel[0] = "min(" + row + ") FILTER (WHERE " + strings.Join(bad, " OR ") + ")"
	}
	var first sql.NullInt64
	wrong := make([]bool, len(keys))
	dst := []any{&first}
	for i := range wrong {
		dst = append(dst, &wrong[i])
	}
	if err := q.QueryRowContext(ctx, "SELECT "+strings.Join(sel, ", ")+" FROM "+from).Scan(dst...); err != nil {
		return first, nil, err
	}
	var text []string
	for i, k := range keys {
		if wrong[i] {
			text = append(text, k)
		}
	}
	return first, text, nil
}

// viewSelect is the SELECT of the engine table over its data table (from:
// the table, or the scan as a subquery): the
// row number, the declared columns (a categorical one not joined as the
// category its cell stands for) and their cells, without the rows a drop
// column removes.
func viewSelect(d dialect, t *spec.Table, from, row string, joined map[string]bool) string {
	sel := []string{row + " AS " + d.ident(rowColumn)}
	var keep []string
	for i := range t.Columns {
		c := &t.Columns[i]
		v, bin := d.ident(c.Name), d.ident(BinColumn(c.Name))
		stored := v // NULL where the value fails
		switch {
		case c.Type == spec.Key:
			sel = append(sel, v)
			continue
		case c.Type == spec.Categorical && !joined[c.Name]:
			label := "[" + strList(d, c.Values) + "][" + bin + " + 1]"
			if c.Nullable {
				label = "CASE WHEN " + bin + " = " + strconv.Itoa(c.NullCell()) + " THEN NULL ELSE " + label + " END"
			}
			sel = append(sel, label+" AS "+v, bin)
			stored = bin
		case c.Nullable:
			sel = append(sel, v, bin)
			stored = bin // v is NULL for NULL too
		default:
			sel = append(sel, v, bin)
		}
		if policy(c) == spec.OutOfDomainDrop {
			keep = append(keep, stored+" IS NOT NULL")
		}
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + from
	if len(keep) > 0 {
		q += " WHERE " + strings.Join(keep, " AND ")
	}
	return q
}

// direct tells whether the engine table of t is read straight from its
// source (see [Engine.scanTable] and [Engine.ReadInPlace]).
func (e *Engine) direct(t *spec.Table) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.inPlace && format(t) == "parquet"
}

// ReadInPlace sets how later loads of a DuckDB engine read Parquet
// sources. With on, the engine table is a view of the file itself: the
// load checks every value as one aggregate over the file (counts of the
// values that fail, the first failing row looked up only when a count is
// not zero) and stores nothing, and every statistic reads the file again,
// typing and binning its values as it goes. Off (the default), the load
// stores the checked, typed and binned values in a table of the engine,
// which the statistics read. The checks and every error are the same
// either way. The PostgreSQL engine ignores it.
//
// Which is faster depends on how often the tables are read: on TPC-H at
// SF 1 (Parquet), a release of the example spec, whose statistics read
// the tables many times, took 1.15× as long in place (median wall of
// three interleaved runs), and `synth answer --multi` over 25 groups 0.80×
// as long; a single query in place saves the whole copy.
//
// A view of the file reads it at every statistic: the file must not
// change while the engine is in use (values are checked when the load
// reads them, not again).
func (e *Engine) ReadInPlace(on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.inPlace = on
}

// scanTableLong is [Engine.scanTable], and when a CSV source has a record
// too long for the engine's reader ([MaxRecordBytes]) because of a value in
// a column the spec does not declare, the same on a copy of the source
// holding the declared columns only ([projectCSV]): such a value is never
// read into memory, whatever its length. The copy is written in the
// engine's private scratch folder (a private temporary folder for an
// engine without one) and removed once the table is loaded; errors name
// the source, not the copy, and its rows, which are the source's.
func (e *Engine) scanTableLong(ctx context.Context, conn *sql.Conn, s *spec.Spec, i int, data string) (string, string, error) {
	view, stored, err := e.scanTable(ctx, conn, s, i, data)
	var ce *CSVError
	t := &s.Tables[i]
	if err == nil || format(t) != "csv" || !errors.As(err, &ce) || !ce.undeclared {
		return view, stored, err
	}
	header, err2 := csvHeader(t)
	if err2 != nil {
		return "", "", err
	}
	var keep []int
	for _, c := range t.Columns {
		for k, h := range header {
			if h == c.Name {
				keep = append(keep, k)
			}
		}
	}
	dir := ""
	if e.scratch != nil {
		dir = e.scratch.dir
	}
	tmp, err2 := os.MkdirTemp(dir, "synth-project-*")
	if err2 != nil {
		return "", "", fmt.Errorf("engine: load: table %s: a folder for the declared columns of %s: %w", t.Name, t.Source, err2)
	}
	defer os.RemoveAll(tmp)
	copyFile := filepath.Join(tmp, "declared.csv")
	f, err2 := os.OpenFile(copyFile, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err2 != nil {
		return "", "", fmt.Errorf("engine: load: table %s: %w", t.Name, err2)
	}
	perr := projectCSV(t.Source, header, keep, f, recordLimit)
	if cerr := f.Close(); perr == nil {
		perr = cerr
	}
	switch {
	case errors.Is(perr, errNotProjected):
		return "", "", err
	case perr != nil:
		if scratchErr := scratchError(t, perr); scratchErr != nil {
			return "", "", scratchErr
		}
		var pe *CSVError
		if errors.As(perr, &pe) {
			return "", "", perr
		}
		return "", "", fmt.Errorf("engine: load: table %s: copying the declared columns of %s: %w", t.Name, t.Source, perr)
	}
	ps := *s
	ps.Tables = slices.Clone(s.Tables)
	ps.Tables[i].Source, ps.Tables[i].Format = copyFile, "csv"
	view, stored, err = e.scanTable(ctx, conn, &ps, i, data)
	return view, stored, renameSource(err, copyFile, t.Source)
}

// renameSource makes an error about the file from name the file to.
func renameSource(err error, from, to string) error {
	if err == nil {
		return nil
	}
	var de *DataError
	if errors.As(err, &de) && de.File == from {
		de.File = to
	}
	var ce *CSVError
	if errors.As(err, &ce) && ce.File == from {
		ce.File = to
	}
	var fe *fileError
	if errors.As(err, &fe) && fe.file == from {
		fe.file = to
	}
	return err
}

// OnTableLoaded sets a function that [Engine.Load] calls after each table
// is read and checked, with k of n tables done (public: the spec's table
// count), for progress reports; nil (the default) calls nothing. It runs
// on Load's goroutine.
func (e *Engine) OnTableLoaded(f func(k, n int)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.onTable = f
}

// tableLoaded reports k of n tables loaded to the OnTableLoaded function.
func (e *Engine) tableLoaded(k, n int) {
	e.mu.Lock()
	f := e.onTable
	e.mu.Unlock()
	if f != nil {
		f(k, n)
	}
}
