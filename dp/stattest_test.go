package dp

import (
	"math"
	"slices"
	"testing"

	"github.com/synth-dp/synth/internal/stattest"
)

// falseFailure is the probability with which each statistical test in this
// package may fail on a correct sampler.
const falseFailure = 1e-6

// dkwTolerance returns t with P(sup_x |F_n(x) − F(x)| > t) ≤ alpha for n
// i.i.d. draws from any distribution F: the Dvoretzky–Kiefer–Wolfowitz
// inequality with Massart's constant, P(sup > t) ≤ 2·exp(−2nt²). It holds
// for discrete F too (the supremum is then stochastically smaller).
func dkwTolerance(n int, alpha float64) float64 {
	return math.Sqrt(math.Log(2/alpha) / (2 * float64(n)))
}

// hoeffdingTolerance returns t with P(|p̂ − p| ≥ t) ≤ alpha for the mean of
// n Bernoulli(p) draws (Hoeffding).
func hoeffdingTolerance(n int, alpha float64) float64 {
	return math.Sqrt(math.Log(2/alpha) / (2 * float64(n)))
}

// ksContinuous returns sup |F_n − F| for samples of a continuous F.
func ksContinuous(xs []float64, cdf func(float64) float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := float64(len(s))
	d := 0.0
	for i, x := range s {
		f := cdf(x)
		d = math.Max(d, math.Max(float64(i+1)/n-f, f-float64(i)/n))
	}
	return d
}

// ksDiscrete returns sup |F_n − F| for integer samples; both are step
// functions with jumps at integers, so the supremum is attained at an
// integer between the sample extremes or just outside them.
func ksDiscrete(xs []int64, cdf func(int64) float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := float64(len(s))
	d := math.Max(cdf(s[0]-1), 1-cdf(s[len(s)-1]))
	i := 0
	for x := s[0]; x <= s[len(s)-1]; x++ {
		for i < len(s) && s[i] <= x {
			i++
		}
		d = math.Max(d, math.Abs(float64(i)/n-cdf(x)))
	}
	return d
}

// chiSquareTest fails the test when [stattest.ChiSquare] rejects the
// observed counts against the probabilities at level alpha.
func chiSquareTest(t *testing.T, name string, observed []int64, probs []float64, alpha float64) {
	t.Helper()
	r, err := stattest.ChiSquare(observed, probs, alpha)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if r.Reject() {
		t.Errorf("%s: rejected at level %g: %v", name, alpha, r)
	}
}

// Each helper must be able to fail: feed them a wrong distribution.
func TestStatHelpersCanFail(t *testing.T) {
	src := NewSource()
	const n = 50_000
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = Laplace(src, 1.2) // not scale 1
	}
	lap1 := func(x float64) float64 {
		if x < 0 {
			return 0.5 * math.Exp(x)
		}
		return 1 - 0.5*math.Exp(-x)
	}
	if d := ksContinuous(xs, lap1); d <= dkwTolerance(n, falseFailure) {
		t.Errorf("KS did not reject scale 1.2 against scale 1: D = %v", d)
	}
	ks := make([]int64, n)
	for i := range ks {
		ks[i] = int64(i % 3) // uniform on {0,1,2}
	}
	if d := ksDiscrete(ks, func(x int64) float64 { return math.Min(1, math.Max(0, float64(x+1)/4)) }); d <= dkwTolerance(n, falseFailure) {
		t.Errorf("discrete KS did not reject: D = %v", d)
	}
	ft := &testing.T{}
	chiSquareTest(ft, "wrong", []int64{1000, 1000, 1000}, []float64{0.4, 0.3, 0.3}, falseFailure)
	if !ft.Failed() {
		t.Error("chi-square accepted a wrong distribution")
	}
}
