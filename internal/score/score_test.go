package score

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/spec"
)

func TestTVD(t *testing.T) {
	for _, c := range []struct {
		p, q []float64
		want float64
	}{
		{[]float64{1, 0}, []float64{0, 1}, 1},
		{[]float64{0.5, 0.5}, []float64{0.5, 0.5}, 0},
		{[]float64{0.2, 0.3, 0.5}, []float64{0.3, 0.3, 0.4}, 0.1},
	} {
		if got := TVD(c.p, c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("TVD(%v, %v) = %v, want %v", c.p, c.q, got, c.want)
		}
	}
}

func TestMarginalMixedRadix(t *testing.T) {
	tab := &Table{Rows: [][]int{{0, 2, 1}, {1, 0, 1}, {1, 2, 0}, {1, 2, 1}}}
	sizes := []int{2, 3, 2}
	got := tab.Marginal([]int{0, 1}, sizes)
	want := []float64{0, 0, 0.25, 0.25, 0, 0.5}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("marginal = %v, want %v", got, want)
		}
	}
	r := Score(tab, tab, [][]int{{0}, {1, 2}}, sizes)
	if r.MeanTVD != 0 || r.MeanUniformTVD <= 0 {
		t.Fatalf("self score %+v", r)
	}
}

// TestTruthMatchesEngine: the scorer's true join (raw files, Go binning)
// and the engine's histogram (loaded tables, SQL binning) agree cell by
// cell on TPC-H and Adult: two independent paths to the same numbers.
func TestTruthMatchesEngine(t *testing.T) {
	for _, name := range []string{"tpch", "adult"} {
		t.Run(name, func(t *testing.T) {
			s, err := spec.Load(filepath.Join("..", "..", "examples", name, "synth.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			truth, err := Truth(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			eng, err := engine.Open(ctx, "duckdb")
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			if err := eng.Load(ctx, s); err != nil {
				t.Fatal(err)
			}
			h, err := s.Hypergraph()
			if err != nil {
				t.Fatal(err)
			}
			sizes := s.ReleaseSizes()
			cells, err := eng.Histogram(ctx, h, s.Release.Columns, sizes)
			if err != nil {
				t.Fatal(err)
			}
			mine := map[int64]int64{}
			for _, r := range truth.Rows {
				k := int64(0)
				for j, b := range r {
					k = k*int64(sizes[j]) + int64(b)
				}
				mine[k]++
			}
			var n int64
			for _, c := range cells {
				n += c.Count
				if mine[c.Index] != c.Count {
					t.Fatalf("cell %d: engine %d, scorer %d", c.Index, c.Count, mine[c.Index])
				}
			}
			if n != int64(len(truth.Rows)) {
				t.Fatalf("engine join size %d, scorer %d", n, len(truth.Rows))
			}
		})
	}
}
