package residual_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/residual"
	"github.com/synth-dp/synth/spec"
)

// A joinKind is the declared type of a join attribute's columns and its
// values: groups of spellings, every spelling in a group denoting the same
// value under the join's equality and no two groups the same value.
type joinKind struct {
	name   string
	column func(name string) spec.Column
	groups [][]string
}

var joinKinds = []joinKind{
	{
		name:   "numeric",
		column: func(n string) spec.Column { return spec.Column{Name: n, Type: spec.Numeric, Min: -2, Max: 5, Bins: 3} },
		groups: [][]string{
			{"0", "-0", "0.0", "-0.0", "+0", ".0", "0e3", "-0e-2"},
			{"3", "3.0", "+3", "3e0", "30e-1"},
			{"-1.5", "-1.50", "-15e-1"},
			{"0.1", ".1", "1e-1"},
			{"2"},
		},
	},
	{
		name:   "integer",
		column: func(n string) spec.Column { return spec.Column{Name: n, Type: spec.Integer, Min: -2, Max: 5} },
		groups: [][]string{
			{"0", "-0", "0.0", "-0.0", "+0"},
			{"3", "3.0", "+3", "3e0"},
			{"-1", "-1.0"},
		},
	},
	{
		// Keys are text, or BIGINT when every value of the column is a
		// canonical integer; either way "-0" and "01" are values of their
		// own. Which columns end up BIGINT depends on the instance, so an
		// attribute may mix BIGINT and text columns.
		name:   "key",
		column: func(n string) spec.Column { return spec.Column{Name: n, Type: spec.Key} },
		groups: [][]string{{"0"}, {"-0"}, {"1"}, {"01"}, {"a"}, {"A"}},
	},
	{
		name: "date",
		column: func(n string) spec.Column {
			return spec.Column{Name: n, Type: spec.Date, Granularity: spec.Day,
				DateMin: time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC), DateMax: time.Date(2021, 12, 31, 0, 0, 0, 0, time.UTC)}
		},
		groups: [][]string{{"2020-01-01"}, {"2020-01-02"}, {"2019-12-31"}},
	},
	{
		name:   "boolean",
		column: func(n string) spec.Column { return spec.Column{Name: n, Type: spec.Boolean} },
		groups: [][]string{{"true", "T", "1", "TRUE"}, {"false", "f", "0", "False"}},
	},
}

// eqShapes are the joins of the property test: relations as lists of
// attributes. X and Y belong to one relation only.
var eqShapes = []struct {
	name string
	rels [][]string
}{
	{"pair", [][]string{{"A"}, {"A"}}},
	{"pair2", [][]string{{"A", "B"}, {"A", "B"}}},
	{"pair-extra", [][]string{{"A", "X"}, {"A"}}},
	{"path3", [][]string{{"A"}, {"A", "B"}, {"B"}}},
	{"path3-extra", [][]string{{"X", "A"}, {"A", "B"}, {"B", "Y"}}},
}

// eqTuple is one tuple: per attribute of its relation (in the relation's
// order), the value's group and its spelling.
type eqTuple struct {
	group []int
	text  []string
}

// eqInstance is a random instance of a shape.
type eqInstance struct {
	shape  int
	kinds  map[string]*joinKind
	public []bool
	rels   [][]eqTuple
}

func (in *eqInstance) attrs(i int) []string { return eqShapes[in.shape].rels[i] }

// String renders the instance as it is written to the files.
func (in *eqInstance) String() string {
	var b strings.Builder
	b.WriteString(eqShapes[in.shape].name)
	for _, a := range slices.Sorted(func(yield func(string) bool) {
		for a := range in.kinds {
			if !yield(a) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, " %s:%s", a, in.kinds[a].name)
	}
	for i, r := range in.rels {
		pub := ""
		if in.public[i] {
			pub = " public"
		}
		fmt.Fprintf(&b, " r%d(%s)%s%v", i, strings.Join(in.attrs(i), ","), pub, texts(r))
	}
	return b.String()
}

func texts(r []eqTuple) [][]string {
	out := make([][]string, len(r))
	for k, tu := range r {
		out[k] = tu.text
	}
	return out
}

// randomTuple draws a tuple of relation i, each attribute from the groups
// its instance uses.
func randomTuple(rng *rand.Rand, in *eqInstance, used map[string][]int, i int) eqTuple {
	var tu eqTuple
	for _, a := range in.attrs(i) {
		g := used[a][rng.IntN(len(used[a]))]
		sp := in.kinds[a].groups[g]
		tu.group = append(tu.group, g)
		tu.text = append(tu.text, sp[rng.IntN(len(sp))])
	}
	return tu
}

// joinSize counts the join of the relations by nested loops, comparing
// values by their groups: the join's intended equality (DOUBLE equality
// for numeric and integer columns, so that −0 joins 0 and 3 joins 3.0;
// byte equality for keys).
func (in *eqInstance) joinSize(rels [][]eqTuple) int64 {
	var n int64
	val := map[string]int{}
	var rec func(i int)
	rec = func(i int) {
		if i == len(rels) {
			n++
			return
		}
	tuples:
		for _, tu := range rels[i] {
			var added []string
			for k, a := range in.attrs(i) {
				if g, ok := val[a]; ok {
					if g != tu.group[k] {
						for _, x := range added {
							delete(val, x)
						}
						continue tuples
					}
				} else {
					val[a] = tu.group[k]
					added = append(added, a)
				}
			}
			rec(i + 1)
			for _, x := range added {
				delete(val, x)
			}
		}
	}
	rec(0)
	return n
}

// eqModification is one neighbour: relation rel replaced by tuples.
type eqModification struct {
	rel    int
	what   string
	tuples []eqTuple
}

// TestSensitivityBoundsUnderJoinEquality is the property test of issue 9
// §2: on random instances whose join columns are numeric (with −0, 0 and
// several spellings of one number), integer, key (text or BIGINT), date or
// boolean, every single-tuple insertion into or deletion from a private
// relation changes the join size by at most the engine's statistics allow:
// the maximum degree of the other relation on the shared attributes (two
// relations, Alg. 1's Δ, which takes the maximum over the private
// relations) and the local sensitivity LŜ^0 = max_i T_{[m]∖{i}} from the
// engine's T_E.
// Join sizes come from a nested-loop count under the intended equality,
// checked against the engine's on every instance and on a few neighbours
// per instance, which the engine loads as tables of their own (loading
// every neighbour would take a minute).
func TestSensitivityBoundsUnderJoinEquality(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rng := newRand(t)
	// The default run checks the first 60 instances of the seeded sequence
	// (-residual.seed picks another); SYNTH_SLOW_AUDITS (.ci/run) checks
	// 200 as before.
	n := 60
	if os.Getenv("SYNTH_SLOW_AUDITS") != "" {
		n = 200
	}
	if testing.Short() {
		n = 50
	}
	const engineNeighbours = 2 // per instance
	e, err := engine.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var checked, viaEngineChecked, zeroMix int
	var maxChange int64
	for it := range n {
		in := &eqInstance{shape: it % len(eqShapes), kinds: map[string]*joinKind{}}
		shape := eqShapes[in.shape]
		used := map[string][]int{}
		for _, r := range shape.rels {
			for _, a := range r {
				if _, ok := in.kinds[a]; ok {
					continue
				}
				// Numeric attributes half of the time: they hold −0.
				k := &joinKinds[0]
				if rng.IntN(2) == 0 {
					k = &joinKinds[rng.IntN(len(joinKinds))]
				}
				in.kinds[a] = k
				// Two or three groups, the first one (zero for numbers)
				// most of the time, so that values collide.
				groups := rng.Perm(len(k.groups))[:min(len(k.groups), 2+rng.IntN(2))]
				if rng.IntN(4) != 0 && !slices.Contains(groups, 0) {
					groups[0] = 0
				}
				used[a] = groups
			}
		}
		in.public = make([]bool, len(shape.rels))
		if rng.IntN(4) == 0 {
			in.public[rng.IntN(len(shape.rels))] = true
		}
		for i := range shape.rels {
			var r []eqTuple
			for range rng.IntN(9) {
				r = append(r, randomTuple(rng, in, used, i))
			}
			in.rels = append(in.rels, r)
		}
		// Neighbours: every deletion (of distinct tuples) and two
		// insertions per private relation.
		var mods []eqModification
		for i, r := range in.rels {
			if in.public[i] {
				continue
			}
			seen := map[string]bool{}
			for k, tu := range r {
				key := strings.Join(tu.text, "\x00")
				if seen[key] {
					continue
				}
				seen[key] = true
				mods = append(mods, eqModification{rel: i, what: fmt.Sprintf("delete %q from r%d", tu.text, i),
					tuples: slices.Delete(slices.Clone(r), k, k+1)})
			}
			for range 2 {
				tu := randomTuple(rng, in, used, i)
				mods = append(mods, eqModification{rel: i, what: fmt.Sprintf("insert %q into r%d", tu.text, i),
					tuples: append(slices.Clone(r), tu)})
			}
		}
		// Load the instance and every neighbour's modified relation at once.
		dir := t.TempDir()
		s := &spec.Spec{}
		addTable := func(name string, i int, tuples []eqTuple) {
			header := slices.Clone(in.attrs(i))
			cols := make([]spec.Column, len(header))
			for k, a := range header {
				header[k] = strings.ToLower(a)
				cols[k] = in.kinds[a].column(header[k])
			}
			src := writeCSV(t, dir, name+".csv", header, texts(tuples))
			s.Tables = append(s.Tables, spec.Table{Name: name, Source: src, Format: "csv", Columns: cols})
		}
		for i, r := range in.rels {
			addTable(fmt.Sprintf("r%d", i), i, r)
		}
		// The engine counts the join of a few neighbours, loaded as tables
		// of their own exactly as it would load that instance (a key column
		// may turn from text to BIGINT when a tuple goes); the nested loops
		// count all of them, and the two must agree.
		viaEngine := map[int]bool{}
		for _, k := range rng.Perm(len(mods))[:min(len(mods), engineNeighbours)] {
			viaEngine[k] = true
			addTable(fmt.Sprintf("m%d", k), mods[k].rel, mods[k].tuples)
		}
		if err := e.Load(ctx, s); err != nil {
			t.Fatalf("instance %d %s: load: %v", it, in, err)
		}
		graph := func(replace int, name string) *hypergraph.Hypergraph {
			rels := make([]hypergraph.Relation, len(shape.rels))
			for i, attrs := range shape.rels {
				rels[i] = hypergraph.Relation{Name: fmt.Sprintf("r%d", i), Attrs: map[string]string{}, Public: in.public[i]}
				if i == replace {
					rels[i].Name = name
				}
				for _, a := range attrs {
					rels[i].Attrs[a] = strings.ToLower(a)
				}
			}
			h, err := hypergraph.New(rels)
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		h := graph(-1, "")
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("instance %d %s: %s", it, in, fmt.Sprintf(format, args...))
		}
		size, err := e.JoinSize(ctx, h)
		if err != nil {
			fail("join size: %v", err)
		}
		if want := in.joinSize(in.rels); size != want {
			fail("engine join size %d, nested loops %d", size, want)
		}
		// The statistics, from the engine on the instance.
		te, err := residual.TE(ctx, h, e)
		if err != nil {
			fail("T_E: %v", err)
		}
		ls, err := residual.LocalSensitivityAt(te, h, 0)
		if err != nil {
			fail("LŜ^0: %v", err)
		}
		var degOther []int64 // two relations: MaxDegree of the other relation
		var alg1 int64       // Alg. 1's Δ: the maximum over private relations
		if h.Len() == 2 {
			shared := h.Boundary(1)
			for i := range 2 {
				d, err := e.MaxDegree(ctx, h, 1-i, shared)
				if err != nil {
					fail("MaxDegree(r%d, %v): %v", 1-i, shared, err)
				}
				degOther = append(degOther, d)
				if !in.public[i] {
					alg1 = max(alg1, d)
				}
			}
		}
		for k, m := range mods {
			rels := slices.Clone(in.rels)
			rels[m.rel] = m.tuples
			after := in.joinSize(rels)
			if viaEngine[k] {
				got, err := e.JoinSize(ctx, graph(m.rel, fmt.Sprintf("m%d", k)))
				if err != nil {
					fail("%s: join size: %v", m.what, err)
				}
				if got != after {
					fail("%s: engine join size %d, nested loops %d", m.what, got, after)
				}
				viaEngineChecked++
			}
			change := after - size
			if change < 0 {
				change = -change
			}
			if float64(change) > ls {
				fail("%s: the join changes by %d > LŜ^0 = %v (T_E %v)", m.what, change, ls, te.Named(h))
			}
			if degOther != nil && (change > degOther[m.rel] || change > alg1) {
				fail("%s: the join changes by %d > MaxDegree(r%d) = %d (Alg. 1's Δ = %d)",
					m.what, change, 1-m.rel, degOther[m.rel], alg1)
			}
			checked++
			maxChange = max(maxChange, change)
			if change > 0 && mixesZeros(in, m) {
				zeroMix++
			}
		}
	}
	t.Logf("%d instances, %d neighbours checked (%d join sizes also by the engine; %d changing the join through both 0 and -0), largest change %d",
		n, checked, viaEngineChecked, zeroMix, maxChange)
	if zeroMix == 0 {
		t.Error("no neighbour joined both 0 and -0: the instances do not exercise the bug")
	}
}

// mixesZeros reports whether the instance holds both a −0 and a +0
// spelling of zero in a numeric or integer column of an attribute of the
// modified relation.
func mixesZeros(in *eqInstance, m eqModification) bool {
	for _, a := range in.attrs(m.rel) {
		if k := in.kinds[a]; k.name != "numeric" && k.name != "integer" {
			continue
		}
		var neg, pos bool
		for i, r := range in.rels {
			col := slices.Index(in.attrs(i), a)
			if col < 0 {
				continue
			}
			for _, tu := range r {
				if tu.group[col] == 0 {
					if strings.HasPrefix(tu.text[col], "-") {
						neg = true
					} else {
						pos = true
					}
				}
			}
		}
		if neg && pos {
			return true
		}
	}
	return false
}
