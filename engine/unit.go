package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

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
//	w(u) = min(grid, ⌊grid·bound / n_u⌋)
//
// where n_u is the number of join rows of the row's unit u (the value of
// key). So a unit's rows weigh at most grid·bound in all, and every row
// weighs at most grid (one row); grid and bound are public integers ≥ 1
// (bound in grid units: grid·r). Deleting a unit — its tuple and every
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
func (e *Engine) UnitHistogram(ctx context.Context, h *hypergraph.Hypergraph, key UnitKey, cols []spec.ColumnRef, sizes []int, grid, bound int64) ([]Cell, []UnitDegree, error) {
	if grid < 1 || bound < grid || bound > 1<<40 {
		return nil, nil, fmt.Errorf("%w: unit histogram: grid %d and bound %d (want 1 ≤ grid ≤ bound ≤ 2⁴⁰)", ErrInvalid, grid, bound)
	}
	mixed, err := e.mixedAttrs(ctx, h)
	if err != nil {
		return nil, nil, err
	}
	q, nq, err := unitHistogramSQL(e.d, h, key, cols, sizes, grid, bound, mixed, e.keysOf(h))
	if err != nil {
		return nil, nil, err
	}
	// Two statements, each building the join (see unitHistogramSQL for
	// why not one).
	var cells []Cell
	if q != "" { // "" without columns: the degrees only
		if err := e.scanPairs(ctx, q, "unit histogram", func(a, b int64) error {
			if a < 0 {
				return fmt.Errorf("%w: unit histogram: a cell lies outside the sizes %v", ErrInvalid, sizes)
			}
			cells = append(cells, Cell{Index: a, Count: b})
			return nil
		}); err != nil {
			return nil, nil, err
		}
	}
	var degs []UnitDegree
	if err := e.scanPairs(ctx, nq, "unit degrees", func(a, b int64) error {
		degs = append(degs, UnitDegree{Rows: a, Units: b})
		return nil
	}); err != nil {
		return nil, nil, err
	}
	return cells, degs, nil
}

// scanPairs runs q and calls f on every row of two integers. An engine
// error is a [*StatError]: its message holds no data (the run's budget is
// charged by then).
func (e *Engine) scanPairs(ctx context.Context, q, what string, f func(a, b int64) error) error {
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

// unitHistogramSQL returns the statements of [Engine.UnitHistogram]:
// cells, the bounded cells ("" without columns), and degrees, the
// histogram of n_u. The join is the count plan of
// every relation of h grouped by the unit's key column and the binned
// columns ([buildPlan]); the unit's key is carried as a plain column of its
// relation (one relation holds it, so no comparison rule applies to it).
func unitHistogramSQL(d dialect, h *hypergraph.Hypergraph, key UnitKey, cols []spec.ColumnRef, sizes []int, grid, bound int64,
	mixed map[string]bool, keys map[string][]string) (cells, degrees string, err error) {
	j, err := unitJoinOf(d, h, key, cols, sizes, mixed, keys, "unit histogram")
	if err != nil {
		return "", "", err
	}
	p, kept := j.p, j.kept
	u := p.alias(kept[0])
	// n: the join rows of every unit (a NULL key is one unit too: it is
	// refused by CheckPrimaryKey before any statistic runs).
	// j and n are plain CTEs, and the cells and the degrees are two
	// statements. One statement with j MATERIALIZED built the join once
	// (TestReleaseScale SF 1 Parquet: statistics 5.80 s → 3.84 s) but a
	// materialized CTE is held in DuckDB's buffers: at SF 10 (60 M line
	// items, some 40 M rows of j) it failed with "Out of Memory Error:
	// failed to pin block" under the default memory_limit of 256MB, also
	// with only n materialized, while these statements spill and pass.
	with := "WITH j AS (" + p.statement(kept) + "), n AS (SELECT " + u + " AS u, SUM(c) AS nu FROM j GROUP BY " + u + ")"
	degrees = with + " SELECT CAST(nu AS BIGINT) AS nu, CAST(COUNT(*) AS BIGINT) AS units FROM n GROUP BY nu ORDER BY nu"
	if len(cols) == 0 {
		return "", degrees, nil
	}
	// w(u) = min(grid, ⌊bound/n_u⌋): the quotient of two integers below
	// 2⁵³ is correctly rounded in DOUBLE PRECISION and differs from an
	// integer k by at least 1/n_u unless it is k, a relative gap of at
	// least 1/bound ≥ 2⁻⁴⁰, far above the 2⁻⁵³ of rounding: the floor is
	// exact.
	w := fmt.Sprintf("LEAST(%d, CAST(FLOOR(CAST(%d AS DOUBLE PRECISION) / CAST(n.nu AS DOUBLE PRECISION)) AS BIGINT))", grid, bound)
	cells = with + " SELECT i, CAST(SUM(wc) AS BIGINT) FROM (SELECT " + j.cell() + " AS i, CAST(j.c AS BIGINT) * " + w + " AS wc FROM j JOIN n ON j." + u + " IS NOT DISTINCT FROM n.u) AS x GROUP BY i ORDER BY i"
	return cells, degrees, nil
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

// cell is the expression of a join row's cell (mixed radix over the binned
// columns, the first most significant), −1 for a bin outside its size.
func (j *unitJoinPlan) cell() string {
	bins := j.kept[1:]
	idx := "CAST(" + j.p.alias(bins[0]) + " AS BIGINT)"
	var check []string
	for i, v := range bins {
		check = append(check, fmt.Sprintf("%s < 0 OR %s >= %d", j.p.alias(v), j.p.alias(v), j.sizes[i]))
		if i > 0 {
			idx = fmt.Sprintf("(%s * %d + %s)", idx, j.sizes[i], j.p.alias(v))
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
// before any statistic.
func (e *Engine) CheckPrimaryKey(ctx context.Context, h *hypergraph.Hypergraph, table string, key []string) error {
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
	vals := make([]string, len(key))
	var n, null int64
	dst := make([]any, 0, len(key)+2)
	for i := range vals {
		dst = append(dst, &vals[i])
	}
	switch err := e.db.QueryRowContext(ctx, q).Scan(append(dst, &n, &null)...); {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return statError(ctx, "primary key check of "+table, err)
	}
	return &DuplicateKeyError{Table: table, Columns: slices.Clone(key), Value: vals, Count: n, Null: null == 1,
		Reason: "privacy.unit: every unit and every private table on an ownership path needs a unique, non-NULL primary key, so that each row belongs to exactly one unit; fix the data or the declared primary_key"}
}
