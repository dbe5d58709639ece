package audit

import (
	"math"
	"testing"
)

// binomSum returns P[lo ≤ Bin(n, p) ≤ hi] by exact summation in log space
// (each tail summed directly, so no cancellation).
func binomSum(lo, hi, n int64, p float64) float64 {
	lg1, _ := math.Lgamma(float64(n + 1))
	s := 0.0
	for j := lo; j <= hi; j++ {
		lg2, _ := math.Lgamma(float64(j + 1))
		lg3, _ := math.Lgamma(float64(n - j + 1))
		s += math.Exp(lg1 - lg2 - lg3 + float64(j)*math.Log(p) + float64(n-j)*math.Log1p(-p))
	}
	return s
}

// conservative reports whether a tail probability at a bound is at most
// α/2 (up to the summation's own rounding) and within 2% of it: the bound
// is exact, rounded outwards.
func conservative(p, alpha float64) bool { return p <= alpha/2*(1+1e-9) && p >= alpha/2*0.98 }

// TestClopperPearsonExact checks the interval against its definition:
// P[Bin(n, lo) ≥ k] = α/2 and P[Bin(n, hi) ≤ k] = α/2, including the edges
// k = 0 and k = n and extreme levels, where a library quantile once failed.
func TestClopperPearsonExact(t *testing.T) {
	for _, n := range []int64{1, 7, 60, 400, 20_000, 200_000} {
		for _, alpha := range []float64{0.05, 1e-4, 2.5e-7, 7.8e-9} {
			ks := []int64{0, 1, 5, 20, n / 3, n - 20, n - 5, n - 1, n}
			for k := int64(0); n <= 400 && k <= n; k += max(1, n/9) {
				ks = append(ks, k)
			}
			for _, k := range ks {
				if k < 0 || k > n {
					continue
				}
				lo, hi := ClopperPearson(k, n, alpha)
				if k > 0 {
					if got := binomSum(k, n, n, lo); !conservative(got, alpha) {
						t.Errorf("n=%d k=%d α=%g: P[Bin(n,lo=%g) ≥ k] = %g, want α/2", n, k, alpha, lo, got)
					}
				} else if lo != 0 {
					t.Errorf("k=0: lo = %g, want 0", lo)
				}
				if k < n {
					if got := binomSum(0, k, n, hi); !conservative(got, alpha) {
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
