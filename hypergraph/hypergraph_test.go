package hypergraph

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// build makes a hypergraph from relation names and attribute lists, with
// every attribute held by a column of the same name.
func build(t *testing.T, rels ...string) *Hypergraph {
	t.Helper()
	var rs []Relation
	for _, r := range rels {
		name, attrs, _ := strings.Cut(r, ":")
		rel := Relation{Name: name, Attrs: map[string]string{}}
		for _, a := range strings.Split(attrs, ",") {
			if a != "" {
				rel.Attrs[a] = strings.ToLower(a)
			}
		}
		rs = append(rs, rel)
	}
	h, err := New(rs)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func set(idx ...int) Set {
	var s Set
	for _, i := range idx {
		s |= 1 << uint(i)
	}
	return s
}

func TestSet(t *testing.T) {
	s := set(0, 3, 63)
	if !s.Has(3) || s.Has(1) || !s.Has(63) || s.Len() != 3 {
		t.Errorf("Has/Len wrong for %b", s)
	}
	if got := s.Members(); !reflect.DeepEqual(got, []int{0, 3, 63}) {
		t.Errorf("Members: got %v", got)
	}
	if got := Set(0).Members(); len(got) != 0 {
		t.Errorf("Members of ∅: got %v", got)
	}
}

func TestNewErrors(t *testing.T) {
	many := make([]Relation, MaxRelations+1)
	for i := range many {
		many[i] = Relation{Name: fmt.Sprint("r", i)}
	}
	manyAttrs := Relation{Name: "wide", Attrs: map[string]string{}}
	for i := 0; i < 65; i++ {
		manyAttrs.Attrs[fmt.Sprint("a", i)] = "c"
	}
	for _, tc := range []struct {
		name string
		rels []Relation
		msg  string
	}{
		{"none", nil, "no relations"},
		{"unnamed", []Relation{{Name: "a"}, {}}, "relation 1 has no name"},
		{"duplicate", []Relation{{Name: "a"}, {Name: "a"}}, `"a" appears twice`},
		{"too many relations", many, "65 relations"},
		{"too many attributes", []Relation{manyAttrs}, "65 join attributes"},
	} {
		_, err := New(tc.rels)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: got %v, want ErrInvalid with %q", tc.name, err, tc.msg)
		}
	}
	h, err := New(many[:MaxRelations])
	if err != nil {
		t.Fatal(err)
	}
	if h.All() != ^Set(0) || h.All().Len() != 64 {
		t.Errorf("All with 64 relations: got %b", h.All())
	}
}

func TestNewCopiesInput(t *testing.T) {
	attrs := map[string]string{"A": "a"}
	h, err := New([]Relation{{Name: "r", Attrs: attrs}, {Name: "s", Attrs: map[string]string{"A": "a2"}}})
	if err != nil {
		t.Fatal(err)
	}
	attrs["B"] = "b"
	if got := h.Attributes(); !reflect.DeepEqual(got, []string{"A"}) {
		t.Errorf("attributes changed with the caller's map: %v", got)
	}
}

func TestAccessors(t *testing.T) {
	h := build(t, "R1:A", "R2:A,B", "R3:B")
	if h.Len() != 3 || h.All() != set(0, 1, 2) {
		t.Errorf("Len/All: %d %b", h.Len(), h.All())
	}
	if h.Index("R2") != 1 || h.Index("nope") != -1 {
		t.Error("Index wrong")
	}
	if got := h.Atom("B"); got != set(1, 2) {
		t.Errorf("atom(B): got %b", got)
	}
	if got := h.AttrsOf(set(0, 2)); !reflect.DeepEqual(got, []string{"A", "B"}) {
		t.Errorf("AttrsOf: got %v", got)
	}
	if got := h.Names(set(2, 0)); !reflect.DeepEqual(got, []string{"R1", "R3"}) {
		t.Errorf("Names: got %v", got)
	}
	if h.Relation(1).Attrs["B"] != "b" {
		t.Errorf("Relation(1): got %+v", h.Relation(1))
	}
}

func TestBoundary(t *testing.T) {
	// Path R1(A) – R2(A, B) – R3(B).
	h := build(t, "R1:A", "R2:A,B", "R3:B")
	for _, tc := range []struct {
		e    Set
		want []string
	}{
		{set(), nil},
		{set(0, 1, 2), nil},
		{set(0), []string{"A"}},
		{set(1), []string{"A", "B"}},
		{set(2), []string{"B"}},
		{set(0, 1), []string{"B"}},
		{set(1, 2), []string{"A"}},
		{set(0, 2), []string{"A", "B"}},
	} {
		if got := h.Boundary(tc.e); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("∂%v: got %v, want %v", h.Names(tc.e), got, tc.want)
		}
	}
	// An attribute private to one relation is never on a boundary.
	h = build(t, "R:A,X", "S:A")
	if got := h.Boundary(set(0)); !reflect.DeepEqual(got, []string{"A"}) {
		t.Errorf("∂{R}: got %v, want [A]", got)
	}
}

func TestComponents(t *testing.T) {
	h := build(t, "R1:A", "R2:A,B", "R3:B", "R4:C", "R5:C")
	for _, tc := range []struct {
		s    Set
		want []Set
	}{
		{set(), nil},
		{set(0, 1, 2, 3, 4), []Set{set(0, 1, 2), set(3, 4)}},
		{set(0, 2), []Set{set(0), set(2)}}, // R2 is the bridge
		{set(0, 1), []Set{set(0, 1)}},
		{set(4, 2, 0), []Set{set(0), set(2), set(4)}},
	} {
		if got := h.Components(tc.s); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("components of %v: got %v, want %v", h.Names(tc.s), got, tc.want)
		}
	}
	if !h.Connected(set(0, 1, 2)) || h.Connected(h.All()) || h.Connected(0) {
		t.Error("Connected wrong")
	}
}

func TestAcyclic(t *testing.T) {
	for _, tc := range []struct {
		name string
		rels []string
		want bool
	}{
		{"one relation", []string{"R:A,B"}, true},
		{"path", []string{"R1:A", "R2:A,B", "R3:B,C", "R4:C"}, true},
		{"star", []string{"F:A,B,C", "D1:A", "D2:B", "D3:C"}, true},
		{"triangle", []string{"R1:A,B", "R2:B,C", "R3:C,A"}, false},
		{"triangle covered by a relation", []string{"R1:A,B", "R2:B,C", "R3:C,A", "R4:A,B,C"}, true},
		{"four-cycle", []string{"R1:A,B", "R2:B,C", "R3:C,D", "R4:D,A"}, false},
		{"disconnected paths", []string{"R1:A", "R2:A", "S1:B", "S2:B"}, true},
		{"triangle with a tail", []string{"R1:A,B", "R2:B,C", "R3:C,A", "T:C,D"}, false},
	} {
		if got := build(t, tc.rels...).Acyclic(); got != tc.want {
			t.Errorf("%s: Acyclic = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestHierarchical(t *testing.T) {
	// Figure 4 of Ghazi et al.: x1 = {A,B,D}, x2 = {A,B,F}, x3 = {A,B,G,K},
	// x4 = {A,B,G,L}, x5 = {A,C}.
	fig4 := build(t, "x1:A,B,D", "x2:A,B,F", "x3:A,B,G,K", "x4:A,B,G,L", "x5:A,C")
	if ok, why := fig4.Hierarchical(); !ok {
		t.Errorf("Figure 4 join: not hierarchical (%s)", why)
	}
	if !fig4.Acyclic() {
		t.Error("Figure 4 join: hierarchical joins are acyclic")
	}
	// Its residual query on E = {3, 4, 5} has ∂E = {A, B}.
	if got := fig4.Boundary(set(2, 3, 4)); !reflect.DeepEqual(got, []string{"A", "B"}) {
		t.Errorf("Figure 4: ∂{3,4,5} = %v, want [A B]", got)
	}
	// §5 of the paper: x1 = {A,B}, x2 = {B,C}, x3 = {C,D} is not.
	h := build(t, "x1:A,B", "x2:B,C", "x3:C,D")
	ok, why := h.Hierarchical()
	if ok {
		t.Fatal("x1={A,B}, x2={B,C}, x3={C,D}: hierarchical, want not")
	}
	if !strings.Contains(why, "B (in x1, x2)") || !strings.Contains(why, "C (in x2, x3)") {
		t.Errorf("reason %q does not name B and C with their relations", why)
	}
	// Two-table joins and stars are hierarchical.
	for _, rels := range [][]string{{"R:A,B", "S:B,C"}, {"F:A", "D1:A", "D2:A"}} {
		if ok, why := build(t, rels...).Hierarchical(); !ok {
			t.Errorf("%v: not hierarchical (%s)", rels, why)
		}
	}
}

func TestPrivate(t *testing.T) {
	h, err := New([]Relation{{Name: "a"}, {Name: "b", Public: true}, {Name: "c"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Private(); got != set(0, 2) {
		t.Errorf("Private: got %b", got)
	}
	rels := h.Relations()
	rels[0].Name = "changed"
	if h.Relation(0).Name != "a" {
		t.Error("Relations is not a copy")
	}
}
