package relational

import (
	"context"
	"slices"
	"testing"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/spec"
)

// TestReadsLoadEnough answers queries of every shape (joins, selections
// of each kind, GROUP BY, sums, units) on an engine that loaded only what
// [Reads] lists ([engine.Project]) and requires the true answer of every
// group, and the per-unit contributions R2T reads, to equal those on the
// engine holding the whole spec: a column Reads missed would fail to bind.
func TestReadsLoadEnough(t *testing.T) {
	full, s := tpch(t)
	ctx := context.Background()
	queries := []struct{ sql, unit string }{
		{"SELECT COUNT(*) FROM customer", ""},
		{"SELECT COUNT(*) FROM lineitem WHERE l_shipdate < l_commitdate AND NOT (l_quantity BETWEEN 10 AND 20)", ""},
		{"SELECT l_shipmode, COUNT(*) FROM orders, lineitem WHERE o_orderkey = l_orderkey AND l_shipmode IN ('MAIL', 'SHIP') GROUP BY l_shipmode", "orders"},
		{"SELECT SUM(l_extendedprice * (1 - l_discount)) FROM customer, orders, lineitem WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND (c_mktsegment = 'BUILDING' OR c_mktsegment = 'MACHINERY') AND o_orderdate < DATE '1995-03-15'", "customer"},
		{"SELECT c_mktsegment, SUM(l_quantity) FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey GROUP BY c_mktsegment", "customer"},
	}
	for _, tc := range queries {
		t.Run(tc.sql, func(t *testing.T) {
			q, err := Parse(ctx, full, s, tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			tables, cols := Reads([]*Query{q})
			if !slices.Equal(tables, q.Tables) {
				t.Errorf("Reads tables %v, want %v", tables, q.Tables)
			}
			p, err := engine.Project(s, tables, cols)
			if err != nil {
				t.Fatal(err)
			}
			part, err := engine.Open(ctx, "duckdb::memory:")
			if err != nil {
				t.Fatal(err)
			}
			defer part.Close()
			if err := part.Load(ctx, p); err != nil {
				t.Fatal(err)
			}
			var unitCols []spec.ColumnRef
			if tc.unit != "" {
				if _, unitCols, err = unitColumns(s, q, []string{tc.unit}); err != nil {
					t.Fatal(err)
				}
			}
			for _, g := range Groups(s, q) {
				var answers []float64
				var contribs [][]Contribution
				for _, e := range []*engine.Engine{full, part} {
					in, err := newInstance(ctx, e, s, q, g)
					if err != nil {
						t.Fatal(err)
					}
					v, err := in.answer(ctx)
					if err != nil {
						in.close()
						t.Fatal(err)
					}
					answers = append(answers, v)
					if unitCols != nil {
						c, _, err := in.contributions(ctx, unitCols, Quantum(q.Agg, 1))
						if err != nil {
							in.close()
							t.Fatal(err)
						}
						contribs = append(contribs, c)
					}
					in.close()
				}
				if answers[0] != answers[1] {
					t.Errorf("group %v: answer %v on the projected load, %v on the whole spec", g, answers[1], answers[0])
				}
				if unitCols != nil && len(contribs[0]) != len(contribs[1]) {
					t.Errorf("group %v: %d unit contributions on the projected load, %d on the whole spec", g, len(contribs[1]), len(contribs[0]))
				}
			}
		})
	}
}
