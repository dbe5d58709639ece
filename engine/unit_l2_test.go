package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/synth-dp/synth/internal/stattest"
	"github.com/synth-dp/synth/spec"
)

// unitL2Oracle is [Engine.UnitMarginalL2] by enumeration: the join in Go,
// each unit's vector over the cells of the tables in set (indices into
// sh.tables), its weight by counting down from grid, and the weighted sums.
func unitL2Oracle(sh unitShape, rows map[string][]map[string]string, set []int, grid, bound int64) map[int64]int64 {
	vec := map[string]map[int64]int64{}
	for _, j := range unitJoin(sh, rows) {
		var cell int64
		for _, t := range set {
			cell = cell*3 + int64(j.cats[t])
		}
		if vec[j.unit] == nil {
			vec[j.unit] = map[int64]int64{}
		}
		vec[j.unit][cell]++
	}
	cells := map[int64]int64{}
	for _, v := range vec {
		var n2 int64
		for _, x := range v {
			n2 += x * x
		}
		w := grid
		for w > 0 && w*w*n2 > bound*bound {
			w--
		}
		for c, x := range v {
			cells[c] += w * x
		}
	}
	return cells
}

// TestUnitMarginalL2Oracle compares the engine's L2-clipped marginals with
// a Go enumeration on random instances (the shapes of
// TestUnitHistogramOracle: chains, stars, public lookups, NULL and dangling
// references, text ids, units without rows), a random marginal of the
// tables' columns and a random grid and bound each: 200 instances with
// SYNTH_SLOW_AUDITS=1 (CI), 50 by default.
func TestUnitMarginalL2Oracle(t *testing.T) {
	r := rand.New(rand.NewPCG(stattest.Seed(t), 12))
	ctx := context.Background()
	e := openDSNTest(t, "duckdb::memory:")
	oneThread(t, e)
	n := 50
	if os.Getenv("SYNTH_SLOW_AUDITS") != "" && !testing.Short() {
		n = 200
	}
	for i := range n {
		sh := unitShapes[i%len(unitShapes)]
		dir := t.TempDir()
		s, rows := unitInstance(t, r, sh, dir)
		if err := e.Load(ctx, s); err != nil {
			t.Fatal(err)
		}
		f, err := s.Folding()
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Fold(ctx, f); err != nil {
			t.Fatal(err)
		}
		grid := []int64{1, 4, 16}[r.IntN(3)]
		bound := grid * (1 + r.Int64N(3))
		if r.IntN(3) == 0 {
			bound = grid + r.Int64N(2*grid) // r not an integer
		}
		all := spec.FoldColumns(f, s.Release.Columns)
		sizes := s.ReleaseSizes()
		var set []int
		for c := range all {
			if r.IntN(2) == 0 {
				set = append(set, c)
			}
		}
		if len(set) == 0 {
			set = []int{r.IntN(len(all))}
		}
		var cols []spec.ColumnRef
		var sz []int
		for _, c := range set {
			cols, sz = append(cols, all[c]), append(sz, sizes[c])
		}
		rel, col, _ := f.Locate("u", "u_id")
		key := UnitKey{Relation: rel, Column: col}
		want := unitL2Oracle(sh, rows, set, grid, bound)
		for k, v := range want {
			if v == 0 {
				delete(want, k) // a cell of weight-0 rows may or may not appear
			}
		}
		// The engine's statement, then the same from the join's rows of
		// every released column stored once (Engine.StoreUnitRows).
		stored, err := e.StoreUnitRows(ctx, f.Folded(), key, all, sizes)
		if err != nil {
			t.Fatalf("instance %d (%s): %v", i, sh.name, err)
		}
		if stored.own {
			t.Fatalf("instance %d (%s): the stored rows hold a cell outside the sizes: their statistics would be the engine's", i, sh.name)
		}
		for _, st := range []unitStats{e, stored} {
			cells, err := st.UnitMarginalL2(ctx, f.Folded(), key, cols, sz, grid, bound)
			if err != nil {
				t.Fatalf("instance %d (%s, %T): %v", i, sh.name, st, err)
			}
			got := nonZeroCells(cells)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("instance %d (%s, %T, set %v, grid %d, bound %d): cells %v, want %v; rows %v", i, sh.name, st, set, grid, bound, got, want, rows)
			}
		}
		if err := stored.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUnitMarginalL2Refuses: bad grids and bounds are refused before any
// query runs.
func TestUnitMarginalL2Refuses(t *testing.T) {
	e := openDSNTest(t, "duckdb::memory:")
	for _, tc := range []struct{ grid, bound int64 }{{0, 1}, {4, 3}, {1 << 21, 1 << 22}, {1, 1<<40 + 1}} {
		if _, err := e.UnitMarginalL2(context.Background(), nil, UnitKey{}, []spec.ColumnRef{{Table: "u", Column: "x"}}, []int{1}, tc.grid, tc.bound); err == nil {
			t.Errorf("grid %d, bound %d: no error", tc.grid, tc.bound)
		}
	}
}
