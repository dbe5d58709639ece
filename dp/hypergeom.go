package dp

import (
	"math"
	"math/rand/v2"
)

// HypergeometricDirect is the direct threshold of [Hypergeometric].
const HypergeometricDirect = 16

// Hypergeometric is [HypergeometricWith] with direct = [HypergeometricDirect]:
// the number of marked items among n drawn without replacement from N
// items of which k are marked. It is a sampler for post-processing
// (dealing rows, cutting a shuffle into blocks), not a privacy noise.
func Hypergeometric(rnd *rand.Rand, N, k, n int64) int64 {
	return HypergeometricWith(rnd, N, k, n, HypergeometricDirect)
}

// HypergeometricWith draws the number of marked items among n drawn without
// replacement from N items of which k are marked (0 ≤ k, n ≤ N, N ≥ 1).
//
// Small draws (min(k, n, N−k, N−n) ≤ direct) are simulated: each
// draw an integer Int64N, exact. Larger ones are drawn by inversion from
// the mode (chop-down search alternating below and above it, the HIN
// algorithm of Kachitvichyanukul & Schmeiser 1985): the probability of the
// mode by [logHypergeometricPMF], its neighbours by the exact ratio of
// consecutive probabilities; the law is the hypergeometric one up to the
// rounding of those float64 products (a relative error of about 1e-9 at a
// million rows), and a uniform that falls past the rounded support is
// redrawn, not clamped. Expected work is O(standard deviation) for any N
// up to 2⁶³ − 1. (The mode's probability was a difference of
// math.Lgamma(N+1)-sized terms: at N ≈ 9·10¹⁵ their rounding alone, tens
// in the logarithm, made it wrong by a factor up to e³⁰, the search never
// summed to the uniform, and the redraw loop never ended.)
func HypergeometricWith(rnd *rand.Rand, N, k, n, direct int64) int64 {
	// Symmetries: count the unmarked when most are marked, the undrawn
	// when most are drawn.
	switch {
	case 2*k > N:
		return n - HypergeometricWith(rnd, N, N-k, n, direct)
	case 2*n > N:
		return k - HypergeometricWith(rnd, N, k, N-n, direct)
	}
	// Now k, n ≤ N/2.
	if min(k, n) <= direct {
		small, big := min(k, n), max(k, n)
		// Draw small items from N of which big are marked: the same law.
		var x int64
		pool, marked := N, big
		for range small {
			if rnd.Int64N(pool) < marked {
				x++
				marked--
			}
			pool--
		}
		return x
	}
	lo, hi := max(0, n-(N-k)), min(n, k)
	// The mode ⌊(n+1)(k+1)/(N+2)⌋, in float64: the int64 product
	// overflows from about 2⁶³ on (k = 2⁶⁰, n = 2²⁰ wrapped to a negative
	// start). Any start gives the same law (the search sums outwards from
	// it); a start near the mode keeps it short.
	m := int64(float64(n+1) * (float64(k+1) / (float64(N) + 2)))
	m = min(max(m, lo), hi)
	pm := math.Exp(logHypergeometricPMF(m, N, k, n))
	// N − k − n ≥ 0 exactly in int64 (k, n ≤ N/2): as a float64 sum of
	// N's and k's roundings it would lose the small terms at N ≈ 2⁶³.
	fk, fn, fr := float64(k), float64(n), float64(N-k-n)
	for {
		u := rnd.Float64() - pm
		if u < 0 {
			return m
		}
		xd, xu, pd, pu := m, m, pm, pm
		for xd > lo || xu < hi {
			if xd > lo {
				// P(x−1)/P(x) = x(N−k−n+x) / ((k−x+1)(n−x+1)).
				x := float64(xd)
				pd *= x * (fr + x) / ((fk - x + 1) * (fn - x + 1))
				xd--
				if u -= pd; u < 0 {
					return xd
				}
			}
			if xu < hi {
				// P(x+1)/P(x) = (k−x)(n−x) / ((x+1)(N−k−n+x+1)).
				x := float64(xu)
				pu *= (fk - x) * (fn - x) / ((x + 1) * (fr + x + 1))
				xu++
				if u -= pu; u < 0 {
					return xu
				}
			}
		}
	}
}

// logHypergeometricPMF returns log P(X = x) for X the number of marked
// items among n drawn without replacement from N of which k are marked
// (0 ≤ x ≤ min(k, n), n − x ≤ N − k): the product of two binomial
// probabilities over a third, P(x; k, p)·P(n−x; N−k, p) / P(n; N, p) with
// p = n/N, each by Loader's saddle-point expansion (Loader 2000, "Fast
// and accurate computation of binomial probabilities", as R's dhyper):
// Stirling's error terms and the deviance bd0 stay accurate where
// lgamma(N+1) − lgamma(N−n+1) − … cancels to nothing.
func logHypergeometricPMF(x, N, k, n int64) float64 {
	p := float64(n) / float64(N)
	q := float64(N-n) / float64(N)
	return logBinomialRaw(x, k, p, q) + logBinomialRaw(n-x, N-k, p, q) - logBinomialRaw(n, N, p, q)
}

// logBinomialRaw is log C(n, x) pˣ qⁿ⁻ˣ (q = 1 − p, given separately for
// accuracy), Loader's dbinom_raw in the log scale.
func logBinomialRaw(x, n int64, p, q float64) float64 {
	fx, fnn := float64(x), float64(n)
	switch {
	case p == 0:
		if x == 0 {
			return 0
		}
		return math.Inf(-1)
	case q == 0:
		if x == n {
			return 0
		}
		return math.Inf(-1)
	case x < 0 || x > n:
		return math.Inf(-1)
	case x == 0:
		if n == 0 {
			return 0
		}
		if p < 0.1 {
			return -bd0(fnn, fnn*q) - fnn*p
		}
		return fnn * math.Log(q)
	case x == n:
		if q < 0.1 {
			return -bd0(fnn, fnn*p) - fnn*q
		}
		return fnn * math.Log(p)
	}
	fy := float64(n - x)
	lc := stirlerr(fnn) - stirlerr(fx) - stirlerr(fy) - bd0(fx, fnn*p) - bd0(fy, fnn*q)
	lf := math.Log(2*math.Pi) + math.Log(fx) + math.Log1p(-fx/fnn)
	return lc - 0.5*lf
}

// stirlerr is log(n!) − log(√(2π n) (n/e)ⁿ), Stirling's error (n ≥ 1).
func stirlerr(n float64) float64 {
	const (
		s0 = 1.0 / 12
		s1 = 1.0 / 360
		s2 = 1.0 / 1260
		s3 = 1.0 / 1680
		s4 = 1.0 / 1188
	)
	if n <= 15 {
		lg, _ := math.Lgamma(n + 1)
		return lg - (n+0.5)*math.Log(n) + n - 0.5*math.Log(2*math.Pi)
	}
	nn := n * n
	switch {
	case n > 500:
		return (s0 - s1/nn) / n
	case n > 80:
		return (s0 - (s1-s2/nn)/nn) / n
	case n > 35:
		return (s0 - (s1-(s2-s3/nn)/nn)/nn) / n
	}
	return (s0 - (s1-(s2-(s3-s4/nn)/nn)/nn)/nn) / n
}

// bd0 is x log(x/m) + m − x, the deviance term, by a series where x and m
// are close (where the direct formula cancels).
func bd0(x, m float64) float64 {
	if math.Abs(x-m) < 0.1*(x+m) {
		v := (x - m) / (x + m)
		s := (x - m) * v
		ej := 2 * x * v
		v2 := v * v
		for j := 1; j < 1000; j++ {
			ej *= v2
			s1 := s + ej/float64(2*j+1)
			if s1 == s {
				return s1
			}
			s = s1
		}
		return s
	}
	return x*math.Log(x/m) + m - x
}

// DrawWithoutReplacement draws n items without replacement from a pool
// holding left[i] items of kind i, total = Σ left[i] in all (n ≤ total):
// the counts drawn of each kind follow the multivariate hypergeometric
// law, drawn kind by kind (the count of kind i among the items still to
// draw, from the items left of kinds i, i+1, …, by [HypergeometricWith]
// with direct). It subtracts what it draws from left and calls take(i, x)
// for every kind with x > 0 drawn, in kind order. Dealing a uniformly
// shuffled pool to several takers in turn is this draw once per taker.
func DrawWithoutReplacement(rnd *rand.Rand, left []int64, total, n, direct int64, take func(i int, x int64)) {
	from := total // items left of kinds i, i+1, …
	for i, c := range left {
		if n == 0 {
			return
		}
		if c == 0 {
			continue
		}
		x := c // every item left is drawn
		if n < from {
			x = HypergeometricWith(rnd, from, c, n, direct)
		}
		from -= c
		if x > 0 {
			left[i] -= x
			n -= x
			take(i, x)
		}
	}
}
