package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/internal/stattest"
	"github.com/synth-dp/synth/spec"
)

// foldShape is a join with public relations marked by a key: relations as
// "name:attrs" with "*name:attrs/key" for a public relation keyed by the
// listed attributes.
type foldShape struct {
	name string
	rels []string
	// want is the folded relations' names.
	want []string
}

var foldShapes = []foldShape{
	{"leaf", []string{"r:a,b", "s:a", "*p:b/b"}, []string{"r+p", "s"}},
	{"chain", []string{"r:a,b", "*p:b,c/b", "*q:c/c", "s:a"}, []string{"r+p+q", "s"}},
	{"link", []string{"r1:a,b", "*p:b,c/b", "r2:c,d"}, []string{"r1+p", "r2"}},
	{"composite", []string{"r:a,b,c", "*p:b,c/b,c", "s:a"}, []string{"r+p", "s"}},
	{"one", []string{"r:a", "*p:a/a"}, []string{"r+p"}},
	{"not on key", []string{"r:a,b", "*p:b,c/c", "*q:c/b"}, []string{"r", "p", "q"}},
	{"path", []string{"l:o", "o:o,c", "c:c,n", "*n:n,g/n", "*g:g/g"}, []string{"l", "o", "c+n+g"}},
}

// foldInstance writes random data for a fold shape: every relation has the
// key columns name_attr and a released categorical column name_cat;
// public relations have unique keys (as the join compares them). Some key
// columns hold a non-canonical integer ("01") or a word, so that some
// attributes mix BIGINT and text columns.
func foldInstance(t *testing.T, r *rand.Rand, sh foldShape) (*spec.Spec, [][]map[string]string) {
	t.Helper()
	dir := t.TempDir()
	s := &spec.Spec{}
	first := map[string]spec.ColumnRef{}
	var data [][]map[string]string
	for _, desc := range sh.rels {
		public := strings.HasPrefix(desc, "*")
		desc = strings.TrimPrefix(desc, "*")
		name, rest, _ := strings.Cut(desc, ":")
		attrList, keyList, _ := strings.Cut(rest, "/")
		attrs := strings.Split(attrList, ",")
		tb := spec.Table{Name: name, Public: public, Columns: []spec.Column{{Name: name + "_cat", Type: spec.Categorical, Values: catValues}}}
		doms := map[string][]string{}
		for _, a := range attrs {
			col := name + "_" + a
			tb.Columns = append(tb.Columns, spec.Column{Name: col, Type: spec.Key})
			doms[col] = []string{"0", "1", "2"}
			switch r.IntN(6) {
			case 0:
				doms[col] = append(doms[col], "01")
			case 1:
				doms[col] = append(doms[col], "w")
			}
			ref := spec.ColumnRef{Table: name, Column: col}
			if f, ok := first[a]; ok {
				s.Join = append(s.Join, spec.JoinEq{Left: f, Right: ref})
			} else {
				first[a] = ref
			}
		}
		if keyList != "" {
			for _, a := range strings.Split(keyList, ",") {
				tb.PrimaryKey = append(tb.PrimaryKey, name+"_"+a)
			}
		}
		var rows []map[string]string
		seen := map[string]bool{}
		for range r.IntN(8) {
			tu := map[string]string{name + "_cat": catValues[r.IntN(len(catValues))]}
			// In the order of attrs, not of the map: the seed must fix
			// the instance.
			for _, a := range attrs {
				col := name + "_" + a
				d := doms[col]
				tu[col] = d[r.IntN(len(d))]
				if r.IntN(12) == 0 {
					tu[col] = "" // NULL joins nothing
				}
			}
			if public {
				k := make([]string, len(tb.PrimaryKey))
				for i, c := range tb.PrimaryKey {
					k[i] = tu[c]
				}
				if seen[fmt.Sprint(k)] {
					continue
				}
				seen[fmt.Sprint(k)] = true
			} else if len(rows) > 0 && r.IntN(5) == 0 {
				tu = rows[r.IntN(len(rows))]
			}
			rows = append(rows, tu)
		}
		header := make([]string, len(tb.Columns))
		for i, c := range tb.Columns {
			header[i] = c.Name
		}
		recs := make([][]string, len(rows))
		for i, tu := range rows {
			for _, c := range header {
				recs[i] = append(recs[i], tu[c])
			}
		}
		tb.Source = writeCSV(t, dir, name+".csv", header, recs)
		s.Tables = append(s.Tables, tb)
		data = append(data, rows)
	}
	return s, data
}

// TestFoldOracle checks on random instances that the folded views give the
// original join: the same histogram over every released column (some of
// them in folded public tables), the same join size, and T′_{E′} = T_E for
// every set E′ of folded relations and the union E of their members (the
// identity the folding proofs rest on).
//
// An empty join checks little (both sides are empty), so instances of each
// shape are drawn until it has had foldNonEmpty non-empty joins, not a
// fixed number of them. Instance i of shape k is drawn from its own stream
// (seed, k, i): the seed and the indices a failure prints reproduce it.
// A shape that yields no more than foldNonEmpty non-empty joins in
// foldMaxTries instances fails the test: the sparsest shape (path) is
// non-empty about one time in nine (measured: 4 in 35, 6 in 43), so that
// happens by chance with probability P(Bin(400, 1/10) < 6) < 1e-11 — it
// means the generator broke.
func TestFoldOracle(t *testing.T) {
	seed := stattest.Seed(t)
	ctx := context.Background()
	// In memory: the instances are a few rows, and a file-backed database
	// spends most of the test syncing its writes to a busy disk.
	e := openMemoryTest(t)
	oneThread(t, e)
	// SYNTH_SLOW_AUDITS (.ci/run) asks for twice as many.
	foldNonEmpty := 3
	if os.Getenv("SYNTH_SLOW_AUDITS") != "" {
		foldNonEmpty = 6
	}
	if testing.Short() {
		foldNonEmpty = 2
	}
	const foldMaxTries = 400
	for k, sh := range foldShapes {
		nonEmpty, it := 0, 0
		for ; nonEmpty < foldNonEmpty; it++ {
			if it == foldMaxTries {
				t.Fatalf("seed %d, shape %s: only %d of %d joins non-empty: the instance generator is broken", seed, sh.name, nonEmpty, it)
			}
			r := rand.New(rand.NewPCG(seed, uint64(k)<<32|uint64(it)))
			if foldCheck(t, ctx, e, r, sh, fmt.Sprintf("seed %d, shape %d (%s), instance %d", seed, k, sh.name, it)) {
				nonEmpty++
			}
		}
		t.Logf("shape %s: %d non-empty joins in %d instances", sh.name, nonEmpty, it)
	}
}

// foldCheck draws one instance of sh from r and checks it (see
// TestFoldOracle); it reports whether its join was non-empty. where names
// the instance in a failure.
func foldCheck(t *testing.T, ctx context.Context, e *Engine, r *rand.Rand, sh foldShape, where string) bool {
	t.Helper()
	s, _ := foldInstance(t, r, sh)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: %s", where, fmt.Sprintf(format, args...))
	}
	if err := e.Load(ctx, s); err != nil {
		fail("load: %v", err)
	}
	f, err := foldAll(s)
	if err != nil {
		fail("%v", err)
	}
	h, fh := f.Original(), f.Folded()
	if got := fh.Names(fh.All()); !slices.Equal(got, sh.want) {
		fail("folded relations %v, want %v", got, sh.want)
	}
	if err := e.Fold(ctx, f); err != nil {
		fail("fold: %v", err)
	}
	var cols []spec.ColumnRef
	var sizes []int
	for _, tb := range s.Tables {
		cols = append(cols, spec.ColumnRef{Table: tb.Name, Column: tb.Name + "_cat"})
		sizes = append(sizes, len(catValues))
	}
	want, err := e.Histogram(ctx, h, cols, sizes)
	if err != nil {
		fail("histogram: %v", err)
	}
	got, err := e.Histogram(ctx, fh, spec.FoldColumns(f, cols), sizes)
	if err != nil {
		fail("folded histogram: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		fail("folded histogram %v, want %v", got, want)
	}
	n0, err := e.JoinSize(ctx, h)
	if err != nil {
		fail("%v", err)
	}
	n1, err := e.JoinSize(ctx, fh)
	if err != nil {
		fail("%v", err)
	}
	if n0 != n1 {
		fail("folded join size %d, want %d", n1, n0)
	}
	groups := f.Groups()
	for set := hypergraph.Set(1); set < fh.All(); set++ {
		if !fh.Connected(set) {
			continue
		}
		var union hypergraph.Set
		for _, g := range set.Members() {
			for _, m := range groups[g].Members {
				union |= 1 << uint(h.Index(m))
			}
		}
		t1, err := e.MaxBoundaryCount(ctx, fh, set)
		if err != nil {
			fail("T′ of %v: %v", fh.Names(set), err)
		}
		t0, err := e.MaxBoundaryCount(ctx, h, union)
		if err != nil {
			fail("T of %v: %v", h.Names(union), err)
		}
		if t0 != t1 {
			fail("T′_%v = %d, T_%v = %d", fh.Names(set), t1, h.Names(union), t0)
		}
	}
	return len(want) > 0
}

// loadFold loads a spec of two tables, r (private) and p (public, keyed by
// its key columns, joined to r on them), with the given rows of p, and
// folds it.
func loadFold(t *testing.T, e *Engine, key []string, rRows, pRows [][]string) error {
	t.Helper()
	dir := t.TempDir()
	s := &spec.Spec{}
	rt := spec.Table{Name: "r", Columns: []spec.Column{{Name: "r_cat", Type: spec.Categorical, Values: catValues}}}
	pt := spec.Table{Name: "p", Public: true, PrimaryKey: key, Columns: []spec.Column{{Name: "p_cat", Type: spec.Categorical, Values: catValues}}}
	var rh, ph []string = []string{"r_cat"}, []string{"p_cat"}
	for _, k := range key {
		rc := "r_" + strings.TrimPrefix(k, "p_")
		rt.Columns = append(rt.Columns, spec.Column{Name: rc, Type: spec.Key})
		pt.Columns = append(pt.Columns, spec.Column{Name: k, Type: spec.Key})
		rh, ph = append(rh, rc), append(ph, k)
		s.Join = append(s.Join, spec.JoinEq{Left: spec.ColumnRef{Table: "r", Column: rc}, Right: spec.ColumnRef{Table: "p", Column: k}})
	}
	rt.Source = writeCSV(t, dir, "r.csv", rh, rRows)
	pt.Source = writeCSV(t, dir, "p.csv", ph, pRows)
	s.Tables = []spec.Table{rt, pt}
	ctx := context.Background()
	if err := e.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	f, err := s.Folding()
	if err != nil {
		t.Fatal(err)
	}
	if f.Folded().Len() != 1 {
		t.Fatalf("r ⋈ p did not fold: %v", f.Folded().Names(f.Folded().All()))
	}
	return e.Fold(ctx, f)
}

func TestFoldDuplicateKey(t *testing.T) {
	e := openTest(t)
	r := [][]string{{"x", "1"}, {"y", "2"}}
	err := loadFold(t, e, []string{"p_id"}, r, [][]string{{"x", "1"}, {"y", "3"}, {"z", "3"}, {"x", "2"}, {"y", "2"}})
	var dup *DuplicateKeyError
	if !errors.As(err, &dup) || !errors.Is(err, ErrData) {
		t.Fatalf("got %v, want a DuplicateKeyError wrapping ErrData", err)
	}
	if dup.Table != "p" || !slices.Equal(dup.Columns, []string{"p_id"}) || !slices.Equal(dup.Value, []string{"2"}) || dup.Count != 2 {
		t.Errorf("got %+v, want table p, column p_id, smallest duplicate 2 in 2 rows", dup)
	}
	for _, s := range []string{"public table p", "column p_id", `value "2"`, "2 rows"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message %q lacks %q", err, s)
		}
	}
	// A composite key.
	err = loadFold(t, e, []string{"p_a", "p_b"}, [][]string{{"x", "1", "1"}},
		[][]string{{"x", "1", "1"}, {"y", "1", "2"}, {"z", "1", "2"}})
	if !errors.As(err, &dup) || !slices.Equal(dup.Value, []string{"1", "2"}) ||
		!strings.Contains(err.Error(), `columns (p_a, p_b)`) || !strings.Contains(err.Error(), `("1", "2")`) {
		t.Errorf("composite key: got %v", err)
	}
	// Unique keys pass: NULL keys join nothing and may repeat, and "01" is
	// not "1" (the text column is compared as text).
	if err := loadFold(t, e, []string{"p_id"}, r, [][]string{{"x", "1"}, {"y", ""}, {"z", ""}, {"x", "01"}, {"y", "2"}}); err != nil {
		t.Errorf("unique key refused: %v", err)
	}
}

// TestFoldTypes joins a BIGINT key column to a text one ("01" keeps p's
// column text): the view compares as text, like the original join, and
// its attribute column holds the text.
func TestFoldTypes(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	if err := loadFold(t, e, []string{"p_id"}, [][]string{{"x", "1"}, {"y", "1"}, {"z", "2"}},
		[][]string{{"x", "1"}, {"y", "01"}, {"z", "2"}}); err != nil {
		t.Fatal(err)
	}
	types, err := e.columnTypes(ctx, "r+p")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"r.r_cat": "VARCHAR", "r.r_id": "VARCHAR", "p.p_cat": "VARCHAR", "p.p_id": "VARCHAR",
		BinColumn("r.r_cat"): "", BinColumn("p.p_cat"): ""}
	for c := range want {
		if _, ok := types[c]; !ok {
			t.Errorf("view r+p lacks column %q (has %v)", c, types)
		}
	}
	if types["r.r_id"] != "VARCHAR" {
		t.Errorf("attribute column r.r_id is %s, want VARCHAR (mixed attribute)", types["r.r_id"])
	}
	if _, ok := types[RowColumn]; ok {
		t.Error("view holds the row column")
	}
	h, err := hypergraph.New([]hypergraph.Relation{{Name: "r+p", Attrs: map[string]string{"A": "r.r_id"}}})
	if err != nil {
		t.Fatal(err)
	}
	cells, err := e.Histogram(ctx, h, []spec.ColumnRef{{Table: "r+p", Column: "r.r_cat"}, {Table: "r+p", Column: "p.p_cat"}}, []int{3, 3})
	if err != nil {
		t.Fatal(err)
	}
	// r's x and y join p's "1" (x), z joins "2" (z): cells (x,x), (y,x), (z,z).
	if want := []Cell{{0, 1}, {3, 1}, {8, 1}}; !reflect.DeepEqual(cells, want) {
		t.Errorf("histogram %v, want %v", cells, want)
	}
	if n, _ := e.declaredSize("r+p", "p.p_cat"); n != 3 {
		t.Errorf("declared size of p.p_cat in the view: %d, want 3", n)
	}
}

// TestFoldTPCHNation folds nation and region (public, joined on their
// keys) into customer on the TPC-H data and checks that the folded join is
// the original: the histogram over the released columns (r_name lives in
// region), the join size, and T′ = T for every connected set of folded
// relations.
func TestFoldTPCHNation(t *testing.T) {
	if testing.Short() {
		t.Skip("loads TPC-H SF 0.01")
	}
	ctx := context.Background()
	s, err := spec.Load("../examples/tpch/nation.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := openTest(t)
	if err := e.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	f, err := s.Folding()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Fold(ctx, f); err != nil {
		t.Fatal(err)
	}
	h, fh := f.Original(), f.Folded()
	if got := fh.Names(fh.All()); !slices.Equal(got, []string{"customer+nation+region", "orders", "lineitem"}) {
		t.Fatalf("folded relations %v", got)
	}
	want, err := e.Histogram(ctx, h, s.Release.Columns, s.ReleaseSizes())
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Histogram(ctx, fh, spec.FoldColumns(f, s.Release.Columns), s.ReleaseSizes())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("folded histogram differs: %d cells against %d", len(got), len(want))
	}
	total := int64(0)
	for _, c := range got {
		total += c.Count
	}
	if n, err := e.JoinSize(ctx, fh); err != nil || n != 60175 || total != n {
		t.Errorf("folded join size %d (%v), histogram total %d; want 60175 (every lineitem)", n, err, total)
	}
	for set := hypergraph.Set(1); set < fh.All(); set++ {
		if !fh.Connected(set) {
			continue
		}
		var union hypergraph.Set
		for _, g := range set.Members() {
			for _, m := range f.Groups()[g].Members {
				union |= 1 << uint(h.Index(m))
			}
		}
		t1, err := e.MaxBoundaryCount(ctx, fh, set)
		if err != nil {
			t.Fatal(err)
		}
		t0, err := e.MaxBoundaryCount(ctx, h, union)
		if err != nil {
			t.Fatal(err)
		}
		if t0 != t1 {
			t.Errorf("T′_%v = %d, T_%v = %d", fh.Names(set), t1, h.Names(union), t0)
		}
	}
	// Customers per region: the folded relation has one row per customer.
	if d, err := e.MaxDegree(ctx, fh, 0, []string{"customer.c_custkey"}); err != nil || d != 1 {
		t.Errorf("max degree of c_custkey in the folded customer: %d (%v), want 1", d, err)
	}
}

// foldAll folds the spec's public tables with hypergraph.FoldAll, lossy
// steps included (spec.Folding keeps the lossless ones only), so that the
// oracle also builds the views of linking public tables.
func foldAll(s *spec.Spec) (*hypergraph.Folding, error) {
	h, err := s.Hypergraph()
	if err != nil {
		return nil, err
	}
	return hypergraph.FoldAll(h, s.PublicKeys())
}
