package uniformize

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/hypergraph"
)

// The brute-force oracle of residual/internal/brute cannot be imported from
// here (Go's internal rule), so the tests carry their own: a bag of tuples
// per relation and nested-loop joins over tuple indices.

type hrel struct {
	name   string
	attrs  []string
	public bool
	tuples [][]int
}

type hinst struct {
	dom  int
	rels []hrel
}

func (in *hinst) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dom=%d", in.dom)
	for _, r := range in.rels {
		fmt.Fprintf(&b, " %s(%s)%v", r.name, strings.Join(r.attrs, ","), r.tuples)
	}
	return b.String()
}

func (in *hinst) hypergraph(t testing.TB) *hypergraph.Hypergraph {
	var rels []hypergraph.Relation
	for _, r := range in.rels {
		attrs := map[string]string{}
		for _, a := range r.attrs {
			attrs[a] = strings.ToLower(a)
		}
		rels = append(rels, hypergraph.Relation{Name: r.name, Attrs: attrs, Public: r.public})
	}
	h, err := hypergraph.New(rels)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (in *hinst) clone() *hinst {
	out := &hinst{dom: in.dom}
	for _, r := range in.rels {
		r.attrs = slices.Clone(r.attrs)
		ts := make([][]int, len(r.tuples))
		for i, u := range r.tuples {
			ts[i] = slices.Clone(u)
		}
		r.tuples = ts
		out.rels = append(out.rels, r)
	}
	return out
}

// proj encodes the projection of tuple u of relation j on attrs.
func (in *hinst) proj(j int, u []int, attrs []string) HierKey {
	r := in.rels[j]
	parts := make([]string, len(attrs))
	for k, a := range attrs {
		parts[k] = strconv.Itoa(u[slices.Index(r.attrs, a)])
	}
	return HierKey(strings.Join(parts, ","))
}

func bindingKey(b map[string]int, attrs []string) HierKey {
	parts := make([]string, len(attrs))
	for k, a := range attrs {
		parts[k] = strconv.Itoa(b[a])
	}
	return HierKey(strings.Join(parts, ","))
}

// join enumerates the join of the relations in rels restricted by keep,
// calling emit with the index of the tuple used from each relation and the
// attribute binding.
func (in *hinst) join(rels []int, keep func(j int, u []int) bool, emit func(idx []int, b map[string]int)) {
	b := map[string]int{}
	idx := make([]int, len(rels))
	var rec func(k int)
	rec = func(k int) {
		if k == len(rels) {
			emit(idx, b)
			return
		}
		r := in.rels[rels[k]]
	tuples:
		for ti, u := range r.tuples {
			if !keep(rels[k], u) {
				continue
			}
			var added []string
			for p, a := range r.attrs {
				if v, ok := b[a]; ok {
					if v != u[p] {
						for _, x := range added {
							delete(b, x)
						}
						continue tuples
					}
				} else {
					b[a] = u[p]
					added = append(added, a)
				}
			}
			idx[k] = ti
			rec(k + 1)
			for _, x := range added {
				delete(b, x)
			}
		}
	}
	rec(0)
}

func (in *hinst) keeper(conds []HierCond) func(j int, u []int) bool {
	return func(j int, u []int) bool {
		for _, c := range conds {
			if c.Atom.Has(j) && !c.Keep(in.proj(j, u, c.Attrs)) {
				return false
			}
		}
		return true
	}
}

// Degrees is Definition 4.7 by brute force: tuples with multiplicity for
// one relation, distinct z-values of the join of E otherwise.
func (in *hinst) Degrees(_ context.Context, q HierDegreeQuery) (map[HierKey]int64, error) {
	members := q.E.Members()
	keep := in.keeper(q.Conds)
	out := map[HierKey]int64{}
	if len(members) == 1 {
		j := members[0]
		for _, u := range in.rels[j].tuples {
			if keep(j, u) {
				out[in.proj(j, u, q.Y)]++
			}
		}
		return out, nil
	}
	seen := map[HierKey]bool{}
	in.join(members, keep, func(_ []int, b map[string]int) {
		z := bindingKey(b, q.Z)
		if !seen[z] {
			seen[z] = true
			out[bindingKey(b, q.Y)]++
		}
	})
	return out, nil
}

var hierShapes = []struct {
	name  string
	rels  []string
	attrs [][]string
}{
	{"example", []string{"R1", "R2", "R3"}, [][]string{{"A", "B"}, {"A", "B", "C"}, {"A", "D"}}},
	{"star", []string{"R", "S", "T"}, [][]string{{"A", "B"}, {"A", "C"}, {"A", "D"}}},
	{"chain", []string{"R", "S", "T"}, [][]string{{"A"}, {"A", "B"}, {"A", "B", "C"}}},
	{"pair", []string{"R", "S"}, [][]string{{"A", "B"}, {"B", "C"}}},
	{"deep4", []string{"R1", "R2", "R3", "R4"}, [][]string{{"A", "B", "C"}, {"A", "B", "D"}, {"A", "E"}, {"A"}}},
	{"forest", []string{"R", "S", "T", "U"}, [][]string{{"A"}, {"A", "B"}, {"C", "D"}, {"C"}}},
	{"equal-atoms", []string{"R", "S", "T"}, [][]string{{"A", "B"}, {"A", "B", "C"}, {"A", "B", "C"}}},
}

func randomHier(rng *rand.Rand, k int) *hinst {
	s := hierShapes[k%len(hierShapes)]
	in := &hinst{dom: 2 + rng.IntN(2)}
	for i, name := range s.rels {
		r := hrel{name: name, attrs: slices.Clone(s.attrs[i]), public: rng.IntN(5) == 0}
		n := rng.IntN(7)
		for range n {
			if len(r.tuples) > 0 && rng.IntN(4) == 0 {
				r.tuples = append(r.tuples, slices.Clone(r.tuples[rng.IntN(len(r.tuples))]))
				continue
			}
			u := make([]int, len(r.attrs))
			for p := range u {
				u[p] = rng.IntN(in.dom)
			}
			r.tuples = append(r.tuples, u)
		}
		in.rels = append(in.rels, r)
	}
	return in
}

// params returns degree parameters with a small τ′ so that small instances
// spread over several buckets.
func testParams(t testing.TB, rng *rand.Rand) HierParams {
	eps := []float64{2, 4, 8}[rng.IntN(3)]
	delta := []float64{0.05, 0.2}[rng.IntN(2)]
	if _, err := dp.TDLapTau(eps, delta, 1); err != nil {
		t.Fatal(err)
	}
	return HierParams{Eps: eps, Delta: delta, Levels: 2 + rng.IntN(3)}
}

// TestHierPartitionLemma410 checks Lemma 4.10 on random hierarchical
// instances: (1) every join row lies in exactly one sub-instance; (2) no
// tuple of a private relation is in more sub-instances than
// Multiplicity, and none moves more noisy degrees than DegreeCount; (3)
// every sub-instance's degrees at every decomposed node are the ones that
// were noised, within the noise's support, and in the bucket σ(x).
func TestHierPartitionLemma410(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	ctx := context.Background()
	manyBuckets := 0
	for k := range 280 {
		in := randomHier(rng, k)
		h := in.hypergraph(t)
		tr, err := NewTree(h)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		p := testParams(t, rng)
		res, err := PartitionHierarchical(ctx, tr, in, p, dp.NewSeededSource(uint64(k)))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		K, err := tr.Multiplicity(p.Levels)
		if err != nil {
			t.Fatal(err)
		}
		Kdeg, err := tr.DegreeCount(p.Levels)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Subs) > 1 {
			manyBuckets++
		}
		all := make([]int, len(in.rels))
		for i := range all {
			all[i] = i
		}
		// (1) partition of the join rows (tuple-index vectors, so that
		// duplicates count with their multiplicity).
		rows := map[string]int{}
		in.join(all, func(int, []int) bool { return true }, func(idx []int, _ map[string]int) {
			rows[fmt.Sprint(idx)] = 0
		})
		for _, s := range res.Subs {
			in.join(all, in.keeper(s.Conds), func(idx []int, _ map[string]int) {
				key := fmt.Sprint(idx)
				if _, ok := rows[key]; !ok {
					t.Fatalf("%s: sub %v has a row %s outside the join", in, s.Config, key)
				}
				rows[key]++
			})
		}
		for key, n := range rows {
			if n != 1 {
				t.Fatalf("%s: join row %s in %d sub-instances, want 1", in, key, n)
			}
		}
		// (2) multiplicity and degree count per private tuple.
		for j, r := range in.rels {
			if r.public {
				continue
			}
			for _, u := range r.tuples {
				n := 0
				queries := map[string]bool{}
				for _, s := range res.Subs {
					if s.Keep(j, func(a []string) HierKey { return in.proj(j, u, a) }) {
						n++
					}
					for _, x := range tr.Path(j) {
						if !tr.Decomposed(x) {
							continue
						}
						var below []HierCond
						for _, c := range s.Conds {
							if slices.Contains(tr.Descendants(x), c.Node) {
								below = append(below, c)
							}
						}
						if in.keeper(below)(j, u) {
							queries[tr.kappa(x, s.Config)] = true
						}
					}
				}
				if int64(n) > K {
					t.Fatalf("%s: tuple %v of %s in %d sub-instances > K = %d", in, u, r.name, n, K)
				}
				if int64(len(queries)) > Kdeg {
					t.Fatalf("%s: tuple %v of %s moves %d noisy degrees > K_deg = %d", in, u, r.name, len(queries), Kdeg)
				}
			}
		}
		// Bucket 1 is materialised at every (x, κ), whatever the data:
		// the materialised set must be a function of the bucket map over
		// the public domain, in which absent values always sit in bucket 1.
		ones := map[string]bool{}
		for _, s := range res.Subs {
			for x := range tr.Len() {
				if tr.Decomposed(x) && s.Config[x] == 1 {
					ones[tr.kappa(x, s.Config)] = true
				}
			}
		}
		for kk := range res.noisy {
			if !ones[kk] {
				t.Fatalf("%s: (node, κ) = %s has no bucket-1 sub-instance", in, kk)
			}
		}
		// (3) degree configuration.
		for _, s := range res.Subs {
			for _, x := range tr.BottomUp() {
				if !tr.Decomposed(x) {
					if s.Config[x] != 0 {
						t.Fatalf("root %d has bucket %d", x, s.Config[x])
					}
					continue
				}
				q := HierDegreeQuery{E: tr.Node(x).Atom, Y: tr.Ancestors(x), Z: tr.PathAttrs(x), Conds: s.Conds}
				degs, _ := in.Degrees(ctx, q)
				kk := tr.kappa(x, s.Config)
				for key, d := range degs {
					nd, ok := res.noisy[kk][key]
					if !ok || res.exact[kk][key] != d {
						t.Fatalf("%s: sub %v node %v value %s: degree %d in the sub-instance, %d noised (present %v)",
							in, s.Config, tr.Node(x).Attrs, key, d, res.exact[kk][key], ok)
					}
					if nd < d || nd > d+2*res.Tau {
						t.Fatalf("noisy degree %d outside [%d, %d]", nd, d, d+2*res.Tau)
					}
					b := HierBucket(nd, res.Lambda, res.Levels)
					if b != s.Config[x] {
						t.Fatalf("%s: sub %v node %v value %s: noisy degree %d in bucket %d, σ = %d",
							in, s.Config, tr.Node(x).Attrs, key, nd, b, s.Config[x])
					}
					lo, hi := res.Lambda<<uint(b-1), res.Lambda<<uint(b)
					if (b > 1 && nd <= lo) || (b < res.Levels && nd > hi) {
						t.Fatalf("noisy degree %d not in (λ·2^(σ−1), λ·2^σ] for σ = %d, λ = %d", nd, b, res.Lambda)
					}
				}
			}
		}
	}
	if manyBuckets < 50 {
		t.Errorf("only %d of 280 instances split at all; the test is too weak", manyBuckets)
	}
}

// TestHierDegreeSensitivity: for every node, the degree vector of a
// neighbour differs in at most one value, by at most 1 (the claim behind
// Δ = 1 and parallel composition).
func TestHierDegreeSensitivity(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	ctx := context.Background()
	for k := range 300 {
		in := randomHier(rng, k)
		tr, err := NewTree(in.hypergraph(t))
		if err != nil {
			t.Fatal(err)
		}
		nb := in.clone()
		j := rng.IntN(len(nb.rels))
		r := &nb.rels[j]
		if len(r.tuples) > 0 && rng.IntN(2) == 0 {
			i := rng.IntN(len(r.tuples))
			r.tuples = slices.Delete(r.tuples, i, i+1)
		} else {
			u := make([]int, len(r.attrs))
			for p := range u {
				u[p] = rng.IntN(nb.dom)
			}
			r.tuples = append(r.tuples, u)
		}
		for x := range tr.Len() {
			q := HierDegreeQuery{E: tr.Node(x).Atom, Y: tr.Ancestors(x), Z: tr.PathAttrs(x)}
			a, _ := in.Degrees(ctx, q)
			b, _ := nb.Degrees(ctx, q)
			changed := 0
			for _, key := range unionKeys(a, b) {
				d := a[key] - b[key]
				if d != 0 {
					changed++
				}
				if d > 1 || d < -1 {
					t.Fatalf("%s → %s: node %v value %s moved by %d", in, nb, tr.Node(x).Attrs, key, d)
				}
			}
			if changed > 1 {
				t.Fatalf("%s → %s: node %v: %d values moved", in, nb, tr.Node(x).Attrs, changed)
			}
		}
	}
}

func unionKeys(a, b map[HierKey]int64) []HierKey {
	var out []HierKey
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

func describe(res *HierResult) string {
	var b strings.Builder
	for _, s := range res.Subs {
		fmt.Fprintf(&b, "%v:", s.Config)
		for _, c := range s.Conds {
			fmt.Fprintf(&b, " %d/%d%v", c.Node, c.Bucket, c.Buckets)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func TestHierDeterminism(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	differ := 0
	for k := range 40 {
		in := randomHier(rng, k)
		tr, err := NewTree(in.hypergraph(t))
		if err != nil {
			t.Fatal(err)
		}
		p := testParams(t, rng)
		a, err := PartitionHierarchical(ctx, tr, in, p, dp.NewSeededSource(99))
		if err != nil {
			t.Fatal(err)
		}
		b, err := PartitionHierarchical(ctx, tr, in, p, dp.NewSeededSource(99))
		if err != nil {
			t.Fatal(err)
		}
		if describe(a) != describe(b) || fmt.Sprint(a.noisy) != fmt.Sprint(b.noisy) {
			t.Fatalf("%s: same seed, different partitions:\n%s\n%s", in, describe(a), describe(b))
		}
		c, _ := PartitionHierarchical(ctx, tr, in, p, dp.NewSeededSource(100))
		if fmt.Sprint(a.noisy) != fmt.Sprint(c.noisy) {
			differ++
		}
	}
	if differ == 0 {
		t.Error("a different seed never changed a noisy degree")
	}
}

func TestHierBucketAndLevels(t *testing.T) {
	for _, lambda := range []int64{1, 3, 17, 1 << 20} {
		for d := int64(-3); d < 70*lambda; d++ {
			b := HierBucket(d, lambda, 40)
			if d <= 2*lambda && b != 1 {
				t.Fatalf("λ=%d d=%d bucket %d, want 1", lambda, d, b)
			}
			if b > 1 && !(lambda<<uint(b-1) < d && d <= lambda<<uint(b)) {
				t.Fatalf("λ=%d d=%d bucket %d", lambda, d, b)
			}
			if lambda > 100 {
				d += lambda / 7
			}
		}
		if got := HierBucket(1<<62, lambda, 5); got != 5 {
			t.Errorf("clamp: %d", got)
		}
		for _, nMax := range []int64{0, 1, 5, 100, 12345} {
			L, err := HierLevels(nMax, lambda)
			if err != nil {
				t.Fatal(err)
			}
			// The largest noisy degree nMax + 2λ is not clamped, and L is
			// the smallest such.
			if b := HierBucket(nMax+2*lambda, lambda, 60); b != L {
				t.Errorf("λ=%d nMax=%d: L = %d, bucket of nMax+2λ = %d", lambda, nMax, L, b)
			}
		}
	}
	// An absent value (degree 0) lands in bucket 1 for every noise draw
	// when λ ≥ τ′.
	for _, eps := range []float64{0.1, 1, 5} {
		tau, err := dp.TDLapTau(eps, 1e-6, 1)
		if err != nil {
			t.Fatal(err)
		}
		for x := int64(0); x <= 2*tau; x++ {
			if HierBucket(x, tau, 30) != 1 {
				t.Fatalf("ε=%v: pad %d of an absent value leaves bucket 1", eps, x)
			}
		}
	}
}

func TestHierBudget(t *testing.T) {
	h := hg(t, "R1(A,B)", "R2(A,B,C)", "R3(A,D)")
	tr, err := NewTree(h)
	if err != nil {
		t.Fatal(err)
	}
	// Non-root nodes B, C, D. R1 misses C, D; R2 misses D; R3 misses B, C.
	for _, L := range []int{1, 2, 5, 10} {
		K, _ := tr.Multiplicity(L)
		if K != int64(L*L) {
			t.Errorf("L=%d: K = %d, want %d", L, K, L*L)
		}
		// R1: B has descendant C off its path → L; R2: B (C on path) 1 + C 1;
		// R3: D 1.
		Kd, _ := tr.DegreeCount(L)
		if want := int64(max(L, 2)); Kd != want {
			t.Errorf("L=%d: K_deg = %d, want %d", L, Kd, want)
		}
		s, err := HierBudget(1, 1e-6, tr, L)
		if err != nil || s.K != int64(L*L) || s.Eps != 1/float64(L*L) || s.Delta != 1e-6/float64(L*L) {
			t.Errorf("L=%d: budget %+v, %v", L, s, err)
		}
		d, err := HierDegreeBudget(0.5, 1e-7, tr, L)
		if err != nil || d.K != int64(max(L, 2)) || d.Eps != 0.5/float64(d.K) {
			t.Errorf("L=%d: degree budget %+v, %v", L, d, err)
		}
	}
	// Public relations do not count: with R1 and R3 public only R2's
	// L^1 remains.
	hp, _ := hypergraph.New([]hypergraph.Relation{
		{Name: "R1", Attrs: map[string]string{"A": "a", "B": "b"}, Public: true},
		{Name: "R2", Attrs: map[string]string{"A": "a", "B": "b", "C": "c"}},
		{Name: "R3", Attrs: map[string]string{"A": "a", "D": "d"}, Public: true},
	})
	tp, _ := NewTree(hp)
	if K, _ := tp.Multiplicity(7); K != 7 {
		t.Errorf("public R1, R3: K = %d, want 7", K)
	}
	if _, err := tr.Multiplicity(1 << 30); !errors.Is(err, ErrHierParams) {
		t.Errorf("overflow: %v", err)
	}
	if _, err := HierBudget(0, 1e-6, tr, 3); !errors.Is(err, ErrHierParams) {
		t.Errorf("ε = 0: %v", err)
	}
}

func TestHierParamsRefused(t *testing.T) {
	in := &hinst{dom: 2, rels: []hrel{{name: "R", attrs: []string{"A", "B"}}, {name: "S", attrs: []string{"B"}}}}
	tr, err := NewTree(in.hypergraph(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, p := range []HierParams{
		{Eps: 1, Delta: 1e-6, Levels: 0},
		{Eps: 1, Delta: 1e-6, Levels: 3, Lambda: 1}, // λ < τ′
		{Eps: 0, Delta: 1e-6, Levels: 3},
	} {
		if _, err := PartitionHierarchical(ctx, tr, in, p, dp.NewSeededSource(1)); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}
