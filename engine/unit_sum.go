package engine

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/spec"
)

// UnitCellSums is the private input of a measure under a privacy unit:
// for every unit with a join row and every cell of the grid over cols
// (mixed radix, sizes as for [Engine.Histogram]; no cols: the one cell 0)
// where the unit has join rows, the sum over those rows of value − offset,
// value being named as cols are (its [BinColumn] holds an integer in
// [0, valueSize): a measure in units of its resolution, shifted as the
// release's measure view does; offset undoes the shift, so the sums may
// be negative). It calls f
// once per (unit, cell) pair in order of unit, then cell; units are
// numbered 0, 1, … in the order of their key values (a DENSE_RANK, not
// the key: no id leaves the engine).
//
// What leaves the engine is one row per (unit, cell) pair with a join
// row — a per-unit aggregate, used in the process only to clip each unit's
// contribution (release's measures under a unit) — never a unit's key.
// Sums are computed in the wide integer type and must fit 64 bits (a
// unit's contribution to one cell below 2⁶³ units).
func (e *Engine) UnitCellSums(ctx context.Context, h *hypergraph.Hypergraph, key UnitKey, cols []spec.ColumnRef, sizes []int,
	value spec.ColumnRef, valueSize int, offset int64, f func(unit, cell, sum int64) error) error {
	mixed, err := e.mixedAttrs(ctx, h)
	if err != nil {
		return err
	}
	q, err := unitSumSQL(e.d, h, key, cols, sizes, value, valueSize, offset, mixed, e.keysOf(h))
	if err != nil {
		return err
	}
	defer func(start time.Time) {
		slog.Debug("engine: statistic", "stat", "unit cell sums", "sql", q, "seconds", time.Since(start).Seconds())
	}(time.Now())
	rows, err := e.db.QueryContext(ctx, q)
	if err != nil {
		return statError(ctx, "unit cell sums", err)
	}
	defer rows.Close()
	for rows.Next() {
		var u, c, s int64
		if err := rows.Scan(&u, &c, &s); err != nil {
			return statError(ctx, "unit cell sums", err)
		}
		if c < 0 {
			return fmt.Errorf("%w: unit cell sums: a cell lies outside the sizes %v", ErrInvalid, sizes)
		}
		if err := f(u, c, s); err != nil {
			return err
		}
	}
	return statError(ctx, "unit cell sums", rows.Err())
}

// unitSumSQL is the statement of [Engine.UnitCellSums]: the count plan
// of every relation of h grouped by the unit's key, the grid's binned
// columns and the value (as [unitHistogramSQL]), then Σ c·(value −
// offset) per (unit, cell), the units ranked by key.
func unitSumSQL(d dialect, h *hypergraph.Hypergraph, key UnitKey, cols []spec.ColumnRef, sizes []int, value spec.ColumnRef, valueSize int, offset int64,
	mixed map[string]bool, keys map[string][]string) (string, error) {
	j, err := unitJoinOf(d, h, key, append(append([]spec.ColumnRef(nil), cols...), value), append(append([]int(nil), sizes...), valueSize), mixed, keys, "unit cell sums")
	if err != nil {
		return "", err
	}
	p, kept := j.p, j.kept
	u := p.alias(kept[0])
	v := p.alias(kept[len(kept)-1])
	cell := "0"
	if len(cols) > 0 {
		g := &unitJoinPlan{p: p, kept: kept[:len(kept)-1], sizes: sizes}
		cell = g.cell()
	}
	rows := p.statement(kept)
	if p.order != nil {
		rows = p.plainRows(kept)
	}
	wide := d.wide()
	q := "WITH j AS (" + rows + "), " +
		"uc AS (SELECT " + u + " AS u, " + cell + " AS i, SUM(CAST(c AS " + wide + ") * (CAST(" + v + " AS " + wide + ") - " + fmt.Sprint(offset) + ")) AS s " +
		"FROM j GROUP BY 1, 2) " +
		"SELECT CAST(DENSE_RANK() OVER (ORDER BY u) - 1 AS BIGINT) AS r, CAST(i AS BIGINT), CAST(s AS BIGINT) FROM uc ORDER BY 1, 2"
	return q, nil
}
