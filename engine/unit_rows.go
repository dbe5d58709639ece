package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/spec"
)

// UnitRows is the join of a privacy-unit release stored once in a table of
// the engine: one row per join row (or per group of the
// variable-elimination plan, with its count c) holding the unit's key value
// u and the row's cell i over the released columns (mixed radix, as
// [Engine.UnitHistogram] numbers the cells). A release that clips its
// measured marginals in L2 reads one L2 marginal per PMW round; each read
// the three-way join again ([Engine.UnitMarginalL2]), which at TPC-H scale
// factor 10 cost as much as the whole bounded histogram. From the stored
// rows the histogram, the units' row counts and every L2 marginal are
// aggregates of one table, and the join runs once; an L2 marginal's cell
// is computed from i (each of its columns' bin is i's digit in the mixed
// radix).
//
// Its statistics are those of the engine, to the last digit: the same
// rows, the same per-unit weights (the same SQL after the join, the cell
// read from i instead of the bins), so the sensitivity arguments of
// [Engine.UnitHistogram] and [Engine.UnitMarginalL2] hold unchanged. A
// statistic it cannot answer (another hypergraph, unit or column set) is
// the engine's own, and so is every statistic when a stored row's bin lies
// outside its size or is NULL (i is then −1 or NULL, and the digits of i
// are not the bins): the engine then reports what it reports.
//
// Why a cell and not the bins: at TPC-H SF 10 (60 M join rows) storing
// the unit and five bins (and the count, 1 on a plain join) took 50.7 s
// of CPU, the join alone 14.6 s: the rest is compressing the columns,
// their statistics and writing them, per column. The unit and the cell
// took 33.6 s, and the histogram and the two L2 marginals read from them
// less too (the release's statistics from the end of the key checks to
// the first PMW round and the second marginal: 74.0 s → 55.2 s of CPU).
// An attached in-memory database (no compression, no file) stored them
// faster but read them slower under the embedded engine's 256MB, for
// more CPU in all (60.8 s) and a higher peak RSS.
//
// Close drops the table; the engine's Close drops it too (it lives in
// the engine's schema).
type UnitRows struct {
	e     *Engine
	h     *hypergraph.Hypergraph
	key   UnitKey
	cols  []spec.ColumnRef
	sizes []int
	table string // the stored rows (an identifier)
	// plain is set when each stored row is one join row (the count c is 1
	// and not stored).
	plain bool
	// own is set when a stored cell is −1 or NULL: every statistic is
	// then the engine's.
	own bool

	once sync.Once
}

// StoreUnitRows stores the join of h with the unit's key value and the
// cell of cols (sizes as for [Engine.UnitHistogram]) for [UnitRows]'s
// statistics. It returns nil (and no error) on an engine that keeps the
// statistics in their own statements: PostgreSQL, where a sharded
// cluster's coordinator would pull every join row from the shards to
// store them, and the dialects that only render SQL.
func (e *Engine) StoreUnitRows(ctx context.Context, h *hypergraph.Hypergraph, key UnitKey, cols []spec.ColumnRef, sizes []int) (*UnitRows, error) {
	if _, ok := e.d.(duckDB); !ok {
		return nil, nil
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("%w: stored unit rows over no column", ErrInvalid)
	}
	mixed, err := e.mixedAttrs(ctx, h)
	if err != nil {
		return nil, err
	}
	j, err := unitJoinOf(e.d, h, key, cols, sizes, mixed, e.keysOf(h), "stored unit rows")
	if err != nil {
		return nil, err
	}
	table := e.d.ident(e.tempName("unit_rows"))
	r := &UnitRows{e: e, h: h, key: key, cols: slices.Clone(cols), sizes: slices.Clone(sizes), table: table, plain: j.p.order != nil}
	// The cell in the narrowest integer type that holds the universe
	// (fewer bytes to keep and to spill).
	total := int64(1)
	for _, n := range sizes {
		total *= int64(n)
	}
	cell := j.cell()
	if total <= 1<<31 {
		cell = "CAST(" + cell + " AS INTEGER)"
	}
	sel := "SELECT " + j.p.alias(j.kept[0]) + " AS u, " + cell + " AS i"
	if !r.plain {
		sel += ", c"
	}
	q := "CREATE OR REPLACE TABLE " + table + " AS " + sel + " FROM (" + j.rows() + ") AS j"
	start := time.Now()
	store := func() error {
		_, err := e.db.ExecContext(ctx, q)
		return statError(ctx, "stored unit rows", err)
	}
	if err := store(); err != nil {
		if !isOutOfMemory(err) || ctx.Err() != nil {
			return nil, err
		}
		// CREATE OR REPLACE: the run again replaces whatever the first left.
		if err := e.onOneThread(ctx, "stored unit rows", err, store); err != nil {
			return nil, err
		}
	}
	// Logged as the statistics are (Engine.scanPairs).
	slog.Debug("engine: statistic", "stat", "stored unit rows", "sql", q, "seconds", time.Since(start).Seconds())
	if err := e.db.QueryRowContext(ctx, "SELECT COALESCE(bool_or(i IS NULL OR i < 0), FALSE) FROM "+table).Scan(&r.own); err != nil {
		r.Close(ctx)
		return nil, statError(ctx, "stored unit rows", err)
	}
	return r, nil
}

// Close drops the stored rows. It may be called more than once.
func (r *UnitRows) Close(ctx context.Context) error {
	var err error
	r.once.Do(func() {
		if _, e := r.e.db.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+r.table); e != nil {
			err = fmt.Errorf("engine: drop the stored unit rows: %w", e)
		}
	})
	return err
}

// CheckPrimaryKey is the engine's [Engine.CheckPrimaryKey].
func (r *UnitRows) CheckPrimaryKey(ctx context.Context, h *hypergraph.Hypergraph, table string, key []string) error {
	return r.e.CheckPrimaryKey(ctx, h, table, key)
}

// rows is the stored rows with the columns the engine's join rows have,
// parenthesised: the unit u, the cell i and the count c.
func (r *UnitRows) rows() string {
	if r.plain {
		return "(SELECT u, i, 1 AS c FROM " + r.table + ")"
	}
	return "(SELECT u, i, c FROM " + r.table + ")"
}

// UnitHistogram is [Engine.UnitHistogram] read from the stored rows when
// h, key, cols and sizes are theirs, and the engine's otherwise.
func (r *UnitRows) UnitHistogram(ctx context.Context, h *hypergraph.Hypergraph, key UnitKey, cols []spec.ColumnRef, sizes []int, grid, bound int64) ([]Cell, []UnitDegree, error) {
	if r.own || h != r.h || key != r.key || !slices.Equal(cols, r.cols) || !slices.Equal(sizes, r.sizes) {
		return r.e.UnitHistogram(ctx, h, key, cols, sizes, grid, bound)
	}
	if err := unitHistogramArgs(grid, bound); err != nil {
		return nil, nil, err
	}
	n := "SELECT u, CAST(SUM(c) AS BIGINT) AS nu FROM " + r.table + " GROUP BY u"
	if r.plain {
		n = "SELECT u, CAST(count(*) AS BIGINT) AS nu FROM " + r.table + " GROUP BY u"
	}
	q := &unitSQL{n: n, degrees: unitDegreesSQL, cells: unitCellsSQL("u", "i", r.rows(), grid, bound)}
	return r.e.unitHistogram(ctx, q, sizes)
}

// UnitMarginalL2 is [Engine.UnitMarginalL2] read from the stored rows when
// h and key are theirs and every column of cols is stored with its size,
// and the engine's otherwise.
func (r *UnitRows) UnitMarginalL2(ctx context.Context, h *hypergraph.Hypergraph, key UnitKey, cols []spec.ColumnRef, sizes []int, grid, bound int64) ([]Cell, error) {
	cell := r.cellOf(cols, sizes)
	if r.own || h != r.h || key != r.key || cell == "" {
		return r.e.UnitMarginalL2(ctx, h, key, cols, sizes, grid, bound)
	}
	if err := unitL2Args(grid, bound); err != nil {
		return nil, err
	}
	q := unitL2From(r.e.d, "SELECT * FROM "+r.rows()+" AS s", "u", cell, grid, bound)
	return r.e.unitL2Cells(ctx, q, sizes)
}

// cellOf is the cell over cols (mixed radix in their order, the first
// most significant) of a stored row, from its cell i over the stored
// columns: each column's bin is i's digit, ⌊i / stride⌋ mod size. It is ""
// when a column of cols is not stored with its size. i is a valid cell
// (not r.own), so every digit lies inside its size.
func (r *UnitRows) cellOf(cols []spec.ColumnRef, sizes []int) string {
	if len(cols) == 0 || len(sizes) != len(cols) {
		return ""
	}
	if slices.Equal(cols, r.cols) && slices.Equal(sizes, r.sizes) {
		return "CAST(i AS BIGINT)"
	}
	stride := make([]int64, len(r.sizes))
	s := int64(1)
	for k := len(r.sizes) - 1; k >= 0; k-- {
		stride[k] = s
		s *= int64(r.sizes[k])
	}
	var idx string
	for q, c := range cols {
		k := slices.Index(r.cols, c)
		if k < 0 || sizes[q] != r.sizes[k] {
			return ""
		}
		bin := fmt.Sprintf("(CAST(i AS BIGINT) // %d %% %d)", stride[k], r.sizes[k])
		if q == 0 {
			idx = bin
		} else {
			idx = fmt.Sprintf("(%s * %d + %s)", idx, sizes[q], bin)
		}
	}
	return idx
}
