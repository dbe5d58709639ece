package numerical

import (
	"context"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/spec"
)

// joinQueries are the sums by o_orderpriority × l_returnflag (15 cells),
// by each priority, by each flag, and the total: 24 queries.
func joinQueries() []Query {
	var qs []Query
	for p := range 5 {
		for f := range 3 {
			qs = append(qs, Query{Name: fmt.Sprintf("p%d,f%d", p, f), Where: [][]int{{p}, {f}}})
		}
	}
	for p := range 5 {
		qs = append(qs, Query{Name: fmt.Sprintf("p%d", p), Where: [][]int{{p}, nil}})
	}
	for f := range 3 {
		qs = append(qs, Query{Name: fmt.Sprintf("f%d", f), Where: [][]int{nil, {f}}})
	}
	return append(qs, Query{Name: "all"})
}

func loadTPCH(t testing.TB) *engine.Engine {
	t.Helper()
	s, err := spec.Load("../testdata/numerical/tpch_orders_lineitem.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := engine.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if err := e.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	return e
}

var tpchJoin = TwoTableJoin{Left: ColumnRef{"orders", "o_orderkey"}, Right: ColumnRef{"lineitem", "l_orderkey"}}

// TestJoinPointsBruteForce checks the engine's points against the exact
// sums computed separately in SQL (and the degree statistic against its
// known value: at most 7 line items an order).
func TestJoinPointsBruteForce(t *testing.T) {
	if testing.Short() {
		t.Skip("loads TPC-H")
	}
	e := loadTPCH(t)
	ctx := context.Background()
	g := Grid{Names: []string{"o_orderpriority", "l_returnflag"}, Sizes: []int{5, 3}}
	u, err := NewUniverse(g, Measure{Name: "l_quantity", Min: 0, Max: 50}, UniverseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	js := JoinSpec{Join: tpchJoin, Conditions: []ColumnRef{{"orders", "o_orderpriority"}, {"lineitem", "l_returnflag"}},
		Measure: []ColumnRef{{"lineitem", "l_quantity"}}}
	pts, err := JoinPoints(ctx, e, js, u)
	if err != nil {
		t.Fatal(err)
	}
	sums, err := JoinExactSums(ctx, e, js, u)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	got := make([]float64, u.Cells())
	for _, p := range pts {
		got[p.Cell] += float64(p.Units * p.Count)
		n += p.Count
	}
	if n != 60175 {
		t.Errorf("join size %d, want 60,175 (every line item has its order)", n)
	}
	for c := range got {
		if got[c] != sums[c] {
			t.Errorf("cell %d: points sum %v, SQL sum %v", c, got[c], sums[c])
		}
	}
	// Δ̃ with a huge budget is the max degree plus a tiny pad.
	dt, err := TwoTableDeltaTilde(ctx, dp.NewSeededSource(1), e, tpchJoin, 50, 0.5, nil)
	if err != nil {
		t.Fatal(err)
	}
	if dt < 7 || dt > 8 {
		t.Errorf("Δ̃ = %d at ε = 50, want the max degree 7 (+ at most 1)", dt)
	}
}

// TestJoinExperiment runs item 4: TPC-H orders ⋈ lineitem, SUM(l_quantity)
// and SUM(l_extendedprice·l_discount) by o_orderpriority × l_returnflag,
// ours against normalization at ε = 1 (ε/2 for Δ̃ by Alg. 1, ε/2 for the
// mechanism). Env SYNTH_NUMERICAL_EXPERIMENTS=1.
func TestJoinExperiment(t *testing.T) {
	if os.Getenv("SYNTH_NUMERICAL_EXPERIMENTS") == "" {
		t.Skip("set SYNTH_NUMERICAL_EXPERIMENTS=1 to run the join experiment")
	}
	e := loadTPCH(t)
	ctx := context.Background()
	g := Grid{Names: []string{"o_orderpriority", "l_returnflag"}, Sizes: []int{5, 3}}
	cond := []ColumnRef{{"orders", "o_orderpriority"}, {"lineitem", "l_returnflag"}}
	qs := joinQueries()
	for _, m := range []struct {
		name    string
		measure Measure
		cols    []ColumnRef
	}{
		{"SUM(l_quantity)", Measure{Name: "l_quantity", Min: 0, Max: 50}, []ColumnRef{{"lineitem", "l_quantity"}}},
		{"SUM(l_extendedprice·l_discount)", Measure{Name: "revenue", Min: 0, Max: 10500, Resolution: 1},
			[]ColumnRef{{"lineitem", "l_extendedprice"}, {"lineitem", "l_discount"}}},
	} {
		u, err := NewUniverse(g, m.measure, UniverseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		js := JoinSpec{Join: tpchJoin, Conditions: cond, Measure: m.cols}
		pts, err := JoinPoints(ctx, e, js, u)
		if err != nil {
			t.Fatal(err)
		}
		cellSums, err := JoinExactSums(ctx, e, js, u)
		if err != nil {
			t.Fatal(err)
		}
		exact := make([]float64, len(qs))
		for q, qq := range qs {
			for c := range cellSums {
				if inBox(g, qq, int64(c)) {
					exact[q] += cellSums[c]
				}
			}
		}
		fmt.Printf("\n### TPC-H %s over orders ⋈ lineitem (60,175 join rows), |Q| = %d, universe %s\n\n", m.name, len(qs), u)
		fmt.Printf("| mechanism | run | Δ̃ | max | 75%% | median | 25%% | mean |\n|---|---|---|---|---|---|---|---|\n")
		for _, mech := range mechanisms[:2] {
			for run := range 3 {
				src := dp.NewSeededSource(uint64(1000*run + 3))
				dt, err := TwoTableDeltaTilde(ctx, src, e, tpchJoin, 0.5, 0.5e-6, nil)
				if err != nil {
					t.Fatal(err)
				}
				res, err := mech.run(ctx, src, u, qs, pts, Config{Epsilon: 0.5, Delta: 0.5e-6, Sensitivity: float64(dt)})
				if err != nil {
					t.Fatal(err)
				}
				errs := make([]float64, len(qs))
				var mean float64
				for q := range qs {
					errs[q] = math.Abs(res.Answers[q] - exact[q])
					mean += errs[q] / float64(len(qs))
				}
				b := box(errs)
				fmt.Printf("| %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %.0f |\n", mech.name, run, dt, b.max, b.q75, b.median, b.q25, mean)
			}
		}
	}
}
