package spec

import (
	"fmt"
	"sort"
	"strings"

	"github.com/synth-dp/synth/hypergraph"
)

// Table returns the table with the given name, or nil.
func (s *Spec) Table(name string) *Table {
	for i := range s.Tables {
		if s.Tables[i].Name == name {
			return &s.Tables[i]
		}
	}
	return nil
}

// Column returns the column a reference names, or nil.
func (s *Spec) Column(ref ColumnRef) *Column {
	t := s.Table(ref.Table)
	if t == nil {
		return nil
	}
	return t.Column(ref.Column)
}

// Column returns the table's column with the given name, or nil.
func (t *Table) Column(name string) *Column {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i]
		}
	}
	return nil
}

// ReleaseColumns returns the released columns' declarations in release
// order.
func (s *Spec) ReleaseColumns() []*Column {
	out := make([]*Column, len(s.Release.Columns))
	for i, r := range s.Release.Columns {
		out[i] = s.Column(r)
	}
	return out
}

// ReleaseSizes returns the domain sizes of the released columns in release
// order: the radices of the universe's mixed-radix cell index.
func (s *Spec) ReleaseSizes() []int {
	cols := s.ReleaseColumns()
	sizes := make([]int, len(cols))
	for i, c := range cols {
		sizes[i] = c.Size()
	}
	return sizes
}

// UniverseSize is the product of the released columns' domain sizes, or
// (0, false) when it overflows int64.
func (s *Spec) UniverseSize() (int64, bool) {
	n := int64(1)
	for _, c := range s.ReleaseColumns() {
		k := int64(c.Size())
		if k != 0 && n > (1<<62)/k {
			return 0, false
		}
		n *= k
	}
	return n, true
}

// Hypergraph builds the join hypergraph: the join equalities are closed
// under transitivity, every class of equal columns becomes one attribute,
// named by the smallest table.column in it, and every table becomes a
// relation over the attributes its columns hold (public tables are marked
// public). It fails, with an [*Error] wrapping [ErrInvalid], when two
// columns of one table are equated (directly or through other tables) or
// when the tables are not all connected by the join. [Parse] checks this
// already, so it never fails on a spec Parse returned.
func (s *Spec) Hypergraph() (*hypergraph.Hypergraph, error) {
	h, err := s.buildHypergraph()
	if err != nil {
		return nil, &Error{File: s.File, Key: "join", Err: err}
	}
	return h, nil
}

// buildHypergraph is [Spec.Hypergraph] with errors that name no place.
func (s *Spec) buildHypergraph() (*hypergraph.Hypergraph, error) {
	parent := map[ColumnRef]ColumnRef{}
	var find func(ColumnRef) ColumnRef
	find = func(r ColumnRef) ColumnRef {
		p, ok := parent[r]
		if !ok || p == r {
			parent[r] = r
			return r
		}
		root := find(p)
		parent[r] = root
		return root
	}
	for _, eq := range s.Join {
		a, b := find(eq.Left), find(eq.Right)
		if a != b {
			if b.String() < a.String() {
				a, b = b, a
			}
			parent[b] = a
		}
	}
	// Name each class by its smallest member: roots are already smallest
	// because unions keep the smaller root, but recompute to be safe.
	name := map[ColumnRef]string{}
	members := make([]ColumnRef, 0, len(parent))
	for r := range parent {
		members = append(members, r)
	}
	sort.Slice(members, func(i, j int) bool { return members[i].String() < members[j].String() })
	for _, r := range members {
		root := find(r)
		if _, ok := name[root]; !ok {
			name[root] = r.String()
		}
	}
	rels := make([]hypergraph.Relation, len(s.Tables))
	for i, t := range s.Tables {
		rels[i] = hypergraph.Relation{Name: t.Name, Public: t.Public, Attrs: map[string]string{}}
	}
	for _, r := range members {
		i := -1
		for k, t := range s.Tables {
			if t.Name == r.Table {
				i = k
			}
		}
		if i < 0 {
			return nil, fmt.Errorf("join column %s: no table %q", r, r.Table)
		}
		attr := name[find(r)]
		if prev, ok := rels[i].Attrs[attr]; ok && prev != r.Column {
			return nil, fmt.Errorf("join columns %s.%s and %s are equated within one table (through the join's transitive closure); use one of them", r.Table, prev, r)
		}
		rels[i].Attrs[attr] = r.Column
	}
	h, err := hypergraph.New(rels)
	if err != nil {
		return nil, err
	}
	if len(s.Tables) > 1 && len(h.Components(h.All())) > 1 {
		return nil, fmt.Errorf("table(s) %s not connected to %s by join equalities (a cross product is not supported)", strings.Join(h.Names(h.Components(h.All())[1]), ", "), h.Relation(0).Name)
	}
	return h, nil
}
