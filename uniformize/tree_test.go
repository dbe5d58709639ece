package uniformize

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/hypergraph"
)

// hg builds a hypergraph from specs like "R1(A,B)".
func hg(t *testing.T, specs ...string) *hypergraph.Hypergraph {
	t.Helper()
	var rels []hypergraph.Relation
	for _, s := range specs {
		name, rest, _ := strings.Cut(s, "(")
		attrs := map[string]string{}
		for _, a := range strings.Split(strings.TrimSuffix(rest, ")"), ",") {
			if a != "" {
				attrs[a] = strings.ToLower(a)
			}
		}
		rels = append(rels, hypergraph.Relation{Name: name, Attrs: attrs})
	}
	h, err := hypergraph.New(rels)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestTreeExample(t *testing.T) {
	h := hg(t, "R1(A,B)", "R2(A,B,C)", "R3(A,D)")
	tr, err := NewTree(h)
	if err != nil {
		t.Fatal(err)
	}
	want := "A  [R1, R2, R3]\n├── B  [R1, R2]\n│   └── C  [R2]\n└── D  [R3]\n"
	if got := tr.String(); got != want {
		t.Errorf("tree:\n%s\nwant:\n%s", got, want)
	}
	b, c, d, a := tr.NodeOf("B"), tr.NodeOf("C"), tr.NodeOf("D"), tr.NodeOf("A")
	if got := tr.Ancestors(c); !slices.Equal(got, []string{"A", "B"}) {
		t.Errorf("Ancestors(C) = %v", got)
	}
	if got := tr.PathAttrs(b); !slices.Equal(got, []string{"A", "B"}) {
		t.Errorf("PathAttrs(B) = %v", got)
	}
	if len(tr.Ancestors(a)) != 0 || tr.Decomposed(a) || !tr.Decomposed(d) {
		t.Error("root A must have no ancestors and not be decomposed")
	}
	order := tr.BottomUp()
	pos := func(v int) int { return slices.Index(order, v) }
	if !(pos(c) < pos(b) && pos(b) < pos(a) && pos(d) < pos(a)) {
		t.Errorf("BottomUp = %v not post-order", order)
	}
	if got := tr.Path(1); !slices.Equal(got, []int{a, b, c}) {
		t.Errorf("Path(R2) = %v", got)
	}
}

func TestTreeForestAndEqualAtoms(t *testing.T) {
	// A and E share an atom: one node. C, D form a second tree.
	h := hg(t, "R(A,E)", "S(A,E,B)", "T(C,D)", "U(C)")
	tr, err := NewTree(h)
	if err != nil {
		t.Fatal(err)
	}
	want := "A, E  [R, S]\n└── B  [S]\nC  [T, U]\n└── D  [T]\n"
	if got := tr.String(); got != want {
		t.Errorf("tree:\n%s\nwant:\n%s", got, want)
	}
	if len(tr.Roots()) != 2 {
		t.Errorf("roots = %v", tr.Roots())
	}
	if got := tr.Ancestors(tr.NodeOf("B")); !slices.Equal(got, []string{"A", "E"}) {
		t.Errorf("Ancestors(B) = %v", got)
	}
}

func TestTreeRefusesNonHierarchical(t *testing.T) {
	for _, tc := range []struct {
		specs []string
		want  string
	}{
		{[]string{"R1(A,B)", "R2(B,C)", "R3(C,D)"},
			"not hierarchical: atom(B) = {R1, R2} and atom(C) = {R2, R3} overlap in R2 without containment (R1 has B but not C, R3 has C but not B)"},
		{[]string{"customer(c_custkey)", "orders(c_custkey,o_orderkey)", "lineitem(o_orderkey)"},
			"not hierarchical: atom(c_custkey) = {customer, orders} and atom(o_orderkey) = {orders, lineitem} overlap in orders without containment (customer has c_custkey but not o_orderkey, lineitem has o_orderkey but not c_custkey)"},
		{[]string{"R(A,B)", "S(B,C)", "T(C,A)"}, "not hierarchical: atom(A)"},
	} {
		h := hg(t, tc.specs...)
		_, err := NewTree(h)
		if !errors.Is(err, ErrNotHierarchical) {
			t.Fatalf("%v: err = %v, want ErrNotHierarchical", tc.specs, err)
		}
		if !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v:\n got %s\nwant %s", tc.specs, err, tc.want)
		}
		if ok, _ := h.Hierarchical(); ok {
			t.Errorf("%v: hypergraph.Hierarchical disagrees", tc.specs)
		}
	}
}

// TestTreeAgreesWithHypergraph: CheckHierarchical and the existing
// hypergraph.Hierarchical (used by `synth inspect`) agree on many shapes.
func TestTreeAgreesWithHypergraph(t *testing.T) {
	shapes := [][]string{
		{"R(A,B)", "S(B,C)"}, {"R(A)", "S(A,B)", "T(A,B,C)"}, {"R(A,B)", "S(A,C)", "T(A,D)"},
		{"R(A,B)", "S(A,B)"}, {"R(A,B,C)", "S(A)", "T(B)", "U(C)"}, {"R(A,B)", "S(B,C)", "T(C,D)", "U(D,E)"},
		{"R1(A,B,C)", "R2(A,B,D)", "R3(A,E)", "R4(A)"},
	}
	for _, s := range shapes {
		h := hg(t, s...)
		ok, _ := h.Hierarchical()
		if got := CheckHierarchical(h) == nil; got != ok {
			t.Errorf("%v: CheckHierarchical ok = %v, hypergraph says %v", s, got, ok)
		}
		if tr, err := NewTree(h); err == nil {
			// Every relation's path is a chain from a root.
			for i := range h.Len() {
				p := tr.Path(i)
				for k := 1; k < len(p); k++ {
					if tr.Node(p[k]).Parent != p[k-1] {
						t.Errorf("%v: path of %d = %v is not a root-to-node chain", s, i, p)
					}
				}
				if len(p) > 0 && tr.Node(p[0]).Parent != -1 {
					t.Errorf("%v: path of %d does not start at a root", s, i)
				}
			}
		}
	}
}
