package uniformize

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/hypergraph"
)

// This file holds Alg. 6 PARTITION-HIERARCHICAL and Alg. 7 Decompose of
// Ghazi, Hu, Kumar and Manurangsi (PODS 2023, §4.2) over an abstract
// [HierInstance], and the public bounds that budget them (Lemmas 4.10, 4.11).
//
// # Degrees
//
// For node x of the attribute tree, E = atom(x), y = the attributes of
// x's strict ancestors and z = ∧_E = y ∪ attrs(x) (the attributes every
// relation of E has; a strict descendant of x misses some relation of E),
// Definition 4.7 gives, for t ∈ dom(y),
//
//	deg_{E,y}(t) = Σ_{t′ ∈ dom(x_i), π_y t′ = t} R_i(t′)           if E = {i},
//	deg_{E,y}(t) = |{π_z t′ : t′ ∈ Join(E), π_y t′ = t}|           if |E| ≥ 2,
//
// where Join(E) is the join of the relations of E alone. With one relation
// it counts tuples with their multiplicity; with several it counts the
// DISTINCT z-values that extend t and join across all of E, not the join
// rows: the number of join rows of E above t can move by a whole degree
// when one tuple changes, the distinct count by at most one.
//
// # Sensitivity 1 per value, and parallel composition
//
// Let I′ be I with one tuple u added to (or removed from) relation i. If
// i ∉ E, no degree at x changes. If i ∈ E then y ⊆ z ⊆ x_i, and
//
//   - E = {i}: only t = π_y u changes, by the multiplicity change, 1;
//   - |E| ≥ 2: every z-value of Join(E) present in one of I, I′ but not
//     the other is a projection of a join row that uses u, and all such
//     rows project to π_z u, so the set of z-values changes by at most
//     π_z u, hence only the count at t = π_y u, by at most 1.
//
// So the vector (deg(t))_{t ∈ dom(y)} has ℓ₁ sensitivity 1 and changes in
// one coordinate only: adding independent TDLap(ε, δ, Δ = 1) noise to every
// coordinate is (ε, δ)-DP by parallel composition (the coordinates other
// than π_y u have the same distribution under I and I′).
//
// # Absent values and which buckets exist
//
// The noise [dp.TruncatedDiscreteLaplace] pads upwards: deg̃ = deg + X with
// X ∈ {0, …, 2τ′}. Bucket i(d) = max{1, ⌈log₂(d/λ)⌉} is computed in
// integers as the smallest i ≥ 1 with d ≤ λ·2^i, clamped to the public
// number of levels L. We require λ ≥ τ′ (λ = τ′ by default). Then a value
// t with deg(t) = 0 has deg̃ ≤ 2τ′ ≤ 2λ, so its bucket is 1 whatever the
// noise. Hence noising only the values of positive degree (the ones the
// [HierInstance] returns) and putting every other value of the public domain
// dom(y) in bucket 1 gives exactly the same distribution of the bucket map
// (i(deg̃(t)))_{t ∈ dom(y)} as noising all of dom(y): the skipped draws
// cannot change their values' buckets, and the draws are independent. The
// noisy degrees themselves are never published (their key set, the
// positive-degree values, is not private); only the bucket map is, and it
// is DP by the argument above.
//
// The buckets materialised at x are {1} ∪ {i(deg̃(t)) : deg(t) > 0}, which
// equals {1} ∪ {i(deg̃(t)) : t ∈ dom(y)} because the other values are all
// in bucket 1: a function of the DP bucket map alone. Bucket 1 always
// exists (it holds every absent value, and may be empty of tuples).
//
// # Sharing the hierDecomposition of x
//
// Alg. 6 calls Decompose(I′, x) on every current sub-instance I′. The
// nodes processed before x are its descendants and nodes in other
// subtrees; by hierarchy a node that is neither a descendant nor an
// ancestor of x has an atom disjoint from atom(x), so it never restricted
// a relation of E. The degrees at x in I′ therefore depend only on κ, the
// buckets I′ took at the descendants of x, and we noise them once per
// (x, κ) and share the bucket map among every I′ with that κ. This is the
// same algorithm with fewer draws: sub-instances that see the same
// relations of E get the same split (the paper's own proof of bullet 3
// uses that a value t goes to one place), and it is what makes the
// per-tuple count of noisy degrees in [DegreeCount] independent of the
// processing order.
//
// # Root nodes
//
// At a root y = ∅: dom(∅) holds one value, Decompose makes one bucket and
// splits nothing. We skip roots, which spends no noisy count on them;
// σ(atom(root), ∅) stays ⊥ (bucket 0 in [HierSub.Config]). A consumer that
// needs mdeg_{atom(root)}(∅) must measure it with its own budget.

// HierKey encodes a tuple of values of an attribute list. The [HierInstance]
// chooses the encoding; the algorithm only compares keys and hands them
// back.
type HierKey string

// HierCond is the restriction one Decompose step puts on a sub-instance: a
// tuple of a relation in Atom is kept iff its projection on Attrs (the
// ancestors y of Node) is in bucket Bucket.
type HierCond struct {
	Node   int
	Atom   hypergraph.Set
	Attrs  []string
	Bucket int
	// Split numbers the decomposition the condition comes from: the
	// Split of the [HierDegreeQuery] whose noisy degrees made Buckets.
	Split int
	// Buckets maps the keys in buckets ≥ 2 to their bucket; every other key
	// of dom(Attrs) is in bucket 1. Shared between sub-instances: read only.
	// Keyed by value it is DP (the bucket map of the file comment
	// restricted to buckets ≥ 2: a key there has a noisy degree above
	// 2λ ≥ 2τ′, so a positive degree). Keyed by an engine id (HierEngine's
	// row_number() ranks among the values of positive degree) it is not:
	// a neighbour adding a light value shifts the ranks above it. Hand it
	// to the engine; never publish it.
	Buckets map[HierKey]int
}

// Keep reports whether a tuple whose projection on c.Attrs is k is kept.
func (c HierCond) Keep(k HierKey) bool {
	b, ok := c.Buckets[k]
	if !ok {
		b = 1
	}
	return b == c.Bucket
}

// HierDegreeQuery asks for deg_{E,y} (see the file comment) on the sub-instance
// in which each relation j ∈ E keeps the tuples that every HierCond c with
// j ∈ c.Atom keeps.
type HierDegreeQuery struct {
	E     hypergraph.Set
	Y     []string // y: the key attributes, root first
	Z     []string // ∧_E = Y followed by the node's attributes
	Conds []HierCond
	// Split numbers the query: 0, 1, … in the order [PartitionHierarchical]
	// asks them. The conditions the query's bucket map makes carry it, so
	// that an instance that keeps the query's values (the engine) can
	// find them again.
	Split int
}

// HierInstance is the data Alg. 6 partitions. The engine can back it with SQL
// (a group-by over the filtered join of E); the tests back it by brute
// force.
type HierInstance interface {
	// Degrees returns deg_{E,y}(t) for every t of positive degree in the
	// filtered sub-instance, keyed by the encoding of π_y t. Values of
	// degree 0 may be omitted or returned as 0.
	Degrees(ctx context.Context, q HierDegreeQuery) (map[HierKey]int64, error)
}

// HierParams are the public parameters of [PartitionHierarchical].
type HierParams struct {
	// Eps and Delta are the budget of each noisy degree, e.g. from
	// [HierDegreeBudget].
	Eps, Delta float64
	// Levels is the public number of bucket levels L ≥ 1 (see [HierLevels]);
	// buckets above L are clamped to L.
	Levels int
	// Lambda is the bucket width λ; 0 means τ′ of the degree noise. It must
	// be at least τ′ so that a degree of 0 always lands in bucket 1.
	Lambda int64

	// mut plants a known privacy bug for the audits' mutation tests.
	// Unexported: no production path sets it.
	mut hierMutation
}

// hierMutation names a planted privacy bug (audit tests only).
type hierMutation int

const (
	hierHonest hierMutation = iota
	// hierTrueDegree buckets every value by its true degree (no noise).
	hierTrueDegree
	// hierSkipEmpty materialises only the buckets that hold a present
	// value, dropping bucket 1 when no present value lies in it.
	hierSkipEmpty
	// hierNoMultiplicity runs every sub-instance of [Hier] with the whole
	// (ε/2, δ/2) of the sub-instances, as if they were disjoint (K taken as
	// 1): the budget is not divided by the multiplicity K of Lemma 4.10.
	// The partition is honest.
	hierNoMultiplicity
)

// ErrHierParams is wrapped by errors about bad [HierParams] or budgets.
var ErrHierParams = errors.New("uniformize: invalid parameters")

// hierMaxLevels keeps λ·2^L within int64 for any sane λ.
const hierMaxLevels = 48

// Bucket returns i(d) = max{1, ⌈log₂(d/λ)⌉} clamped to levels: the smallest
// i ≥ 1 with d ≤ λ·2^i, or levels when there is none below it. Integer
// arithmetic only.
func HierBucket(d, lambda int64, levels int) int {
	i := 1
	// d > λ·2^i ⇔ ⌊(d−1)/2^i⌋ ≥ λ for integers d ≥ 1, without overflow.
	for i < levels && d >= 1 && (d-1)>>uint(i) >= lambda {
		i++
	}
	return i
}

// Levels returns the public number of bucket levels for a public bound
// nMax on every degree: the smallest L ≥ 1 with nMax + 2λ ≤ λ·2^L, i.e.
// L = max{1, ⌈log₂(nMax/λ + 2)⌉}. A noisy degree is at most nMax + 2τ′ ≤
// nMax + 2λ, so with this L no bucket is clamped while the bound holds;
// when it does not, clamping keeps the multiplicity bounds, and so the
// privacy, intact. (The "+2" rather than "+1" is the upward pad of up to
// 2τ′.)
func HierLevels(nMax, lambda int64) (int, error) {
	if nMax < 0 || lambda < 1 || nMax > hierMaxBound || lambda > hierMaxBound {
		return 0, fmt.Errorf("%w: levels for n_max = %d, λ = %d", ErrHierParams, nMax, lambda)
	}
	for l := 1; l <= hierMaxLevels; l++ {
		if (nMax+2*lambda-1)>>uint(l) < lambda {
			return l, nil
		}
	}
	return 0, fmt.Errorf("%w: n_max = %d needs more than %d levels at λ = %d", ErrHierParams, nMax, hierMaxLevels, lambda)
}

// HierSub is one sub-instance of the partition: the bucket σ(x) taken at each
// node (0 = ⊥ at roots) and the restrictions that carve it out of the
// instance. A tuple u of relation j is in the sub-instance iff every HierCond
// c with j ∈ c.Atom keeps π_{c.Attrs} u; relations in no HierCond's atom are
// kept whole.
type HierSub struct {
	Config []int
	Conds  []HierCond
}

// Keep reports whether a tuple of relation rel is in the sub-instance;
// project encodes the tuple's projection on a list of attributes as the
// [HierInstance] does.
func (s HierSub) Keep(rel int, project func(attrs []string) HierKey) bool {
	for _, c := range s.Conds {
		if c.Atom.Has(rel) && !c.Keep(project(c.Attrs)) {
			return false
		}
	}
	return true
}

// HierResult is the output of [PartitionHierarchical].
type HierResult struct {
	Subs   []HierSub
	Lambda int64
	Tau    int64
	Levels int

	tree *Tree
	// noisy and exact hold, per (node, κ), the noisy and true degrees of
	// the positive-degree values. Not for release: the key set is the
	// support of the data. Kept for the tests of Lemma 4.10 bullet 3.
	noisy, exact map[string]map[HierKey]int64
}

// kappa encodes the buckets of the descendants of x in config: the key of
// the shared hierDecomposition at x.
func (t *Tree) kappa(x int, config []int) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(x))
	for _, d := range t.Descendants(x) {
		b.WriteByte(',')
		b.WriteString(strconv.Itoa(config[d]))
	}
	return b.String()
}

type hierDecomposition struct {
	split   int
	buckets map[HierKey]int
	hit     []int // materialised buckets, ascending, always with 1
}

// Partition runs Alg. 6 PARTITION-HIERARCHICAL: for every non-root node x
// bottom-up, every current sub-instance is split by Decompose(·, x) (Alg.
// 7) into the materialised buckets of the noisy degrees
// deg_{atom(x),y}(t) + X_t, X_t ~ TDLap(p.Eps, p.Delta, 1); relations in
// atom(x) are split by the bucket of π_y of their tuples, the others are
// kept whole in every part. See the file comment for the degree, its
// sensitivity, absent values and the sharing per (x, κ).
//
// The whole is (K_deg·ε, K_deg·δ)-DP for K_deg = t.DegreeCount(L), by
// adaptive composition over the noisy degrees a tuple can move
// ([DegreeCount]). Noise is drawn in the order of nodes and of sorted
// keys, so a seeded src gives the same result.
func PartitionHierarchical(ctx context.Context, t *Tree, in HierInstance, p HierParams, src dp.Source) (*HierResult, error) {
	if p.Levels < 1 || p.Levels > hierMaxLevels {
		return nil, fmt.Errorf("%w: levels = %d, want 1 to %d", ErrHierParams, p.Levels, hierMaxLevels)
	}
	noise, err := dp.CachedTruncatedDiscreteLaplace(p.Eps, p.Delta, 1)
	if err != nil {
		return nil, fmt.Errorf("uniformize: degree noise: %w", err)
	}
	tau := noise.Tau()
	lambda := p.Lambda
	if lambda == 0 {
		lambda = tau
	}
	if lambda < tau {
		return nil, fmt.Errorf("%w: λ = %d below τ′ = %d: a degree of 0 could leave bucket 1", ErrHierParams, lambda, tau)
	}
	res := &HierResult{Lambda: lambda, Tau: tau, Levels: p.Levels, tree: t,
		noisy: map[string]map[HierKey]int64{}, exact: map[string]map[HierKey]int64{}}
	type partial struct {
		config []int
		conds  []*HierCond // by node
	}
	n := t.Len()
	subs := []partial{{config: make([]int, n), conds: make([]*HierCond, n)}}
	cache := map[string]*hierDecomposition{}
	for _, x := range t.order {
		if !t.Decomposed(x) {
			continue
		}
		node := t.nodes[x]
		y := t.Ancestors(x)
		var next []partial
		for _, s := range subs {
			k := t.kappa(x, s.config)
			d := cache[k]
			if d == nil {
				q := HierDegreeQuery{E: node.Atom, Y: y, Z: t.PathAttrs(x), Split: len(cache)}
				for _, v := range t.Descendants(x) {
					if c := s.conds[v]; c != nil {
						q.Conds = append(q.Conds, *c)
					}
				}
				degs, err := in.Degrees(ctx, q)
				if err != nil {
					return nil, fmt.Errorf("uniformize: degrees at %s: %w", strings.Join(node.Attrs, ","), err)
				}
				keys := make([]HierKey, 0, len(degs))
				for key, v := range degs {
					if v > 0 {
						keys = append(keys, key)
					}
				}
				slices.Sort(keys)
				d = &hierDecomposition{split: q.Split, buckets: map[HierKey]int{}}
				noisy, exact := map[HierKey]int64{}, map[HierKey]int64{}
				hit := map[int]bool{1: p.mut != hierSkipEmpty}
				for _, key := range keys {
					nd := degs[key]
					if p.mut != hierTrueDegree {
						nd += noise.Sample(src)
					}
					b := HierBucket(nd, lambda, p.Levels)
					if b >= 2 {
						d.buckets[key] = b
					}
					hit[b] = true
					noisy[key], exact[key] = nd, degs[key]
				}
				for b := 1; b <= p.Levels; b++ {
					if hit[b] {
						d.hit = append(d.hit, b)
					}
				}
				cache[k] = d
				res.noisy[k], res.exact[k] = noisy, exact
			}
			for _, b := range d.hit {
				c := &HierCond{Node: x, Atom: node.Atom, Attrs: y, Bucket: b, Split: d.split, Buckets: d.buckets}
				ps := partial{config: slices.Clone(s.config), conds: slices.Clone(s.conds)}
				ps.config[x] = b
				ps.conds[x] = c
				next = append(next, ps)
			}
		}
		subs = next
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	for _, s := range subs {
		sub := HierSub{Config: s.config}
		for _, c := range s.conds {
			if c != nil {
				sub.Conds = append(sub.Conds, *c)
			}
		}
		res.Subs = append(res.Subs, sub)
	}
	return res, nil
}

// hierMaxBound caps the public bounds: beyond 2^53 the budget division loses
// exactness in float64 and the partition is useless anyway.
const hierMaxBound = int64(1) << 53

func hierPow(l, e int) (int64, error) {
	r := int64(1)
	for range e {
		if r > hierMaxBound/int64(l) {
			return 0, fmt.Errorf("%w: bound %d^%d exceeds 2^53", ErrHierParams, l, e)
		}
		r *= int64(l)
	}
	return r, nil
}

// Multiplicity returns K, the public bound of Lemma 4.10 bullet 2 on the
// number of sub-instances of [PartitionHierarchical] that one tuple of a private
// relation sits in, for L = levels:
//
//	K = max over private relations i of L^{n_i},
//	n_i = #{non-root nodes v : i ∉ atom(v)}.
//
// Proof. Fix a tuple u of relation i and the buckets σ(v) of a
// sub-instance at the n_i nodes off i's path. The nodes on the path are
// then determined bottom-up: at the deepest path node x, κ (the buckets of
// x's descendants) involves off-path nodes only, so u's bucket there is
// the bucket of π_y u in the shared map of (x, κ), and u is kept only if
// σ(x) is that bucket; going up, each path node's κ is fixed by the
// off-path choices and the path buckets already determined. So u is in at
// most one sub-instance per choice of the off-path buckets, of which there
// are at most L^{n_i} (at most L materialised buckets per node). Roots are
// never split. Public relations do not change between neighbours and are
// left out of the maximum; K = 1 when no relation is private.
func (t *Tree) Multiplicity(levels int) (int64, error) {
	if levels < 1 {
		return 0, fmt.Errorf("%w: levels = %d", ErrHierParams, levels)
	}
	h := t.h
	k := int64(1)
	for _, i := range h.Private().Members() {
		n := 0
		for v, node := range t.nodes {
			if t.Decomposed(v) && !node.Atom.Has(i) {
				n++
			}
		}
		b, err := hierPow(levels, n)
		if err != nil {
			return 0, err
		}
		k = max(k, b)
	}
	return k, nil
}

// DegreeCount returns K_deg, the public bound on how many noisy degrees of
// [PartitionHierarchical] one tuple of a private relation can move:
//
//	K_deg = max over private i of Σ_{non-root x on i's path} L^{d_i(x)},
//	d_i(x) = #{strict descendants z of x : i ∉ atom(z)}.
//
// Proof. A tuple u of relation i moves only degrees at nodes x with
// i ∈ atom(x), and at (x, κ) only the one at t = π_y u, by at most 1 (file
// comment). It is in the filtered relation of the query for (x, κ) only if
// κ's buckets at the descendants of x on i's path are u's, which, as in
// [Tree.Multiplicity], are determined by κ's buckets at the d_i(x)
// descendants off the path: at most L^{d_i(x)} queries at x see u. Summing
// over x bounds the number of (ε, δ)-DP noisy counts that differ between
// neighbours, for every history of earlier outputs; by basic composition
// with adaptively chosen steps (a valid privacy filter, Rogers, Roth,
// Ullman and Vadhan 2016) the partition is (K_deg·ε, K_deg·δ)-DP.
func (t *Tree) DegreeCount(levels int) (int64, error) {
	if levels < 1 {
		return 0, fmt.Errorf("%w: levels = %d", ErrHierParams, levels)
	}
	k := int64(1)
	for _, i := range t.h.Private().Members() {
		var sum int64
		for _, x := range t.Path(i) {
			if !t.Decomposed(x) {
				continue
			}
			d := 0
			for _, z := range t.Descendants(x) {
				if !t.nodes[z].Atom.Has(i) {
					d++
				}
			}
			b, err := hierPow(levels, d)
			if err != nil {
				return 0, err
			}
			sum += b
			if sum > hierMaxBound {
				return 0, fmt.Errorf("%w: degree count exceeds 2^53", ErrHierParams)
			}
		}
		k = max(k, sum)
	}
	return k, nil
}

// HierSplit is a budget divided by a public bound.
type HierSplit struct {
	// Eps and Delta are the budget of each part.
	Eps, Delta float64
	// K is the public bound the budget was divided by.
	K int64
}

func hierDivide(eps, delta float64, k int64) (HierSplit, error) {
	if !(eps > 0) || !(delta >= 0) || !(delta < 1) {
		return HierSplit{}, fmt.Errorf("%w: ε = %v, δ = %v", ErrHierParams, eps, delta)
	}
	return HierSplit{Eps: eps / float64(k), Delta: delta / float64(k), K: k}, nil
}

// Budget divides the release budget (ε, δ) among the sub-instances of
// [PartitionHierarchical] (Lemma 4.11): it returns ε′ = ε/K, δ′ = δ/K and K =
// t.Multiplicity(levels).
//
// Releasing every sub-instance with an independent (ε′, δ′)-DP mechanism
// is then (ε, δ)-DP given the partition's output: the package
// documentation's "Sub-instances" proves it once for both uniformized
// releases (basic composition over the at most K sub-instances a tuple
// lies in). Total with the partition: (ε + ε_deg, δ + δ_deg).
func HierBudget(eps, delta float64, t *Tree, levels int) (HierSplit, error) {
	k, err := t.Multiplicity(levels)
	if err != nil {
		return HierSplit{}, err
	}
	return hierDivide(eps, delta, k)
}

// HierDegreeBudget divides the partition budget (ε, δ) among the noisy degrees
// a tuple can move: it returns the (ε, δ) of each noisy degree, ε/K_deg and
// δ/K_deg, for [HierParams], with K_deg = t.DegreeCount(levels). [PartitionHierarchical]
// run with them is (ε, δ)-DP ([Tree.DegreeCount]).
func HierDegreeBudget(eps, delta float64, t *Tree, levels int) (HierSplit, error) {
	k, err := t.DegreeCount(levels)
	if err != nil {
		return HierSplit{}, err
	}
	return hierDivide(eps, delta, k)
}
