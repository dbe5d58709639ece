package workload

import (
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/internal/synthfiletest"
	"github.com/synth-dp/synth/output/layout"
)

// TestEvaluateExact evaluates the true join itself, written as a
// synthetic file: every workload error is 0. Then one row moves to another
// cell: the largest absolute error is exactly 1, as a brute-force count
// says it must be.
func TestEvaluateExact(t *testing.T) {
	ctx := context.Background()
	s := releasetest.LoadSpec(t, "../examples/tpch/synth.yaml")
	eng := releasetest.LoadedEngine(t, s)
	h, err := s.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	truth, err := eng.Histogram(ctx, h, s.Release.Columns, s.ReleaseSizes())
	if err != nil {
		t.Fatal(err)
	}
	for _, moved := range []bool{false, true} {
		cells := append([]engine.Cell(nil), truth...)
		if moved {
			// Move one row of the first cell to a cell that is empty in the
			// truth (cells are sorted; pick the first gap).
			cells[0].Count--
			gap := int64(0)
			for _, c := range truth {
				if c.Index != gap {
					break
				}
				gap++
			}
			cells = append(cells, engine.Cell{Index: gap, Count: 1})
			slices.SortFunc(cells, func(a, b engine.Cell) int { return cmp.Compare(a.Index, b.Index) })
		}
		path := filepath.Join(t.TempDir(), layout.ParquetName)
		synthfiletest.WriteHistogram(t, s, path, cells, `{}`)
		e2 := releasetest.LoadedEngine(t, s)
		ev, err := Evaluate(ctx, s, e2, path)
		if err != nil {
			t.Fatal(err)
		}
		if ev.TrueRows != ev.SyntheticRows {
			t.Fatalf("rows: true %d, synthetic %d", ev.TrueRows, ev.SyntheticRows)
		}
		want := 0.0
		if moved {
			want = 1
		}
		if ev.Absolute.Max != want {
			t.Fatalf("moved=%v: max absolute error %v, want %v (%+v)", moved, ev.Absolute.Max, want, ev.Families)
		}
		if ev.Queries == 0 || len(ev.Families) == 0 {
			t.Fatal("no queries evaluated")
		}
	}
}
