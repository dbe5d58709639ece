package spec

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/synth-dp/synth/hypergraph"
)

func TestHypergraphTPCH(t *testing.T) {
	s, err := Load("../examples/tpch/synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Names(h.All()); !reflect.DeepEqual(got, []string{"customer", "orders", "lineitem"}) {
		t.Errorf("relations: got %v", got)
	}
	if got := h.Private(); got != h.All() {
		t.Errorf("private: got %b, want all", got)
	}
	if got, want := h.Attributes(), []string{"customer.c_custkey", "lineitem.l_orderkey"}; !reflect.DeepEqual(got, want) {
		t.Errorf("attributes: got %v, want %v", got, want)
	}
	cust := h.Atom("customer.c_custkey")
	if got := h.Names(cust); !reflect.DeepEqual(got, []string{"customer", "orders"}) {
		t.Errorf("atom(custkey): got %v", got)
	}
	if got := h.Relation(h.Index("orders")).Attrs; !reflect.DeepEqual(got, map[string]string{"customer.c_custkey": "o_custkey", "lineitem.l_orderkey": "o_orderkey"}) {
		t.Errorf("orders attrs: got %v", got)
	}
	if !h.Acyclic() {
		t.Error("a path join must be acyclic")
	}
	if ok, _ := h.Hierarchical(); ok {
		t.Error("customer ⋈ orders ⋈ lineitem is not hierarchical")
	}
	if got := h.Boundary(relSet(h, "orders")); !reflect.DeepEqual(got, h.Attributes()) {
		t.Errorf("∂{orders}: got %v", got)
	}
}

// relSet builds a relation set from names.
func relSet(h *hypergraph.Hypergraph, names ...string) hypergraph.Set {
	var s hypergraph.Set
	for _, n := range names {
		s |= 1 << uint(h.Index(n))
	}
	return s
}

// star3 is three tables whose keys are equated pairwise, transitively: a.x =
// b.y and b.y = c.z (and optionally c.z = a.x again).
func star3(extra string) string {
	return `privacy: {epsilon: 1, delta: 1e-6}
tables:
  - {name: c, source: c.csv, columns: {z: {type: key}, v: {type: boolean}}}
  - {name: a, source: a.csv, public: true, columns: {x: {type: key}}}
  - {name: b, source: b.csv, columns: {y: {type: key}}}
join: ["a.x = b.y", "b.y = c.z"` + extra + `]
release: {columns: [v]}
`
}

func TestHypergraphTransitive(t *testing.T) {
	for _, extra := range []string{"", `, "c.z = a.x"`, `, "c.z = b.y"`} {
		s, err := Parse([]byte(star3(extra)), "star.yaml")
		if err != nil {
			t.Fatal(err)
		}
		h, err := s.Hypergraph()
		if err != nil {
			t.Fatal(err)
		}
		if got := h.Attributes(); !reflect.DeepEqual(got, []string{"a.x"}) {
			t.Errorf("%q: attributes: got %v, want the one class named a.x", extra, got)
		}
		if got := h.Atom("a.x"); got != h.All() {
			t.Errorf("%q: atom: got %b, want every relation", extra, got)
		}
		if got := h.Relation(h.Index("c")).Attrs["a.x"]; got != "z" {
			t.Errorf("%q: c holds a.x in column %q, want z", extra, got)
		}
		if got := h.Names(h.Private()); !reflect.DeepEqual(got, []string{"c", "b"}) {
			t.Errorf("%q: private: got %v", extra, got)
		}
		if ok, why := h.Hierarchical(); !ok || !h.Acyclic() {
			t.Errorf("%q: a star must be hierarchical and acyclic (%s)", extra, why)
		}
	}
}

func TestHypergraphErrors(t *testing.T) {
	// Specs built by hand (not by Parse) can hold joins Parse would reject.
	base := func() *Spec {
		return &Spec{File: "hand.yaml", Tables: []Table{
			{Name: "a", Columns: []Column{{Name: "x", Type: Key}, {Name: "x2", Type: Key}}},
			{Name: "b", Columns: []Column{{Name: "y", Type: Key}}},
			{Name: "c", Columns: []Column{{Name: "z", Type: Key}}},
		}}
	}
	ref := func(t, c string) ColumnRef { return ColumnRef{t, c} }
	for _, tc := range []struct {
		name string
		join []JoinEq
		msg  string
	}{
		{"disconnected", []JoinEq{{ref("a", "x"), ref("b", "y")}}, "table(s) c not connected to a"},
		{"two columns of one table", []JoinEq{{ref("a", "x"), ref("b", "y")}, {ref("b", "y"), ref("a", "x2")}, {ref("c", "z"), ref("b", "y")}}, "equated within one table"},
		{"unknown table", []JoinEq{{ref("a", "x"), ref("d", "y")}}, `no table "d"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			s.Join = tc.join
			_, err := s.Hypergraph()
			var e *Error
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &e) {
				t.Fatalf("got %v, want a *spec.Error", err)
			}
			if e.File != "hand.yaml" || e.Key != "join" || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("got %q, want file hand.yaml, key join, %q", err, tc.msg)
			}
		})
	}
	s := &Spec{Tables: []Table{{Name: "only"}}}
	if h, err := s.Hypergraph(); err != nil || h.Len() != 1 || len(h.Attributes()) != 0 {
		t.Errorf("one table without join: got %v, %v", h, err)
	}
}
