package dp

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/synth-dp/synth/internal/stattest"
)

// hyperPMF is the hypergeometric law (N items, k marked, n drawn) over
// lo … hi, each probability C(k,x)·C(N−k,n−x)/C(N,n) from math.Lgamma
// (the recurrence of consecutive ratios from x = lo overflows to +Inf on
// a support of thousands of values): the oracle of TestHypergeometric.
func hyperPMF(N, k, n int64) (lo int64, p []float64) {
	lc := func(a, b int64) float64 { // log C(a, b)
		x, _ := math.Lgamma(float64(a + 1))
		y, _ := math.Lgamma(float64(b + 1))
		z, _ := math.Lgamma(float64(a - b + 1))
		return x - y - z
	}
	lo, hi := max(0, n-(N-k)), min(n, k)
	for x := lo; x <= hi; x++ {
		p = append(p, math.Exp(lc(k, x)+lc(N-k, n-x)-lc(N, n)))
	}
	return lo, p
}

// TestHypergeometric checks HypergeometricWith's law against the exact one
// by χ² (4·10⁴ draws, level 10⁻⁵), on both of its paths (the draw-by-draw
// simulation and the inversion from the mode, forced by direct = 0) and
// every symmetry (most marked, most drawn); a value outside the support
// fails at once. A binomial draw in its place (n draws with replacement)
// fails the cases where n is a large part of N: its variance is larger by
// (N−1)/(N−n) (TestHypergeometricCanFail).
func TestHypergeometric(t *testing.T) {
	cases := []struct{ N, k, n int64 }{
		{10, 3, 4}, {20, 10, 10}, {50, 45, 7}, {50, 7, 45}, {200, 120, 150},
		{1000, 300, 700}, {5000, 40, 2500}, {100000, 30000, 50000}, {7, 7, 3}, {9, 0, 4}, {12, 5, 12},
	}
	for _, direct := range []int64{HypergeometricDirect, 0} {
		for ci, c := range cases {
			rnd := rand.New(rand.NewPCG(uint64(ci), uint64(direct)))
			hyperCheck(t, c.N, c.k, c.n, func() int64 { return HypergeometricWith(rnd, c.N, c.k, c.n, direct) }, true)
		}
	}
	if got := Hypergeometric(rand.New(rand.NewPCG(1, 2)), 10, 10, 4); got != 4 {
		t.Errorf("all 10 marked, 4 drawn: %d marked", got)
	}
}

// TestHypergeometricCanFail: the check rejects binomial draws where n is a
// large part of N.
func TestHypergeometricCanFail(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	const N, k, n = 1000, 300, 700
	binom := func() int64 {
		var x int64
		for range n {
			if rnd.Int64N(N) < k {
				x++
			}
		}
		return x
	}
	hyperCheck(t, N, k, n, binom, false)
}

// hyperCheck draws 4·10⁴ values and tests them against the law of
// (N, k, n) at level 10⁻⁵; want is whether they should pass.
func hyperCheck(t *testing.T, N, k, n int64, draw func() int64, want bool) {
	t.Helper()
	const R = 40_000
	lo, p := hyperPMF(N, k, n)
	obs := make([]int64, len(p))
	for range R {
		x := draw() - lo
		if x < 0 || x >= int64(len(p)) {
			if want {
				t.Fatalf("N %d k %d n %d: %d outside the support", N, k, n, x+lo)
			}
			return
		}
		obs[x]++
	}
	if len(p) < 2 {
		if !want {
			t.Fatalf("N %d k %d n %d: a one-point law cannot reject", N, k, n)
		}
		return
	}
	r, err := stattest.ChiSquare(obs, p, 1e-5)
	if err != nil {
		t.Fatalf("N %d k %d n %d: %v", N, k, n, err)
	}
	if r.Reject() == want {
		t.Errorf("N %d k %d n %d: %v (want a pass: %v)", N, k, n, r, want)
	}
}

// TestLogHypergeometricPMF: logHypergeometricPMF agrees with the lgamma
// formula where that one is accurate (N ≤ 10⁵: relative error below
// 10⁻⁹ wherever the probability is a normal float64, ≥ 10⁻³⁰⁰), and where it is not (N up to 2⁶³ − 1) its probabilities over
// the mode ± 12 standard deviations sum to 1 within 10⁻⁹.
func TestLogHypergeometricPMF(t *testing.T) {
	for _, c := range []struct{ N, k, n int64 }{{50, 20, 10}, {1000, 300, 700}, {100000, 30000, 50000}, {100000, 3, 50000}, {100000, 50000, 1}} {
		lo, p := hyperPMF(c.N, c.k, c.n)
		for i, want := range p {
			x := lo + int64(i)
			if got := math.Exp(logHypergeometricPMF(x, c.N, c.k, c.n)); want >= 1e-300 && math.Abs(got-want) > 1e-9*want {
				t.Errorf("N %d k %d n %d: P(%d) = %g, want %g", c.N, c.k, c.n, x, got, want)
			}
		}
	}
	for _, c := range []struct{ N, k, n int64 }{
		{1 << 62, 1 << 60, 1 << 20}, {9e15, 9e13, 1 << 20}, {math.MaxInt64, math.MaxInt64 / 3, 1 << 20}, {1 << 62, 1 << 61, 1 << 30},
	} {
		fk, fn, fN := float64(c.k), float64(c.n), float64(c.N)
		mean := fn * fk / fN
		sd := math.Sqrt(mean * (1 - fk/fN) * (fN - fn) / (fN - 1))
		var sum float64
		for x := int64(mean - 12*sd); x <= int64(mean+12*sd); x++ {
			sum += math.Exp(logHypergeometricPMF(x, c.N, c.k, c.n))
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("N %d k %d n %d: the probabilities sum to 1 %+g", c.N, c.k, c.n, sum-1)
		}
	}
}

// countingSource counts the words drawn from a PCG.
type countingSource struct {
	rand.PCG
	calls int64
}

func (s *countingSource) Uint64() uint64 { s.calls++; return s.PCG.Uint64() }

// TestHypergeometricHugePopulation: a draw of a million from a population
// of up to 2⁶³ − 1 (the capped sample of a 9·10¹⁵-row join) finishes, with
// about one uniform a draw (the mode's probability is right, so the
// inversion's search is not redrawn: at most 2 words a draw on average
// over 2,000 draws, where the old code never finished), and follows the
// law by χ² at level 10⁻⁶ against logHypergeometricPMF (checked above).
func TestHypergeometricHugePopulation(t *testing.T) {
	for i, c := range []struct{ N, k, n int64 }{{1 << 62, 1 << 60, 1 << 20}, {9e15, 9e15 / 100, 1 << 20}, {math.MaxInt64, math.MaxInt64 / 3, 1 << 20}} {
		src := &countingSource{PCG: *rand.NewPCG(uint64(i), 99)}
		rnd := rand.New(src)
		const R = 2000
		lo, hi := int64(math.MaxInt64), int64(0)
		xs := make([]int64, R)
		for j := range xs {
			xs[j] = HypergeometricWith(rnd, c.N, c.k, c.n, HypergeometricDirect)
			lo, hi = min(lo, xs[j]), max(hi, xs[j])
		}
		if src.calls > 2*R {
			t.Errorf("N %d k %d n %d: %d words for %d draws, want at most %d", c.N, c.k, c.n, src.calls, R, 2*R)
		}
		// The law over lo−50 … hi+50 with both tails folded in.
		first := max(0, lo-50)
		p := make([]float64, hi+50-first+1)
		var in float64
		for x := range p {
			p[x] = math.Exp(logHypergeometricPMF(first+int64(x), c.N, c.k, c.n))
			in += p[x]
		}
		p[0] += (1 - in) / 2
		p[len(p)-1] += (1 - in) / 2
		obs := make([]int64, len(p))
		for _, x := range xs {
			obs[x-first]++
		}
		r, err := stattest.ChiSquare(obs, p, 1e-6)
		if err != nil || r.Reject() {
			t.Errorf("N %d k %d n %d: %v %v", c.N, c.k, c.n, r, err)
		}
	}
}
