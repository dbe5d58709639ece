package spec

import "slices"

// Orphans is the policy for foreign-key rows that reference no row of
// their parent table (join.orphans).
type Orphans string

// The orphan policies.
const (
	// OrphansError (the default) refuses a release whose data holds an
	// orphan: a foreign key that is empty (NULL) or matches no row of the
	// parent table.
	OrphansError Orphans = "error"
	// OrphansDrop releases the join without the orphans (they join
	// nothing, so they are not in it).
	OrphansDrop Orphans = "drop"
)

// ForeignKey is a declared foreign key: columns of Child, equated by the
// join to the whole primary key of Parent.
type ForeignKey struct {
	// Child is the referencing table, Columns its foreign key columns.
	Child   string
	Columns []string
	// Parent is the referenced table, Key its primary key columns, in the
	// order of Columns.
	Parent string
	Key    []string
}

// ForeignKeys returns the foreign keys the join declares: for each pair of
// tables, the equalities between them whose columns on one side are
// exactly that table's primary key (one equality per key column) make the
// other side a foreign key referencing it. When both sides are primary
// keys (a one-to-one join), the left side of the first equality (the child
// of an SDV relationship) references the right. Equalities that reach no
// whole primary key declare no foreign key. The order follows the join.
func (s *Spec) ForeignKeys() []ForeignKey {
	type pair struct{ a, b string }
	eqs := map[pair][]JoinEq{}
	var order []pair
	for _, eq := range s.Join {
		p := pair{eq.Left.Table, eq.Right.Table}
		if _, ok := eqs[p]; !ok {
			if _, ok := eqs[pair{p.b, p.a}]; ok {
				p = pair{p.b, p.a}
				eq = JoinEq{Left: eq.Right, Right: eq.Left}
			} else {
				order = append(order, p)
			}
		}
		eqs[p] = append(eqs[p], eq)
	}
	// references reports whether the right sides of es are exactly the
	// primary key of their table, and returns both sides in key order.
	references := func(es []JoinEq, left bool) ([]string, []string, bool) {
		side := func(e JoinEq) (ColumnRef, ColumnRef) {
			if left {
				return e.Left, e.Right
			}
			return e.Right, e.Left
		}
		_, parent := side(es[0])
		t := s.Table(parent.Table)
		if t == nil || len(t.PrimaryKey) != len(es) {
			return nil, nil, false
		}
		cols := make([]string, len(t.PrimaryKey))
		for _, e := range es {
			c, p := side(e)
			i := slices.Index(t.PrimaryKey, p.Column)
			if i < 0 || cols[i] != "" {
				return nil, nil, false
			}
			cols[i] = c.Column
		}
		return cols, slices.Clone(t.PrimaryKey), true
	}
	var out []ForeignKey
	for _, p := range order {
		es := eqs[p]
		if cols, key, ok := references(es, true); ok {
			out = append(out, ForeignKey{Child: p.a, Columns: cols, Parent: p.b, Key: key})
		} else if cols, key, ok := references(es, false); ok {
			out = append(out, ForeignKey{Child: p.b, Columns: cols, Parent: p.a, Key: key})
		}
	}
	return out
}
