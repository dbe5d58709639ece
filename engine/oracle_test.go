package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/internal/stattest"
	"github.com/synth-dp/synth/spec"
)

// shapes are the join shapes of the random instances: relations as lists
// of attribute letters.
var shapes = map[string][][]string{
	"path2":    {{"a", "b"}, {"b", "c"}},
	"shared2":  {{"a", "b"}, {"a", "b"}},
	"path3":    {{"a", "b"}, {"b", "c"}, {"c", "d"}},
	"star":     {{"a", "b", "c"}, {"a"}, {"b", "e"}, {"c"}},
	"triangle": {{"a", "b"}, {"b", "c"}, {"c", "a"}},
	"path4":    {{"a", "b"}, {"b", "c"}, {"c", "d"}, {"d", "e"}},
	"cycle4":   {{"a", "b"}, {"b", "c"}, {"c", "d"}, {"d", "a"}},
	"covered":  {{"a", "b", "c"}, {"a", "b"}, {"b", "c"}},
	"hub":      {{"a"}, {"a", "b"}, {"a", "c"}},
}

// instance is a random database over a shape, with its spec.
type instance struct {
	spec  *spec.Spec
	h     *hypergraph.Hypergraph
	rows  [][]map[string]string // per relation, per tuple: column -> value
	shape string
}

// released columns of every relation: a categorical and an integer one.
var (
	catValues = []string{"x", "y", "z"}
)

func randomInstance(t *testing.T, r *rand.Rand, dir string) *instance {
	t.Helper()
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range shapes {
			if !yield(k) {
				return
			}
		}
	})
	shape := names[r.IntN(len(names))]
	rels := shapes[shape]
	in := &instance{spec: &spec.Spec{}, shape: shape}
	// Key domains: small integers, sometimes with a non-canonical or text
	// value so that some key columns are text and some attributes mix text
	// and BIGINT columns.
	keyDomain := func() []string {
		n := 2 + r.IntN(3)
		var d []string
		for v := range n {
			d = append(d, fmt.Sprint(v))
		}
		switch r.IntN(8) {
		case 0:
			d = append(d, "k")
		case 1:
			d = append(d, "01")
		case 2:
			d = append(d, "") // NULL: joins nothing
		}
		return d
	}
	bins := []int{0, 2, 3}[r.IntN(3)]
	first := map[string]spec.ColumnRef{}
	for i, attrs := range rels {
		name := fmt.Sprintf("r%d", i)
		cols := []spec.Column{
			{Name: name + "_cat", Type: spec.Categorical, Values: catValues},
			{Name: name + "_num", Type: spec.Integer, Min: 0, Max: 5, Bins: bins},
		}
		doms := map[string][]string{}
		for _, a := range attrs {
			col := name + "_" + a
			cols = append(cols, spec.Column{Name: col, Type: spec.Key})
			doms[col] = keyDomain()
			ref := spec.ColumnRef{Table: name, Column: col}
			if f, ok := first[a]; ok {
				in.spec.Join = append(in.spec.Join, spec.JoinEq{Left: f, Right: ref})
			} else {
				first[a] = ref
			}
		}
		n := r.IntN(7)
		if r.IntN(7) == 0 {
			n = 0
		}
		// A declared primary key on two relations in three: a random
		// non-empty subset of the key columns, which the data respects
		// half of the time (the plans may not rely on it: a violated key
		// must change no statistic).
		var pk []string
		if r.IntN(3) > 0 {
			for _, a := range attrs {
				if r.IntN(2) == 0 {
					pk = append(pk, name+"_"+a)
				}
			}
			if len(pk) == 0 {
				pk = []string{name + "_" + attrs[r.IntN(len(attrs))]}
			}
		}
		unique := len(pk) > 0 && r.IntN(2) == 0
		var tuples []map[string]string
		for range n {
			if len(tuples) > 0 && r.IntN(5) == 0 {
				tuples = append(tuples, tuples[r.IntN(len(tuples))]) // a duplicate
				continue
			}
			tu := map[string]string{
				name + "_cat": catValues[r.IntN(len(catValues))],
				name + "_num": fmt.Sprint(r.IntN(6)),
			}
			for _, c := range cols {
				if d, ok := doms[c.Name]; ok {
					tu[c.Name] = d[r.IntN(len(d))]
				}
			}
			tuples = append(tuples, tu)
		}
		if unique {
			tuples = dedupe(tuples, pk)
		}
		header := make([]string, len(cols))
		for k, c := range cols {
			header[k] = c.Name
		}
		// Shuffle the file's column order; Load must pick by name.
		r.Shuffle(len(header), func(a, b int) { header[a], header[b] = header[b], header[a] })
		recs := make([][]string, len(tuples))
		for k, tu := range tuples {
			for _, h := range header {
				recs[k] = append(recs[k], tu[h])
			}
		}
		src := writeCSV(t, dir, name+".csv", header, recs)
		in.spec.Tables = append(in.spec.Tables, spec.Table{Name: name, Source: src, Columns: cols, PrimaryKey: pk})
		in.rows = append(in.rows, tuples)
	}
	h, err := in.spec.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	in.h = h
	return in
}

// enumerate calls f for every tuple of the natural join of the relations in
// set, with the row index picked in every relation (indexed by relation,
// -1 outside set), by nested loops.
func (in *instance) enumerate(set hypergraph.Set, f func(pick []int, val map[string]string)) {
	members := set.Members()
	pick := make([]int, in.h.Len())
	for i := range pick {
		pick[i] = -1
	}
	val := map[string]string{}
	var rec func(k int)
	rec = func(k int) {
		if k == len(members) {
			f(pick, val)
			return
		}
		i := members[k]
		attrs := in.h.Relation(i).Attrs
	tuples:
		for ti, tu := range in.rows[i] {
			var added []string
			for a, col := range attrs {
				v := tu[col]
				if v == "" { // NULL joins nothing
					for _, x := range added {
						delete(val, x)
					}
					continue tuples
				}
				if old, ok := val[a]; ok {
					if old != v {
						for _, x := range added {
							delete(val, x)
						}
						continue tuples
					}
				} else {
					val[a] = v
					added = append(added, a)
				}
			}
			pick[i] = ti
			rec(k + 1)
			pick[i] = -1
			for _, x := range added {
				delete(val, x)
			}
		}
	}
	rec(0)
}

// TestStatisticsOracle runs on both engines (PostgreSQL when
// SYNTH_TEST_POSTGRES is set).
func TestStatisticsOracle(t *testing.T) {
	forEachEngine(t, statisticsOracle)
}

func statisticsOracle(t *testing.T, e *Engine) {
	oneThread(t, e)
	seed := stattest.Seed(t)
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	ctx := context.Background()
	// The default run checks 40 random instances (a fresh seed each run,
	// logged on failure; as many as -short); SYNTH_SLOW_AUDITS (.ci/run)
	// checks 200 as before.
	n := 40
	if os.Getenv("SYNTH_SLOW_AUDITS") != "" {
		n = 200
	}
	if testing.Short() {
		n = 40
	}
	plain, elim := 0, 0
	for it := range n {
		dir := t.TempDir()
		in := randomInstance(t, r, dir)
		if err := e.Load(ctx, in.spec); err != nil {
			t.Fatalf("instance %d (%s): %v", it, in.shape, err)
		}
		// Every statistic twice: with the declared keys, which choose the
		// plain join where every relation but one joins on its key, and
		// with none (variable elimination throughout).
		for mode := range 2 {
			keyed := in.spec
			if mode == 1 {
				keyed = withoutKeys(in.spec)
			}
			e.declareKeys(keyed)
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("seed %d, instance %d (%s), keys %v: %s", seed, it, in.shape, mode == 0, fmt.Sprintf(format, args...))
			}
			h := in.h
			mixed, err := e.mixedAttrs(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			if p, _, err := buildPlan(e.d, h, h.All(), nil, nil, mixed, e.keysOf(h)); err != nil {
				t.Fatal(err)
			} else if p.order != nil {
				plain++
			} else {
				elim++
			}
			// Degrees of every attribute of every relation.
			all, err := e.AllDegrees(ctx, h)
			if err != nil {
				fail("AllDegrees: %v", err)
			}
			for _, ad := range all {
				col := h.Relation(ad.Relation).Attrs[ad.Attr]
				want := map[string]int64{}
				for _, tu := range in.rows[ad.Relation] {
					if tu[col] != "" { // NULL: left out
						want[tu[col]]++
					}
				}
				got := map[string]int64{}
				for _, dg := range ad.Degrees {
					got[dg.Values[0]] = dg.Count
				}
				if !mapsEqual(got, want) {
					fail("degrees of %s in %s = %v, want %v", ad.Attr, h.Relation(ad.Relation).Name, got, want)
				}
			}
			if len(all) != countAttrs(h) {
				fail("AllDegrees returned %d entries, want %d", len(all), countAttrs(h))
			}
			// MaxDegree over all attributes of each relation.
			for i := range h.Len() {
				rel := h.Relation(i)
				attrs := slices.Sorted(func(yield func(string) bool) {
					for a := range rel.Attrs {
						if !yield(a) {
							return
						}
					}
				})
				want := map[string]int64{}
				var max int64
			values:
				for _, tu := range in.rows[i] {
					var key []string
					for _, a := range attrs {
						if tu[rel.Attrs[a]] == "" {
							continue values // NULL: left out
						}
						key = append(key, tu[rel.Attrs[a]])
					}
					k := strings.Join(key, "\x00")
					want[k]++
					max = maxInt(max, want[k])
				}
				got, err := e.MaxDegree(ctx, h, i, attrs)
				if err != nil || got != max {
					fail("MaxDegree(%s, %v) = %d, %v; want %d", rel.Name, attrs, got, err, max)
				}
				dgs, err := e.Degrees(ctx, h, i, attrs)
				if err != nil || len(dgs) != len(want) {
					fail("Degrees(%s, %v) has %d values, %v; want %d", rel.Name, attrs, len(dgs), err, len(want))
				}
				for _, dg := range dgs {
					if want[strings.Join(dg.Values, "\x00")] != dg.Count {
						fail("Degrees(%s, %v): %v has %d, want %d", rel.Name, attrs, dg.Values, dg.Count, want[strings.Join(dg.Values, "\x00")])
					}
				}
			}
			// Join size.
			var size int64
			in.enumerate(h.All(), func([]int, map[string]string) { size++ })
			if got, err := e.JoinSize(ctx, h); err != nil || got != size {
				fail("JoinSize = %d, %v; want %d", got, err, size)
			}
			// T_E for every connected E.
			for set := hypergraph.Set(1); set <= h.All(); set++ {
				if !h.Connected(set) {
					if _, err := e.MaxBoundaryCount(ctx, h, set); err == nil {
						fail("MaxBoundaryCount(%v) of a disconnected set: no error", h.Names(set))
					}
					continue
				}
				bd := h.Boundary(set)
				groups := map[string]int64{}
				var want int64
				in.enumerate(set, func(_ []int, val map[string]string) {
					var key []string
					for _, a := range bd {
						key = append(key, val[a])
					}
					k := strings.Join(key, "\x00")
					groups[k]++
					want = maxInt(want, groups[k])
				})
				got, err := e.MaxBoundaryCount(ctx, h, set)
				if err != nil || got != want {
					fail("T_E(%v), ∂E = %v: %d, %v; want %d", h.Names(set), bd, got, err, want)
				}
			}
			// Histogram over 1–2 released columns.
			var cols []spec.ColumnRef
			var decl []*spec.Column
			var sizes []int
			for range 1 + r.IntN(2) {
				ti := r.IntN(len(in.spec.Tables))
				tab := &in.spec.Tables[ti]
				c := &tab.Columns[r.IntN(2)]
				cols = append(cols, spec.ColumnRef{Table: tab.Name, Column: c.Name})
				decl = append(decl, c)
				sizes = append(sizes, c.Size())
			}
			want := map[int64]int64{}
			in.enumerate(h.All(), func(pick []int, _ map[string]string) {
				var idx int64
				for k, ref := range cols {
					ri := h.Index(ref.Table)
					b, err := decl[k].Bin(in.rows[ri][pick[ri]][ref.Column])
					if err != nil {
						t.Fatal(err)
					}
					idx = idx*int64(sizes[k]) + int64(b)
				}
				want[idx]++
			})
			cells, err := e.Histogram(ctx, h, cols, sizes)
			if err != nil {
				fail("Histogram(%v): %v", cols, err)
			}
			got := map[int64]int64{}
			for k, c := range cells {
				if k > 0 && cells[k-1].Index >= c.Index {
					fail("Histogram(%v) not sorted: %v", cols, cells)
				}
				if c.Count == 0 {
					fail("Histogram(%v) holds an empty cell: %v", cols, cells)
				}
				got[c.Index] = c.Count
			}
			if !mapsEqual(got, want) {
				fail("Histogram(%v) = %v, want %v", cols, got, want)
			}
		}
	}
	// Both forms must have run on whole joins of several relations.
	t.Logf("whole joins: %d plain, %d by elimination", plain, elim)
	if plain == 0 || elim == 0 {
		t.Errorf("plan forms not both exercised: %d plain joins, %d eliminations", plain, elim)
	}
}

// withoutKeys is a copy of s declaring no primary key.
func withoutKeys(s *spec.Spec) *spec.Spec {
	c := *s
	c.Tables = slices.Clone(s.Tables)
	for i := range c.Tables {
		c.Tables[i].PrimaryKey = nil
	}
	return &c
}

// dedupe keeps the first tuple of every value of the columns key.
func dedupe(tuples []map[string]string, key []string) []map[string]string {
	seen := map[string]bool{}
	var out []map[string]string
	for _, tu := range tuples {
		var k []string
		for _, c := range key {
			k = append(k, tu[c])
		}
		if s := strings.Join(k, "\x00"); !seen[s] {
			seen[s] = true
			out = append(out, tu)
		}
	}
	return out
}

func countAttrs(h *hypergraph.Hypergraph) int {
	n := 0
	for _, r := range h.Relations() {
		n += len(r.Attrs)
	}
	return n
}

func mapsEqual[K comparable](a, b map[K]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func maxInt(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
