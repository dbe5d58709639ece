package workload

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/internal/synthfiletest"
	"github.com/synth-dp/synth/output/layout"
)

// TestAnswerShapes answers TPC-H's workload with the true join written as
// the synthetic file: true and synthetic answers agree, every marginal's
// uniform answers add up to the synthetic row count, and a range family
// has n(n+1)/2 intervals per cell of its by-marginal.
func TestAnswerShapes(t *testing.T) {
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
	path := filepath.Join(t.TempDir(), layout.ParquetName)
	synthfiletest.WriteHistogram(t, s, path, truth, `{}`)
	a, err := Answer(ctx, s, releasetest.LoadedEngine(t, s), path)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, f := range a.Families {
		kinds[f.Kind]++
		if len(f.True) != len(f.Synthetic) || len(f.True) != len(f.Uniform) || len(f.True) == 0 {
			t.Fatalf("%s: %d true, %d synthetic, %d uniform answers", f.Name, len(f.True), len(f.Synthetic), len(f.Uniform))
		}
		for i := range f.True {
			if f.True[i] != f.Synthetic[i] {
				t.Fatalf("%s: query %d: true %v, synthetic %v", f.Name, i, f.True[i], f.Synthetic[i])
			}
		}
		switch f.Kind {
		case "marginal":
			var u float64
			for _, x := range f.Uniform {
				u += x
			}
			if math.Abs(u-float64(a.SyntheticRows)) > 1e-6*float64(a.SyntheticRows) {
				t.Errorf("%s: uniform answers add up to %v, want %d", f.Name, u, a.SyntheticRows)
			}
		case "ranges":
			n := a.Sizes[f.Columns[len(f.Columns)-1]]
			by := 1
			for _, c := range f.Columns[:len(f.Columns)-1] {
				by *= a.Sizes[c]
			}
			if want := by * n * (n + 1) / 2; len(f.True) != want {
				t.Errorf("%s: %d intervals, want %d", f.Name, len(f.True), want)
			}
		}
	}
	if kinds["marginal"] == 0 {
		t.Fatalf("no marginal family in %v", kinds)
	}
	if ev := a.Evaluation(); ev.Absolute.Max != 0 || ev.Queries == 0 {
		t.Fatalf("evaluation of the truth: %+v", ev)
	}
}
