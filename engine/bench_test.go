package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/synth-dp/synth/spec"
)

// tpchDir holds the TPC-H scale factor 0.01 tables.
const tpchDir = "/work/shared/data/tpch/sf0.01"

// tpchSpec is customer ⋈ orders ⋈ lineitem with released columns
// c_mktsegment, o_orderpriority, l_returnflag and l_quantity.
func tpchSpec(b testing.TB) *spec.Spec {
	b.Helper()
	src := func(name string) string {
		p := filepath.Join(tpchDir, name+".csv")
		if _, err := os.Stat(p); err != nil {
			b.Skipf("TPC-H data missing: %v", err)
		}
		return p
	}
	return &spec.Spec{
		Tables: []spec.Table{
			{Name: "customer", Source: src("customer"), Columns: []spec.Column{
				{Name: "c_custkey", Type: spec.Key},
				{Name: "c_mktsegment", Type: spec.Categorical, Values: []string{"AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"}},
				{Name: "c_acctbal", Type: spec.Numeric, Min: -1000, Max: 10000, Bins: 11},
			}},
			{Name: "orders", Source: src("orders"), Columns: []spec.Column{
				{Name: "o_orderkey", Type: spec.Key},
				{Name: "o_custkey", Type: spec.Key},
				{Name: "o_orderpriority", Type: spec.Categorical, Values: []string{"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"}},
				{Name: "o_totalprice", Type: spec.Numeric, Min: 0, Max: 600000, Bins: 32},
				{Name: "o_orderdate", Type: spec.Date, DateMin: day("1992-01-01"), DateMax: day("1998-12-31"), Granularity: spec.Month},
			}},
			{Name: "lineitem", Source: src("lineitem"), Columns: []spec.Column{
				{Name: "l_orderkey", Type: spec.Key},
				{Name: "l_returnflag", Type: spec.Categorical, Values: []string{"A", "N", "R"}},
				{Name: "l_quantity", Type: spec.Integer, Min: 1, Max: 50, Bins: 10},
			}},
		},
		Join: []spec.JoinEq{
			{Left: spec.ColumnRef{Table: "orders", Column: "o_custkey"}, Right: spec.ColumnRef{Table: "customer", Column: "c_custkey"}},
			{Left: spec.ColumnRef{Table: "lineitem", Column: "l_orderkey"}, Right: spec.ColumnRef{Table: "orders", Column: "o_orderkey"}},
		},
		Release: spec.Release{Columns: []spec.ColumnRef{
			{Table: "customer", Column: "c_mktsegment"},
			{Table: "orders", Column: "o_orderpriority"},
			{Table: "lineitem", Column: "l_returnflag"},
			{Table: "lineitem", Column: "l_quantity"},
		}},
	}
}

func BenchmarkStatistics(b *testing.B) {
	ctx := context.Background()
	s := tpchSpec(b)
	e := openTest(b)
	if err := e.Load(ctx, s); err != nil {
		b.Fatal(err)
	}
	h, err := s.Hypergraph()
	if err != nil {
		b.Fatal(err)
	}
	cols := s.Release.Columns
	sizes := make([]int, len(cols))
	for i, c := range s.ReleaseColumns() {
		sizes[i] = c.Size()
	}
	// Sanity: every lineitem joins one order and one customer.
	n, err := e.JoinSize(ctx, h)
	if err != nil || n != tableCount(b, e, "lineitem") {
		b.Fatalf("JoinSize = %d, %v", n, err)
	}
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			if err := e.Load(ctx, s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("degrees", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.AllDegrees(ctx, h); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("join_size", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.JoinSize(ctx, h); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("max_boundary", func(b *testing.B) {
		orders := h.Index("orders")
		for b.Loop() {
			if _, err := e.MaxBoundaryCount(ctx, h, 1<<uint(orders)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("histogram", func(b *testing.B) {
		for b.Loop() {
			cells, err := e.Histogram(ctx, h, cols, sizes)
			if err != nil {
				b.Fatal(err)
			}
			var sum int64
			for _, c := range cells {
				sum += c.Count
			}
			if sum != n {
				b.Fatalf("histogram holds %d tuples, want %d", sum, n)
			}
		}
	})
}
