package audit

import (
	"math"
	"testing"
)

// binomTail returns P[Bin(n, p) ≥ k] by exact summation in log space.
func binomTail(k, n int64, p float64) float64 {
	s := 0.0
	for j := k; j <= n; j++ {
		lg1, _ := math.Lgamma(float64(n + 1))
		lg2, _ := math.Lgamma(float64(j + 1))
		lg3, _ := math.Lgamma(float64(n - j + 1))
		s += math.Exp(lg1 - lg2 - lg3 + float64(j)*math.Log(p) + float64(n-j)*math.Log1p(-p))
	}
	return s
}

// TestClopperPearsonExact checks the interval against its definition:
// P[Bin(n, lo) ≥ k] = α/2 and P[Bin(n, hi) ≤ k] = α/2, including the edges
// k = 0 and k = n and extreme levels, where a library quantile once failed.
func TestClopperPearsonExact(t *testing.T) {
	for _, n := range []int64{1, 7, 60, 400} {
		for _, alpha := range []float64{0.05, 1e-4, 2.5e-7} {
			for k := int64(0); k <= n; k += max(1, n/9) {
				lo, hi := ClopperPearson(k, n, alpha)
				if k > 0 {
					if got := binomTail(k, n, lo); math.Abs(got-alpha/2) > 1e-3*alpha {
						t.Errorf("n=%d k=%d α=%g: P[Bin(n,lo=%g) ≥ k] = %g, want α/2", n, k, alpha, lo, got)
					}
				} else if lo != 0 {
					t.Errorf("k=0: lo = %g, want 0", lo)
				}
				if k < n {
					if got := 1 - binomTail(k+1, n, hi); math.Abs(got-alpha/2) > 1e-3*alpha {
						t.Errorf("n=%d k=%d α=%g: P[Bin(n,hi=%g) ≤ k] = %g, want α/2", n, k, alpha, hi, got)
					}
				} else if hi != 1 {
					t.Errorf("k=n: hi = %g, want 1", hi)
				}
				lo2, hi2 := ClopperPearson(n-k, n, alpha)
				if math.Abs(lo-(1-hi2)) > 1e-9 || math.Abs(hi-(1-lo2)) > 1e-9 {
					t.Errorf("n=%d k=%d: interval not symmetric: (%g, %g) vs (%g, %g)", n, k, lo, hi, 1-hi2, 1-lo2)
				}
			}
		}
	}
}
