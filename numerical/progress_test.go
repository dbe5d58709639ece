package numerical

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/synth-dp/synth/dp"
)

// TestRunProgress: Config.Progress hears every round, 1 of T to T of T,
// in order, for Run and for the normalisation baseline.
func TestRunProgress(t *testing.T) {
	in := newTiny(rand.New(rand.NewPCG(1, 2)), 0, 20, 30, 2)
	u, err := NewUniverse(in.g, in.m, UniverseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []mechanism{{"ours", Run}, {"normalization", Normalization}} {
		for _, rounds := range []int{0, 3} {
			var got [][2]int
			cfg := Config{Epsilon: 1, Rounds: rounds, Progress: func(t, total int) { got = append(got, [2]int{t, total}) }}
			if _, err := m.run(context.Background(), dp.NewSeededSource(1), u, in.qs, in.points(), cfg); err != nil {
				t.Fatal(err)
			}
			T := cfg.rounds()
			var want [][2]int
			for i := 1; i <= T; i++ {
				want = append(want, [2]int{i, T})
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s, rounds %d: progress %v, want %v", m.name, rounds, got, want)
			}
		}
	}
}

// TestSumNoiseScale: b·max(Δ₊, Δ₋)·⌈Δ̃⌉/ε.
func TestSumNoiseScale(t *testing.T) {
	for _, c := range []struct {
		m         Measure
		eps, sens float64
		want      float64
	}{
		{Measure{Min: 0, Max: 4356}, 0.2, 0, 4356 / 0.2},
		{Measure{Min: 0, Max: 4356}, 0.2, 1, 4356 / 0.2},
		{Measure{Min: 0, Max: 600000, Resolution: 10}, 0.5, 997.2, 600000 * 998 / 0.5},
		{Measure{Min: -8192, Max: 100}, 1, 2, 8192 * 2},
		{Measure{Min: 0, Max: 3, Resolution: 0.25}, 1, 1, 3},
	} {
		u, err := NewUniverse(Grid{Sizes: []int{3}}, c.m, UniverseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := u.SumNoiseScale(c.eps, c.sens); got != c.want {
			t.Errorf("%+v ε = %v Δ̃ = %v: %v, want %v", c.m, c.eps, c.sens, got, c.want)
		}
	}
}
