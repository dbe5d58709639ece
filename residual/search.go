package residual

import (
	"context"
	"math"
	"math/bits"
	"sort"
)

// poly is the multilinear polynomial P_i(s) = Σ_{F} c[F]·Π_{j∈F} s_j of
// Def. 3.6 for one private relation i, over the n = |P|−1 variables s_j of
// the other private relations (P is the set of private relations; F is a
// bitmask over the n variables). Its coefficients are T values, so they are
// non-negative.
type poly struct {
	n int
	c []float64 // len 2^n
}

// eval returns P(s) for len(s) = n.
func (p poly) eval(s []int) float64 {
	total := 0.0
	for f, c := range p.c {
		if c == 0 {
			continue
		}
		term := c
		for v := uint(f); v != 0; v &= v - 1 {
			term *= float64(s[bits.TrailingZeros(v)])
		}
		total += term
	}
	return total
}

// monoMax is the largest product of d non-negative integers whose sum is at
// most r: the balanced split, (q+1)^a·q^(d−a) with r = q·d + a. It is 1 for
// d = 0 and 0 for d > r.
func monoMax(r, d int) float64 {
	if d == 0 {
		return 1
	}
	q, a := r/d, r%d
	return math.Pow(float64(q+1), float64(a)) * math.Pow(float64(q), float64(d-a))
}

// elemMax is the largest value of the elementary symmetric polynomial e_d
// over non-negative integer vectors of length nv with sum r. e_d is
// Schur-concave on the non-negative orthant and the balanced vector (a
// entries q+1, nv−a entries q, r = q·nv + a) is majorized by every other
// integer vector with the same sum, so it attains the maximum:
// Σ_j C(a,j)·C(nv−a,d−j)·(q+1)^j·q^(d−j).
func elemMax(nv, r, d int) float64 {
	if d == 0 {
		return 1
	}
	if d > nv {
		return 0
	}
	q, a := r/nv, r%nv
	total := 0.0
	for j := max(0, d-(nv-a)); j <= min(a, d); j++ {
		total += binom(a, j) * binom(nv-a, d-j) * math.Pow(float64(q+1), float64(j)) * math.Pow(float64(q), float64(d-j))
	}
	return total
}

// binom is the binomial coefficient C(n, k) as a float64 (n ≤ 64 here).
func binom(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	b := 1.0
	for i := 0; i < k; i++ {
		b = b * float64(n-i) / float64(i+1)
	}
	return math.Round(b)
}

// degreeStats holds, per degree d, the sum and the maximum of the
// coefficients of the degree-d monomials of a polynomial.
type degreeStats struct {
	sum, max []float64
}

// bound returns an upper bound on the polynomial with these degree
// statistics over non-negative integer vectors of length nv with sum r:
// the degree-d part is at most both sum_d·monoMax(r,d) (each monomial at its
// own maximum) and max_d·elemMax(nv,r,d) (every coefficient raised to the
// largest). Both are exact for a single monomial or a linear polynomial.
func (ds degreeStats) bound(nv, r int) float64 {
	b := 0.0
	for d := range ds.sum {
		if ds.sum[d] == 0 {
			continue
		}
		if d > r {
			break // every degree-d monomial has a zero factor
		}
		b += min(ds.sum[d]*monoMax(r, d), ds.max[d]*elemMax(nv, r, d))
	}
	return b
}

// statsOf computes the degree statistics of p.
func statsOf(p poly) degreeStats {
	ds := degreeStats{sum: make([]float64, p.n+1), max: make([]float64, p.n+1)}
	for f, c := range p.c {
		d := bits.OnesCount(uint(f))
		ds.sum[d] += c
		ds.max[d] = max(ds.max[d], c)
	}
	return ds
}

// kid is a candidate value v of the branching variable and the upper bound
// of its subtree.
type kid struct {
	v     int
	bound float64
}

// checkEvery is the number of work units (leaves of the search tree and
// candidate values of a branching variable, each O(2^n) or O(n²) work)
// between two polls of a search's context: a few milliseconds at most.
const checkEvery = 4096

// searcher maximises one poly over the integer compositions of k by depth-
// first branch and bound. It is not safe for concurrent use.
type searcher struct {
	n     int
	buf   [][]float64 // buf[t]: coefficients at depth t, over n−t variables
	kids  [][]kid
	a, b  []float64 // scratch degree statistics (sums) of the two halves
	ma    []float64 // scratch maxima
	mb    []float64
	best  float64
	found bool
	ctx   context.Context // polled every checkEvery units of work
	work  int             // units of work since the last poll
	err   error           // ctx.Err() once ctx is done; the search unwinds
}

// newSearcher returns a searcher for polynomials in n variables whose
// searches stop early, with err set, once ctx is done.
func newSearcher(ctx context.Context, n int) *searcher {
	s := &searcher{n: n, buf: make([][]float64, n+1), kids: make([][]kid, n+1), ctx: ctx}
	for t := 0; t <= n; t++ {
		s.buf[t] = make([]float64, 1<<uint(n-t))
	}
	s.a, s.b = make([]float64, n+1), make([]float64, n+1)
	s.ma, s.mb = make([]float64, n+1), make([]float64, n+1)
	return s
}

// stop charges units of work and reports whether the search must stop
// because its context is done, polling the context once every checkEvery
// units. Once it reports true it keeps doing so, and s.err is set.
func (s *searcher) stop(units int) bool {
	if s.err != nil {
		return true
	}
	s.work += units
	if s.work < checkEvery {
		return false
	}
	s.work = 0
	s.err = s.ctx.Err()
	return s.err != nil
}

// max returns the maximum of p over non-negative integer vectors s with
// Σ s = k when it exceeds floor, and found = false otherwise. The search is
// exact: a subtree is dropped only when an upper bound on every value in it
// is ≤ the best value found so far (or floor). Comparisons are in float64,
// so "exact" means up to float64 rounding of the polynomial's value. When
// the searcher's context is done the search stops early and the result
// must be discarded: s.err is set.
func (s *searcher) max(p poly, k int, floor float64) (float64, bool) {
	copy(s.buf[0], p.c)
	s.best, s.found = floor, false
	if p.n == 0 {
		if p.c[0] > s.best {
			return p.c[0], true
		}
		return floor, false
	}
	s.node(0, k)
	return s.best, s.found
}

// node explores the subtree at depth t, where variables 0..t−1 are fixed,
// buf[t] holds the polynomial in the remaining n−t variables (variable t is
// bit 0) and r units remain to distribute among them.
func (s *searcher) node(t, r int) {
	q := s.buf[t]
	nv := s.n - t
	if nv == 1 {
		if s.stop(1) {
			return
		}
		if v := q[0] + q[1]*float64(r); v > s.best {
			s.best, s.found = v, true
		}
		return
	}
	// Fixing variable t to v leaves child[F] = q[2F] + v·q[2F+1] over the
	// nv−1 remaining variables; its degree-d statistics are bounded by
	// (A_d + v·B_d) for sums and (MA_d + v·MB_d) for maxima.
	for d := 0; d < nv; d++ {
		s.a[d], s.b[d], s.ma[d], s.mb[d] = 0, 0, 0, 0
	}
	for f := 0; f < len(q)/2; f++ {
		d := bits.OnesCount(uint(f))
		x, y := q[2*f], q[2*f+1]
		s.a[d] += x
		s.b[d] += y
		s.ma[d] = max(s.ma[d], x)
		s.mb[d] = max(s.mb[d], y)
	}
	kids := s.kids[t][:0]
	for v := 0; v <= r; v++ {
		if s.stop(1) {
			return
		}
		fv, rest := float64(v), r-v
		b := 0.0
		for d := 0; d < nv && d <= rest; d++ {
			sum := s.a[d] + fv*s.b[d]
			if sum == 0 {
				continue
			}
			b += min(sum*monoMax(rest, d), (s.ma[d]+fv*s.mb[d])*elemMax(nv-1, rest, d))
		}
		if b > s.best {
			kids = append(kids, kid{v, b})
		}
	}
	sort.Slice(kids, func(i, j int) bool { return kids[i].bound > kids[j].bound })
	s.kids[t] = kids
	child := s.buf[t+1]
	for _, c := range kids {
		if c.bound <= s.best || s.err != nil {
			break
		}
		fv := float64(c.v)
		for f := range child {
			child[f] = q[2*f] + fv*q[2*f+1]
		}
		s.node(t+1, r-c.v)
	}
}

// lowerBound returns the largest value of p at a few points of the
// composition simplex of k (the balanced point and the k-multiples of unit
// vectors). The value is attained, so it is a valid incumbent.
func lowerBound(p poly, k int) float64 {
	if p.n == 0 {
		return p.c[0]
	}
	s := make([]int, p.n)
	for j := range s {
		s[j] = k / p.n
		if j < k%p.n {
			s[j]++
		}
	}
	best := p.eval(s)
	for j := range s {
		clear(s)
		s[j] = k
		best = max(best, p.eval(s))
	}
	return best
}

// rsSearcher maximises g(s) = e^{−β|s|}·P(s) over non-negative integer
// vectors s with |s| ≤ kmax by one depth-first branch and bound, instead of
// one search per k. It is not safe for concurrent use.
type rsSearcher struct {
	searcher
	beta  float64
	kmax  int
	decay []float64   // decay[k] = e^{−βk}
	mono  [][]float64 // mono[d][r] = monoMax(r, d)
	elem  [][][]float64
	bestK int
}

// newRSSearcher returns a searcher over |s| ≤ kmax whose searches stop
// early, with err set, once ctx is done. It precomputes O(n²·kmax) bounds
// and polls ctx between rows of them; when ctx is done it returns the
// context's error.
func newRSSearcher(ctx context.Context, n int, beta float64, kmax int) (*rsSearcher, error) {
	s := &rsSearcher{searcher: *newSearcher(ctx, n), beta: beta, kmax: kmax}
	s.decay = make([]float64, kmax+1)
	for k := range s.decay {
		s.decay[k] = math.Exp(-beta * float64(k))
	}
	s.mono = make([][]float64, n+1)
	for d := range s.mono {
		s.mono[d] = make([]float64, kmax+1)
		for r := range s.mono[d] {
			s.mono[d][r] = monoMax(r, d)
		}
	}
	s.elem = make([][][]float64, n+1) // elem[nv][d][r]
	for nv := 1; nv <= n; nv++ {
		s.elem[nv] = make([][]float64, nv+1)
		for d := range s.elem[nv] {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			s.elem[nv][d] = make([]float64, kmax+1)
			for r := range s.elem[nv][d] {
				s.elem[nv][d][r] = elemMax(nv, r, d)
			}
		}
	}
	return s, nil
}

// max returns max_{|s| ≤ kmax} e^{−β|s|}·P(s) and the |s| attaining it
// when the value exceeds floor (found = false otherwise). When the
// searcher's context is done the search stops early and the result must be
// discarded: s.err is set.
func (s *rsSearcher) max(p poly, floor float64) (g float64, k int, found bool) {
	copy(s.buf[0], p.c)
	s.best, s.bestK, s.found = floor, 0, false
	if p.n == 0 {
		if p.c[0] > s.best {
			return p.c[0], 0, true
		}
		return floor, 0, false
	}
	s.node(0, 0)
	return s.best, s.bestK, s.found
}

// offer records value g at k when it beats the incumbent strictly, so that
// among equal values the first found is kept.
func (s *rsSearcher) offer(g float64, k int) {
	if g > s.best {
		s.best, s.bestK, s.found = g, k, true
	}
}

// node explores the subtree where variables 0..t−1 are fixed with sum a.
func (s *rsSearcher) node(t, a int) {
	q := s.buf[t]
	nv := s.n - t
	room := s.kmax - a
	if nv == 1 {
		if s.stop(1) {
			return
		}
		// h(r) = e^{−β(a+r)}·(q0 + q1·r) is log-concave in r, with its real
		// maximum at r* = 1/β − q0/q1: the best integer r is ⌊r*⌋ or ⌈r*⌉,
		// clamped to [0, room].
		q0, q1 := q[0], q[1]
		if q1 == 0 {
			s.offer(s.decay[a]*q0, a)
			return
		}
		rs := 1/s.beta - q0/q1
		lo := int(math.Max(0, math.Min(float64(room), math.Floor(rs))))
		hi := int(math.Max(0, math.Min(float64(room), math.Ceil(rs))))
		s.offer(s.decay[a+lo]*(q0+q1*float64(lo)), a+lo)
		s.offer(s.decay[a+hi]*(q0+q1*float64(hi)), a+hi)
		return
	}
	elem := s.elem[nv-1]
	kids := s.kids[t][:0]
	half := len(q) / 2
	for v := 0; v <= room; v++ {
		if s.stop(1) {
			return
		}
		fv := float64(v)
		// Exact degree statistics of the child q[2F] + v·q[2F+1].
		for d := 0; d < nv; d++ {
			s.a[d], s.ma[d] = 0, 0
		}
		for f := 0; f < half; f++ {
			d := bits.OnesCount(uint(f))
			x := q[2*f] + fv*q[2*f+1]
			s.a[d] += x
			s.ma[d] = max(s.ma[d], x)
		}
		// Bound of the child's subtree: max over the units r left for the
		// other variables of e^{−β(a+v+r)}·B(r), with B(r) the degree bound
		// of the child at r. B is non-decreasing in r and the decay
		// decreasing, so on a block r ∈ [lo, hi] the product is at most
		// e^{−β(a+v+lo)}·B(hi): blocks of width ⌈(room−v+1)/64⌉ keep the
		// cost per child at O(64·n) for any k.
		cb := 0.0
		left := room - v
		step := max(1, (left+64)/64)
		for lo := 0; lo <= left; lo += step {
			hi := min(lo+step-1, left)
			b := 0.0
			for d := 0; d < nv && d <= hi; d++ {
				if s.a[d] == 0 {
					continue
				}
				b += min(s.a[d]*s.mono[d][hi], s.ma[d]*elem[d][hi])
			}
			cb = max(cb, s.decay[a+v+lo]*b)
		}
		if cb > s.best {
			kids = append(kids, kid{v, cb})
		}
	}
	sort.Slice(kids, func(i, j int) bool { return kids[i].bound > kids[j].bound })
	s.kids[t] = kids
	child := s.buf[t+1]
	for _, c := range kids {
		if c.bound <= s.best || s.err != nil {
			break
		}
		fv := float64(c.v)
		for f := range child {
			child[f] = q[2*f] + fv*q[2*f+1]
		}
		s.node(t+1, a+c.v)
	}
}

// rootBound is an upper bound on max_{|s| ≤ kmax} e^{−β|s|}·P(s).
func (s *rsSearcher) rootBound(p poly) float64 {
	st := statsOf(p)
	best := 0.0
	for r := 0; r <= s.kmax; r++ {
		best = max(best, s.decay[r]*st.bound(p.n, r))
	}
	return best
}
