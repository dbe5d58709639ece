package uniformize

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/spec"
)

// hierMaxTuples bounds the tuples of a relation of randomHier (its column
// x names the tuple).
const hierMaxTuples = 10

// loadHier loads the brute-force instance in into a fresh DuckDB engine:
// relation R with attributes A, B, … becomes table R with integer columns
// a, b, … and a column x holding the tuple's index k as category tk, so
// that in.hypergraph(t) names its tables and columns and a histogram over
// x lists the tuples of a view.
func loadHier(t *testing.T, in *hinst) *engine.Engine {
	t.Helper()
	dir := t.TempDir()
	var y strings.Builder
	y.WriteString("privacy: {epsilon: 1, delta: 1e-6}\ntables:\n")
	holder := map[string]string{}
	var joins []string
	for _, r := range in.rels {
		var body strings.Builder
		cols := make([]string, len(r.attrs))
		for p, a := range r.attrs {
			cols[p] = strings.ToLower(a)
		}
		body.WriteString(strings.Join(append(slices.Clone(cols), "x", "k"), ",") + "\n")
		for ti, u := range r.tuples {
			for _, v := range u {
				fmt.Fprintf(&body, "%d,", v)
			}
			fmt.Fprintf(&body, "t%d,0\n", ti)
		}
		if err := os.WriteFile(filepath.Join(dir, r.name+".csv"), []byte(body.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		// Public flags live in the test's hypergraph; the spec may not mark
		// every table public.
		fmt.Fprintf(&y, "  - name: %s\n    source: %s.csv\n    columns:\n", r.name, r.name)
		for _, c := range cols {
			fmt.Fprintf(&y, "      %s: {type: integer, min: 0, max: 9}\n", c)
		}
		fmt.Fprintf(&y, "      x: {type: categorical, values: [%s]}\n      k: {type: key}\n", strings.Join(tupleNames(), ", "))
		// The spec refuses a disconnected join; the constant key k
		// connects every table for the spec only (the test's hypergraph
		// does not have it).
		if r.name != in.rels[0].name {
			joins = append(joins, fmt.Sprintf("%s.k = %s.k", in.rels[0].name, r.name))
		}
		for _, c := range cols {
			if prev, ok := holder[c]; ok {
				joins = append(joins, fmt.Sprintf("%s.%s = %s", prev, c, r.name+"."+c))
			} else {
				holder[c] = r.name
			}
		}
	}
	if len(joins) > 0 {
		y.WriteString("join: [" + strings.Join(joins, ", ") + "]\n")
	}
	fmt.Fprintf(&y, "release:\n  columns: [%s.x]\noutput: {path: out}\n", in.rels[0].name)
	path := filepath.Join(dir, "synth.yaml")
	if err := os.WriteFile(path, []byte(y.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path)
	if err != nil {
		t.Fatalf("%s: %v\n%s", in, err, y.String())
	}
	ctx := context.Background()
	eng, err := engine.Open(ctx, "duckdb::memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	if err := eng.Load(ctx, s); err != nil {
		t.Fatalf("%s: %v", in, err)
	}
	return eng
}

func tupleNames() []string {
	out := make([]string, hierMaxTuples)
	for i := range out {
		out[i] = fmt.Sprintf("t%d", i)
	}
	return out
}

// viewRows returns the tuple indices (with multiplicity, sorted) of
// relation r of h, through the engine's histogram over its column x.
func viewRows(t *testing.T, eng *engine.Engine, r hypergraph.Relation) []int {
	t.Helper()
	h1, err := hypergraph.New([]hypergraph.Relation{r})
	if err != nil {
		t.Fatal(err)
	}
	cells, err := eng.Histogram(context.Background(), h1, []spec.ColumnRef{{Table: r.Name, Column: "x"}}, []int{hierMaxTuples})
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, c := range cells {
		for range c.Count {
			out = append(out, int(c.Index))
		}
	}
	return out
}

// TestHierEngineMatchesBruteForce runs PartitionHierarchical on random
// hierarchical instances twice with the same seeded noise — over the
// brute-force instance and over the engine (HierEngine: degree GROUP BYs,
// bucket tables and views in DuckDB) — and requires the same partition:
// the same degree configurations in the same order and, for every
// sub-instance and relation, the engine's view holding exactly the tuples
// the brute-force HierSub.Keep keeps. On the engine's views it then checks
// Lemma 4.10 directly: every join row (a vector of tuple indices, so that
// duplicates count) lies in exactly one sub-instance, the sub-instances'
// join sizes add up to the join's (the engine's JoinSize), and no tuple of
// a private relation is in more sub-instances than the public bound K.
func TestHierEngineMatchesBruteForce(t *testing.T) {
	t.Parallel()
	// The default run checks the first 50 instances of the fixed sequence
	// (a third of a minute of CPU); SYNTH_SLOW_AUDITS (.ci/run) checks all
	// 200 as before.
	n := 50
	if os.Getenv("SYNTH_SLOW_AUDITS") != "" {
		n = 200
	}
	if testing.Short() {
		n = 40
	}
	rng := rand.New(rand.NewPCG(17, 23))
	ctx := context.Background()
	split := 0
	for k := range n {
		in := randomHier(rng, k)
		for j := range in.rels {
			if len(in.rels[j].tuples) == 0 { // an empty CSV has no column types
				in.rels[j].tuples = [][]int{make([]int, len(in.rels[j].attrs))}
			}
		}
		h := in.hypergraph(t)
		tr, err := NewTree(h)
		if err != nil {
			t.Fatal(err)
		}
		p := testParams(t, rng)
		want, err := PartitionHierarchical(ctx, tr, in, p, dp.NewSeededSource(uint64(k)))
		if err != nil {
			t.Fatal(err)
		}
		eng := loadHier(t, in)
		data := HierEngine(eng, h)
		got, err := PartitionHierarchical(ctx, tr, data, p, dp.NewSeededSource(uint64(k)))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if len(got.Subs) != len(want.Subs) {
			t.Fatalf("%s: engine %d sub-instances, brute force %d", in, len(got.Subs), len(want.Subs))
		}
		if len(want.Subs) > 1 {
			split++
		}
		K, err := tr.Multiplicity(p.Levels)
		if err != nil {
			t.Fatal(err)
		}
		all := make([]int, len(in.rels))
		for i := range all {
			all[i] = i
		}
		joinRows := map[string]int{}
		in.join(all, func(int, []int) bool { return true }, func(idx []int, _ map[string]int) {
			joinRows[fmt.Sprint(idx)] = 0
		})
		inSubs := make([]map[int]int, len(in.rels)) // relation -> tuple -> sub-instances
		for j := range inSubs {
			inSubs[j] = map[int]int{}
		}
		var sizes int64
		for si, s := range got.Subs {
			if !slices.Equal(s.Config, want.Subs[si].Config) {
				t.Fatalf("%s: sub %d: engine config %v, brute force %v", in, si, s.Config, want.Subs[si].Config)
			}
			sub, _, err := data.Sub(ctx, si, s)
			if err != nil {
				t.Fatal(err)
			}
			kept := make([][]int, len(in.rels))
			for j, r := range in.rels {
				rows := viewRows(t, eng, sub.Relation(j))
				var wantRows []int
				for ti, u := range r.tuples {
					if want.Subs[si].Keep(j, func(a []string) HierKey { return in.proj(j, u, a) }) {
						wantRows = append(wantRows, ti)
					}
				}
				if !slices.Equal(rows, wantRows) {
					t.Fatalf("%s: sub %v relation %s: engine view rows %v, brute force %v", in, s.Config, r.name, rows, wantRows)
				}
				kept[j] = rows
				for _, ti := range rows {
					inSubs[j][ti]++
				}
			}
			// Join rows of the sub-instance, as tuple-index vectors.
			subIn := &hinst{dom: in.dom}
			for j, r := range in.rels {
				sr := hrel{name: r.name, attrs: r.attrs, public: r.public}
				for _, ti := range kept[j] {
					sr.tuples = append(sr.tuples, r.tuples[ti])
				}
				subIn.rels = append(subIn.rels, sr)
			}
			subIn.join(all, func(int, []int) bool { return true }, func(idx []int, _ map[string]int) {
				orig := make([]int, len(idx))
				for j, x := range idx {
					orig[j] = kept[j][x]
				}
				key := fmt.Sprint(orig)
				if _, ok := joinRows[key]; !ok {
					t.Fatalf("%s: sub %v has a row %s outside the join", in, s.Config, key)
				}
				joinRows[key]++
			})
			n, err := eng.JoinSize(ctx, sub)
			if err != nil {
				t.Fatal(err)
			}
			sizes += n
		}
		for key, c := range joinRows {
			if c != 1 {
				t.Fatalf("%s: join row %s in %d sub-instances, want 1", in, key, c)
			}
		}
		total, err := eng.JoinSize(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if total != int64(len(joinRows)) || sizes != total {
			t.Fatalf("%s: join size %d (brute force %d), sub-instances add up to %d", in, total, len(joinRows), sizes)
		}
		for j, r := range in.rels {
			if r.public {
				continue
			}
			for ti, c := range inSubs[j] {
				if int64(c) > K {
					t.Fatalf("%s: tuple %d of %s in %d sub-instances > K = %d", in, ti, r.name, c, K)
				}
			}
		}
		if err := data.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if split < n/5 {
		t.Errorf("only %d of %d instances split at all; the test is too weak", split, n)
	}
}

var _ HierData = (*hierEngine)(nil)
