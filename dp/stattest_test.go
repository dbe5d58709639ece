package dp

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
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

// chiSquareTest compares observed counts with expected probabilities after
// merging categories until every expected count is ≥ 5, and fails the test
// if the statistic exceeds the 1 − alpha quantile of χ² with (bins − 1)
// degrees of freedom (asymptotic level alpha).
func chiSquareTest(t *testing.T, name string, observed []int64, probs []float64, alpha float64) {
	t.Helper()
	var n int64
	for _, o := range observed {
		n += o
	}
	var obs, exp []float64
	var co, ce float64
	for i := range observed {
		co += float64(observed[i])
		ce += probs[i] * float64(n)
		if ce >= 5 {
			obs, exp = append(obs, co), append(exp, ce)
			co, ce = 0, 0
		}
	}
	if len(exp) > 0 {
		obs[len(obs)-1] += co
		exp[len(exp)-1] += ce
	}
	if len(exp) < 2 {
		t.Fatalf("%s: fewer than two bins", name)
	}
	stat := 0.0
	for i := range obs {
		stat += (obs[i] - exp[i]) * (obs[i] - exp[i]) / exp[i]
	}
	crit := distuv.ChiSquared{K: float64(len(obs) - 1)}.Quantile(1 - alpha)
	if stat > crit {
		t.Errorf("%s: χ² = %.2f > %.2f (df %d, level %g)", name, stat, crit, len(obs)-1, alpha)
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
