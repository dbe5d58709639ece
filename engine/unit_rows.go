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
// variable-elimination plan, with its count) holding the unit's key value
// and the bin of every released column. A release that clips its measured
// marginals in L2 reads one L2 marginal per PMW round; each read the
// three-way join again ([Engine.UnitMarginalL2]), which at TPC-H scale
// factor 10 cost as much as the whole bounded histogram. From the stored
// rows the histogram, the units' row counts and every L2 marginal are
// aggregates of one table, and the join runs once.
//
// Its statistics are those of the engine, to the last digit: the same
// rows, the same per-unit weights (the same SQL after the join), so the
// sensitivity arguments of [Engine.UnitHistogram] and
// [Engine.UnitMarginalL2] hold unchanged. A statistic it cannot answer
// (another hypergraph, unit or column set) is the engine's own.
//
// Close drops the table; the engine's Close drops it too (it lives in
// the engine's schema).
type UnitRows struct {
	e     *Engine
	h     *hypergraph.Hypergraph
	key   UnitKey
	cols  []spec.ColumnRef
	sizes []int
	table string
	u     string   // the column of the unit's key value
	bins  []string // the column of each of cols' bins

	once sync.Once
}

// StoreUnitRows stores the join of h with the unit's key value and the
// bins of cols (sizes as for [Engine.UnitHistogram]) for [UnitRows]'s
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
	r := &UnitRows{e: e, h: h, key: key, cols: slices.Clone(cols), sizes: slices.Clone(sizes),
		table: e.tempName("unit_rows"), u: j.p.alias(j.kept[0])}
	for _, v := range j.kept[1:] {
		r.bins = append(r.bins, j.p.alias(v))
	}
	q := e.d.replaceTable(r.table, j.rows(), false)
	start := time.Now()
	if _, err := e.db.ExecContext(ctx, q); err != nil {
		return nil, statError(ctx, "stored unit rows", err)
	}
	// Logged as the statistics are (Engine.scanPairs).
	slog.Debug("engine: statistic", "stat", "stored unit rows", "sql", q, "seconds", time.Since(start).Seconds())
	return r, nil
}

// Close drops the stored rows. It may be called more than once.
func (r *UnitRows) Close(ctx context.Context) error {
	var err error
	r.once.Do(func() {
		if _, e := r.e.db.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+r.e.d.ident(r.table)); e != nil {
			err = fmt.Errorf("engine: drop the stored unit rows: %w", e)
		}
	})
	return err
}

// CheckPrimaryKey is the engine's [Engine.CheckPrimaryKey].
func (r *UnitRows) CheckPrimaryKey(ctx context.Context, h *hypergraph.Hypergraph, table string, key []string) error {
	return r.e.CheckPrimaryKey(ctx, h, table, key)
}

// UnitHistogram is [Engine.UnitHistogram] read from the stored rows when
// h, key, cols and sizes are theirs, and the engine's otherwise.
func (r *UnitRows) UnitHistogram(ctx context.Context, h *hypergraph.Hypergraph, key UnitKey, cols []spec.ColumnRef, sizes []int, grid, bound int64) ([]Cell, []UnitDegree, error) {
	if h != r.h || key != r.key || !slices.Equal(cols, r.cols) || !slices.Equal(sizes, r.sizes) {
		return r.e.UnitHistogram(ctx, h, key, cols, sizes, grid, bound)
	}
	if err := unitHistogramArgs(grid, bound); err != nil {
		return nil, nil, err
	}
	src := r.e.d.ident(r.table)
	q := &unitSQL{
		n:       "SELECT " + r.u + " AS u, CAST(SUM(c) AS BIGINT) AS nu FROM " + src + " GROUP BY " + r.u,
		degrees: unitDegreesSQL,
		cells:   unitCellsSQL(r.u, cellOf(r.bins, r.sizes), src, grid, bound),
	}
	return r.e.unitHistogram(ctx, q, sizes)
}

// UnitMarginalL2 is [Engine.UnitMarginalL2] read from the stored rows when
// h and key are theirs and every column of cols is stored with its size,
// and the engine's otherwise.
func (r *UnitRows) UnitMarginalL2(ctx context.Context, h *hypergraph.Hypergraph, key UnitKey, cols []spec.ColumnRef, sizes []int, grid, bound int64) ([]Cell, error) {
	bins := make([]string, len(cols))
	for i, c := range cols {
		k := slices.Index(r.cols, c)
		if k < 0 || len(sizes) != len(cols) || sizes[i] != r.sizes[k] {
			bins = nil
			break
		}
		bins[i] = r.bins[k]
	}
	if h != r.h || key != r.key || len(bins) == 0 {
		return r.e.UnitMarginalL2(ctx, h, key, cols, sizes, grid, bound)
	}
	if err := unitL2Args(grid, bound); err != nil {
		return nil, err
	}
	q := unitL2From(r.e.d, "SELECT * FROM "+r.e.d.ident(r.table), r.u, cellOf(bins, sizes), grid, bound)
	return r.e.unitL2Cells(ctx, q, sizes)
}
