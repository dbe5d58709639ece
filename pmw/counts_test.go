package pmw

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/synth-dp/synth/dp"
)

// TestCounts checks systematic rounding: total exactly round(n̂),
// non-negative, each count within 1 of N·weight/Σweight, cells strictly
// increasing and never zero; and, over many offsets, the mean count of a
// cell is its expected count (5.5 standard errors: false failure < 1e-7
// per cell by the CLT, bounded variance ≤ 1/4).
func TestCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, nhat := range []float64{0.3, 1234.4, 1234.6, 77, 5e5} {
		w := make([]float64, 500)
		var sum float64
		for i := range w {
			if rng.IntN(4) > 0 {
				w[i] = rng.ExpFloat64()
			}
			sum += w[i]
		}
		res := &Result{NHat: nhat, Weights: w}
		n := math.Round(nhat)
		for seed := range uint64(20) {
			var total int64
			last := int64(-1)
			err := res.Counts(dp.NewSeededSource(seed), func(x, c int64) error {
				if x <= last || c <= 0 {
					t.Fatalf("n̂ = %v: emitted (%d, %d) after cell %d", nhat, x, c, last)
				}
				last = x
				total += c
				if e := n * w[x] / sum; math.Abs(float64(c)-e) >= 1+1e-9 {
					t.Fatalf("n̂ = %v: cell %d count %d, expected %v", nhat, x, c, e)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if float64(total) != n {
				t.Fatalf("n̂ = %v: total %d, want %v", nhat, total, n)
			}
		}
	}
	// Unbiased: mean over offsets equals the expected count.
	w := []float64{0.3, 1.7, 0.25, 2.75, 0}
	res := &Result{NHat: 5, Weights: w}
	const R = 20000
	mean := make([]float64, len(w))
	src := dp.NewSeededSource(3)
	for range R {
		if err := res.Counts(src, func(x, c int64) error { mean[x] += float64(c) / R; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	for x, v := range w {
		if se := 0.5 / math.Sqrt(R); math.Abs(mean[x]-v) > 5.5*se {
			t.Errorf("cell %d: mean count %v, want %v", x, mean[x], v)
		}
	}
}

func TestCountsEdgeCases(t *testing.T) {
	emitted := 0
	emit := func(int64, int64) error { emitted++; return nil }
	for _, r := range []*Result{
		{NHat: -3, Weights: []float64{1, 2}},
		{NHat: 0.4, Weights: []float64{1, 2}},
		{NHat: 10, Weights: []float64{0, 0}},
	} {
		if err := r.Counts(dp.NewSeededSource(1), emit); err != nil || emitted != 0 {
			t.Fatalf("n̂ = %v weights %v: emitted %d cells, err %v; want none", r.NHat, r.Weights, emitted, err)
		}
	}
	stop := errors.New("disk full")
	r := &Result{NHat: 10, Weights: []float64{1, 1, 1}}
	if err := r.Counts(dp.NewSeededSource(1), func(int64, int64) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("emit error not returned: %v", err)
	}
}

// TestRunCounts is the end-to-end path a writer takes: Run (the default
// variant), then Counts, which writes exactly Rows rows.
func TestRunCounts(t *testing.T) {
	u, hist := testUniverse(t)
	res, err := Run(context.Background(), dp.NewSeededSource(2), u, testFamilies(), hist,
		Config{Epsilon: 1, Delta: 1e-6, Sensitivity: 1})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	if err := res.Counts(dp.NewSeededSource(3), func(_, c int64) error { total += c; return nil }); err != nil {
		t.Fatal(err)
	}
	if total != res.Rows || res.Rows <= 0 {
		t.Fatalf("total %d, want Rows = %d > 0", total, res.Rows)
	}
}
