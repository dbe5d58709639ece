package multi

import (
	"slices"

	"github.com/synth-dp/synth/relational"
	"github.com/synth-dp/synth/spec"
)

// The ownership rules below are those of relational's R2T (unitColumns in
// relational/instance.go), restated here on the exported query model: a
// join result belongs to the unit tuples its unit columns name only if the
// query's join follows every foreign key from its private tables up to the
// unit. TODO(issue 15): share one exported implementation with relational
// once issue 14 has landed.

// UnitColumn returns the column of q's join that holds the id of the unit
// (the unit relation's one-column primary key, or the last foreign key on
// the path to it) of every join result, after checking that q's join
// enforces the ownership, that every private table of q belongs to the
// unit, and that q references the unit at all.
func UnitColumn(s *spec.Spec, q *relational.Query, unit string) (spec.ColumnRef, error) {
	used, cols, err := UnitColumns(s, q, []string{unit})
	if err != nil {
		return spec.ColumnRef{}, err
	}
	if len(used) != 1 {
		return spec.ColumnRef{}, invalid("query %q does not reference unit %s", q.Text, unit)
	}
	return cols[0], nil
}

// UnitColumns finds, for every unit that q's tables reference, the column
// holding its id (see [UnitColumn]); used lists those units. Two or more
// used units mean that a join result references several unit tuples: the
// self-join case of Dong–Sun–Yi §5.
func UnitColumns(s *spec.Spec, q *relational.Query, units []string) (used []string, cols []spec.ColumnRef, err error) {
	qc := attrClasses(q.Joins)
	class := func(r spec.ColumnRef) string {
		if c, ok := qc[r]; ok {
			return c
		}
		return r.String()
	}
	inQuery := func(t string) bool { return slices.Contains(q.Tables, t) }
	for _, u := range units {
		t := s.Table(u)
		if t == nil {
			return nil, nil, invalid("unit %q is not a table of the spec", u)
		}
		if t.Public {
			return nil, nil, invalid("unit %q is public: the unit must be a private table", u)
		}
		if len(t.PrimaryKey) != 1 {
			return nil, nil, invalid("unit %q needs a one-column primary key (it has %d)", u, len(t.PrimaryKey))
		}
		pk := spec.ColumnRef{Table: u, Column: t.PrimaryKey[0]}
		var end *spec.ColumnRef
		for _, qt := range q.Tables {
			if s.Table(qt).Public {
				continue
			}
			var e spec.ColumnRef
			if qt == u {
				e = pk
			} else {
				paths := fkPaths(s, qt, u)
				if len(paths) == 0 {
					continue
				}
				if len(paths) > 1 {
					return nil, nil, invalid("query %q: table %s references unit %s along more than one foreign-key path", q.Text, qt, u)
				}
				for k, edge := range paths[0] {
					last := k == len(paths[0])-1
					if last && !inQuery(u) {
						e = edge.Child
						break
					}
					if !inQuery(edge.Parent.Table) || class(edge.Child) != class(edge.Parent) {
						return nil, nil, invalid("query %q: table %s references unit %s through %s = %s; add %s and that equality to the query's join",
							q.Text, qt, u, edge.Child, edge.Parent, edge.Parent.Table)
					}
					if last {
						e = pk
					}
				}
			}
			if end == nil {
				end = &e
			} else if class(*end) != class(e) {
				return nil, nil, invalid("query %q joins %s and %s, which reference different tuples of unit %s", q.Text, end, e, u)
			}
		}
		if end != nil {
			used = append(used, u)
			cols = append(cols, *end)
		}
	}
	if len(used) == 0 {
		return nil, nil, invalid("query %q references none of the units %v", q.Text, units)
	}
	for _, qt := range q.Tables {
		if s.Table(qt).Public {
			continue
		}
		owned := false
		for _, u := range used {
			if qt == u || len(fkPaths(s, qt, u)) > 0 {
				owned = true
			}
		}
		if !owned {
			return nil, nil, invalid("query %q: private table %s references none of the units %v by foreign keys", q.Text, qt, used)
		}
	}
	return used, cols, nil
}

type fkEdge struct{ Child, Parent spec.ColumnRef }

func fkEdges(s *spec.Spec) []fkEdge {
	isPK := func(r spec.ColumnRef) bool {
		tb := s.Table(r.Table)
		return tb != nil && len(tb.PrimaryKey) == 1 && tb.PrimaryKey[0] == r.Column
	}
	var out []fkEdge
	for _, j := range s.Join {
		switch {
		case isPK(j.Right) && !isPK(j.Left):
			out = append(out, fkEdge{j.Left, j.Right})
		case isPK(j.Left) && !isPK(j.Right):
			out = append(out, fkEdge{j.Right, j.Left})
		}
	}
	return out
}

// fkPaths lists the foreign-key paths from table t to table u (at most
// two: more than one is ambiguous anyway).
func fkPaths(s *spec.Spec, t, u string) [][]fkEdge {
	edges := fkEdges(s)
	var out [][]fkEdge
	var walk func(x string, path []fkEdge, seen map[string]bool)
	walk = func(x string, path []fkEdge, seen map[string]bool) {
		if len(out) > 1 {
			return
		}
		if x == u {
			out = append(out, slices.Clone(path))
			return
		}
		for _, e := range edges {
			if e.Child.Table == x && !seen[e.Parent.Table] {
				seen[e.Parent.Table] = true
				walk(e.Parent.Table, append(path, e), seen)
				delete(seen, e.Parent.Table)
			}
		}
	}
	walk(t, nil, map[string]bool{t: true})
	return out
}

// attrClasses maps every column of a join equality to the name of its
// equivalence class.
func attrClasses(joins []spec.JoinEq) map[spec.ColumnRef]string {
	parent := map[spec.ColumnRef]spec.ColumnRef{}
	var find func(spec.ColumnRef) spec.ColumnRef
	find = func(r spec.ColumnRef) spec.ColumnRef {
		p, ok := parent[r]
		if !ok {
			parent[r] = r
			return r
		}
		if p == r {
			return r
		}
		root := find(p)
		parent[r] = root
		return root
	}
	for _, j := range joins {
		a, b := find(j.Left), find(j.Right)
		if a != b {
			if b.String() < a.String() {
				a, b = b, a
			}
			parent[b] = a
		}
	}
	out := map[spec.ColumnRef]string{}
	for r := range parent {
		out[r] = find(r).String()
	}
	return out
}
