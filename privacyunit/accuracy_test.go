package privacyunit

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/spec"
)

// tpchUnitSpec is examples/tpch/synth.yaml with privacy.unit: customer.
func tpchUnitSpec(t testing.TB, eps float64) *spec.Spec {
	t.Helper()
	path := filepath.Join("..", "examples", "tpch", "synth.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	y := string(b)
	abs, err := filepath.Abs(filepath.Join("..", "testdata", "tpch"))
	if err != nil {
		t.Fatal(err)
	}
	y = strings.ReplaceAll(y, "../../testdata/tpch", abs)
	y = strings.Replace(y, "privacy: {epsilon: 1.0, delta: 1e-6}", "privacy: {epsilon: 1.0, delta: 1e-6, unit: customer}", 1)
	y = strings.Replace(y, "method: join-as-one", "method: auto", 1)
	s, err := spec.Parse([]byte(y), filepath.Join(t.TempDir(), "synth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s.Privacy.Epsilon = eps
	return s
}

// marginalTVD is the mean TVD of the 1- and 2-way marginals listed in
// sets between two dense histograms over sizes.
func marginalTVD(sizes []int, a, b []float64, sets [][]int) float64 {
	var sum float64
	d := make([]int, len(sizes))
	for _, set := range sets {
		ma, mb := map[int]float64{}, map[int]float64{}
		var ta, tb float64
		for x := range a {
			rem := x
			for i := len(sizes) - 1; i >= 0; i-- {
				d[i] = rem % sizes[i]
				rem /= sizes[i]
			}
			k := 0
			for _, c := range set {
				k = k*sizes[c] + d[c]
			}
			ma[k] += a[x]
			mb[k] += b[x]
			ta += a[x]
			tb += b[x]
		}
		keys := map[int]bool{}
		for k := range ma {
			keys[k] = true
		}
		var tvd float64
		for k := range keys {
			tvd += math.Abs(ma[k]/ta - mb[k]/tb)
		}
		sum += tvd / 2
	}
	return sum / float64(len(sets))
}

// TestBoundSweep prints, for the TPC-H example with unit customer, the
// mean TVD of the workload marginals over 3 seeds for each contribution
// bound r in SYNTH_UNIT_SWEEP (comma-separated, e.g. 1,2,4,8,16) at
// ε = 1 and 4: the evidence for the default r (docs/privacy-units.md).
// It scores the model's weights against the true join histogram, so it
// needs no file; the release-level check on the independent scorer is
// release.TestTPCHUnitTVD.
func TestBoundSweep(t *testing.T) {
	v := os.Getenv("SYNTH_UNIT_SWEEP")
	if v == "" {
		t.Skip("set SYNTH_UNIT_SWEEP=1,2,4,8 to sweep the contribution bound")
	}
	var bounds []float64
	for _, f := range strings.Split(v, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			t.Fatal(err)
		}
		bounds = append(bounds, r)
	}
	ctx := context.Background()
	s := tpchUnitSpec(t, 1)
	eng, err := engine.Open(ctx, "duckdb::memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if err := eng.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	folding, err := s.Folding()
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Fold(ctx, folding); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range s.Release.Columns {
		names = append(names, c.Column)
	}
	u, err := pmw.NewUniverse(names, s.ReleaseSizes(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var fams []pmw.Family
	var sets [][]int
	for _, m := range s.Workload.Marginals {
		var cols []int
		for _, r := range m {
			cols = append(cols, slices.Index(s.Release.Columns, r))
		}
		sets = append(sets, cols)
		fams = append(fams, pmw.Marginal(cols))
	}
	cols := spec.FoldColumns(folding, s.Release.Columns)
	truth, err := eng.Histogram(ctx, folding.Folded(), cols, s.ReleaseSizes())
	if err != nil {
		t.Fatal(err)
	}
	dense := make([]float64, u.Len())
	for _, c := range truth {
		dense[c.Index] = float64(c.Count)
	}
	fmt.Println("| r | ε | mean TVD (3 seeds) | rows / true |")
	fmt.Println("| --- | --- | --- | --- |")
	for _, r := range bounds {
		for _, eps := range []float64{1, 4} {
			var tvd, ratio float64
			for seed := range 3 {
				l, _ := dp.NewLedger(dp.Budget{Epsilon: eps, Delta: 1e-6})
				p, err := Prepare(s, folding, Config{Epsilon: eps, Delta: 1e-6, Columns: cols, Universe: u, Families: fams, Bound: r}, l)
				if err != nil {
					t.Fatal(err)
				}
				res, err := p.Run(ctx, dp.NewSeededSource(uint64(seed+1)), eng)
				if err != nil {
					t.Fatal(err)
				}
				tvd += marginalTVD(s.ReleaseSizes(), dense, res.PMW.Weights, sets) / 3
				ratio += float64(res.Rows) / float64(sumCells(truth)) / 3
			}
			fmt.Printf("| %g | %g | %.4f | %.2f |\n", r, eps, tvd, ratio)
		}
	}
}

func sumCells(cs []engine.Cell) int64 {
	var n int64
	for _, c := range cs {
		n += c.Count
	}
	return n
}
