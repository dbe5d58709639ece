package multi

import (
	"context"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"

	"github.com/synth-dp/synth/dp"
)

// TestRunnerMatchesRun checks that one runner shared by concurrent runs
// (as the audits use it) gives, source for source, exactly what a fresh
// [Run] gives: same values, radius, σ, bounds and trace.
func TestRunnerMatchesRun(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	var random []Entry
	for u := range 40 {
		for c := range 3 {
			if rng.IntN(2) == 0 {
				random = append(random, Entry{Unit: u, Coord: c, Psi: float64(rng.IntN(1 << uint(rng.IntN(12))))})
			}
		}
	}
	tight, _ := tightPair()
	answer, _ := answerPair()
	grid, _ := gridPair()
	cases := []struct {
		entries []Entry
		d       int
		cfg     Config
	}{
		{tight, 2, Config{Epsilon: 2, Delta: 1e-4, GS: 1 << 12, JumpStart: true}},
		{tight, 2, Config{Epsilon: 2, Delta: 1e-4, GS: 1 << 12, JumpStart: true, noiseFactor: 0.5}},
		{tight, 2, Config{Epsilon: 2, Delta: 1e-4, GS: 1 << 12, JumpStart: true, clipFactor: 2}},
		{answer, 2, Config{Epsilon: 2, Delta: 1e-4, GS: 1 << 12, JumpStart: true, noClip: true}},
		{answer, 2, Config{Epsilon: 2, Delta: 1e-4, GS: 1 << 12}},
		{grid, 2, Config{Epsilon: 2, Delta: 1e-4, GS: 1 << 12, JumpStart: true, Quantum: 0.25, sigmaQueryUnits: true}},
		{grid, 2, Config{Epsilon: 2, Delta: 1e-4, GS: 1 << 12, JumpStart: true, Quantum: 0.25}},
		{random, 3, Config{Epsilon: 0.5, Delta: 1e-6, GS: 1 << 14, JumpStart: true, noThresholdNoise: true}},
		{random, 3, Config{Epsilon: 50, Delta: 1e-6, GS: 1 << 14, JumpStart: true}},
		{nil, 1, Config{Epsilon: 1, Delta: 1e-6, GS: 16}},
	}
	for i, c := range cases {
		r, err := newRunner(context.Background(), c.entries, c.d, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		const seeds = 400
		got := make([]Result, seeds)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for s := w; s < seeds; s += 4 {
					res, err := r.run(dp.NewSeededSource(uint64(1000*i + s)))
					if err != nil {
						t.Error(err)
						return
					}
					got[s] = res
				}
			})
		}
		wg.Wait()
		radii := map[float64]bool{}
		for s := range seeds {
			want, err := Run(context.Background(), dp.NewSeededSource(uint64(1000*i+s)), c.entries, c.d, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got[s], want) {
				t.Fatalf("case %d seed %d: runner gave %+v, Run gave %+v", i, s, got[s], want)
			}
			radii[want.Radius] = true
		}
		t.Logf("case %d: %d distinct radii", i, len(radii))
	}
}

// TestAboveThresholdExact checks the int64 comparison of the SVT against
// big-integer arithmetic, at the edges of its ranges.
func TestAboveThresholdExact(t *testing.T) {
	t.Parallel()
	edges := []int64{0, 1, -1, svtLimit, -svtLimit, 1 << 62, -(1 << 62), 1<<62 - 1, -(1<<62 - 1), math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1, 12345, -98765}
	small := []int64{0, 1, -1, svtLimit, -svtLimit, svtLimit - 1, -svtLimit + 1, 77, -77}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		edges = append(edges, int64(rng.Uint64()), rng.Int64N(1<<20)-1<<19)
		small = append(small, rng.Int64N(2*svtLimit+1)-svtLimit)
	}
	want := func(fl, v, rho, tg int64) bool {
		s := new(big.Int).SetInt64(fl)
		s.Add(s, big.NewInt(v))
		s.Sub(s, big.NewInt(rho))
		return s.Cmp(big.NewInt(tg)) >= 0
	}
	for i := range 200_000 {
		fl, tg := small[rng.IntN(len(small))], small[rng.IntN(len(small))]
		v, rho := edges[rng.IntN(len(edges))], edges[rng.IntN(len(edges))]
		if i%3 == 0 {
			rho = v - (tg - fl) + rng.Int64N(3) - 1 // near the boundary
		}
		if got := aboveThreshold(fl, v, rho, tg); got != want(fl, v, rho, tg) {
			t.Fatalf("aboveThreshold(%d, %d, %d, %d) = %v", fl, v, rho, tg, got)
		}
	}
}
