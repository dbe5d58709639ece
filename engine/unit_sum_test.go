package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/synth-dp/synth/internal/stattest"
	"github.com/synth-dp/synth/spec"
)

// TestUnitCellSumsOracle compares [Engine.UnitCellSums] with a Go
// enumeration of the join on random instances (the shapes of
// TestUnitHistogramOracle): one released column's bin (0…2) is the value,
// shifted by −1 so that sums can be negative, and a random subset of the
// others the grid. The units are compared as a multiset of their vectors
// (unit numbers are ranks of the keys, whose order depends on their type).
func TestUnitCellSumsOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(stattest.Seed(t), 13))
	ctx := context.Background()
	e := openDSNTest(t, "duckdb::memory:")
	oneThread(t, e)
	n := 40
	if testing.Short() {
		n = 16
	}
	for i := range n {
		sh := unitShapes[i%len(unitShapes)]
		s, rows := unitInstance(t, r, sh, t.TempDir())
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
		all := spec.FoldColumns(f, s.Release.Columns)
		val := r.IntN(len(all))
		var set []int
		for c := range all {
			if c != val && r.IntN(2) == 0 {
				set = append(set, c)
			}
		}
		var cols []spec.ColumnRef
		var sz []int
		for _, c := range set {
			cols, sz = append(cols, all[c]), append(sz, 3)
		}
		rel, col, _ := f.Locate("u", "u_id")
		got := map[int64]map[int64]int64{}
		last := int64(-1)
		err = e.UnitCellSums(ctx, f.Folded(), UnitKey{Relation: rel, Column: col}, cols, sz,
			all[val], 3, 1, func(u, c, sum int64) error {
				if u < last {
					return fmt.Errorf("unit %d after %d", u, last)
				}
				last = u
				if got[u] == nil {
					got[u] = map[int64]int64{}
				}
				got[u][c] = sum
				return nil
			})
		if err != nil {
			t.Fatalf("instance %d (%s): %v", i, sh.name, err)
		}
		want := map[string]map[int64]int64{}
		for _, j := range unitJoin(sh, rows) {
			var cell int64
			for _, c := range set {
				cell = cell*3 + int64(j.cats[c])
			}
			if want[j.unit] == nil {
				want[j.unit] = map[int64]int64{}
			}
			want[j.unit][cell] += int64(j.cats[val]) - 1
		}
		var gs, ws []string
		for _, v := range got {
			gs = append(gs, fmt.Sprint(v))
		}
		for _, v := range want {
			ws = append(ws, fmt.Sprint(v))
		}
		slices.Sort(gs)
		slices.Sort(ws)
		if fmt.Sprint(gs) != fmt.Sprint(ws) {
			t.Fatalf("instance %d (%s, value %d, grid %v): units %v, want %v; rows %v", i, sh.name, val, set, gs, ws, rows)
		}
	}
}
