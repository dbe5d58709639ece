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
// mode from math.Lgamma, its neighbours by the exact ratio of consecutive
// probabilities; the law is the hypergeometric one up to the rounding of
// those float64 products (a relative error of about 1e-9 at a million
// rows), and a uniform that falls past the rounded support is redrawn, not
// clamped. Expected work is O(standard deviation).
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
	m := (n + 1) * (k + 1) / (N + 2)
	if m > hi {
		m = hi
	}
	lc := func(a, b int64) float64 { // log C(a, b)
		x, _ := math.Lgamma(float64(a + 1))
		y, _ := math.Lgamma(float64(b + 1))
		z, _ := math.Lgamma(float64(a - b + 1))
		return x - y - z
	}
	pm := math.Exp(lc(k, m) + lc(N-k, n-m) - lc(N, n))
	fk, fn, fN := float64(k), float64(n), float64(N)
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
				pd *= x * (fN - fk - fn + x) / ((fk - x + 1) * (fn - x + 1))
				xd--
				if u -= pd; u < 0 {
					return xd
				}
			}
			if xu < hi {
				// P(x+1)/P(x) = (k−x)(n−x) / ((x+1)(N−k−n+x+1)).
				x := float64(xu)
				pu *= (fk - x) * (fn - x) / ((x + 1) * (fN - fk - fn + x + 1))
				xu++
				if u -= pu; u < 0 {
					return xu
				}
			}
		}
	}
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
