package score

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/synth-dp/synth/spec"
)

// TablesDir is the folder of a tables release's table files, inside the
// release folder: DIR/tables/<table>.parquet.
const TablesDir = "tables"

// Edge is one parent→child edge of the privacy unit's ownership tree: the
// child's foreign key columns FK equal the parent's primary key columns PK
// (same order), as declared in the spec's join.
type Edge struct {
	Parent, Child string
	FK, PK        []string
}

// Tree is the ownership tree of a spec's privacy unit, restricted to the
// private tables a tables release writes: every private table reached from
// the unit through join edges child.fk = parent.primary_key that has a
// released column or a child (leaves without a released column are pruned,
// repeatedly). It is a public function of the spec.
type Tree struct {
	// Unit is the privacy unit, the root.
	Unit string
	// Tables lists the tree's tables, parents before children (breadth
	// first from the unit, children in spec order).
	Tables []string
	// Edges lists the parent→child edges, in the order of their children
	// in Tables.
	Edges []Edge
	// Columns maps a table to the released column positions (release
	// order) it holds: its own columns and those of the public lookup
	// tables folded into it ([spec.Spec.Folding]).
	Columns map[string][]int
	// Members maps a table to the tables its rows are read from: itself
	// first, then the public tables folded into it.
	Members map[string][]string
	// Unplaced lists released column positions that no tree table holds
	// (a public table not folded into a private one): table files cannot
	// carry them, so they are scored on the flat join only.
	Unplaced []int
}

// ErrNoTree wraps the refusal of a spec that has no tables release: no
// privacy unit, or fewer than two private tables on its ownership tree.
var ErrNoTree = errors.New("score: the spec has no ownership tree of two or more private tables")

// OwnershipTree returns the ownership tree of s's privacy unit (see
// [Tree]). It reads the spec only.
func OwnershipTree(s *spec.Spec) (*Tree, error) {
	unit := s.Privacy.Unit
	if unit == "" {
		return nil, fmt.Errorf("%w: privacy.unit is not set", ErrNoTree)
	}
	if t := s.Table(unit); t == nil || t.Public {
		return nil, fmt.Errorf("%w: privacy.unit %q is not a private table", ErrNoTree, unit)
	}
	private := func(name string) bool { t := s.Table(name); return t != nil && !t.Public }
	// Edges: the join equalities between two private tables, grouped by
	// (child, parent), where the parent's side covers its primary key.
	type pair struct{ child, parent string }
	fk := map[pair]map[string]string{} // parent column -> child column
	for _, eq := range s.Join {
		for _, o := range [][2]spec.ColumnRef{{eq.Left, eq.Right}, {eq.Right, eq.Left}} {
			c, p := o[0], o[1]
			if !private(c.Table) || !private(p.Table) || !slices.Contains(s.Table(p.Table).PrimaryKey, p.Column) {
				continue
			}
			k := pair{c.Table, p.Table}
			if fk[k] == nil {
				fk[k] = map[string]string{}
			}
			fk[k][p.Column] = c.Column
		}
	}
	tr := &Tree{Unit: unit, Columns: map[string][]int{}, Members: map[string][]string{}}
	seen := map[string]bool{unit: true}
	queue := []string{unit}
	var all []string
	var edges []Edge
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		all = append(all, p)
		pk := s.Table(p).PrimaryKey
		for _, t := range s.Tables {
			m := fk[pair{t.Name, p}]
			if t.Public || seen[t.Name] || len(pk) == 0 || len(m) != len(pk) {
				continue
			}
			e := Edge{Parent: p, Child: t.Name, PK: slices.Clone(pk)}
			for _, c := range pk {
				e.FK = append(e.FK, m[c])
			}
			seen[t.Name] = true
			edges = append(edges, e)
			queue = append(queue, t.Name)
		}
	}
	// Released columns: a private table's own, or the folded lookups'.
	f, err := s.Folding()
	if err != nil {
		return nil, err
	}
	root := map[string]string{} // member table -> the tree table it is folded into
	for _, g := range f.Groups() {
		if seen[g.Members[0]] {
			for _, m := range g.Members {
				root[m] = g.Members[0]
			}
			tr.Members[g.Members[0]] = slices.Clone(g.Members)
		}
	}
	for _, t := range all {
		if tr.Members[t] == nil {
			tr.Members[t] = []string{t}
		}
	}
	for i, r := range s.Release.Columns {
		if t, ok := root[r.Table]; ok {
			tr.Columns[t] = append(tr.Columns[t], i)
		} else {
			tr.Unplaced = append(tr.Unplaced, i)
		}
	}
	// Prune leaves without released columns, repeatedly.
	keep := map[string]bool{}
	for _, t := range all {
		keep[t] = true
	}
	for changed := true; changed; {
		changed = false
		for _, t := range all {
			if !keep[t] || t == unit || len(tr.Columns[t]) > 0 {
				continue
			}
			leaf := true
			for _, e := range edges {
				if e.Parent == t && keep[e.Child] {
					leaf = false
				}
			}
			if leaf {
				keep[t], changed = false, true
			}
		}
	}
	for _, t := range all {
		if keep[t] {
			tr.Tables = append(tr.Tables, t)
		} else {
			delete(tr.Members, t)
		}
	}
	for _, e := range edges {
		if keep[e.Child] {
			tr.Edges = append(tr.Edges, e)
		}
	}
	if len(tr.Tables) < 2 {
		return nil, fmt.Errorf("%w: privacy.unit %s owns %d released table(s)", ErrNoTree, unit, len(tr.Tables))
	}
	return tr, nil
}

// ParentEdge returns the edge whose child is table, and false for the unit.
func (tr *Tree) ParentEdge(table string) (Edge, bool) {
	for _, e := range tr.Edges {
		if e.Child == table {
			return e, true
		}
	}
	return Edge{}, false
}

// Entities is one table of a tables release, binned: row i holds the bins
// Rows[i] of the released columns Cols (positions in release order), and
// its parent is row Parent[i] of the parent table on the ownership tree
// (Parent is nil for the unit).
type Entities struct {
	Table  string
	Cols   []int
	Rows   [][]int
	Parent []int
}

// Tables is a tables release, binned: one [Entities] per table of the
// tree, in [Tree.Tables] order.
type Tables struct {
	Tree   *Tree
	Tables []*Entities
}

// Get returns the entities of table name, or nil.
func (ts *Tables) Get(name string) *Entities {
	for _, e := range ts.Tables {
		if e.Table == name {
			return e
		}
	}
	return nil
}

// keyOf joins key column values into one map key.
func keyOf(v []sql.NullString) (string, bool) {
	parts := make([]string, len(v))
	for i, x := range v {
		if !x.Valid {
			return "", false
		}
		parts[i] = x.String
	}
	return strings.Join(parts, "\x1f"), true
}

// entityQuery describes how to read one table: the SQL selecting its
// primary key columns, then its foreign key columns, then its released
// columns, then its drop columns, all as text.
type entityQuery struct {
	sql      string
	nPK, nFK int
	cols     []*spec.Column // released
	drop     []*spec.Column
	policies bool
	where    string // the file or table named in errors
}

// readEntities reads the rows of q and links each to its parent row by
// parentKeys (nil for the unit). With orphans, a row whose parent key is
// not a parent's primary key is skipped (the true data: such a row
// belongs to no unit); without, it is an error (a synthetic table whose
// foreign key does not resolve). A repeated primary key is an error.
func readEntities(ctx context.Context, db *sql.DB, q entityQuery, parentKeys map[string]int, orphans bool) (rows [][]int, parent []int, keys map[string]int, err error) {
	rs, err := db.QueryContext(ctx, q.sql)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("score: %s: %w", q.where, err)
	}
	defer rs.Close()
	raw := make([]sql.NullString, q.nPK+q.nFK+len(q.cols)+len(q.drop))
	dst := make([]any, len(raw))
	for i := range raw {
		dst[i] = &raw[i]
	}
	keys = map[string]int{}
	line := 0
	for rs.Next() {
		line++
		if err := rs.Scan(dst...); err != nil {
			return nil, nil, nil, fmt.Errorf("score: %s: %w", q.where, err)
		}
		r, ok, err := binRow(raw[q.nPK+q.nFK:], q.cols, q.drop, q.policies)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s row %d: %w", q.where, line, err)
		}
		if !ok {
			continue
		}
		p := -1
		if parentKeys != nil {
			fk, valid := keyOf(raw[q.nPK : q.nPK+q.nFK])
			idx, found := parentKeys[fk]
			if !valid || !found {
				if orphans {
					continue
				}
				return nil, nil, nil, fmt.Errorf("score: %s row %d: foreign key %s does not resolve to a parent's primary key", q.where, line, strings.ReplaceAll(fk, "\x1f", ","))
			}
			p = idx
		}
		k, valid := keyOf(raw[:q.nPK])
		if q.nPK == 0 {
			// No declared primary key (a leaf): nothing to check.
		} else if !valid {
			return nil, nil, nil, fmt.Errorf("score: %s row %d: empty primary key", q.where, line)
		}
		if _, dup := keys[k]; dup {
			return nil, nil, nil, fmt.Errorf("score: %s row %d: primary key %s is repeated", q.where, line, strings.ReplaceAll(k, "\x1f", ","))
		}
		keys[k] = len(rows)
		rows = append(rows, r)
		if parentKeys != nil {
			parent = append(parent, p)
		}
	}
	if err := rs.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("score: %s: %w", q.where, err)
	}
	return rows, parent, keys, nil
}

func castText(table, col string) string {
	return "CAST(" + ident(table) + "." + ident(col) + " AS VARCHAR)"
}

// TrueTables reads the true tables of s's ownership tree from the raw
// source files, binned as [Truth] bins the join: each table's rows over
// its released columns (public lookups joined in; a row without its
// lookup match is skipped, as the join skips it), with the out_of_domain
// policies of its and its lookups' columns applied, and only the rows
// owned by a unit (a row whose parent was dropped or does not exist is
// skipped with its subtree).
func TrueTables(ctx context.Context, s *spec.Spec, tr *Tree) (*Tables, error) {
	db, err := open()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	released := map[spec.ColumnRef]bool{}
	for _, r := range s.Release.Columns {
		released[r] = true
	}
	out := &Tables{Tree: tr}
	keys := map[string]map[string]int{}
	for _, name := range tr.Tables {
		members := tr.Members[name]
		in := map[string]bool{}
		var from, sel, where []string
		for _, m := range members {
			in[m] = true
			from = append(from, readerFor(s.Table(m).Source)+" AS "+ident(m))
		}
		for _, eq := range s.Join {
			if in[eq.Left.Table] && in[eq.Right.Table] {
				where = append(where, ident(eq.Left.Table)+"."+ident(eq.Left.Column)+" = "+ident(eq.Right.Table)+"."+ident(eq.Right.Column))
			}
		}
		for _, c := range s.Table(name).PrimaryKey {
			sel = append(sel, castText(name, c))
		}
		e, hasParent := tr.ParentEdge(name)
		for _, c := range e.FK {
			sel = append(sel, castText(name, c))
		}
		q := entityQuery{nPK: len(s.Table(name).PrimaryKey), nFK: len(e.FK), policies: true, where: "table " + name + " (" + s.Table(name).Source + ")"}
		for _, p := range tr.Columns[name] {
			r := s.Release.Columns[p]
			sel = append(sel, castText(r.Table, r.Column))
			q.cols = append(q.cols, s.Column(r))
		}
		for _, m := range members {
			t := s.Table(m)
			for i := range t.Columns {
				c := &t.Columns[i]
				if c.Type != spec.Key && c.OutOfDomain == spec.OutOfDomainDrop && !released[spec.ColumnRef{Table: m, Column: c.Name}] {
					q.drop = append(q.drop, c)
					sel = append(sel, castText(m, c.Name))
				}
			}
		}
		q.sql = "SELECT " + strings.Join(sel, ", ") + " FROM " + strings.Join(from, ", ")
		if len(where) > 0 {
			q.sql += " WHERE " + strings.Join(where, " AND ")
		}
		var pk map[string]int
		if hasParent {
			pk = keys[e.Parent]
		}
		rows, parent, k, err := readEntities(ctx, db, q, pk, true)
		if err != nil {
			return nil, err
		}
		keys[name] = k
		out.Tables = append(out.Tables, &Entities{Table: name, Cols: slices.Clone(tr.Columns[name]), Rows: rows, Parent: parent})
	}
	return out, nil
}

// TablePath returns the file of table in the release folder dir.
func TablePath(dir, table string) string {
	return filepath.Join(dir, TablesDir, table+".parquet")
}

// HasTables reports whether the release folder dir holds a tables/
// folder.
func HasTables(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, TablesDir))
	return err == nil && st.IsDir()
}

// SyntheticTables reads the tables of a tables release from dir/tables/
// (see [TablePath]): each table's primary key columns, its foreign key
// columns to its parent (named as in the spec) and its released columns,
// named names[p] as in the flat file (names in release order, as
// [Synthetic] takes them), every value binned by spec.Column.Bin. A
// missing file or column, a value outside its domain, a repeated primary
// key of a parent or a foreign key that does not resolve is an error
// naming the file and row.
func SyntheticTables(ctx context.Context, s *spec.Spec, tr *Tree, dir string, names []string) (*Tables, error) {
	if len(names) != len(s.Release.Columns) {
		return nil, fmt.Errorf("score: %d column names for %d released columns", len(names), len(s.Release.Columns))
	}
	db, err := open()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	out := &Tables{Tree: tr}
	keys := map[string]map[string]int{}
	for _, name := range tr.Tables {
		path := TablePath(dir, name)
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("score: table %s: %w", name, err)
		}
		var sel []string
		for _, c := range s.Table(name).PrimaryKey {
			sel = append(sel, "CAST("+ident(c)+" AS VARCHAR)")
		}
		e, hasParent := tr.ParentEdge(name)
		for _, c := range e.FK {
			sel = append(sel, "CAST("+ident(c)+" AS VARCHAR)")
		}
		q := entityQuery{nPK: len(s.Table(name).PrimaryKey), nFK: len(e.FK), where: path}
		for _, p := range tr.Columns[name] {
			sel = append(sel, "CAST("+ident(names[p])+" AS VARCHAR)")
			q.cols = append(q.cols, s.Column(s.Release.Columns[p]))
		}
		q.sql = "SELECT " + strings.Join(sel, ", ") + " FROM " + readerFor(path)
		var pk map[string]int
		if hasParent {
			pk = keys[e.Parent]
		}
		rows, parent, k, err := readEntities(ctx, db, q, pk, false)
		if err != nil {
			return nil, err
		}
		keys[name] = k
		out.Tables = append(out.Tables, &Entities{Table: name, Cols: slices.Clone(tr.Columns[name]), Rows: rows, Parent: parent})
	}
	return out, nil
}
