package relational

import (
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/synth-dp/synth/dp"
)

// discreteGaussianDelta returns the exact δ(ε) of the discrete Gaussian
// N_ℤ(0, σ²) between an integer shift of sens and none: the hockey-stick
// divergence Σ_x max(0, p(x) − e^ε·p(x − sens)), p(x) ∝ e^{−x²/(2σ²)},
// summed over every x within sens + 60σ of 0 (the rest weighs below
// e^{−1800}). The pair is symmetric, so one direction suffices.
func discreteGaussianDelta(sigma, sens, eps float64) float64 {
	lim := int64(math.Ceil(sens + 60*sigma))
	w := func(x int64) float64 { return math.Exp(-float64(x) * float64(x) / (2 * sigma * sigma)) }
	z := 0.0
	for x := -lim - int64(sens); x <= lim+int64(sens); x++ {
		z += w(x)
	}
	s := int64(sens)
	d := 0.0
	for x := -lim; x <= lim; x++ {
		if v := w(x) - math.Exp(eps)*w(x-s); v > 0 {
			d += v
		}
	}
	return d / z
}

// TestRSGaussianExactDelta checks the discrete Gaussian σ of [ReleaseRS]
// against the exact δ of N_ℤ(0, σ²) at a shift of exactly the sensitivity
// Δ, computed numerically ([discreteGaussianDelta]), for the (ε/2, δ/2) of
// the noise step and several Δ: δ must not exceed the target. With the
// continuous analytic σ ([dp.SigmaAnalytic], the calibration before issue
// 27) the exact δ exceeds the target on 15 of these 25 cases — by 1.1–1.4
// at ε = 3, up to 2.0 at ε = 5 and Δ = 1, barely above 1 at large Δ,
// where the discrete Gaussian nears the continuous one — and the test
// fails (seen); the log shows both ratios.
func TestRSGaussianExactDelta(t *testing.T) {
	for _, b := range []dp.Budget{{Epsilon: 0.5, Delta: 5e-4}, {Epsilon: 0.05, Delta: 5e-7}, {Epsilon: 3, Delta: 1e-6}, {Epsilon: 5, Delta: 1e-3}, {Epsilon: 5, Delta: 1e-9}} {
		for _, sens := range []float64{1, 2, 3, 10, 100} {
			t.Run(fmt.Sprintf("ε=%v,δ=%v,Δ=%v", b.Epsilon, b.Delta, sens), func(t *testing.T) {
				sigma, err := rsGaussianSigma(b.Epsilon, b.Delta, sens)
				if err != nil {
					t.Fatal(err)
				}
				got := discreteGaussianDelta(sigma, sens, b.Epsilon)
				analytic, err := dp.SigmaAnalytic(b.Epsilon, b.Delta, sens)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("σ = %.4g: δ/target = %.3f; analytic σ = %.4g: δ/target = %.3f",
					sigma, got/b.Delta, analytic, discreteGaussianDelta(analytic, sens, b.Epsilon)/b.Delta)
				if got > b.Delta*(1+1e-9) {
					t.Errorf("discrete Gaussian σ = %v at shift Δ = %v: exact δ = %v > target %v (×%.3f)", sigma, sens, got, b.Delta, got/b.Delta)
				}
			})
		}
	}
}

// TestRSReleaseMatchesReleaseRS checks that one rsRelease shared by
// concurrent runs (as the audits use it) gives, source for source, exactly
// what a fresh [ReleaseRS] gives, for both noises, the mutation knobs and a
// rounded sum.
func TestRSReleaseMatchesReleaseRS(t *testing.T) {
	t.Parallel()
	cases := []struct {
		q, rs, ls float64
		cfg       RSConfig
	}{
		{30, 30, 30, RSConfig{Epsilon: 1, Delta: 1e-3, Bound: 1, Integral: true}},
		{0, 30, 0, RSConfig{Epsilon: 1, Delta: 1e-3, Noise: NoiseGaussian, Bound: 1, Integral: true}},
		{30, 30, 30, RSConfig{Epsilon: 1, Delta: 1e-3, Bound: 1, Integral: true, rsDivisor: 8}},
		{30, 30, 30, RSConfig{Epsilon: 1, Delta: 1e-3, Noise: NoiseGaussian, Bound: 1, Integral: true, noRS: true}},
		{0, 30, 0, RSConfig{Epsilon: 1, Delta: 1e-3, Noise: NoiseLaplace, Bound: 1, Integral: true, noSmooth: true}},
		{1234.4, 0.5, 0.5, RSConfig{Epsilon: 0.3, Delta: 1e-6, Noise: NoiseGaussian, Bound: 17.5}},
		{1e6, 4000, 100, RSConfig{Epsilon: 4, Delta: 1e-9, Bound: 3}},
	}
	for i, c := range cases {
		rel, err := newRSRelease(c.q, c.rs, c.ls, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		const seeds = 2000
		got := make([]RSResult, seeds)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for s := w; s < seeds; s += 4 {
					r, err := rel.run(dp.NewSeededSource(uint64(10_000*i + s)))
					if err != nil {
						t.Error(err)
						return
					}
					got[s] = r
				}
			})
		}
		wg.Wait()
		pads := map[float64]bool{}
		for s := range seeds {
			want, err := ReleaseRS(dp.NewSeededSource(uint64(10_000*i+s)), c.q, c.rs, c.ls, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got[s] != want {
				t.Fatalf("case %d seed %d: rsRelease gave %+v, ReleaseRS gave %+v", i, s, got[s], want)
			}
			pads[want.PaddedRS] = true
		}
		t.Logf("case %d: %d distinct padded bounds", i, len(pads))
	}
}
