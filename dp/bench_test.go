package dp

import (
	"math"
	"testing"
)

// Benchmarks draw from the default crypto-keyed source, as production does.

var (
	sinkF float64
	sinkI int64
	sinkN int
)

func BenchmarkLaplace(b *testing.B) {
	src := NewSource()
	for b.Loop() {
		sinkF = Laplace(src, 2)
	}
}

func BenchmarkTLap(b *testing.B) {
	src := NewSource()
	tau, _ := Tau(1, 1e-6, 1)
	for b.Loop() {
		sinkF = TLap(src, tau, 1)
	}
}

func BenchmarkGaussian(b *testing.B) {
	src := NewSource()
	for b.Loop() {
		sinkF = Gaussian(src, 3)
	}
}

func BenchmarkSigmaAnalytic(b *testing.B) {
	for b.Loop() {
		sinkF, _ = SigmaAnalytic(1, 1e-6, 1)
	}
}

func BenchmarkDiscreteLaplace(b *testing.B) {
	for _, scale := range []struct {
		name string
		v    float64
	}{{"scale=1", 1}, {"scale=0.3", 0.3}, {"scale=100", 100}} {
		b.Run(scale.name, func(b *testing.B) {
			src := NewSource()
			d, _ := NewDiscreteLaplace(scale.v)
			for b.Loop() {
				sinkI = d.Sample(src)
			}
		})
	}
}

func BenchmarkDiscreteGaussian(b *testing.B) {
	for _, sigma := range []struct {
		name string
		v    float64
	}{{"sigma=1", 1}, {"sigma=3.7", 3.7}, {"sigma=100", 100}} {
		b.Run(sigma.name, func(b *testing.B) {
			src := NewSource()
			g, _ := NewDiscreteGaussian(sigma.v)
			for b.Loop() {
				sinkI = g.Sample(src)
			}
		})
	}
}

func BenchmarkExponential(b *testing.B) {
	src := NewSource()
	scores := make([]float64, 1000)
	for i := range scores {
		scores[i] = float64(i % 37)
	}
	for b.Loop() {
		sinkN = Exponential(src, scores, 1, 1)
	}
}

// BenchmarkExponentialGrid is BenchmarkExponential's selection with the
// exact sampler (scores within 0 of exact: the grid of the sensitivity).
func BenchmarkExponentialGrid(b *testing.B) {
	src := NewSource()
	scores := make([]float64, 1000)
	for i := range scores {
		scores[i] = float64(i % 37)
	}
	for b.Loop() {
		sinkN = ExponentialGrid(src, scores, 1, 1, 0)
	}
}

// BenchmarkExponentialGridDominated: the reviewer's slow case — ε = Δ = 1,
// one candidate 1000 sensitivities above the rest (expected proposals
// about n), 10⁵ candidates; "nan" has every tenth score NaN (the eligible
// indices are listed); "flat" has equal scores (one proposal: the cost of
// the pass over the scores alone).
func BenchmarkExponentialGridDominated(b *testing.B) {
	for _, c := range []struct {
		name      string
		nan, flat bool
	}{{"all", false, false}, {"nan", true, false}, {"flat", false, true}} {
		b.Run(c.name, func(b *testing.B) {
			src := NewSource()
			scores := make([]float64, 100_000)
			for i := range scores {
				scores[i] = float64(i % 37)
				if c.nan && i%10 == 9 {
					scores[i] = math.NaN()
				}
			}
			if c.flat {
				clear(scores)
			} else {
				scores[12345] = 1036
			}
			b.ReportAllocs()
			for b.Loop() {
				sinkN = ExponentialGrid(src, scores, 1, 1, 0)
			}
		})
	}
}

// BenchmarkSVT runs above-threshold over 100 increasing queries that cross
// the threshold near the 50th.
func BenchmarkSVT(b *testing.B) {
	src := NewSource()
	q := func(l int) (float64, error) { return float64(l), nil }
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			sinkN, _ = AboveThreshold(src, q, 100, 50, 1, 1)
		}
	})
	b.Run("jumpstart", func(b *testing.B) {
		for b.Loop() {
			sinkN, _ = AboveThresholdJumpStart(src, q, 100, 50, 50, 1, 1)
		}
	})
}

// BenchmarkRhoForBudget: the zCDP budget of an (ε, δ) share, computed
// (the bisection over RhoToEpsilon's golden-section search) and memoised,
// as every PMW run asks for it.
func BenchmarkRhoForBudget(b *testing.B) {
	bud := Budget{Epsilon: 0.95, Delta: 1e-6}
	b.Run("computed", func(b *testing.B) {
		for b.Loop() {
			if _, err := rhoForBudget(bud); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("memoised", func(b *testing.B) {
		for b.Loop() {
			if _, err := RhoForBudget(bud); err != nil {
				b.Fatal(err)
			}
		}
	})
}
