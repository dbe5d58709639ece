package pmw

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/synth-dp/synth/dp"
)

// TestMeasureTruthRounds: with Config.MeasureTruth, each round's measured
// set is read from MeasureTruth once (never for the initial 1-way
// marginals, never summed from another table), and a measured table with
// more weight than the truth — here three times the truth, the shape of
// the truth — is put on the model's scale: with noise far below one row,
// every measured table's mean (ybar) is n·(truth/total) within 0.5% a
// cell, and the model's marginals match the truth's shape. Without the
// rescaling the measured round tables hold 3n rows, which the first
// check catches (the deterministic part: noise of σ ≈ 10⁻³ rows cannot
// move a cell by 0.5% of thousands of rows).
func TestMeasureTruthRounds(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	sizes := []int{3, 4, 2, 5}
	full := make([]int64, cellsOf(sizes, seqInts(len(sizes))))
	var total int64
	for c := range full {
		full[c] = 200 + r.Int64N(2000)
		total += full[c]
	}
	table := func(set []int, scale int64) []int64 {
		tab := make([]int64, cellsOf(sizes, set))
		for c, k := range projectCells(sizes, seqInts(len(sizes)), set) {
			tab[k] += scale * full[c]
		}
		return tab
	}
	truth := func(_ context.Context, set []int) ([]int64, error) { return table(set, 1), nil }
	var reads [][]int
	measureTruth := func(_ context.Context, set []int) ([]int64, error) {
		reads = append(reads, slices.Clone(set))
		return table(set, 3), nil
	}
	fams := []Family{Marginal([]int{0, 1}), Marginal([]int{1, 2}), Marginal([]int{2, 3}), Marginal([]int{0, 3})}
	cfg := Config{Epsilon: 1e5, Delta: 1e-6, Sensitivity: 1, NoNHat: true, Rounds: 3, MeasureTruth: measureTruth}
	f, err := startFactored(context.Background(), dp.NewSeededSource(1), []string{"a", "b", "c", "d"}, sizes, fams, truth, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(reads) != 0 {
		t.Fatalf("MeasureTruth read %v before any round (the 1-way marginals read the truth)", reads)
	}
	for !f.done {
		if err := f.round(); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for _, s := range reads {
		if seen[setKey(s)] {
			t.Fatalf("MeasureTruth read %v twice", s)
		}
		seen[setKey(s)] = true
	}
	if len(reads) == 0 {
		t.Fatal("no round read MeasureTruth")
	}
	for k, me := range f.meas {
		set := f.measSet[k]
		want := table(set, 1)
		for c, y := range me.ybar {
			w := f.n * float64(want[c]) / float64(total)
			if math.Abs(y-w) > 0.005*w {
				t.Fatalf("set %v cell %d: measured %.1f, want n·p = %.1f", set, c, y, w)
			}
		}
	}
	f.fit(factoredFinalIters)
	for _, s := range reads {
		mu, err := f.model.marginal(s)
		if err != nil {
			t.Fatal(err)
		}
		for c, w := range table(s, 1) {
			if p := float64(w) / float64(total); math.Abs(mu[c]-p) > 0.01*p {
				t.Fatalf("model marginal %v cell %d: %.5f, truth %.5f", s, c, mu[c], p)
			}
		}
	}
}

// TestMeasureTruthNeedsFactored: the dense model refuses MeasureTruth.
func TestMeasureTruthNeedsFactored(t *testing.T) {
	u, err := NewUniverse([]string{"a"}, []int{2}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Epsilon: 1, Delta: 1e-6, Sensitivity: 1, NoNHat: true,
		MeasureTruth: func(context.Context, []int) ([]int64, error) { return nil, nil }}
	_, err = Run(context.Background(), dp.NewSeededSource(1), u, []Family{Marginal([]int{0})}, nil, cfg)
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("err = %v, want ErrInvalidConfig", err)
	}
}
