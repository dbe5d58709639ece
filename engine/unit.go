package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/spec"
)

// UnitKey names the column that holds the privacy unit's id in a
// hypergraph: a column of one of its relations (for a folded hypergraph,
// the folded relation's column, see hypergraph.Folding.Locate).
type UnitKey struct {
	// Relation is the relation holding the unit's primary key.
	Relation string
	// Column is the primary key column in that relation.
	Column string
}

// UnitDegree is one entry of the histogram of the units' join rows: Units
// units own exactly Rows rows of the join each. Units that own no join row
// do not appear.
type UnitDegree struct {
	Rows, Units int64
}

// UnitHistogram is the bounded histogram of a privacy-unit release: for
// every non-empty cell of the universe over cols (mixed radix, sizes as
// for [Engine.Histogram]), the sum over the cell's join rows of the row's
// weight in grid units
//
//	w(u) = min(grid, ⌊bound / n_u⌋)
//
// where n_u is the number of join rows of the row's unit u (the value of
// key) and bound is already in grid units (bound = grid·r for a bound of r
// rows). So a unit's rows weigh at most bound in all (r rows' worth), and
// every row weighs at most grid (one row); grid and bound are public
// integers with 1 ≤ grid ≤ bound. Deleting a unit — its tuple and every
// tuple referencing it — removes exactly its join rows, whose total weight
// is n_u·w(u) ≤ bound, and changes no other unit's n_u, hence no other
// weight: each cell moves by at most bound in all (L1 and L2 sensitivity
// bound). Every weight is an integer: the sums are exact, and integer
// noise added to them stays on the integers.
//
// With no cols it returns no cell and runs only the degrees' query.
//
// It also returns the histogram of n_u ([UnitDegree], sorted by Rows),
// from which the row count and its clipping are computed. Both are
// aggregates computed by the engine: one row per cell and one per distinct
// n_u leave it.
//
// The work: one statement stores every unit's n_u in a short-lived table
// of the engine's schema (one row per unit), dropped before returning; the
// degrees are a GROUP BY of that table and the cells one more pass over the
// join, each join row weighted through that table (see unitHistogramSQL).
func (e *Engine) UnitHistogram(ctx context.Context, h *hypergraph.Hypergraph, key UnitKey, cols []spec.ColumnRef, sizes []int, grid, bound int64) ([]Cell, []UnitDegree, error) {
	if err := unitHistogramArgs(grid, bound); err != nil {
		return nil, nil, err
	}
	mixed, err := e.mixedAttrs(ctx, h)
	if err != nil {
		return nil, nil, err
	}
	q, err := unitHistogramSQL(e.d, h, key, cols, sizes, grid, bound, mixed, e.keysOf(h))
	if err != nil {
		return nil, nil, err
	}
	return e.unitHistogram(ctx, q, sizes)
}

// unitHistogramArgs checks [Engine.UnitHistogram]'s grid and bound.
func unitHistogramArgs(grid, bound int64) error {
	if grid < 1 || bound < grid || bound > 1<<40 {
		return fmt.Errorf("%w: unit histogram: grid %d and bound %d (want 1 ≤ grid ≤ bound ≤ 2⁴⁰)", ErrInvalid, grid, bound)
	}
	return nil
}

// unitHistogram runs the statements q of a unit histogram (sizes are the
// cells' for errors): the degrees alone when q has no cells, otherwise
// the units' row counts stored in a short-lived table, then the cells
// and the degrees from it.
func (e *Engine) unitHistogram(ctx context.Context, q *unitSQL, sizes []int) ([]Cell, []UnitDegree, error) {
	var degs []UnitDegree
	scanDegrees := func(src string) error {
		return e.scanPairs(ctx, q.degrees(src), "unit degrees", func(a, b int64) error {
			degs = append(degs, UnitDegree{Rows: a, Units: b})
			return nil
		})
	}
	if q.cells == nil { // no columns: the degrees only, one statement
		if err := scanDegrees("(" + q.n + ")"); err != nil {
			return nil, nil, err
		}
		return nil, degs, nil
	}
	d := e.d
	tmp := e.tempName("unit_n")
	if _, err := e.db.ExecContext(ctx, d.replaceTable(tmp, q.n, false)); err != nil {
		return nil, nil, statError(ctx, "unit row counts", err)
	}
	defer e.db.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+d.ident(tmp))
	var cells []Cell
	if err := e.scanPairs(ctx, q.cells(d.ident(tmp)), "unit histogram", func(a, b int64) error {
		if a < 0 {
			return fmt.Errorf("%w: unit histogram: a cell lies outside the sizes %v", ErrInvalid, sizes)
		}
		cells = append(cells, Cell{Index: a, Count: b})
		return nil
	}); err != nil {
		return nil, nil, err
	}
	if err := scanDegrees(d.ident(tmp)); err != nil {
		return nil, nil, err
	}
	return cells, degs, nil
}

// tempName returns a fresh name for a short-lived table of a statistic, in
// the engine's schema, with the reserved prefix (no loaded table can have
// it) and a number unique to this engine (statistics may run
// concurrently).
func (e *Engine) tempName(what string) string {
	return fmt.Sprintf("%s%s_%d", ReservedPrefix, what, e.temps.Add(1))
}

// scanPairs runs q and calls f on every row of two integers. An engine
// error is a [*StatError]: its message holds no data (the run's budget is
// charged by then).
//
// Each statement is logged at debug level ("engine: statistic", with its
// SQL, which holds names and public parameters only, and its wall time).
//
// A statement DuckDB could not run within its memory limit, before it
// returned a row, runs again on one thread ([Engine.onOneThread]).
func (e *Engine) scanPairs(ctx context.Context, q, what string, f func(a, b int64) error) error {
	delivered := false
	g := func(a, b int64) error {
		delivered = true
		return f(a, b)
	}
	err := e.scanPairsOnce(ctx, q, what, g)
	if err == nil || delivered || !isOutOfMemory(err) || ctx.Err() != nil {
		return err
	}
	return e.onOneThread(ctx, what, err, func() error { return e.scanPairsOnce(ctx, q, what, g) })
}

// scanPairsOnce runs q once for [Engine.scanPairs].
func (e *Engine) scanPairsOnce(ctx context.Context, q, what string, f func(a, b int64) error) error {
	defer func(start time.Time) {
		slog.Debug("engine: statistic", "stat", what, "sql", q, "seconds", time.Since(start).Seconds())
	}(time.Now())
	rows, err := e.db.QueryContext(ctx, q)
	if err != nil {
		return statError(ctx, what, err)
	}
	defer rows.Close()
	for rows.Next() {
		var a, b int64
		if err := rows.Scan(&a, &b); err != nil {
			return statError(ctx, what, err)
		}
		if err := f(a, b); err != nil {
			return err
		}
	}
	return statError(ctx, what, rows.Err())
}

// unitSQL holds the statements of [Engine.UnitHistogram].
type unitSQL struct {
	// n yields one row per unit with a join row: its key value u and its
	// number of join rows nu.
	n string
	// degrees is the histogram of nu (columns nu, units) over src, a
	// table or parenthesised query with n's columns.
	degrees func(src string) string
	// cells is the bounded cells over src as in degrees; nil without
	// columns.
	cells func(src string) string
}

// unitHistogramSQL returns the statements of [Engine.UnitHistogram].
//
// n is the count plan of every relation of h grouped by the unit's key
// column alone ([buildPlan]; the key is carried as a plain column of its
// relation: one relation holds it, so no comparison rule applies to it).
// The cells join the same relations, this time keeping the binned
// columns, to n on the unit's key, and sum each join row's weight w(n_u)
// per cell. When the plan is a plain join (a key-join order, as TPC-H's
// lineitem → orders → customer) the cells statement joins the rows
// themselves and groups by the cell only: its one large aggregate has one
// group per cell. Otherwise the join is the variable-elimination plan
// grouped by the unit and the bins, weighted by its counts.
//
// Why not group the join by (unit, cells) once and derive both from it,
// as this did before: that aggregate has one group per (unit, cell) pair
// (some 40 M at TPC-H scale factor 10), which under the embedded engine's
// 256MB memory limit spills, and read three times (once for n, once for
// the cells, once for the degrees) it made the statistics 103.6 s at SF 10
// Parquet (TestReleaseScale); this form is one join grouped by unit (1.5 M
// groups), stored, and one join grouped by cell: the two statements took
// 28 s at SF 10 on the Parquet files under 256MB (4.5 s → 1.75 s at SF 1),
// and the release's statistics 37.6 s. One statement with the large
// aggregate MATERIALIZED failed with "failed to pin block" at SF 10 under
// 256MB.
func unitHistogramSQL(d dialect, h *hypergraph.Hypergraph, key UnitKey, cols []spec.ColumnRef, sizes []int, grid, bound int64,
	mixed map[string]bool, keys map[string][]string) (*unitSQL, error) {
	nj, err := unitJoinOf(d, h, key, nil, nil, mixed, keys, "unit histogram")
	if err != nil {
		return nil, err
	}
	// A NULL key is one unit too: it is refused by CheckPrimaryKey before
	// any statistic runs, and compared by IS NOT DISTINCT FROM below.
	q := &unitSQL{
		// The plan yields one row per value of the key.
		n:       "SELECT " + nj.p.alias(nj.kept[0]) + " AS u, c AS nu FROM (" + nj.p.statement(nj.kept) + ") AS j",
		degrees: unitDegreesSQL,
	}
	if len(cols) == 0 {
		return q, nil
	}
	j, err := unitJoinOf(d, h, key, cols, sizes, mixed, keys, "unit histogram")
	if err != nil {
		return nil, err
	}
	q.cells = unitCellsSQL(j.p.alias(j.kept[0]), j.cell(), "("+j.rows()+")", grid, bound)
	return q, nil
}

// unitDegreesSQL is the histogram of the units' row counts nu over src, a
// table or parenthesised query with the columns u and nu.
func unitDegreesSQL(src string) string {
	return "SELECT CAST(nu AS BIGINT) AS nu, CAST(COUNT(*) AS BIGINT) AS units FROM " + src + " AS n GROUP BY nu ORDER BY nu"
}

// unitCellsSQL is unitSQL.cells over the join rows rows (a table or a
// parenthesised query with the unit's key value in the column u, a count
// c and the bins cell reads): each row's count weighted by its unit's
// w(u) and summed per cell.
func unitCellsSQL(u, cell, rows string, grid, bound int64) func(src string) string {
	// w(u) = min(grid, ⌊bound/n_u⌋): the quotient of two integers below
	// 2⁵³ is correctly rounded in DOUBLE PRECISION and differs from an
	// integer k by at least 1/n_u unless it is k, a relative gap of at
	// least 1/bound ≥ 2⁻⁴⁰, far above the 2⁻⁵³ of rounding: the floor is
	// exact.
	w := fmt.Sprintf("LEAST(%d, CAST(FLOOR(CAST(%d AS DOUBLE PRECISION) / CAST(n.nu AS DOUBLE PRECISION)) AS BIGINT))", grid, bound)
	return func(src string) string {
		return "SELECT i, CAST(SUM(wc) AS BIGINT) FROM (SELECT " + cell + " AS i, CAST(j.c AS BIGINT) * " + w + " AS wc FROM " +
			rows + " AS j JOIN " + src + " AS n ON j." + u + " IS NOT DISTINCT FROM n.u) AS x GROUP BY i ORDER BY i"
	}
}

// unitJoinPlan is the join of a unit statistic: the count plan of every
// relation of h grouped by the unit's key column (kept[0]) and the binned
// columns (kept[1:]).
type unitJoinPlan struct {
	p     *plan
	kept  []int
	sizes []int
}

// unitJoinOf builds the plan of [unitHistogramSQL] and [unitL2SQL], checking
// the columns, their sizes (a universe below 2⁶²) and the unit's relation;
// what names the statistic in errors.
func unitJoinOf(d dialect, h *hypergraph.Hypergraph, key UnitKey, cols []spec.ColumnRef, sizes []int,
	mixed map[string]bool, keys map[string][]string, what string) (*unitJoinPlan, error) {
	if len(cols) != len(sizes) {
		return nil, fmt.Errorf("%w: %s over %d columns with %d sizes", ErrInvalid, what, len(cols), len(sizes))
	}
	rel := h.Index(key.Relation)
	if rel < 0 {
		return nil, fmt.Errorf("%w: unit key %s.%s: no relation %q", ErrInvalid, key.Relation, key.Column, key.Relation)
	}
	vars := []planVar{{rel: rel, col: key.Column}}
	total := int64(1)
	for i, c := range cols {
		r := h.Index(c.Table)
		if r < 0 {
			return nil, fmt.Errorf("%w: %s column %s: no relation %q", ErrInvalid, what, c, c.Table)
		}
		if sizes[i] < 1 || total > (1<<62)/int64(sizes[i]) {
			return nil, fmt.Errorf("%w: %s column %s: size %d (universe too large or empty)", ErrInvalid, what, c, sizes[i])
		}
		total *= int64(sizes[i])
		vars = append(vars, planVar{rel: r, col: BinColumn(c.Column)})
	}
	p, kept, err := buildPlan(d, h, h.All(), nil, vars, mixed, keys)
	if err != nil {
		return nil, err
	}
	return &unitJoinPlan{p: p, kept: kept, sizes: sizes}, nil
}

// rows is the statement of the join's rows with the kept variables and a
// count c: with a plain join (a key-join order) the rows themselves (c
// = 1), so that an aggregate coarser than the kept variables saves the
// GROUP BY; otherwise the variable-elimination plan grouped by them.
func (j *unitJoinPlan) rows() string {
	if j.p.order != nil {
		return j.p.plainRows(j.kept)
	}
	return j.p.statement(j.kept)
}

// cell is the expression of a join row's cell (mixed radix over the binned
// columns, the first most significant), −1 for a bin outside its size.
func (j *unitJoinPlan) cell() string {
	bins := make([]string, len(j.kept)-1)
	for i, v := range j.kept[1:] {
		bins[i] = j.p.alias(v)
	}
	return cellOf(bins, j.sizes)
}

// cellOf is the mixed-radix cell of the bin columns bins (sizes[i] values
// each, the first most significant), −1 for a bin outside its size.
func cellOf(bins []string, sizes []int) string {
	idx := "CAST(" + bins[0] + " AS BIGINT)"
	var check []string
	for i, v := range bins {
		check = append(check, fmt.Sprintf("%s < 0 OR %s >= %d", v, v, sizes[i]))
		if i > 0 {
			idx = fmt.Sprintf("(%s * %d + %s)", idx, sizes[i], v)
		}
	}
	return "CASE WHEN " + strings.Join(check, " OR ") + " THEN -1 ELSE " + idx + " END"
}

// CheckPrimaryKey returns a [*DuplicateKeyError] when the loaded table's
// declared primary key holds a duplicated value or a NULL: a privacy unit
// and every private table on an ownership path need one (a duplicated
// order key would make a line item belong to two customers, and deleting
// one customer would then change another's rows). Key columns that are
// join attributes of h (the original, unfolded hypergraph) are compared
// as the join compares them. It reads the table: call it after Load,
// before any statistic. On DuckDB a table whose keys strictly increase
// from row to row passes in one streaming pass ([Engine.increasingKey]);
// any other is grouped by its key, which finds the error. A check that
// passed is not run again until the next Load or Fold.
func (e *Engine) CheckPrimaryKey(ctx context.Context, h *hypergraph.Hypergraph, table string, key []string) error {
	return e.checkPrimaryKey(ctx, h, table, key,
		"privacy.unit: every unit and every private table on an ownership path needs a unique, non-NULL primary key, so that each row belongs to exactly one unit; fix the data or the declared primary_key")
}

// checkPrimaryKey is [Engine.CheckPrimaryKey] with the reason the error
// gives.
func (e *Engine) checkPrimaryKey(ctx context.Context, h *hypergraph.Hypergraph, table string, key []string, reason string) error {
	i := h.Index(table)
	if i < 0 {
		return fmt.Errorf("%w: primary key check: no relation %q", ErrInvalid, table)
	}
	if len(key) == 0 {
		return fmt.Errorf("%w: table %s declares no primary_key", ErrInvalid, table)
	}
	mixed, err := e.mixedAttrs(ctx, h)
	if err != nil {
		return err
	}
	r := h.Relation(i)
	attrOf := map[string]string{}
	for a, c := range r.Attrs {
		attrOf[c] = a
	}
	d := e.d
	var sel, labels, nulls []string
	for k, c := range key {
		alias := d.ident(fmt.Sprintf("k%d", k))
		v := d.ident(c)
		if a, ok := attrOf[c]; ok {
			v = joinValue(d, c, mixed[a])
		}
		sel = append(sel, v+" AS "+alias)
		labels = append(labels, "COALESCE("+d.toText(alias)+", 'NULL')")
		nulls = append(nulls, alias+" IS NULL")
	}
	q := "SELECT " + strings.Join(labels, ", ") + ", CAST(c AS BIGINT), CASE WHEN " + strings.Join(nulls, " OR ") +
		" THEN 1 ELSE 0 END FROM (SELECT " + strings.Join(sel, ", ") +
		", count(*) AS c FROM " + d.ident(r.Name) + " GROUP BY " + strings.Join(seq(len(sel)), ", ") + ") AS g WHERE c > 1 OR " +
		strings.Join(nulls, " OR ") + " ORDER BY " + strings.Join(seq(len(labels)), ", ") + " LIMIT 1"
	if e.checkPassed(q) {
		return nil
	}
	if _, ok := d.(duckDB); ok {
		start := time.Now()
		inc, err := e.increasingKey(ctx, d.ident(r.Name), sel, len(key))
		slog.Debug("engine: check", "check", "primary key of "+table+" (increasing)", "passed", inc, "seconds", time.Since(start).Seconds())
		if err != nil {
			return statError(ctx, "primary key check of "+table, err)
		}
		if inc {
			e.passCheck(q)
			return nil
		}
	}
	vals := make([]string, len(key))
	var n, null int64
	dst := make([]any, 0, len(key)+2)
	for i := range vals {
		dst = append(dst, &vals[i])
	}
	start := time.Now()
	err = e.db.QueryRowContext(ctx, q).Scan(append(dst, &n, &null)...)
	slog.Debug("engine: check", "check", "primary key of "+table, "sql", q, "seconds", time.Since(start).Seconds())
	switch {
	case errors.Is(err, sql.ErrNoRows):
		e.passCheck(q)
		return nil
	case err != nil:
		return statError(ctx, "primary key check of "+table, err)
	}
	return &DuplicateKeyError{Table: table, Columns: slices.Clone(key), Value: vals, Count: n, Null: null == 1, Reason: reason}
}

// increasingKey tells whether every row of table has a non-NULL key (the
// n expressions of sel, each "value AS kN") and the keys strictly increase
// (lexicographically) from each row to the next in the order one window
// over the whole table reads them: then no two rows share a key, and the
// key check has passed without grouping the rows. Any order proves it (a
// strictly increasing sequence repeats no value), so the scan's order
// need not be the file's; a table that is not so ordered (false) takes
// the grouping. It is one streaming pass (DuckDB's LAG over an empty
// window needs neither a sort nor a hash table), where grouping a large
// table by its key spills under the engine's memory bound: at TPC-H SF 10,
// lineitem's (l_orderkey, l_linenumber) took 4.0 s of CPU instead of
// 16.6 s. Rows are compared with < and =, which on the key types (BIGINT,
// text) agree with the grouping's equality.
func (e *Engine) increasingKey(ctx context.Context, table string, sel []string, n int) (bool, error) {
	d := e.d
	var lags, nonNull []string
	greater := ""
	for k := n - 1; k >= 0; k-- {
		cur, prev := d.ident(fmt.Sprintf("k%d", k)), d.ident(fmt.Sprintf("p%d", k))
		lags = append(lags, "lag("+cur+") OVER () AS "+prev)
		nonNull = append(nonNull, cur+" IS NOT NULL")
		if greater == "" {
			greater = cur + " > " + prev
		} else {
			greater = cur + " > " + prev + " OR (" + cur + " = " + prev + " AND (" + greater + "))"
		}
	}
	// The first row's lag is NULL; a later row's is NULL only where the
	// row before has a NULL key, which fails on that row.
	ok := "COALESCE(" + strings.Join(nonNull, " AND ") + " AND (" + d.ident("p0") + " IS NULL OR " + greater + "), FALSE)"
	q := "SELECT COALESCE(bool_and(" + ok + "), TRUE) FROM (SELECT *, " + strings.Join(lags, ", ") + " FROM (SELECT " + strings.Join(sel, ", ") +
		" FROM " + table + ") AS k) AS s"
	var inc bool
	err := e.db.QueryRowContext(ctx, q).Scan(&inc)
	return inc, err
}

// checkPassed tells whether the check statement q passed since the last
// load: the same statement over the same tables gives the same result,
// so [Engine.CheckPrimaryKeys] and the privacy unit's key checks, which
// check some keys twice, read each table once.
func (e *Engine) checkPassed(q string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.passed[q]
}

// passCheck records that the check statement q passed.
func (e *Engine) passCheck(q string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.passed == nil {
		e.passed = map[string]bool{}
	}
	e.passed[q] = true
}
