package uniformize

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/joinasone"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/spec"
)

// ttTuple is a tuple of a test relation: its join value b and its released
// column's cell v ∈ {0, 1}; id tells tuples apart.
type ttTuple struct {
	id int
	b  string
	v  int
}

// ttInstance is a two-table instance r1(b, x) ⋈ r2(b, y).
type ttInstance [2][]ttTuple

func ttHypergraph(t testing.TB, public2 bool) *hypergraph.Hypergraph {
	t.Helper()
	h, err := hypergraph.New([]hypergraph.Relation{
		{Name: "r1", Attrs: map[string]string{"b": "b"}},
		{Name: "r2", Attrs: map[string]string{"b": "b"}, Public: public2},
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// degrees is max{deg₁(b), deg₂(b)} of every present value, values sorted.
func (in ttInstance) degrees() ([]string, []int64) {
	var deg [2]map[string]int64
	all := map[string]bool{}
	for r := range 2 {
		deg[r] = map[string]int64{}
		for _, t := range in[r] {
			deg[r][t.b]++
			all[t.b] = true
		}
	}
	vals := slices.Sorted(maps.Keys(all))
	out := make([]int64, len(vals))
	for k, b := range vals {
		out[k] = max(deg[0][b], deg[1][b])
	}
	return vals, out
}

// join lists the join's pairs of tuple ids.
func (in ttInstance) join() [][2]int {
	var out [][2]int
	for _, s := range in[0] {
		for _, t := range in[1] {
			if s.b == t.b {
				out = append(out, [2]int{s.id, t.id})
			}
		}
	}
	return out
}

// ttFake is a brute-force TwoTableData.
type ttFake struct {
	in     ttInstance
	vals   []string
	bucket map[string]int32
	subs   map[int]ttInstance
	closed bool
	// preBucket is Assign's bucket per value index (with pre).
	preBucket []int32
	// pre, when set, holds in's degrees computed once (ttPrepared), for
	// the audits that run the mechanism on the same instance many times.
	pre *ttPre
}

// ttPre is what ttFake derives from its instance alone: the present values
// (sorted), their degrees, and every tuple's value index.
type ttPre struct {
	vals []string
	degs []int64
	val  [2][]int // val[r][k] indexes vals for tuple k of relation r
}

// ttPrepared returns a ttFake constructor for in that shares one ttPre:
// the same answers as &ttFake{in: in}, without recounting per run.
func ttPrepared(in ttInstance) func() *ttFake {
	vals, degs := in.degrees()
	pre := &ttPre{vals: vals, degs: degs}
	for r := range 2 {
		for _, t := range in[r] {
			k, _ := slices.BinarySearch(vals, t.b)
			pre.val[r] = append(pre.val[r], k)
		}
	}
	return func() *ttFake { return &ttFake{in: in, pre: pre} }
}

func (f *ttFake) Degrees(ctx context.Context, h *hypergraph.Hypergraph, attrs []string) ([]int64, error) {
	if f.pre != nil {
		f.vals = f.pre.vals
		return slices.Clone(f.pre.degs), nil
	}
	vals, degs := f.in.degrees()
	f.vals = vals
	return degs, nil
}

func (f *ttFake) Assign(ctx context.Context, bucket []int32) error {
	if f.pre != nil {
		f.bucket = nil
		f.preBucket = slices.Clone(bucket)
		return nil
	}
	f.bucket = map[string]int32{}
	for k, b := range f.vals {
		f.bucket[b] = bucket[k]
	}
	return nil
}

func (f *ttFake) Bucket(ctx context.Context, i int) (*hypergraph.Hypergraph, joinasone.Stats, error) {
	var sub ttInstance
	for r := range 2 {
		for k, t := range f.in[r] {
			var b int32
			if f.pre != nil {
				b = f.preBucket[f.pre.val[r][k]]
			} else {
				b = f.bucket[t.b]
			}
			if b == int32(i) {
				sub[r] = append(sub[r], t)
			}
		}
	}
	if f.subs == nil {
		f.subs = map[int]ttInstance{}
	}
	f.subs[i] = sub
	return ttHypergraphNamed(i), ttStats{sub}, nil
}

func (f *ttFake) Close(ctx context.Context) error { f.closed = true; return nil }

// ttNamed caches ttHypergraphNamed: a hypergraph is read only.
var ttNamed sync.Map // int → *hypergraph.Hypergraph

func ttHypergraphNamed(i int) *hypergraph.Hypergraph {
	if h, ok := ttNamed.Load(i); ok {
		return h.(*hypergraph.Hypergraph)
	}
	h, _ := hypergraph.New([]hypergraph.Relation{
		{Name: fmt.Sprintf("r1_b%d", i), Attrs: map[string]string{"b": "b"}},
		{Name: fmt.Sprintf("r2_b%d", i), Attrs: map[string]string{"b": "b"}},
	})
	ttNamed.Store(i, h)
	return h
}

// ttStats is joinasone.Stats on an in-memory instance, by brute force.
type ttStats struct{ in ttInstance }

func (s ttStats) MaxDegree(ctx context.Context, h *hypergraph.Hypergraph, rel int, attrs []string) (int64, error) {
	deg := map[string]int64{}
	var m int64
	for _, t := range s.in[rel] {
		deg[t.b]++
		m = max(m, deg[t.b])
	}
	return m, nil
}

func (s ttStats) Histogram(ctx context.Context, h *hypergraph.Hypergraph, cols []spec.ColumnRef, sizes []int) ([]engine.Cell, error) {
	if cols[0].Table != h.Relation(0).Name || cols[1].Table != h.Relation(1).Name {
		return nil, fmt.Errorf("columns %v do not name the bucket's relations %v", cols, h.Names(h.All()))
	}
	count := map[int64]int64{}
	for _, a := range s.in[0] {
		for _, b := range s.in[1] {
			if a.b == b.b {
				count[int64(a.v*2+b.v)]++
			}
		}
	}
	var out []engine.Cell
	for _, i := range slices.Sorted(maps.Keys(count)) {
		out = append(out, engine.Cell{Index: i, Count: count[i]})
	}
	return out, nil
}

func (s ttStats) MaxBoundaryCount(ctx context.Context, h *hypergraph.Hypergraph, e hypergraph.Set) (int64, error) {
	return 0, fmt.Errorf("not used by two tables")
}

// ttConfig releases r1.x and r2.y with the 1- and 2-way marginals.
func ttConfig(t testing.TB, eps, delta float64) TwoTableConfig {
	t.Helper()
	u, err := pmw.NewUniverse([]string{"x", "y"}, []int{2, 2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return TwoTableConfig{Config: joinasone.Config{
		Epsilon: eps, Delta: delta,
		Columns:  []spec.ColumnRef{{Table: "r1", Column: "x"}, {Table: "r2", Column: "y"}},
		Universe: u,
		Families: []pmw.Family{pmw.Marginal([]int{0}), pmw.Marginal([]int{1}), pmw.Marginal([]int{0, 1})},
	}}
}

// randomInstance draws a small two-table instance with skewed degrees.
func randomInstance(rng *rand.Rand) ttInstance {
	var in ttInstance
	nv := 1 + rng.IntN(8)
	id := 0
	for r := range 2 {
		n := rng.IntN(40)
		for range n {
			// Skewed: value 0 is heavy.
			b := rng.IntN(nv)
			if rng.IntN(3) == 0 {
				b = 0
			}
			in[r] = append(in[r], ttTuple{id: id, b: fmt.Sprintf("b%d", b), v: rng.IntN(2)})
			id++
		}
	}
	return in
}

// TestTwoTablePartitionBruteForce: on 300 random instances the buckets'
// sub-instances partition the tuples (each tuple in exactly one) and their
// joins partition the join (every join row in exactly one bucket, union =
// join); every present value's bucket runs, so do the buckets reachable by
// the noise alone; the synthetic rows are the sum of the buckets' rows.
func TestTwoTablePartitionBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	for it := range 300 {
		in := randomInstance(rng)
		// Small ε and δ spread the noisy degrees over several buckets.
		eps := []float64{0.5, 2, 8}[it%3]
		cfg := ttConfig(t, eps, 1e-3)
		cfg.Rounds = 2
		ledger, err := dp.NewLedger(dp.Budget{Epsilon: eps, Delta: 1e-3})
		if err != nil {
			t.Fatal(err)
		}
		f := &ttFake{in: in}
		res, err := TwoTable(ctx, dp.NewSeededSource(uint64(it)), ttHypergraph(t, it%5 == 0), f, cfg, ledger)
		if err != nil {
			t.Fatalf("instance %d: %v", it, err)
		}
		if !f.closed {
			t.Fatal("data not closed")
		}
		var ran []int
		for _, p := range res.Partitions {
			ran = append(ran, p.Bucket)
		}
		if len(f.subs) != len(ran) {
			t.Fatalf("instance %d: %d sub-instances read, %d buckets ran", it, len(f.subs), len(ran))
		}
		for _, i := range res.AlwaysRun {
			if !slices.Contains(ran, i) {
				t.Fatalf("instance %d: bucket %d reachable by the noise alone did not run (ran %v)", it, i, ran)
			}
		}
		for b, i := range f.bucket {
			if !slices.Contains(ran, int(i)) {
				t.Fatalf("instance %d: value %s in bucket %d, which did not run", it, b, i)
			}
		}
		// Tuples: each in exactly one sub-instance.
		for r := range 2 {
			seen := map[int]int{}
			for _, sub := range f.subs {
				for _, tp := range sub[r] {
					seen[tp.id]++
				}
			}
			for _, tp := range in[r] {
				if seen[tp.id] != 1 {
					t.Fatalf("instance %d: tuple %d of r%d in %d sub-instances", it, tp.id, r+1, seen[tp.id])
				}
			}
			if len(seen) != len(in[r]) {
				t.Fatalf("instance %d: sub-instances hold tuples not in r%d", it, r+1)
			}
		}
		// Join rows: each in exactly one bucket's join; union = join.
		rows := map[[2]int]int{}
		for _, sub := range f.subs {
			for _, p := range sub.join() {
				rows[p]++
			}
		}
		full := in.join()
		if len(rows) != len(full) {
			t.Fatalf("instance %d: buckets' joins hold %d distinct rows, the join %d", it, len(rows), len(full))
		}
		for _, p := range full {
			if rows[p] != 1 {
				t.Fatalf("instance %d: join row %v in %d buckets", it, p, rows[p])
			}
		}
		// The union of rows.
		var total int64
		if err := res.Counts(dp.NewSeededSource(7), func(cell, n int64) error { total += n; return nil }); err != nil {
			t.Fatal(err)
		}
		if total != res.Rows {
			t.Fatalf("instance %d: %d rows emitted, Rows = %d", it, total, res.Rows)
		}
		// Memory: the buckets' dense weights are not kept once counted (the
		// release's cap counts one run and the merged counts, not every
		// bucket's weights; the old code kept them all).
		for _, r := range res.Runs() {
			if r.PMW.Weights != nil {
				t.Fatalf("instance %d: bucket weights kept after the run (%d cells)", it, len(r.PMW.Weights))
			}
		}
		if r := ledger.Remaining(); r.Epsilon > 1e-12 || r.Delta > 1e-15 {
			t.Fatalf("instance %d: budget left %v", it, r)
		}
	}
}

// TestTwoTableRunsDependOnDPOutputsOnly: on neighbouring instances, a
// coupling of the degree noise that makes the noisy degrees equal makes the
// same buckets run, with the same budgets (the set of PMW runs is a
// function of the noisy degrees, not of the true ones); and absent values
// never remove a bucket of R₀.
func TestTwoTableRunsDependOnDPOutputsOnly(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ctx := context.Background()
	checked := 0
	for it := range 300 {
		in := randomInstance(rng)
		if len(in[0]) == 0 {
			continue
		}
		// The neighbour removes one tuple of r1.
		drop := rng.IntN(len(in[0]))
		var nb ttInstance
		nb[0] = append(slices.Clone(in[0][:drop]), in[0][drop+1:]...)
		nb[1] = in[1]
		vals, degs := in.degrees()
		vals2, degs2 := nb.degrees()
		// Draw the noise on I, then couple: X′_b = deg(b) + X_b − deg′(b).
		plan, err := PrepareTwoTable(ttHypergraph(t, false), ttConfig(t, 1, 1e-3), mustLedger(t, 1, 1e-3))
		if err != nil {
			t.Fatal(err)
		}
		src := dp.NewSeededSource(uint64(it))
		noisy := map[string]int64{}
		for k, b := range vals {
			noisy[b] = degs[k] + plan.pad.Sample(src)
		}
		ok := true
		pad2 := map[int]int64{}
		for k, b := range vals2 {
			x := noisy[b] - degs2[k]
			if x < 0 || x > 2*plan.pad.Tau() {
				ok = false // outside the support: the coupling does not exist
			}
			pad2[k] = x
		}
		if !ok {
			continue
		}
		// A value present in I only has, on I′, the noisy degree of an
		// absent value: X_b alone must be in [0, 2τ′] too.
		for k, b := range vals {
			if !slices.Contains(vals2, b) && noisy[b] > 2*plan.pad.Tau() {
				ok = false
			}
			_ = k
		}
		if !ok {
			continue
		}
		run := func(inst ttInstance, pad func(k int) int64) ([]int, []float64) {
			cfg := ttConfig(t, 1, 1e-3)
			cfg.Rounds = 1
			cfg.testPad = pad
			res, err := TwoTable(ctx, dp.NewSeededSource(99), ttHypergraph(t, false), &ttFake{in: inst}, cfg, mustLedger(t, 1, 1e-3))
			if err != nil {
				t.Fatal(err)
			}
			var b []int
			var e []float64
			for _, p := range res.Partitions {
				b = append(b, p.Bucket)
				e = append(e, p.Epsilon)
			}
			return b, e
		}
		padI := func(k int) int64 { return noisy[vals[k]] - degs[k] }
		b1, e1 := run(in, padI)
		b2, e2 := run(nb, func(k int) int64 { return pad2[k] })
		// The absent value of I′ (if any) lands in R₀, which always runs.
		if !slices.Equal(b1, b2) || !slices.Equal(e1, e2) {
			t.Fatalf("instance %d: same noisy degrees, buckets %v (ε %v) vs %v (ε %v)", it, b1, e1, b2, e2)
		}
		checked++
	}
	if checked < 100 {
		t.Fatalf("only %d couplings checked", checked)
	}
	t.Logf("%d neighbouring pairs with coupled noisy degrees ran the same buckets", checked)
}

func mustLedger(t testing.TB, eps, delta float64) *dp.Ledger {
	t.Helper()
	l, err := dp.NewLedger(dp.Budget{Epsilon: eps, Delta: delta})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestBucketOf checks the bucket rule against its definition
// max{1, ⌈log₂(d/λ)⌉} and R₀ against enumeration.
func TestBucketOf(t *testing.T) {
	for _, eps := range []float64{0.1, 1, 2, 20} {
		for _, delta := range []float64{1e-12, 1e-6, 1e-2, 0.5} {
			p, err := PrepareTwoTable(ttHypergraph(t, false), ttConfig(t, eps, delta), mustLedger(t, eps, delta))
			if err != nil {
				t.Fatal(err)
			}
			lambda := p.lambda
			for d := int64(0); d < 5000; d++ {
				want := 1
				for float64(d) > lambda*float64(int64(1)<<want) {
					want++
				}
				if got := p.bucketOf(d); got != want {
					t.Fatalf("ε %v δ %v: bucket(%d) = %d, want %d (λ = %v)", eps, delta, d, got, want, lambda)
				}
			}
			reach := map[int]bool{}
			for k := int64(0); k <= 2*p.pad.Tau(); k++ {
				reach[p.bucketOf(k)] = true
			}
			if got, want := p.always, slices.Sorted(maps.Keys(reach)); !slices.Equal(got, want) {
				t.Fatalf("ε %v δ %v: R₀ = %v, want %v", eps, delta, got, want)
			}
		}
	}
}

// TestTTPreparedMatchesFake: the audits' prepared fake (ttPrepared) gives
// TwoTable the same sub-instances and the same seeded output as the plain
// ttFake, on random instances.
func TestTTPreparedMatchesFake(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ctx := context.Background()
	for it := range 60 {
		in := randomInstance(rng)
		eps := []float64{0.5, 2, 8}[it%3]
		var subs [2]map[int]ttInstance
		var out [2]float64
		for k, f := range []*ttFake{{in: in}, ttPrepared(in)()} {
			cfg := ttConfig(t, eps, 1e-3)
			cfg.Rounds = 1
			src := dp.NewSeededSource(uint64(it))
			res, err := TwoTable(ctx, src, ttHypergraph(t, false), f, cfg, mustLedger(t, eps, 1e-3))
			if err != nil {
				t.Fatalf("instance %d: %v", it, err)
			}
			subs[k], out[k] = f.subs, mechOutput(src, res)
		}
		if fmt.Sprint(subs[0]) != fmt.Sprint(subs[1]) || out[0] != out[1] {
			t.Fatalf("instance %d: prepared fake %v → %v, plain %v → %v", it, subs[1], out[1], subs[0], out[0])
		}
	}
}
