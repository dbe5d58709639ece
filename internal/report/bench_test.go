package report

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/synth-dp/synth/workload"
)

// benchInput builds answers for a workload of d columns of n bins each:
// every 1-way and 2-way marginal (d + d(d−1)/2 families) with counts drawn
// from a fixed-seed generator, the synthetic ones within ±10% of the true.
func benchInput(d, n int) Input {
	rng := rand.New(rand.NewPCG(1, 2))
	a := &workload.Answers{Synthetic: "synthetic.parquet", TrueRows: 100_000, SyntheticRows: 100_000}
	labels := make([][]string, d)
	for j := range d {
		a.Names = append(a.Names, fmt.Sprintf("col%d", j))
		a.Sizes = append(a.Sizes, n)
		for b := range n {
			labels[j] = append(labels[j], fmt.Sprintf("v%d", b))
		}
	}
	fam := func(cols ...int) {
		cells := 1
		for range cols {
			cells *= n
		}
		f := workload.FamilyAnswers{Kind: "marginal", Columns: cols, Name: fmt.Sprint("marginal", cols)}
		for range cells {
			t := rng.Float64() * 2 * float64(a.TrueRows) / float64(cells)
			f.True = append(f.True, t)
			f.Synthetic = append(f.Synthetic, t*(0.9+0.2*rng.Float64()))
			f.Uniform = append(f.Uniform, float64(a.SyntheticRows)/float64(cells))
		}
		a.Families = append(a.Families, f)
	}
	for i := range d {
		fam(i)
	}
	for i := range d {
		for j := i + 1; j < d; j++ {
			fam(i, j)
		}
	}
	return Input{Answers: a, Labels: labels}
}

// BenchmarkWrite50 renders and writes the report of a 55-marginal workload
// (10 columns of 8 bins: 10 bar charts, 45 heat maps, 2 box plots of 55
// families): the issue asks for under 2 s.
func BenchmarkWrite50(b *testing.B) {
	in := benchInput(10, 8)
	if n := len(in.Answers.Families); n < 50 {
		b.Fatalf("%d families, want ≥ 50", n)
	}
	root := b.TempDir()
	b.ResetTimer()
	for i := range b.N {
		if _, err := Write(context.Background(), filepath.Join(root, fmt.Sprint(i)), in, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
