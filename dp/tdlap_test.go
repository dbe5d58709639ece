package dp

import (
	"fmt"
	"math"
	"testing"
)

// tdlapCases are (ε, δ, Δ) triples the mechanisms use: n̂ and Alg. 1's Δ̃
// at the audit and default budgets, and the grid sensitivities of LogPad.
var tdlapCases = []struct {
	eps, delta float64
	sens       int64
}{
	{0.5, 5e-7, 1}, {1, 1e-6, 1}, {2, 5e-4, 1}, {4, 1e-3, 1},
	{0.5, 5e-7, 20}, {1, 1e-6, 37}, {2, 1e-3, 139}, {8, 1e-9, 1000},
	{0.05, 1e-6, 3}, {1, 0.4, 2},
}

// directTail sums P[X ≤ Δ−1] term by term with log-sum-exp over the whole
// support: an oracle independent of the closed form used to choose τ′.
func directTail(b float64, sens, tau int64) float64 {
	logTerm := func(k int64) float64 { return -math.Abs(float64(k-tau)) / b }
	m := 0.0 // the largest term is at k = τ: 0
	z, tail := 0.0, 0.0
	for k := int64(0); k <= 2*tau; k++ {
		v := math.Exp(logTerm(k) - m)
		z += v
		if k <= sens-1 {
			tail += v
		}
	}
	return tail / z
}

// TestTDLapTailMass checks the (ε, δ) condition of the proof by direct
// summation over the support: the tail mass of τ′ is at most δ and τ′ is
// the smallest such integer (τ′ − 1 violates it unless τ′ = Δ).
func TestTDLapTailMass(t *testing.T) {
	for _, c := range tdlapCases {
		t.Run(fmt.Sprintf("eps=%g,delta=%g,sens=%d", c.eps, c.delta, c.sens), func(t *testing.T) {
			d, err := NewTruncatedDiscreteLaplace(c.eps, c.delta, c.sens)
			if err != nil {
				t.Fatal(err)
			}
			tau := d.Tau()
			if 2*tau > 50_000_000 {
				t.Skipf("support of %d points too large to sum", 2*tau+1)
			}
			if got := directTail(d.Scale(), c.sens, tau); got > c.delta {
				t.Errorf("tail P[X ≤ %d] = %g > δ = %g (τ′ = %d)", c.sens-1, got, c.delta, tau)
			}
			if tau > c.sens {
				if got := directTail(d.Scale(), c.sens, tau-1); got <= c.delta*(1-1e-6) {
					t.Errorf("τ′ = %d is not minimal: τ′−1 has tail %g ≤ δ = %g", tau, got, c.delta)
				}
			}
			if b := d.Scale(); float64(c.sens)/b > c.eps {
				t.Errorf("Δ/b = %v > ε = %v", float64(c.sens)/b, c.eps)
			}
			// The continuous τ is a yardstick: the discrete padding costs
			// at most Δ more (it is often smaller).
			ct, _ := Tau(c.eps, c.delta, float64(c.sens))
			if float64(tau) > math.Ceil(ct)+float64(c.sens) {
				t.Errorf("τ′ = %d above the continuous τ = %g + Δ", tau, ct)
			}
		})
	}
}

// TestTDLapDistribution compares samples with the pmf (chi-square) and
// checks the support.
func TestTDLapDistribution(t *testing.T) {
	src := NewSource()
	for _, c := range []struct {
		eps, delta float64
		sens       int64
	}{{1, 1e-3, 1}, {2, 1e-2, 3}, {0.5, 0.05, 1}} {
		d, err := NewTruncatedDiscreteLaplace(c.eps, c.delta, c.sens)
		if err != nil {
			t.Fatal(err)
		}
		n := 2 * d.Tau()
		obs := make([]int64, n+1)
		probs := make([]float64, n+1)
		for i := 0; i < statN; i++ {
			x := d.Sample(src)
			if x < 0 || x > n {
				t.Fatalf("sample %d outside [0, %d]", x, n)
			}
			obs[x]++
		}
		sum := 0.0
		for k := range probs {
			probs[k] = d.PMF(int64(k))
			sum += probs[k]
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("pmf sums to %v", sum)
		}
		chiSquareTest(t, fmt.Sprintf("TDLap(%v,%v,%d)", c.eps, c.delta, c.sens), obs, probs, falseFailure)
	}
}

// TestTDLapNeighbourAchievable is the floating-point attack turned into a
// test (Mironov 2012; DESIGN.md §3, invariant 6): for a published value
// y = n + X, a reader rules out the neighbour n′ exactly when y cannot be
// produced from n′. Exhaustively over the support, the probability that y
// is achievable from every neighbour n′ with |n − n′| ≤ Δ is ≥ 1 − δ, and
// the likelihood ratio of every achievable y is ≤ e^ε.
func TestTDLapNeighbourAchievable(t *testing.T) {
	for _, c := range tdlapCases {
		d, err := NewTruncatedDiscreteLaplace(c.eps, c.delta, c.sens)
		if err != nil {
			t.Fatal(err)
		}
		tau := d.Tau()
		if 2*tau > 2_000_000 {
			continue
		}
		const n = 100
		for _, nn := range []int64{n - c.sens, n + c.sens} {
			ruledOut, worst := 0.0, 0.0
			for x := int64(0); x <= 2*tau; x++ {
				y := n + x
				p := d.PMF(x)
				q := d.PMF(y - nn)
				if q == 0 {
					ruledOut += p
					continue
				}
				worst = math.Max(worst, math.Log(p/q))
			}
			if ruledOut > c.delta {
				t.Errorf("(%v, %v, %d): n′ = %d ruled out with probability %g > δ", c.eps, c.delta, c.sens, nn, ruledOut)
			}
			if worst > c.eps*(1+1e-9) {
				t.Errorf("(%v, %v, %d): likelihood ratio e^%g > e^ε", c.eps, c.delta, c.sens, worst)
			}
		}
	}
}

func TestTDLapRejectsBadParameters(t *testing.T) {
	for _, c := range []struct {
		eps, delta float64
		sens       int64
	}{{0, 1e-6, 1}, {1, 0, 1}, {1, 1, 1}, {math.NaN(), 1e-6, 1}, {1, 1e-6, 0}, {1e-20, 1e-6, 1}} {
		if _, err := NewTruncatedDiscreteLaplace(c.eps, c.delta, c.sens); err == nil {
			t.Errorf("(%v, %v, %d) accepted", c.eps, c.delta, c.sens)
		}
	}
}

// TestLogPad checks the two properties of the proof on many values: the
// bound is ≥ x, and neighbouring values (ln x′ = ln x ± β) give grid
// indices L whose distance is within the integer sensitivity.
func TestLogPad(t *testing.T) {
	src := NewSource()
	p, err := NewLogPad(0.5, 5e-7, 0.0723)
	if err != nil {
		t.Fatal(err)
	}
	sens := p.Noise().Sensitivity()
	for i := 0; i < 20_000; i++ {
		x := math.Exp(60 * (Uniform(src) - 0.3))
		k, bound := p.Pad(src, x)
		if !(bound >= x) {
			t.Fatalf("bound %v < x = %v", bound, x)
		}
		if got := math.Exp(LogGrid * float64(k)); got != bound {
			t.Fatalf("bound %v is not e^(g·K) = %v", bound, got)
		}
		if bound > x*math.Exp(p.MaxLogFactor()) {
			t.Fatalf("bound %v above x·e^MaxLogFactor", bound)
		}
		for _, s := range []float64{-1, 1} {
			x2 := x * math.Exp(s*0.0723)
			l1 := int64(math.Ceil(math.Log(x)/LogGrid)) + 1
			l2 := int64(math.Ceil(math.Log(x2)/LogGrid)) + 1
			if d := l1 - l2; d > sens || -d > sens {
				t.Fatalf("grid indices of neighbours differ by %d > %d", d, sens)
			}
		}
	}
}
