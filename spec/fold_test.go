package spec

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestFoldingTPCH(t *testing.T) {
	// The three private TPC-H tables: nothing to fold.
	s, err := Load("../examples/tpch/synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Folding()
	if err != nil {
		t.Fatal(err)
	}
	if f.Folded() != f.Original() || len(f.Steps()) != 0 {
		t.Errorf("tpch: folded %v", f.Folded().Names(f.Folded().All()))
	}
	if got := FoldColumns(f, s.Release.Columns); !reflect.DeepEqual(got, s.Release.Columns) {
		t.Errorf("tpch: FoldColumns changed the columns: %v", got)
	}

	// nation and region public, joined on their keys: both fold into
	// customer, leaving the three-table path.
	s, err = Load("../examples/tpch/nation.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err = s.Folding()
	if err != nil {
		t.Fatal(err)
	}
	fh := f.Folded()
	if got, want := fh.Names(fh.All()), []string{"customer+nation+region", "orders", "lineitem"}; !slices.Equal(got, want) {
		t.Fatalf("nation: folded relations %v, want %v", got, want)
	}
	if fh.Private() != fh.All() || !fh.Acyclic() {
		t.Errorf("nation: the folded join should be a private path")
	}
	g := f.Groups()[0]
	if !slices.Equal(g.Members, []string{"customer", "nation", "region"}) || len(g.Steps) != 2 {
		t.Fatalf("nation: group %+v", g)
	}
	for i, want := range []foldStepWant{{"nation", "n_nationkey", "customer.c_nationkey"}, {"region", "r_regionkey", "nation.n_regionkey"}} {
		st := g.Steps[i]
		if st.Public != want.public || !slices.Equal(st.Key, []string{want.key}) || !slices.Equal(st.On, []string{want.on}) || !st.Lossless {
			t.Errorf("nation: step %d = %+v, want %+v (lossless)", i, st, want)
		}
	}
	got := FoldColumns(f, s.Release.Columns)
	want := []ColumnRef{
		{"customer+nation+region", "region.r_name"},
		{"customer+nation+region", "customer.c_mktsegment"},
		{"orders", "o_orderpriority"},
		{"lineitem", "l_returnflag"},
		{"lineitem", "l_quantity"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("nation: FoldColumns = %v, want %v", got, want)
	}
	if got := FoldColumns(f, []ColumnRef{{"nowhere", "x"}}); got[0] != (ColumnRef{"nowhere", "x"}) {
		t.Errorf("unknown table mapped to %v", got[0])
	}
}

// foldStepWant is what a fold step should hold.
type foldStepWant struct{ public, key, on string }

func TestFoldingNeedsKey(t *testing.T) {
	// The same spec without nation's primary key: nation cannot fold, and
	// neither can region, whose key is held by nation only.
	data, err := os.ReadFile("../examples/tpch/nation.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "    primary_key: n_nationkey\n", "", 1)
	s, err := Parse([]byte(text), "../examples/tpch/nation-nokey.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Folding()
	if err != nil {
		t.Fatal(err)
	}
	if f.Folded() != f.Original() {
		t.Errorf("folded without nation's key: %v", f.Folded().Names(f.Folded().All()))
	}
}
