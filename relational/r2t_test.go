package relational

import (
	"context"
	"errors"
	"testing"

	"github.com/synth-dp/synth/dp"
)

func TestRungsOnGrid(t *testing.T) {
	tests := []struct {
		gs, g float64
		k     int
		want  int
	}{
		{1 << 20, 1, 1, 20},
		{1 << 20 * 50, 0x1p-14, 1, 26}, // ⌈log₂(50·2²⁰)⌉ = 26; every τ ≥ 2 is ≥ g
		{1e6, 8, 1, 18},                // τ = 2, 4 are below the grid step 8
		{4, 16, 1, 1},                  // at least one rung
		{1 << 20, 1, 2, 10},            // base 4: τ = 4, 16, …, 4¹⁰
		{1e6, 8, 2, 9},                 // base 4: τ = 4 is below the grid step 8
	}
	for _, tt := range tests {
		if got := rungsRun(tt.gs, tt.g, tt.k); got != tt.want {
			t.Errorf("rungsRun(%v, %v, %d) = %d, want %d", tt.gs, tt.g, tt.k, got, tt.want)
		}
	}
	for _, b := range []float64{1, 3, 5.5, -2} {
		if _, err := RaceToTheTop(context.Background(), dp.NewSeededSource(1), newClosedForm(nil, 0), R2TConfig{Epsilon: 1, GS: 8, Base: b}); !errors.Is(err, ErrInvalid) {
			t.Errorf("base %v: error %v, want ErrInvalid", b, err)
		}
	}
	tr := newClosedForm(nil, 0)
	for _, g := range []float64{-1, 0.3, 3} {
		if _, err := RaceToTheTop(context.Background(), dp.NewSeededSource(1), tr, R2TConfig{Epsilon: 1, GS: 8, Quantum: g}); !errors.Is(err, ErrInvalid) {
			t.Errorf("grid %v: error %v, want ErrInvalid", g, err)
		}
	}
}

// TestR2TGridScaling runs R2T on 1000 units contributing 4 each, measured
// on the grid g = ¼ (16 steps each): the answer is in the integers of the
// original scale, at most Q(I) = 4000 with probability ≥ 0.95 (checked
// over 200 runs with the binomial test of TestR2TUnderestimates) and, at
// ε = 4, close to it (within the reported bound in ≥ 95% of the runs).
func TestR2TGridScaling(t *testing.T) {
	cs := make([]Contribution, 1000)
	for i := range cs {
		cs[i] = Contribution{Units: []int{i}, Psi: 16}
	}
	src := dp.NewSeededSource(3)
	const n = 200
	over, miss := 0, 0
	for i := 0; i < n; i++ {
		tr, _ := NewTruncation(cs, []int{1000})
		r, err := RaceToTheTop(context.Background(), src, tr, R2TConfig{Epsilon: 4, GS: 1 << 10, Quantum: 0.25, Integral: true})
		if err != nil {
			t.Fatal(err)
		}
		if r.Value > 4000 {
			over++
		}
		if float64(4000-r.Value) > r.NoiseBound95 {
			miss++
		}
	}
	if binomialTail(n, over, R2TFailure) < 1e-6 || binomialTail(n, miss, 0.05) < 1e-6 {
		t.Fatalf("%d of %d answers above Q(I), %d outside the bound", over, n, miss)
	}
}
