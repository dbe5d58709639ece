package hypergraph

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// rel is a relation whose attribute X is held by column name_x (lower
// case), public when the name starts with "pub:".
func rel(spec string) Relation {
	name, attrs, _ := strings.Cut(spec, ":")
	r := Relation{Name: name, Attrs: map[string]string{}}
	if name == "pub" {
		name, attrs, _ = strings.Cut(attrs, ":")
		r = Relation{Name: name, Attrs: map[string]string{}, Public: true}
	}
	for _, a := range strings.Split(attrs, ",") {
		if a != "" {
			r.Attrs[a] = strings.ToLower(name + "_" + a)
		}
	}
	return r
}

func mustNew(t *testing.T, specs ...string) *Hypergraph {
	t.Helper()
	rels := make([]Relation, len(specs))
	for i, s := range specs {
		rels[i] = rel(s)
	}
	h, err := New(rels)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// col is the column rel() gives relation name's attribute a.
func col(name, a string) string { return strings.ToLower(name + "_" + a) }

func TestFoldLookup(t *testing.T) {
	// ratings ⋈ users ⋈ movies, movies public with key movie_id: a
	// two-table join remains.
	h := mustNew(t, "ratings:U,M", "users:U", "pub:movies:M")
	f, err := Fold(h, map[string][]string{"movies": {col("movies", "M")}})
	if err != nil {
		t.Fatal(err)
	}
	fh := f.Folded()
	if got := fh.Names(fh.All()); !reflect.DeepEqual(got, []string{"ratings+movies", "users"}) {
		t.Fatalf("folded relations: %v", got)
	}
	if fh.Private() != fh.All() {
		t.Errorf("folded relations should all be private: %b", fh.Private())
	}
	r := fh.Relation(0)
	want := map[string]string{"U": "ratings.ratings_u", "M": "ratings.ratings_m"}
	if !reflect.DeepEqual(r.Attrs, want) {
		t.Errorf("attrs of ratings+movies: %v, want %v", r.Attrs, want)
	}
	g := f.Groups()
	if len(g) != 2 || !reflect.DeepEqual(g[0].Members, []string{"ratings", "movies"}) || !g[0].Folded() || g[1].Folded() {
		t.Fatalf("groups: %+v", g)
	}
	st := g[0].Steps
	if len(st) != 1 || st[0].Public != "movies" || !reflect.DeepEqual(st[0].On, []string{"M"}) ||
		!reflect.DeepEqual(st[0].Key, []string{"movies_m"}) || !st[0].Lossless {
		t.Errorf("steps: %+v", st)
	}
	if got := f.Steps(); !reflect.DeepEqual(got, st) {
		t.Errorf("Steps: %+v", got)
	}
	for _, tc := range []struct{ table, column, rel, col string }{
		{"movies", "genre", "ratings+movies", "movies.genre"},
		{"ratings", "stars", "ratings+movies", "ratings.stars"},
		{"users", "age", "users", "age"},
	} {
		r, c, ok := f.Locate(tc.table, tc.column)
		if !ok || r != tc.rel || c != tc.col {
			t.Errorf("Locate(%s, %s) = %s, %s, %v; want %s, %s", tc.table, tc.column, r, c, ok, tc.rel, tc.col)
		}
	}
	if _, _, ok := f.Locate("nope", "x"); ok {
		t.Error("Locate of an unknown table succeeded")
	}
	if into, ok := f.Into("movies"); !ok || into != "ratings+movies" {
		t.Errorf("Into(movies) = %q, %v", into, ok)
	}
	if f.Original() != h {
		t.Error("Original is not the input")
	}
}

func TestFoldChainAndOrder(t *testing.T) {
	// TPC-H with nation and region public: region is keyed by an attribute
	// of nation, so it folds once nation has (region comes first here).
	h := mustNew(t, "pub:region:R", "lineitem:O", "orders:O,C", "customer:C,N", "pub:nation:N,R")
	keys := map[string][]string{"region": {col("region", "R")}, "nation": {col("nation", "N")}}
	f, err := Fold(h, keys)
	if err != nil {
		t.Fatal(err)
	}
	fh := f.Folded()
	if got := fh.Names(fh.All()); !reflect.DeepEqual(got, []string{"lineitem", "orders", "customer+nation+region"}) {
		t.Fatalf("folded relations: %v", got)
	}
	g := f.Groups()[2]
	if len(g.Steps) != 2 || g.Steps[0].Public != "nation" || g.Steps[1].Public != "region" ||
		!reflect.DeepEqual(g.Steps[1].On, []string{"R"}) || !g.Steps[0].Lossless || !g.Steps[1].Lossless {
		t.Errorf("steps: %+v", g.Steps)
	}
	if got := fh.Relation(2).Attrs; !reflect.DeepEqual(got, map[string]string{"C": "customer.customer_c", "N": "customer.customer_n", "R": "nation.nation_r"}) {
		t.Errorf("attrs: %v", got)
	}
	if !fh.Acyclic() || fh.Len() != 3 {
		t.Error("the folded TPC-H join should be a 3-relation path")
	}
	// Deterministic: the same answer every time (map iteration varies).
	for range 20 {
		f2, err := Fold(h, keys)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(f2.Groups(), f.Groups()) || !reflect.DeepEqual(f2.Folded().Relations(), fh.Relations()) {
			t.Fatal("Fold is not deterministic")
		}
	}
}

func TestFoldLinkAndShared(t *testing.T) {
	// P links R1 (on its key K) and R2 (on C): it folds into R1, and the
	// step is not lossless.
	h := mustNew(t, "R1:A,K", "pub:P:K,C", "R2:C,D")
	f, err := FoldAll(h, map[string][]string{"P": {col("P", "K")}})
	if err != nil {
		t.Fatal(err)
	}
	fh := f.Folded()
	if got := fh.Names(fh.All()); !reflect.DeepEqual(got, []string{"R1+P", "R2"}) {
		t.Fatalf("folded relations: %v", got)
	}
	if f.Groups()[0].Steps[0].Lossless {
		t.Error("a linking public relation folded losslessly")
	}
	if got := fh.Boundary(1); !reflect.DeepEqual(got, []string{"C"}) {
		t.Errorf("R1+P joins R2 on %v, want [C]", got)
	}
	// P's key attribute is held by two private relations: the first one
	// (in order) gets it.
	h = mustNew(t, "S:K,B", "pub:P:K", "R:K,A")
	f, err = FoldAll(h, map[string][]string{"P": {col("P", "K")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Folded().Names(f.Folded().All()); !reflect.DeepEqual(got, []string{"S+P", "R"}) {
		t.Errorf("folded relations: %v", got)
	}
	if f.Groups()[0].Steps[0].Lossless {
		t.Error("a key shared with another private relation folded losslessly")
	}
}

func TestFoldComposite(t *testing.T) {
	h := mustNew(t, "R:A,B,C", "pub:P:B,C,D", "S:D")
	// Key (B, C) is covered by R.
	f, err := FoldAll(h, map[string][]string{"P": {col("P", "B"), col("P", "C")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Folded().Names(f.Folded().All()); !reflect.DeepEqual(got, []string{"R+P", "S"}) {
		t.Errorf("covered composite key: %v", got)
	}
	if got := f.Groups()[0].Steps[0].On; !reflect.DeepEqual(got, []string{"B", "C"}) {
		t.Errorf("on %v, want [B C]", got)
	}
	// Key (B, D) is covered by no single private relation.
	f, err = Fold(h, map[string][]string{"P": {col("P", "B"), col("P", "D")}})
	if err != nil {
		t.Fatal(err)
	}
	if f.Folded() != h {
		t.Errorf("uncovered composite key folded: %v", f.Folded().Names(f.Folded().All()))
	}
}

func TestFoldNothing(t *testing.T) {
	h := mustNew(t, "R:A,B", "pub:P:B,C", "pub:Q:C", "S:A")
	for name, keys := range map[string]map[string][]string{
		"no key":                nil,
		"key not joined on":     {"P": {col("P", "C")}},
		"key not a join column": {"P": {"p_other"}},
		"private key ignored":   {"R": {col("R", "A")}},
		"public-only cover":     {"Q": {col("Q", "C")}}, // C is in P, which stays public
		"empty key":             {"P": {}},
	} {
		f, err := Fold(h, keys)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if f.Folded() != h || len(f.Steps()) != 0 {
			t.Errorf("%s: folded %v", name, f.Folded().Names(f.Folded().All()))
		}
		if r, c, ok := f.Locate("P", "x"); !ok || r != "P" || c != "x" {
			t.Errorf("%s: Locate(P, x) = %s, %s, %v", name, r, c, ok)
		}
	}
}

func TestFoldErrors(t *testing.T) {
	h := mustNew(t, "R:K", "pub:P:K")
	for name, keys := range map[string]map[string][]string{
		"unknown relation": {"X": {"k"}},
		"repeated column":  {"P": {"p_k", "p_k"}},
		"empty column":     {"P": {""}},
	} {
		if _, err := Fold(h, keys); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	if _, err := Fold(nil, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("nil hypergraph: got %v", err)
	}
	// The folded name collides with a relation's.
	h = mustNew(t, "R:K", "pub:P:K", "R+P:K")
	if _, err := Fold(h, map[string][]string{"P": {"p_k"}}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "R+P") {
		t.Errorf("name collision: got %v", err)
	}
}

// TestFoldKeepsOnlyLosslessSteps: Fold leaves a public relation that links
// two private ones unfolded (FoldAll folds it and marks the step lossy), and
// a chain whose link is lossy stops there; a leaf lookup still folds.
func TestFoldKeepsOnlyLosslessSteps(t *testing.T) {
	h := mustNew(t, "R1:A,B", "pub:P:B,C", "R2:C,D")
	keys := map[string][]string{"P": {col("P", "B")}}
	f, err := Fold(h, keys)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Folded().Names(f.Folded().All()); !reflect.DeepEqual(got, []string{"R1", "P", "R2"}) {
		t.Errorf("Fold of a linking public relation: %v, want it unfolded", got)
	}
	all, err := FoldAll(h, keys)
	if err != nil {
		t.Fatal(err)
	}
	if all.Folded().Len() != 2 || all.Steps()[0].Lossless {
		t.Errorf("FoldAll: %v, steps %+v", all.Folded().Names(all.Folded().All()), all.Steps())
	}
	// A leaf lookup folds, and every step Fold makes is lossless.
	h = mustNew(t, "ratings:U,M", "users:U", "pub:movies:M,G")
	f, err = Fold(h, map[string][]string{"movies": {col("movies", "M")}})
	if err != nil {
		t.Fatal(err)
	}
	if f.Folded().Len() != 2 {
		t.Errorf("leaf lookup not folded: %v", f.Folded().Names(f.Folded().All()))
	}
	for _, st := range f.Steps() {
		if !st.Lossless {
			t.Errorf("Fold made a lossy step %+v", st)
		}
	}
}
