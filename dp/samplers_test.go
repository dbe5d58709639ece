package dp

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// Every statistical test below fails falsely with probability at most
// falseFailure (1e-6): KS tolerances come from the DKW inequality at that
// level, proportions from Hoeffding's, chi-square tests use the 1 − 1e-6
// quantile (asymptotic). Draws come from fresh crypto sources.

const statN = 100_000

func laplaceCDF(b float64) func(float64) float64 {
	return func(x float64) float64 {
		if x < 0 {
			return 0.5 * math.Exp(x/b)
		}
		return 1 - 0.5*math.Exp(-x/b)
	}
}

func checkKS(t *testing.T, name string, xs []float64, cdf func(float64) float64) {
	t.Helper()
	d, tol := ksContinuous(xs, cdf), dkwTolerance(len(xs), falseFailure)
	if d > tol {
		t.Errorf("%s: KS distance %.5f > %.5f", name, d, tol)
	}
}

func TestLaplaceKS(t *testing.T) {
	src := NewSource()
	for _, b := range []float64{0.1, 1, 37.5} {
		xs := make([]float64, statN)
		for i := range xs {
			xs[i] = Laplace(src, b)
		}
		checkKS(t, fmt.Sprintf("Laplace(%v)", b), xs, laplaceCDF(b))
	}
}

func tlapCDF(tau, b float64) func(float64) float64 {
	z := 2 * b * -math.Expm1(-tau/b) // total mass of exp(−|x−τ|/b) on [0, 2τ]
	return func(x float64) float64 {
		switch {
		case x <= 0:
			return 0
		case x >= 2*tau:
			return 1
		case x < tau:
			return b * (math.Exp(-(tau-x)/b) - math.Exp(-tau/b)) / z
		default:
			return 0.5 + b*-math.Expm1(-(x-tau)/b)/z
		}
	}
}

func TestTLapKSAndSupport(t *testing.T) {
	src := NewSource()
	for _, p := range []struct{ eps, delta, sens float64 }{
		{1, 1e-6, 1}, {0.1, 1e-9, 3}, {5, 0.1, 1}, {0.5, 1e-3, 0.01},
	} {
		tau, err := Tau(p.eps, p.delta, p.sens)
		if err != nil {
			t.Fatal(err)
		}
		b := p.sens / p.eps
		xs := make([]float64, statN)
		for i := range xs {
			x := TLap(src, tau, b)
			if !(x >= 0 && x <= 2*tau) {
				t.Fatalf("TLap(τ=%v, b=%v) = %v outside [0, 2τ]", tau, b, x)
			}
			xs[i] = x
		}
		checkKS(t, fmt.Sprintf("TLap(τ=%v, b=%v)", tau, b), xs, tlapCDF(tau, b))
	}
	// Support is never left, even with extreme ratios of τ to b.
	for _, p := range []struct{ tau, b float64 }{{1e-12, 1e6}, {1e6, 1e-12}, {1, 1}, {5e-324, 1}} {
		for range 20_000 {
			if x := TLap(src, p.tau, p.b); !(x >= 0 && x <= 2*p.tau) {
				t.Fatalf("TLap(τ=%v, b=%v) = %v outside [0, 2τ]", p.tau, p.b, x)
			}
		}
	}
	if TLap(src, 0, 1) != 0 {
		t.Error("TLap with τ = 0 must return 0")
	}
}

func TestGaussianKS(t *testing.T) {
	src := NewSource()
	for _, s := range []float64{0.01, 1, 250} {
		xs := make([]float64, statN)
		for i := range xs {
			xs[i] = Gaussian(src, s)
		}
		checkKS(t, fmt.Sprintf("Gaussian(%v)", s), xs, func(x float64) float64 { return normalCDF(x / s) })
	}
}

func dlapCDF(b float64) func(int64) float64 {
	r := math.Exp(-1 / b)
	return func(x int64) float64 {
		if x < 0 {
			return math.Pow(r, float64(-x)) / (1 + r)
		}
		return 1 - math.Pow(r, float64(x+1))/(1+r)
	}
}

func TestDiscreteLaplaceDistribution(t *testing.T) {
	src := NewSource()
	for _, b := range []float64{0.3, 1, 2.5, 10} {
		d, err := NewDiscreteLaplace(b)
		if err != nil {
			t.Fatal(err)
		}
		xs := make([]int64, statN)
		for i := range xs {
			xs[i] = d.Sample(src)
		}
		name := fmt.Sprintf("DiscreteLaplace(%v)", b)
		cdf := dlapCDF(b)
		if dist, tol := ksDiscrete(xs, cdf), dkwTolerance(statN, falseFailure); dist > tol {
			t.Errorf("%s: KS distance %.5f > %.5f", name, dist, tol)
		}
		checkPMF(t, name, xs, func(x int64) float64 { return cdf(x) - cdf(x-1) })
	}
}

// checkPMF runs a chi-square test of integer samples against a PMF on
// [−L, L] with L large enough to hold all but a negligible mass (the tails
// beyond are folded into the end bins).
func checkPMF(t *testing.T, name string, xs []int64, pmf func(int64) float64) {
	t.Helper()
	const L = 2000
	obs := make([]int64, 2*L+1)
	probs := make([]float64, 2*L+1)
	for _, x := range xs {
		obs[min(max(x, -L), L)+L]++
	}
	for i := range probs {
		probs[i] = pmf(int64(i - L))
	}
	chiSquareTest(t, name, obs, probs, falseFailure)
}

func dgaussPMF(sigma float64) func(int64) float64 {
	lim := int64(40*sigma) + 40
	z := 0.0
	for x := -lim; x <= lim; x++ {
		z += math.Exp(-float64(x*x) / (2 * sigma * sigma))
	}
	return func(x int64) float64 { return math.Exp(-float64(x*x)/(2*sigma*sigma)) / z }
}

func TestDiscreteGaussianDistribution(t *testing.T) {
	src := NewSource()
	for _, s := range []float64{0.5, 1, 3.7, 25} {
		g, err := NewDiscreteGaussian(s)
		if err != nil {
			t.Fatal(err)
		}
		xs := make([]int64, statN)
		for i := range xs {
			xs[i] = g.Sample(src)
		}
		name := fmt.Sprintf("DiscreteGaussian(%v)", s)
		pmf := dgaussPMF(s)
		cdf := func(x int64) float64 {
			c := 0.0
			for y := -int64(40*s) - 40; y <= x; y++ {
				c += pmf(y)
			}
			return c
		}
		if dist, tol := ksDiscrete(xs, cdf), dkwTolerance(statN, falseFailure); dist > tol {
			t.Errorf("%s: KS distance %.5f > %.5f", name, dist, tol)
		}
		checkPMF(t, name, xs, pmf)
	}
}

func TestBernoulliExp(t *testing.T) {
	src := NewSource()
	const n = 200_000
	tol := hoeffdingTolerance(n, falseFailure)
	for _, g := range []struct{ num, den uint64 }{{0, 1}, {1, 3}, {1, 1}, {7, 5}, {5, 2}, {1 << 40, 1<<40 + 1}} {
		k := 0
		for range n {
			if BernoulliExp(src, g.num, g.den) {
				k++
			}
		}
		want := math.Exp(-float64(g.num) / float64(g.den))
		if d := math.Abs(float64(k)/n - want); d > tol {
			t.Errorf("Bernoulli(exp(−%d/%d)): frequency %v, want %v ± %v", g.num, g.den, float64(k)/n, want, tol)
		}
	}
	if BernoulliExp(src, 1<<62, 1) {
		t.Error("Bernoulli(exp(−2⁶²)) returned true") // probability e^(−2⁶²)
	}
}

func TestExponentialFrequencies(t *testing.T) {
	src := NewSource()
	const n = 200_000
	for _, p := range []struct {
		scores    []float64
		eps, sens float64
	}{
		{[]float64{0, 1, 2, 3, 5}, 1, 1},
		{[]float64{-1e6, -1e6 + 4, -1e6 + 1, -1e6}, 0.5, 2},
		{[]float64{1e9, 1e9, 1e9}, 3, 1},
	} {
		obs := make([]int64, len(p.scores))
		for range n {
			obs[Exponential(src, p.scores, p.eps, p.sens)]++
		}
		w := make([]float64, len(p.scores))
		mx := math.Inf(-1)
		for _, s := range p.scores {
			mx = math.Max(mx, s)
		}
		z := 0.0
		for i, s := range p.scores {
			w[i] = math.Exp(p.eps * (s - mx) / (2 * p.sens))
			z += w[i]
		}
		for i := range w {
			w[i] /= z
		}
		chiSquareTest(t, fmt.Sprintf("EM %v", p.scores), obs, w, falseFailure)
	}
	// −Inf and NaN scores are never selected.
	for range 1000 {
		if i := Exponential(src, []float64{math.Inf(-1), 0, math.NaN()}, 1, 1); i != 1 {
			t.Fatalf("selected %d", i)
		}
	}
}

// TestNoiseScale: b = NoiseScale(sens, ε) satisfies b·ε ≥ sens exactly
// and its predecessor does not (b is the smallest such float64), on random
// pairs — among which the plain quotient sens/ε falls below the true one
// in some cases (counted: the test needs such a case to show the raise).
func TestNoiseScale(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	ge := func(b, eps, sens float64) bool {
		p := new(big.Rat).SetFloat64(b)
		p.Mul(p, new(big.Rat).SetFloat64(eps))
		return p.Cmp(new(big.Rat).SetFloat64(sens)) >= 0
	}
	raised := 0
	for range 20_000 {
		sens := float64(1 + r.IntN(5000))
		if r.IntN(2) == 0 {
			sens = math.Ldexp(1+r.Float64(), r.IntN(20)-10)
		}
		eps := math.Ldexp(1+r.Float64(), r.IntN(20)-10)
		b := NoiseScale(sens, eps)
		if !ge(b, eps, sens) || ge(math.Nextafter(b, 0), eps, sens) {
			t.Fatalf("NoiseScale(%v, %v) = %v is not the smallest float64 ≥ sens/ε", sens, eps, b)
		}
		if !ge(sens/eps, eps, sens) {
			raised++
		}
	}
	if raised == 0 {
		t.Error("no pair had sens/ε rounded below the quotient: the raise was not exercised")
	}
	t.Logf("%d of 20000 quotients were rounded down and raised", raised)
	// Degenerate quotients come back unchanged (no panic in big.Rat), for
	// the sampler to refuse.
	for _, c := range [][2]float64{{0, 1}, {1, 0}, {math.Inf(1), 1}, {1, math.Inf(1)}, {math.NaN(), 1}} {
		got, want := NoiseScale(c[0], c[1]), c[0]/c[1]
		if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("NoiseScale(%v, %v) = %v, want %v", c[0], c[1], got, want)
		}
		if _, err := NewDiscreteLaplace(got); err == nil {
			t.Errorf("NewDiscreteLaplace(NoiseScale(%v, %v)) accepted", c[0], c[1])
		}
	}
}

// TestDiscreteGaussianPool: a pooled sampler draws what a fresh sampler of
// the same σ draws from the same seeded source, whether it is the pool's
// first sampler or one built on a miss (taken concurrently); an invalid σ
// is NewDiscreteGaussian's error.
func TestDiscreteGaussianPool(t *testing.T) {
	const sigma = 3.7
	p, err := NewDiscreteGaussianPool(sigma)
	if err != nil {
		t.Fatal(err)
	}
	if p.Sigma() != sigma {
		t.Fatalf("σ %v, want %v", p.Sigma(), sigma)
	}
	fresh, err := NewDiscreteGaussian(sigma)
	if err != nil {
		t.Fatal(err)
	}
	a, b := p.Get(), p.Get() // the second is built on a miss
	for _, g := range []*DiscreteGaussianSampler{a, b} {
		s1, s2 := NewSeededSource(11), NewSeededSource(11)
		for range 200 {
			if x, y := g.Sample(s1), fresh.Sample(s2); x != y {
				t.Fatalf("pooled sampler drew %d, fresh %d", x, y)
			}
		}
	}
	p.Put(a)
	p.Put(b)
	if _, err := NewDiscreteGaussianPool(-1); err == nil {
		t.Fatal("σ = −1 accepted")
	}
}
