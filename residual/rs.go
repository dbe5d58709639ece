package residual

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/synth-dp/synth/hypergraph"
)

// MaxK is the largest k that [LocalSensitivityAt] accepts and the largest
// search range over k that [RS] runs. RS needs k up to about
// (p−1)/(1−e^{−β}) ≈ (p−1)/β for p private relations, so MaxK limits how
// small β may be: with p = 4, β ≥ about 3·10⁻⁵ (see [RS] for the running
// time, which limits β further in practice).
const MaxK = 100_000

// polys returns the private relations and, for each private relation i, the
// polynomial P_i(s) = Σ_{E⊆P∖{i}} T_{[m]∖{i}∖E}·Π_{j∈E} s_j over the
// variables s_j of the other private relations j (in increasing index
// order).
func polys(te *Table, h *hypergraph.Hypergraph) ([]int, []poly, error) {
	if te == nil {
		return nil, nil, fmt.Errorf("%w: nil table", ErrInvalidParameter)
	}
	if err := checkRelations(h); err != nil {
		return nil, nil, err
	}
	if te.m != h.Len() {
		return nil, nil, fmt.Errorf("%w: table of %d relations for a hypergraph of %d", ErrInvalidParameter, te.m, h.Len())
	}
	priv := h.Private().Members()
	if len(priv) == 0 {
		return nil, nil, fmt.Errorf("%w: every relation of %v is public", ErrNoPrivate, h.Names(h.All()))
	}
	all := h.All()
	out := make([]poly, len(priv))
	for x, i := range priv {
		vars := make([]int, 0, len(priv)-1)
		for _, j := range priv {
			if j != i {
				vars = append(vars, j)
			}
		}
		p := poly{n: len(vars), c: make([]float64, 1<<uint(len(vars)))}
		for f := range p.c {
			rest := all &^ (1 << uint(i))
			for b, j := range vars {
				if f&(1<<uint(b)) != 0 {
					rest &^= 1 << uint(j)
				}
			}
			p.c[f] = te.v[rest]
		}
		out[x] = p
	}
	return priv, out, nil
}

// LocalSensitivityAt returns LŜ^k(I) of Def. 3.6 (Ghazi et al.), the upper
// bound on the local sensitivity of the join count at distance k:
//
//	LŜ^k = max_{s ∈ S^k} max_{i ∈ P} Σ_{E ⊆ [m]∖{i}} T_{[m]∖{i}∖E} · Π_{j∈E} s_j,
//
// where P is the set of private relations and S^k the non-negative integer
// vectors s with Σ s_j = k and s_j = 0 for every public j (public relations
// never change between neighbours). LŜ^0 = max_{i∈P} T_{[m]∖{i}}.
//
// # Exactness and cost
//
// For fixed i only the sets E ⊆ P∖{i} contribute, so the inner sum is a
// multilinear polynomial P_i in the n = |P|−1 variables s_j, j ∈ P∖{i}, with
// non-negative coefficients (T values). P_i does not depend on s_i and is
// non-decreasing in every variable, so the maximum over S^k is the maximum
// of P_i over the compositions of k into n parts. Maximising a multilinear
// polynomial over the integer simplex is NP-hard in n in general (it
// contains the Motzkin–Straus clique program), so the function runs an exact
// depth-first branch and bound over the variables: a subtree is cut only
// when an upper bound on all its values (per degree d, the smaller of "each
// monomial at its balanced maximum" and "largest coefficient times the
// maximum of the elementary symmetric polynomial e_d", both exact maxima
// of their relaxations) does not exceed the best value found. The worst case
// visits all C(k+n−1, n−1) compositions, with O(k·n² + 2^n) work per node.
// Measured (BenchmarkLocalSensitivityAt, random T_E < 10⁶, k = K−1 for
// β = 1/13.8): m = 3 or 4 take under 0.1 ms, m = 6 up to 15 ms, m = 8 up
// to 1.5 s. Values are float64 (T_E up to 2^63 times k^n stays far
// below the float64 range for m ≤ [MaxRelations] and k ≤ [MaxK]); the result
// is the exact maximum up to float64 rounding.
//
// LocalSensitivityAt cannot be cancelled; [LocalSensitivityAtContext] can.
//
// Errors wrap [ErrInvalidParameter] (k < 0, k > [MaxK], a table built for
// another hypergraph) or [ErrNoPrivate].
func LocalSensitivityAt(te *Table, h *hypergraph.Hypergraph, k int) (float64, error) {
	return LocalSensitivityAtContext(context.Background(), te, h, k)
}

// LocalSensitivityAtContext is [LocalSensitivityAt] with cancellation: the
// branch and bound polls ctx every few thousand units of work (a few
// milliseconds at most) and, once ctx is done, stops and returns an error
// wrapping ctx.Err() ([context.Canceled] or [context.DeadlineExceeded]),
// with no partial value. An error of ctx is also returned when ctx is
// already done on entry, after the arguments have been checked.
func LocalSensitivityAtContext(ctx context.Context, te *Table, h *hypergraph.Hypergraph, k int) (float64, error) {
	if k < 0 || k > MaxK {
		return 0, fmt.Errorf("%w: k = %d, want 0 ≤ k ≤ %d", ErrInvalidParameter, k, MaxK)
	}
	_, ps, err := polys(te, h)
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("residual: LŜ^%d search: %w", k, err)
	}
	ls, err := localSensitivity(ps, newSearcher(ctx, ps[0].n), k)
	if err != nil {
		return 0, fmt.Errorf("residual: LŜ^%d search: %w", k, err)
	}
	return ls, nil
}

// localSensitivity is LŜ^k for the polynomials ps (all with the same n). It
// returns the error of s's context when that is done during the search.
func localSensitivity(ps []poly, s *searcher, k int) (float64, error) {
	best := 0.0
	for _, p := range ps {
		best = max(best, lowerBound(p, k))
	}
	for _, p := range ps {
		v, ok := s.max(p, k, best)
		if s.err != nil {
			return 0, s.err
		}
		if ok {
			best = v
		}
	}
	return best, nil
}

// SearchLimit returns the number of values of k that [RS] examines for a
// join with p private relations: RS^β = max_{0 ≤ k < K} e^{−βk}·LŜ^k with
// K = max(1, ⌈(p−1)/(1−e^{−β})⌉).
//
// Proof that no k ≥ K can do better. Fix a private relation i, write
// n = p−1 and P = P_i for the polynomial of [LocalSensitivityAt], and let
// L(k) = max_{|s|=k} P(s) (so LŜ^k = max_i L_i(k)). Take k ≥ 1 and s with
// |s| = k. Remove one unit from coordinate j with probability s_j/k. A
// monomial Π_{j∈E} s_j (|E| = d ≤ n) becomes Π·(s_j−1)/s_j when j ∈ E and
// stays the same otherwise, so its expected value afterwards is
//
//	Π·( Σ_{j∈E} (s_j/k)·(s_j−1)/s_j + Σ_{j∉E} s_j/k ) = Π·(k−d)/k ≥ Π·(1 − n/k).
//
// By linearity and non-negative coefficients some j gives
// P(s − e_j) ≥ (1 − n/k)·P(s), hence L(k−1) ≥ (1 − n/k)·L(k), and the same
// holds for the maximum over i. With g(k) = e^{−βk}·LŜ^k this reads
// g(k−1) ≥ e^{β}·(1 − n/k)·g(k) ≥ g(k) whenever 1 − n/k ≥ e^{−β}, that is
// k ≥ n/(1−e^{−β}). So g is non-increasing from k = K−1 on: g(k) ≤ g(K−1)
// for every k ≥ K, and the maximum over k ≥ 0 is attained at some k < K.
// (For n = 0 LŜ^k = LŜ^0 and k = 0 is optimal.) The factor 1 − n/k is
// tight: for P = s_1·s_2, L(1) = 0 although L(2) = 1, so "LŜ^k is a
// polynomial in k" arguments, which give k ≤ n/β + 1, do not apply as such;
// n/(1−e^{−β}) ≈ n/β + n/2 for small β.
//
// It returns an error wrapping [ErrInvalidParameter] for β that is not a
// finite number > 0, [ErrNoPrivate] for p < 1 and [ErrSearchTooLarge] when
// K > [MaxK].
func SearchLimit(p int, beta float64) (int, error) {
	if err := checkBeta(beta); err != nil {
		return 0, err
	}
	if p < 1 {
		return 0, fmt.Errorf("%w: %d private relations, want ≥ 1", ErrNoPrivate, p)
	}
	n := float64(p - 1)
	if n == 0 {
		return 1, nil
	}
	k := math.Ceil(n / -math.Expm1(-beta))
	if k > MaxK {
		return 0, fmt.Errorf("%w: β = %v with %d private relations needs k up to %.0f, more than %d", ErrSearchTooLarge, beta, p, k, MaxK)
	}
	return max(1, int(k)), nil
}

// checkBeta rejects NaN, ±Inf and β ≤ 0.
func checkBeta(beta float64) error {
	if math.IsNaN(beta) || math.IsInf(beta, 0) || beta <= 0 {
		return fmt.Errorf("%w: β = %v, want a finite number > 0", ErrInvalidParameter, beta)
	}
	return nil
}

// RS returns the β-residual sensitivity of the join count (Def. 3.6),
//
//	RS^β(I) = max_{k ≥ 0} e^{−βk}·LŜ^k(I),
//
// and the smallest k attaining the maximum. The maximum over k < K =
// [SearchLimit] is the maximum over all k ≥ 0 by the proof there.
//
// RS^β = max_{i∈P} max_{s: |s| < K} e^{−β|s|}·P_i(s), with P_i the
// polynomial of [LocalSensitivityAt], so RS runs one exact branch and bound
// over the vectors s per relation i rather than one per k: a subtree is cut
// when, for every number r of units left to it, e^{−β(a+r)} times the
// degree bounds of [LocalSensitivityAt] at r does not exceed the best value
// found. The last variable is solved in closed form: e^{−β(a+r)}·(q0 + q1·r)
// is log-concave in r and peaks at r = 1/β − q0/q1. Worst case as for
// LocalSensitivityAt at k = K with O(K²·n + K·2^n) work per node.
// Measured (BenchmarkRS, random T_E < 10⁶, all relations private, β =
// 1/13.8, shared 2-core machine): m = 3 or 4 take under 0.3 ms, m = 6 up
// to 45 ms, m = 8 up to about 2.5 s. The cost grows roughly like K^{p−2}
// as β shrinks: with m = 4, β = 10⁻³ takes about 1 s and β = 10⁻⁴ about
// 40 s; with m = 6, β = 10⁻² takes about 30 s. RS cannot be cancelled;
// [RSContext] can. The result is exact up to float64 rounding.
//
// RS^β is a β-smooth upper bound on the local sensitivity of count(I) under
// the neighbour relation of DESIGN.md §3 (add or remove one tuple of one
// private relation): RS^β(I) ≥ LS(I) and RS^β(I′) ≤ e^β·RS^β(I) for
// neighbours I, I′ (Dong and Yi; Ghazi et al. §3.3). It is a true, non-
// private statistic: Alg. 3 publishes it only through ln RS^β plus truncated
// Laplace noise, whose sensitivity is β.
//
// Errors wrap [ErrInvalidParameter], [ErrNoPrivate] or [ErrSearchTooLarge].
func RS(te *Table, h *hypergraph.Hypergraph, beta float64) (rs float64, k int, err error) {
	return RSContext(context.Background(), te, h, beta)
}

// RSContext is [RS] with cancellation: the precomputation and the branch
// and bound poll ctx every few thousand units of work (a few milliseconds
// at most) and, once ctx is done, stop and return an error wrapping
// ctx.Err() ([context.Canceled] or [context.DeadlineExceeded]), with no
// partial value. An error of ctx is also returned when ctx is already done
// on entry, after the arguments have been checked.
func RSContext(ctx context.Context, te *Table, h *hypergraph.Hypergraph, beta float64) (rs float64, k int, err error) {
	if err := checkBeta(beta); err != nil {
		return 0, 0, err
	}
	priv, ps, err := polys(te, h)
	if err != nil {
		return 0, 0, err
	}
	limit, err := SearchLimit(len(priv), beta)
	if err != nil {
		return 0, 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, fmt.Errorf("residual: RS^β search: %w", err)
	}
	// g(0) = LŜ^0 = max_i P_i(0), attained at s = 0. The joint search over
	// all s with |s| < limit reports strict improvements only. Exact ties
	// between different k cannot occur unless the values are 0 (then k = 0
	// is kept): with integer T values LŜ^k is an integer, and
	// e^{β(k′−k)} = LŜ^{k′}/LŜ^k would make e^x rational for a rational
	// x ≠ 0 (β is a float64, hence rational), which it never is.
	best, argmax := 0.0, 0
	for _, p := range ps {
		best = max(best, p.c[0])
	}
	s, err := newRSSearcher(ctx, ps[0].n, beta, limit-1)
	if err != nil {
		return 0, 0, fmt.Errorf("residual: RS^β search: %w", err)
	}
	// Search the relations with the largest bound first, and skip those
	// whose bound cannot beat the best value found.
	order := make([]kid, len(ps))
	for x, p := range ps {
		order[x] = kid{x, s.rootBound(p)}
	}
	sort.SliceStable(order, func(a, b int) bool { return order[a].bound > order[b].bound })
	for _, o := range order {
		if o.bound <= best {
			break
		}
		g, k, ok := s.max(ps[o.v], best)
		if s.err != nil {
			return 0, 0, fmt.Errorf("residual: RS^β search: %w", s.err)
		}
		if ok {
			best, argmax = g, k
		}
	}
	return best, argmax, nil
}
