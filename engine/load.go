package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/synth-dp/synth/spec"
)

// Names of the columns Load adds to every engine table. Declared columns
// may not start with [ReservedPrefix].
const (
	// ReservedPrefix starts every column name the engine adds.
	ReservedPrefix = "_synth_"
	// RowColumn holds the 1-based data row of the source file.
	RowColumn = rowColumn
	rowColumn = ReservedPrefix + "row"
	binPrefix = ReservedPrefix + "bin_"
	// stagePrefix starts the temporary tables the sources are read into.
	stagePrefix = ReservedPrefix + "stage_"
)

// BinColumn returns the name of the engine column holding the cell index in
// [0, Size()) of a loaded non-key column.
func BinColumn(column string) string { return binPrefix + column }

// Regular expressions the text of a value must fully match. They accept
// what strconv.ParseFloat and time.Parse(time.DateOnly, …) accept in
// decimal notation, so that the SQL checks agree with spec.Column.Bin.
const (
	numberRE    = `[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][+-]?[0-9]+)?`
	dateRE      = `[0-9]{4}-[0-9]{2}-[0-9]{2}`
	canonIntRE  = `(0|-?[1-9][0-9]{0,17})` // no "-0": it must not join "0" only when a column happens to be BIGINT
	maxCategory = 8                        // categories listed in an Expected message
)

// booleanTrue and booleanFalse are the accepted spellings of a boolean,
// compared in lower case.
var (
	booleanTrue  = []string{"true", "t", "1"}
	booleanFalse = []string{"false", "f", "0"}
)

// fileError is a source that cannot be read, or lacks a declared column.
type fileError struct {
	table, file, msg string
	err              error
}

func (e *fileError) Error() string {
	if e.err != nil {
		return fmt.Sprintf("engine: table %s: %s: %s: %v", e.table, e.file, e.msg, e.err)
	}
	return fmt.Sprintf("engine: table %s: %s: %s", e.table, e.file, e.msg)
}

// Unwrap returns [ErrData] and the cause.
func (e *fileError) Unwrap() []error {
	if e.err != nil {
		return []error{ErrData, e.err}
	}
	return []error{ErrData}
}

// Load reads every table of the spec into an engine table named after it,
// through the engine's own readers: CSV files are read as text and every
// value is checked here, Parquet columns are cast to text and checked the
// same way (on DuckDB, integer, DATE and BOOLEAN Parquet columns, whose
// text the type fixes, are checked typed, with the same outcome). Only
// declared columns are kept, plus [RowColumn] and, for every
// non-key column, [BinColumn] with its cell index exactly as
// [spec.Column.Bin] computes it.
//
// Every non-key column is checked in SQL against its declared domain. An
// empty value (NULL or "") is outside every domain but a nullable column's
// ([spec.Column.Nullable]), where it is stored as NULL in its
// [spec.Column.NullCell] (the one-scan load tells it from a failing value,
// which it also stores as NULL, by the cell, which a failing value lacks). Numbers must be plain
// decimals (optional sign, fraction and exponent; no spaces, no hex, no
// NaN or Inf); integer columns also reject values with a fraction; dates
// must be YYYY-MM-DD; booleans accept true/false/t/f/1/0 in any case. On
// the values it accepts the cell equals spec.Column.Bin's; spec.Column.Bin
// is looser on a few spellings (hexadecimal floats, 2.5 in an integer
// column) and stricter on booleans in mixed case ("tRuE").
// Depending on the column's out_of_domain policy, a value outside the
// domain fails the load with a [*DataError] naming the first offending row
// (error, the default), is moved to the nearest end of the range (clamp;
// integer, numeric and date columns; a value that does not parse is still
// an error) or removes its row (drop).
//
// Key columns are kept as text, or as BIGINT when every non-empty value is
// a canonical decimal integer (so that equality is unchanged), and are never
// checked; an empty key is NULL and joins nothing. Numeric columns are
// stored as DOUBLE with −0 stored as +0, so that two stored values that
// join are also equal as text and fall into one degree group (see
// canonicalNumber for why the privacy argument needs this).
//
// Sources are read and checked first: on DuckDB in one scan per source into
// a data table that becomes the engine table's storage (the engine table is
// a view of it, see [Engine.loadScanned]), on a server into staging tables
// private to the load; the engine tables are then created in one
// transaction, replacing tables of the same names. On error the engine is
// left as it was (once that transaction is committed, Load succeeds). The file's row numbers
// rely on DuckDB keeping the file order when it stores a scan
// (preserve_insertion_order, set by [Open]).
func (e *Engine) Load(ctx context.Context, s *spec.Spec) error {
	if s == nil || len(s.Tables) == 0 {
		return errors.New("engine: load: the spec has no tables")
	}
	names := map[string]bool{}
	for i := range s.Tables {
		t := &s.Tables[i]
		if err := checkTable(t); err != nil {
			return err
		}
		// DuckDB resolves identifiers case-insensitively: names that differ
		// only in case would replace each other.
		if names[strings.ToLower(t.Name)] {
			return fmt.Errorf("engine: load: table %q appears twice (table names are compared ignoring case)", t.Name)
		}
		names[strings.ToLower(t.Name)] = true
	}
	for i := range s.Tables {
		t := &s.Tables[i]
		st, err := os.Stat(t.Source)
		if err != nil {
			return &fileError{table: t.Name, file: t.Source, msg: "cannot read the source", err: err}
		}
		if !st.Mode().IsRegular() {
			return &fileError{table: t.Name, file: t.Source, msg: fmt.Sprintf("is not a regular file (%s): "+
				"synth reads a source more than once, which a pipe, a device or a folder does not allow; write the data to a file and name it", fileKind(st.Mode()))}
		}
	}
	for i := range s.Tables {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("engine: load: %w", err)
		}
		if err := verifyCompressed(ctx, &s.Tables[i]); err != nil {
			return err
		}
	}
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("engine: load: %w", err)
	}
	defer conn.Close()
	loaded := make([]string, len(s.Tables))
	for i := range s.Tables {
		loaded[i] = s.Tables[i].Name
	}
	defer e.forget(loaded...)
	if _, ok := e.d.(stager); ok {
		err = e.loadStaged(ctx, conn, s)
	} else {
		err = e.loadScanned(ctx, conn, s)
	}
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.passed = nil // the tables changed
	for _, t := range s.Tables {
		sz := map[string]int{}
		for i := range t.Columns {
			if c := &t.Columns[i]; c.Type != spec.Key {
				sz[c.Name] = c.Size()
			}
		}
		e.sizes[t.Name] = sz
	}
	e.mu.Unlock()
	e.declareKeys(s) // public: they only choose the count plans' form
	return nil
}

// loadStaged is Load on an engine that cannot read the files itself (a
// [stager]): every source is streamed into a text staging table, checked,
// and the engine tables are built from the staging tables in one
// transaction.
func (e *Engine) loadStaged(ctx context.Context, conn *sql.Conn, s *spec.Spec) error {
	// The staging tables are created outside the transaction, committed,
	// so that their row ids are the file order (rows appended inside an
	// open transaction get provisional row ids); they are temporary,
	// private to this connection, and dropped at the end.
	builds := make([]string, len(s.Tables))
	defer func() {
		for i := range s.Tables {
			conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+e.d.ident(stageName(i)))
		}
	}()
	for i := range s.Tables {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("engine: load: %w", err)
		}
		var err error
		if builds[i], err = e.stageTable(ctx, conn, &s.Tables[i], stageName(i)); err != nil {
			return err
		}
		e.tableLoaded(i+1, len(s.Tables))
	}
	return e.commitTables(ctx, conn, s, builds)
}

// commitTables runs the statements creating the engine tables of s and the
// dialect's distribution in one transaction.
func (e *Engine) commitTables(ctx context.Context, conn *sql.Conn, s *spec.Spec, builds []string) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("engine: load: %w", err)
	}
	for i, t := range s.Tables {
		if _, err := tx.ExecContext(ctx, builds[i]); err != nil {
			tx.Rollback()
			return fmt.Errorf("engine: load: table %s: %w", t.Name, err)
		}
	}
	if dist, ok := e.d.(distributor); ok {
		if err := dist.distribute(ctx, tx, s); err != nil {
			tx.Rollback()
			return fmt.Errorf("engine: load: distribute: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("engine: load: commit: %w", err)
	}
	return nil
}

// stageName is the temporary table the i-th source is read into.
func stageName(i int) string { return fmt.Sprintf("%s%d", stagePrefix, i) }

// querier is what Load needs of a connection or transaction.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// checkTable validates what Load relies on; spec validation proper is the
// spec package's job.
func checkTable(t *spec.Table) error {
	if t.Name == "" {
		return errors.New("engine: load: a table has no name")
	}
	if strings.HasPrefix(t.Name, ReservedPrefix) {
		return fmt.Errorf("engine: load: table %q: names starting with %q are reserved", t.Name, ReservedPrefix)
	}
	if t.Source == "" {
		return fmt.Errorf("engine: load: table %s: no source file", t.Name)
	}
	if f := format(t); f != "csv" && f != "parquet" {
		return fmt.Errorf("engine: load: table %s: format %q: %w (csv or parquet)", t.Name, t.Format, ErrUnsupported)
	}
	if len(t.Columns) == 0 {
		return fmt.Errorf("engine: load: table %s: no declared columns", t.Name)
	}
	seen := map[string]bool{}
	for i := range t.Columns {
		c := &t.Columns[i]
		where := fmt.Sprintf("engine: load: table %s: column %q", t.Name, c.Name)
		switch {
		case c.Name == "":
			return fmt.Errorf("engine: load: table %s: a column has no name", t.Name)
		case strings.HasPrefix(c.Name, ReservedPrefix):
			return fmt.Errorf("%s: names starting with %q are reserved", where, ReservedPrefix)
		case seen[strings.ToLower(c.Name)]:
			return fmt.Errorf("%s: declared twice (column names are compared ignoring case)", where)
		case strings.EqualFold(c.Name, "rowid"):
			// DuckDB's rowid pseudo-column numbers the CSV rows; a column of
			// that name would hide it.
			return fmt.Errorf("%s: the name rowid is reserved by the engine", where)
		}
		seen[strings.ToLower(c.Name)] = true
		switch c.Type {
		case spec.Key:
			continue
		case spec.Categorical, spec.Boolean:
			if c.OutOfDomain == spec.OutOfDomainClamp {
				return fmt.Errorf("%s: a %s column cannot be clamped", where, c.Type)
			}
		case spec.Integer, spec.Numeric:
			if math.IsNaN(c.Min) || math.IsNaN(c.Max) || math.IsInf(c.Min, 0) || math.IsInf(c.Max, 0) || c.Min > c.Max {
				return fmt.Errorf("%s: range [%v, %v] is not a finite interval", where, c.Min, c.Max)
			}
			e := c.Edges()
			for k := 1; k < len(e); k++ {
				if !(e[k-1] < e[k]) {
					return fmt.Errorf("%s: bin edges %v are not increasing", where, e)
				}
			}
		case spec.Date:
			if c.DateMax.Before(c.DateMin) {
				return fmt.Errorf("%s: date range is empty", where)
			}
		default:
			return fmt.Errorf("%s: type %q: %w", where, c.Type, ErrUnsupported)
		}
		switch c.OutOfDomain {
		case "", spec.OutOfDomainError, spec.OutOfDomainClamp, spec.OutOfDomainDrop:
		default:
			return fmt.Errorf("%s: out_of_domain %q: %w", where, c.OutOfDomain, ErrUnsupported)
		}
		if c.Size() < 1 {
			return fmt.Errorf("%s: the domain has no cells", where)
		}
	}
	return nil
}

// distributor is implemented by a dialect whose engine spreads the loaded
// tables over several servers (a sharded cluster): Load calls distribute
// inside its transaction, after the engine tables of s are built and before
// they are committed, so that a failure leaves the engine as it was.
type distributor interface {
	distribute(ctx context.Context, tx querier, s *spec.Spec) error
}

// stager is implemented by a dialect whose engine cannot read the source
// files itself (a server): it reads them in this process and streams them
// into the staging table.
type stager interface {
	// stage creates the temporary table stage on conn holding, as text, the
	// declared columns of t in file order, and returns the expression of
	// the 1-based data row (as [dialect.source] does). header is a CSV
	// file's header ([csvHeader]); declared maps the file's columns to
	// their types and returns the declared columns, or the error naming a
	// missing one.
	stage(ctx context.Context, conn *sql.Conn, t *spec.Table, header []string, stage string,
		declared func(kinds map[string]string) ([]string, error)) (row string, err error)
}

// declaredColumns returns the declared columns of t in declaration order,
// or the error naming one the file lacks; kinds maps the file's columns to
// their types.
func declaredColumns(t *spec.Table, kinds map[string]string) ([]string, error) {
	cols := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		if _, ok := kinds[c.Name]; !ok {
			have := slices.Sorted(maps.Keys(kinds))
			msg := fmt.Sprintf("declared column %q is missing (the file has %s)", c.Name, strings.Join(have, ", "))
			if len(have) == 1 && format(t) == "csv" {
				for _, sep := range []struct{ r, name string }{{"\t", "tabs"}, {";", "semicolons"}, {"|", "'|'"}} {
					if strings.Contains(have[0], sep.r) {
						msg = fmt.Sprintf("declared column %q is missing: the header is one column %q, which looks separated by %s; synth reads comma-separated files: convert it (e.g. with DuckDB: COPY (FROM read_csv('in.csv', delim = '%s')) TO 'out.csv')",
							c.Name, have[0], sep.name, strings.ReplaceAll(sep.r, "\t", "\\t"))
						break
					}
				}
			}
			return nil, &fileError{table: t.Name, file: t.Source, msg: msg}
		}
		cols[i] = c.Name
	}
	return cols, nil
}

// csvKinds reads a CSV source's header (read here, not guessed by the
// engine) and maps every column to text; it returns nil, nil for a
// Parquet source.
func csvKinds(d dialect, t *spec.Table) ([]string, map[string]string, error) {
	if format(t) != "csv" {
		return nil, nil, nil
	}
	header, err := csvHeader(t)
	if err != nil {
		return nil, nil, err
	}
	kinds := map[string]string{}
	for _, h := range header {
		kinds[h] = d.text()
	}
	return header, kinds, nil
}

// sourceSelect is the dialect's SELECT reading t's declared columns as
// text in file order, with the expression of the 1-based data row and the
// CSV header (nil for Parquet).
func (e *Engine) sourceSelect(ctx context.Context, q querier, t *spec.Table) (sel, row string, header, cols []string, err error) {
	header, kinds, err := csvKinds(e.d, t)
	if err != nil {
		return "", "", nil, nil, err
	}
	if header == nil {
		if kinds, err = fileColumns(ctx, q, e.d, t); err != nil {
			return "", "", nil, nil, err
		}
	}
	if cols, err = declaredColumns(t, kinds); err != nil {
		return "", "", nil, nil, err
	}
	sel, row = e.d.source(t, header, cols, kinds)
	return sel, row, header, cols, nil
}

// readError is the error of the engine failing to read t's source.
func readError(t *spec.Table, header, cols []string, err error) error {
	if e := scratchError(t, err); e != nil {
		return e
	}
	if header != nil {
		return csvReadError(t.Source, header, cols, err)
	}
	return &fileError{table: t.Name, file: t.Source, msg: "cannot read the source", err: err}
}

// stageTable reads one table into the staging table stage and checks it;
// it returns the statement building the engine table from the staging table.
func (e *Engine) stageTable(ctx context.Context, q *sql.Conn, t *spec.Table, stage string) (string, error) {
	d := e.d
	st, ok := d.(stager)
	if !ok {
		return "", fmt.Errorf("engine: load: the %T dialect reads its sources itself (see loadScanned)", d)
	}
	header, _, err := csvKinds(d, t)
	if err != nil {
		return "", err
	}
	declared := func(kinds map[string]string) ([]string, error) { return declaredColumns(t, kinds) }
	row, err := st.stage(ctx, q, t, header, stage, declared)
	if err != nil {
		return "", err
	}
	if err := e.checkDomains(ctx, q, t, stage, row); err != nil {
		return "", err
	}
	keyTypes, err := e.keyTypes(ctx, q, t, stage)
	if err != nil {
		return "", err
	}
	return e.buildTable(t, stage, row, keyTypes), nil
}

// fileColumns lists the source's columns and their types.
func fileColumns(ctx context.Context, tx querier, d dialect, t *spec.Table) (map[string]string, error) {
	rows, err := tx.QueryContext(ctx, d.columns(t))
	if err != nil {
		return nil, &fileError{table: t.Name, file: t.Source, msg: "cannot read the source", err: err}
	}
	defer rows.Close()
	n, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("engine: table %s: %w", t.Name, err)
	}
	kinds := map[string]string{}
	for rows.Next() {
		vals := make([]any, len(n))
		var name, kind sql.NullString
		vals[0], vals[1] = &name, &kind
		for i := 2; i < len(vals); i++ {
			vals[i] = new(any)
		}
		if err := rows.Scan(vals...); err != nil {
			return nil, fmt.Errorf("engine: table %s: %w", t.Name, err)
		}
		kinds[name.String] = kind.String
	}
	if err := rows.Err(); err != nil {
		return nil, &fileError{table: t.Name, file: t.Source, msg: "cannot read the source", err: err}
	}
	return kinds, nil
}

// reason is a SQL expression giving the reason code of a value outside the
// column's domain, NULL when the value is inside. With inRange false the
// range test is left out (for clamped columns).
func reason(d dialect, c *spec.Column, v string, inRange bool) string {
	return reasonOf(d, c, v, parsed(d, c, v), inRange)
}

// parsed is the number or date the text v of a numeric, integer or date
// column parses to (NULL when it does not), v itself for other columns.
func parsed(d dialect, c *spec.Column, v string) string {
	switch c.Type {
	case spec.Integer, spec.Numeric:
		return d.toDouble(v)
	case spec.Date:
		return d.toDate(v)
	}
	return v
}

// reasonOf is [reason] with x the value v parses to ([parsed]), which the
// one-scan load computes once for the check and the typed value.
func reasonOf(d dialect, c *spec.Column, v, x string, inRange bool) string {
	var b strings.Builder
	empty := d.str(codeEmpty)
	if c.Nullable {
		empty = "NULL" // NULL is a value of the domain
	}
	b.WriteString("CASE WHEN " + isEmpty(v) + " THEN " + empty)
	when := func(cond, code string) { b.WriteString(" WHEN " + cond + " THEN " + d.str(code)) }
	switch c.Type {
	case spec.Integer, spec.Numeric:
		when("NOT COALESCE("+d.matches(v, numberRE)+" AND "+d.finite(x)+", FALSE)", codeNumber)
		if c.Type == spec.Integer {
			when(x+" <> floor("+x+")", codeInteger)
		}
		if inRange {
			when(x+" < "+d.float(c.Min)+" OR "+x+" > "+d.float(c.Max), codeRange)
		}
	case spec.Categorical:
		when(d.categoryIndex(v, c.Values)+" IS NULL", codeCategory)
	case spec.Boolean:
		when("lower("+v+") NOT IN ("+strList(d, append(slices.Clone(booleanTrue), booleanFalse...))+")", codeBoolean)
	case spec.Date:
		when("NOT COALESCE("+d.matches(v, dateRE)+" AND "+x+" IS NOT NULL, FALSE)", codeDate)
		if inRange {
			when(x+" < "+d.date(c.DateMin)+" OR "+x+" > "+d.date(c.DateMax), codeRange)
		}
	}
	b.WriteString(" END")
	return b.String()
}

// isEmpty is true when the text v is empty: NULL or "". An empty value is
// NULL, a value of a nullable column's domain and outside every other.
func isEmpty(v string) string { return "(" + v + " IS NULL OR " + v + " = '')" }

func strList(d dialect, vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = d.str(v)
	}
	return strings.Join(q, ", ")
}

// policy is the column's out-of-domain policy with the default applied.
func policy(c *spec.Column) spec.OutOfDomain {
	if c.OutOfDomain == "" {
		return spec.OutOfDomainError
	}
	return c.OutOfDomain
}

// checkDomains finds the first row holding a value that fails the load:
// outside the domain of an error column, or unparsable in a clamp column.
func (e *Engine) checkDomains(ctx context.Context, tx querier, t *spec.Table, stage, row string) error {
	d := e.d
	var checked []*spec.Column
	sel := []string{row + " AS r"}
	var bad []string
	for i := range t.Columns {
		c := &t.Columns[i]
		p := policy(c)
		if c.Type == spec.Key || p == spec.OutOfDomainDrop {
			continue
		}
		alias := fmt.Sprintf("e%d", len(checked))
		checked = append(checked, c)
		sel = append(sel, reason(d, c, d.ident(c.Name), p != spec.OutOfDomainClamp)+" AS "+alias, d.ident(c.Name))
		bad = append(bad, alias+" IS NOT NULL")
	}
	if len(checked) == 0 {
		return nil
	}
	q := "SELECT * FROM (SELECT " + strings.Join(sel, ", ") + " FROM " + d.ident(stage) + ") AS s WHERE " +
		strings.Join(bad, " OR ") + " ORDER BY r LIMIT 1"
	vals := make([]sql.NullString, 2*len(checked))
	var r int64
	dst := []any{&r}
	for i := range vals {
		dst = append(dst, &vals[i])
	}
	switch err := tx.QueryRowContext(ctx, q).Scan(dst...); {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		if e := scratchError(t, err); e != nil {
			return e
		}
		return &fileError{table: t.Name, file: t.Source, msg: "checking the declared domains", err: err}
	}
	for i, c := range checked {
		if code := vals[2*i]; code.Valid {
			problem := problems[code.String]
			if code.String == codeCategory {
				problem = categoryProblem(c, vals[2*i+1].String)
			}
			return &DataError{File: t.Source, Row: r, Column: c.Name, Value: vals[2*i+1].String,
				Problem: problem, Expected: expected(c)}
		}
	}
	return fmt.Errorf("engine: table %s: row %d failed a domain check that names no column", t.Name, r)
}

// categoryProblem says why v is not a category of c: a value that
// equals a declared one after Unicode normalisation (NFC) prints the same
// on a terminal, so the message says so and spells both with escapes.
func categoryProblem(c *spec.Column, v string) string {
	nv := norm.NFC.String(v)
	for _, d := range c.Values {
		if d != v && norm.NFC.String(d) == nv {
			return fmt.Sprintf("is not a declared category: it differs only in Unicode normalisation from the declared %q (file: %s, %s; spec: %s, %s); write both in one form, e.g. NFC",
				d, strconv.QuoteToASCII(v), normForm(v), strconv.QuoteToASCII(d), normForm(d))
		}
	}
	return problems[codeCategory]
}

// normForm names the Unicode normalisation form s is in.
func normForm(s string) string {
	switch {
	case norm.NFC.IsNormalString(s):
		return "NFC"
	case norm.NFD.IsNormalString(s):
		return "NFD"
	}
	return "neither NFC nor NFD"
}

// expected describes a column's declared domain.
func expected(c *spec.Column) string {
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	switch c.Type {
	case spec.Integer, spec.Numeric:
		if h := c.RangeHint(); h != "" {
			return fmt.Sprintf("%s in [%s, %s]; %s", c.Type, num(c.Min), num(c.Max), h)
		}
		return fmt.Sprintf("%s in [%s, %s]", c.Type, num(c.Min), num(c.Max))
	case spec.Categorical:
		q := make([]string, 0, maxCategory)
		for i, v := range c.Values {
			if i == maxCategory {
				q = append(q, fmt.Sprintf("… (%d values)", len(c.Values)))
				break
			}
			q = append(q, strconv.Quote(v))
		}
		return "one of " + strings.Join(q, ", ")
	case spec.Boolean:
		return "boolean"
	case spec.Date:
		return fmt.Sprintf("date in [%s, %s]", c.DateMin.UTC().Format(time.DateOnly), c.DateMax.UTC().Format(time.DateOnly))
	}
	return string(c.Type)
}

// keyTypes decides, per key column, whether it is stored as BIGINT (every
// non-empty value a canonical integer, so that text equality and integer
// equality agree) or as text.
func (e *Engine) keyTypes(ctx context.Context, tx querier, t *spec.Table, stage string) (map[string]string, error) {
	d := e.d
	var keys []string
	for _, c := range t.Columns {
		if c.Type == spec.Key {
			keys = append(keys, c.Name)
		}
	}
	out := map[string]string{}
	from := make([]string, len(keys))
	for i, k := range keys {
		from[i] = canonicalKey(d, d.ident(k)) + " AS " + d.ident(k)
	}
	ok, err := canonKeys(ctx, tx, d, keys, "(SELECT "+strings.Join(from, ", ")+" FROM "+d.ident(stage)+") AS s")
	if err != nil {
		return nil, fmt.Errorf("engine: table %s: key types: %w", t.Name, err)
	}
	for i, k := range keys {
		out[k] = d.text()
		if ok[i] {
			out[k] = d.bigint()
		}
	}
	return out, nil
}

// buildTable is the statement creating the engine table from the staging
// table: rows of drop columns outside their domain removed, values typed
// and clamped, cells added.
func (e *Engine) buildTable(t *spec.Table, stage, row string, keyTypes map[string]string) string {
	d := e.d
	inner := []string{row + " AS " + d.ident(rowColumn)}
	outer := []string{d.ident(rowColumn)}
	var keep []string
	for i := range t.Columns {
		c := &t.Columns[i]
		v := d.ident(c.Name)
		if c.Type == spec.Key {
			x := "NULLIF(" + canonicalKey(d, v) + ", '')"
			if keyTypes[c.Name] == d.bigint() {
				x = d.toBigint(x)
			}
			inner = append(inner, x+" AS "+v)
			outer = append(outer, v)
			continue
		}
		if policy(c) == spec.OutOfDomainDrop {
			keep = append(keep, reason(d, c, v, true)+" IS NULL")
		}
		inner = append(inner, typed(d, c, v)+" AS "+v)
		outer = append(outer, v, binExpr(d, c, v)+" AS "+d.ident(BinColumn(c.Name)))
	}
	q := "SELECT " + strings.Join(inner, ", ") + " FROM " + d.ident(stage)
	if len(keep) > 0 {
		q += " WHERE " + strings.Join(keep, " AND ")
	}
	return d.replaceTable(t.Name, "SELECT "+strings.Join(outer, ", ")+
		" FROM ("+q+") AS s ORDER BY "+d.ident(rowColumn), false)
}

// typed converts a checked text value to the column's SQL type, clamping it
// into range under the clamp policy.
func typed(d dialect, c *spec.Column, v string) string {
	t := typedOf(d, c, v, parsed(d, c, v))
	if c.Nullable {
		// An empty value is NULL (a boolean's typing would read it as false).
		t = "CASE WHEN " + isEmpty(v) + " THEN NULL ELSE " + t + " END"
	}
	return t
}

// typedOf is [typed] with x the value v parses to ([parsed]).
func typedOf(d dialect, c *spec.Column, v, x string) string {
	clamp := policy(c) == spec.OutOfDomainClamp
	switch c.Type {
	case spec.Integer, spec.Numeric:
		if clamp {
			x = "least(greatest(" + x + ", " + d.float(c.Min) + "), " + d.float(c.Max) + ")"
		}
		if c.Type == spec.Integer {
			return d.toBigint(x) // CAST(−0.0 AS BIGINT) is 0: one integer zero
		}
		return canonicalNumber(d, x)
	case spec.Date:
		if clamp {
			x = "least(greatest(" + x + ", " + d.date(c.DateMin) + "), " + d.date(c.DateMax) + ")"
		}
		return x
	case spec.Boolean:
		return "(lower(" + v + ") IN (" + strList(d, booleanTrue) + "))"
	}
	return v
}

// canonicalNumber is the stored form of a numeric (DOUBLE) value x: −0 is
// stored as +0, every other value as it is.
//
// Why: the sensitivity argument needs grouping equality to be join
// equality. A tuple added to or removed from relation i changes the join
// size by the number of join tuples of the other relations that its join
// value matches, and the statistics bounding that change — the degrees
// behind Alg. 1's Δ, the boundary counts T_E behind LŜ^k and RS^β — count
// tuples per group of join values. If two values join but fall into
// different groups, one tuple's change exceeds every group count and Δ̃
// undercuts the true sensitivity (with −0 and 0 split evenly, by half: the
// effective ε is up to twice the claimed one). The join compares DOUBLEs by IEEE equality, in
// which −0 = 0, whereas the text form, which [Engine.Degrees] reports and
// which joins between columns of different SQL types compare, tells them
// apart ("-0.0", "0.0"). Storing +0 only makes the two equalities agree:
// on finite DOUBLEs other than ±0, equality is identity of the bits, and the
// text form DuckDB prints is the shortest one that parses back to the same
// double, hence one text per value. NaN and infinities never reach the
// table (the domain check rejects them).
//
// The other stored types need nothing: integer columns go through BIGINT
// (−0, 3.0 and 3 become 0, 3 and 3), dates are DATEs printed as
// YYYY-MM-DD, booleans BOOLEANs, and key columns text compared byte by byte
// or BIGINT holding canonical integers only ("-0" and "01" keep a key column
// text, so they never join "0" and "1", whatever the other values of the
// column).
func canonicalNumber(d dialect, x string) string { return d.plusZero(x) }

// caseBins is the largest number of equal-width bins found by a CASE over
// the edges; more bins are found arithmetically.
const caseBins = 64

// binExpr is the cell index of a typed, in-domain value: the SQL version of
// spec.Column.Bin. A NULL of a nullable column is its [spec.Column.NullCell].
func binExpr(d dialect, c *spec.Column, v string) string {
	if c.Nullable {
		return "CASE WHEN " + v + " IS NULL THEN " + strconv.Itoa(c.NullCell()) + " ELSE " + valueBinExpr(d, c, v) + " END"
	}
	return valueBinExpr(d, c, v)
}

// valueBinExpr is [binExpr] of a non-NULL value.
func valueBinExpr(d dialect, c *spec.Column, v string) string {
	switch c.Type {
	case spec.Categorical:
		return d.categoryIndex(v, c.Values)
	case spec.Boolean:
		return "CASE WHEN " + v + " THEN 1 ELSE 0 END"
	case spec.Date:
		return d.dateIndex(v, c.DateMin, c.Granularity)
	}
	x := "CAST(" + v + " AS " + d.double() + ")"
	if c.Type == spec.Integer && len(c.BinEdges) == 0 && c.Bins <= 0 {
		// One bin per integer: the edges are Min + i exactly.
		return d.floorInt(x + " - " + d.float(c.Min))
	}
	e := c.Edges()
	k := len(e) - 1
	if k == 1 {
		return "0" // one bin (a CASE needs a WHEN)
	}
	if len(c.BinEdges) > 0 || k <= caseBins {
		// Bin i is [e_i, e_{i+1}), the last one closed: the first i with
		// x < e_{i+1}, as spec.Column.Bin scans.
		var b strings.Builder
		b.WriteString("CASE")
		for i := 0; i < k-1; i++ {
			fmt.Fprintf(&b, " WHEN %s < %s THEN %d", x, d.float(e[i+1]), i)
		}
		fmt.Fprintf(&b, " ELSE %d END", k-1)
		return b.String()
	}
	// Equal widths: estimate the bin, then correct it by one against the
	// edges recomputed in floating point exactly as spec.Column.Edges does:
	// e_i = lo + (hi-lo)·i/k, e_k = hi.
	lo, hi := e[0], e[k]
	w, kf := d.float(hi-lo), d.float(float64(k))
	edge := func(i string) string {
		return fmt.Sprintf("(CASE WHEN %s >= %d THEN %s ELSE %s + (%s * CAST(%s AS %s)) / %s END)",
			i, k, d.float(hi), d.float(lo), w, i, d.double(), kf)
	}
	i0 := fmt.Sprintf("least(greatest(%s, 0), %d)", d.floorInt("("+x+" - "+d.float(lo)+") / "+w+" * "+kf), k-1)
	i1 := fmt.Sprintf("(%s - CASE WHEN %s > 0 AND %s < %s THEN 1 ELSE 0 END)", i0, i0, x, edge(i0))
	return fmt.Sprintf("(%s + CASE WHEN %s < %d AND %s >= %s THEN 1 ELSE 0 END)", i1, i1, k-1, x, edge(i1+" + 1"))
}

// loadScanned is Load on an engine that reads the files itself (DuckDB):
// each source is scanned once by one statement that checks every value,
// types it and computes its cell, storing the result in a data table of a
// name used once ([dataPrefix]), a failing value as NULL (see
// load_scan.go); a small aggregate over the stored values then finds the
// first row failing the load and checks the key types. On success the
// engine table is a view of its data table that selects the row number,
// the declared columns (a categorical one from its cell) and the cells
// (and leaves out the dropped rows): the views are created in one
// transaction, and the data
// tables they replace are dropped afterwards. On error the new data tables
// are dropped and the engine is as it was.
//
// The row number of a CSV record is the row id of its data table plus one:
// the data table is created by one committed statement, which with
// preserve_insertion_order stores the rows in file order.
func (e *Engine) loadScanned(ctx context.Context, conn *sql.Conn, s *spec.Spec) error {
	d := e.d
	e.mu.Lock()
	e.loads++
	seq := e.loads
	e.mu.Unlock()
	data := make([]string, len(s.Tables))
	views := make([]string, len(s.Tables))
	done := false
	defer func() {
		if done {
			return
		}
		for _, t := range data {
			if t != "" {
				conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+d.ident(t))
			}
		}
	}()
	for i := range s.Tables {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("engine: load: %w", err)
		}
		// The data table is dropped on error whether or not it was created.
		data[i] = fmt.Sprintf("%s%d_%d", dataPrefix, seq, i)
		view, stored, err := e.scanTableLong(ctx, conn, s, i, data[i])
		if err != nil {
			return err
		}
		data[i] = stored // "" for a view of the file itself
		views[i] = d.replaceView(s.Tables[i].Name, view)
		e.tableLoaded(i+1, len(s.Tables))
	}
	if err := e.commitTables(ctx, conn, s, views); err != nil {
		return err
	}
	done = true
	// The data tables the new views replace are no longer read.
	var old []string
	e.mu.Lock()
	if e.data == nil {
		e.data = map[string]string{}
	}
	for i, t := range s.Tables {
		k := strings.ToLower(t.Name)
		if prev, ok := e.data[k]; ok {
			old = append(old, prev)
		}
		if data[i] == "" {
			delete(e.data, k) // a view of the file itself
		} else {
			e.data[k] = data[i]
		}
	}
	e.mu.Unlock()
	// The load is committed: a table that cannot be dropped now is only
	// space, dropped with the engine's schema at Close.
	for _, t := range old {
		if _, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+d.ident(t)); err != nil {
			slog.Warn("engine: load: dropping a replaced data table failed; it is dropped at Close", "table", t, "err", err)
		}
	}
	return nil
}

// domainError reports the value failing the load that the scan found in
// the given data row (0: a row it did not locate). It is the error path and may be slow: the source is
// read again into a staging table of text, whose first failing value
// [Engine.checkDomains] reports with the file, row, column, value and
// domain.
func (e *Engine) domainError(ctx context.Context, conn *sql.Conn, t *spec.Table, row int64) error {
	stage := stagePrefix + "error"
	defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+e.d.ident(stage))
	sel, r, header, cols, err := e.sourceSelect(ctx, conn, t)
	if err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, e.d.replaceTable(stage, sel, true)); err != nil {
		return readError(t, header, cols, err)
	}
	if err := e.checkDomains(ctx, conn, t, stage, r); err != nil {
		return err
	}
	if row <= 0 {
		return fmt.Errorf("engine: table %s: a row failed a domain check that names no column", t.Name)
	}
	return fmt.Errorf("engine: table %s: row %d failed a domain check that names no column", t.Name, row)
}
