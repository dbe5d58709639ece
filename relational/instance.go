package relational

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/residual"
	"github.com/synth-dp/synth/spec"
)

// DB is the SQL engine the mechanisms read the private tables through;
// *engine.Engine satisfies it. Every private statistic is an aggregate
// query over the loaded tables or over views of them.
type DB interface {
	Parser
	KeyTexter
	residual.BoundaryCounter
	// CreateView creates or replaces a view of the engine's work schema.
	CreateView(ctx context.Context, name, query string) error
	// DropView drops a view if it exists.
	DropView(ctx context.Context, name string) error
	// Aggregate runs an aggregate query and scans its rows.
	Aggregate(ctx context.Context, q string, args []any, scan func(*sql.Rows) error) error
}

// viewPrefix starts the names of the selection views (the engine's
// reserved prefix, so no spec table can collide with them).
const viewPrefix = "_synth_answer_"

var viewSeq atomic.Int64

// Group is one group of a GROUP BY query: a value of every grouping column,
// taken from the column's declared domain. The empty group stands for the
// whole query.
type Group []GroupValue

// GroupValue is the value of one grouping column.
type GroupValue struct {
	// Column is the grouping column.
	Column spec.ColumnRef
	// Value is the value as text ("true"/"false" for booleans).
	Value string
}

func (g GroupValue) lit(c *spec.Column) Lit {
	switch c.Type {
	case spec.Integer:
		return Lit{SQL: g.Value}
	case spec.Boolean:
		return Lit{SQL: strings.ToUpper(g.Value)}
	}
	return Lit{SQL: sqlString(g.Value)}
}

// Groups lists the groups of q from the declared domains of its GROUP BY
// columns (never from the data), in domain order, the first column
// slowest; one empty group when q has no GROUP BY.
func Groups(s *spec.Spec, q *Query) []Group {
	out := []Group{nil}
	for _, ref := range q.GroupBy {
		c := s.Column(ref)
		var vals []string
		switch c.Type {
		case spec.Categorical:
			vals = c.Values
		case spec.Boolean:
			vals = []string{"false", "true"}
		case spec.Integer:
			for v := int64(c.Min); v <= int64(c.Max); v++ {
				vals = append(vals, strconv.FormatInt(v, 10))
			}
		}
		var next []Group
		for _, g := range out {
			for _, v := range vals {
				next = append(next, append(slices.Clone(g), GroupValue{Column: ref, Value: v}))
			}
		}
		out = next
	}
	return out
}

// instance is the selected sub-instance of one query and group: one view
// per table holding the rows that pass the table's selection and the
// group's values.
type instance struct {
	db    DB
	s     *spec.Spec
	q     *Query
	views []string // per q.Tables
	h     *hypergraph.Hypergraph
	keys  Keys // how the join's keys compare
}

// newInstance creates the selection views of q restricted to group g. The
// caller must call close.
func newInstance(ctx context.Context, db DB, s *spec.Spec, q *Query, g Group) (*instance, error) {
	keys, err := QueryKeys(ctx, db, s, q)
	if err != nil {
		return nil, err
	}
	in := &instance{db: db, s: s, q: q, keys: keys}
	n := viewSeq.Add(1)
	where := map[string][]Pred{}
	for t, p := range q.Where {
		where[t] = append(where[t], p)
	}
	for _, v := range g {
		where[v.Column.Table] = append(where[v.Column.Table], CmpPred{Col: v.Column, Op: "=", V: v.lit(s.Column(v.Column))})
	}
	bare := func(r spec.ColumnRef) string { return ident(r.Column) }
	for i, t := range q.Tables {
		name := fmt.Sprintf("%s%d_%d", viewPrefix, n, i)
		body := "SELECT * FROM " + ident(t)
		if ps := where[t]; len(ps) > 0 {
			body += " WHERE " + PredSQL(db, s, AndPred{Terms: ps}, bare)
		}
		if err := db.CreateView(ctx, name, body); err != nil {
			in.close()
			return nil, err
		}
		in.views = append(in.views, name)
	}
	h, err := in.hypergraph()
	if err != nil {
		in.close()
		return nil, err
	}
	in.h = h
	return in, nil
}

// close drops the views.
func (in *instance) close() {
	for _, v := range in.views {
		_ = in.db.DropView(context.Background(), v)
	}
	in.views = nil
}

// attrClasses returns, for every column in a join equality of q, the name
// of its equivalence class (the smallest member, as table.column).
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

// hypergraph is the join of the selection views.
func (in *instance) hypergraph() (*hypergraph.Hypergraph, error) {
	cls := attrClasses(in.q.Joins)
	rels := make([]hypergraph.Relation, len(in.q.Tables))
	for i, t := range in.q.Tables {
		rels[i] = hypergraph.Relation{Name: in.views[i], Public: in.s.Table(t).Public, Attrs: map[string]string{}}
	}
	for ref, a := range cls {
		i := slices.Index(in.q.Tables, ref.Table)
		if prev, ok := rels[i].Attrs[a]; ok && prev != ref.Column {
			return nil, unsupported("columns %s.%s and %s are equated within one table", ref.Table, prev, ref)
		}
		rels[i].Attrs[a] = ref.Column
	}
	return hypergraph.New(rels)
}

// alias is the SQL alias of table i in the join.
func alias(i int) string { return "t" + strconv.Itoa(i) }

// col renders a column of the join.
func (in *instance) col(r spec.ColumnRef) string {
	return alias(slices.Index(in.q.Tables, r.Table)) + "." + ident(r.Column)
}

// fromWhere is the FROM … WHERE … of the join of the views.
func (in *instance) fromWhere() string {
	from := make([]string, len(in.views))
	for i, v := range in.views {
		from[i] = ident(v) + " AS " + alias(i)
	}
	var conds []string
	for _, j := range in.q.Joins {
		conds = append(conds, JoinSQL(in.keys, in.s, j, in.col))
	}
	s := " FROM " + strings.Join(from, ", ")
	if len(conds) > 0 {
		s += " WHERE " + strings.Join(conds, " AND ")
	}
	return s
}

// psi is the SQL of one join result's contribution ψ.
func (in *instance) psi() string {
	if in.q.Agg == Count {
		return "1"
	}
	return "CAST(" + in.q.Expr.sql(in.col) + " AS DOUBLE PRECISION)"
}

// answer is the true answer Q(I) (a private value).
func (in *instance) answer(ctx context.Context) (float64, error) {
	var v sql.NullFloat64
	q := "SELECT CAST(SUM(" + in.psi() + ") AS DOUBLE PRECISION)" + in.fromWhere()
	err := in.db.Aggregate(ctx, q, nil, func(r *sql.Rows) error { return r.Scan(&v) })
	if err != nil {
		return 0, err
	}
	return v.Float64, nil
}

// rs is RS^β of the join count of the selected sub-instance (a private
// value). ok is false when every relation is public.
func (in *instance) rs(ctx context.Context, beta float64) (rs float64, ok bool, err error) {
	sens, err := residual.Compute(ctx, in.h, in.db, beta)
	if errors.Is(err, residual.ErrNoPrivate) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return sens.RS, true, nil
}

// Quantum returns the public grid g on which R2T measures the terms of a
// SUM whose terms are bounded by B in absolute value:
// g = 2^(⌈log₂ B⌉ − 20), so a term takes at most about 2²⁰ grid steps.
// COUNT(*) has g = 1 (every term is 1).
func Quantum(agg Agg, bound float64) float64 {
	if agg == Count {
		return 1
	}
	return math.Ldexp(1, int(math.Ceil(math.Log2(bound)))-20)
}

// contributions groups the join results by their units (one column per
// unit, unitCols in the order of the units) and returns, per combination
// of unit ids, the total ψ in units of the grid g = quantum: each term is
// rounded to a whole number of grid steps in SQL and the steps are summed
// as integers, so every ψ is an integer, exact in float64 below 2⁵³, and
// does not depend on the order of summation. Ids are dense per unit, from
// 0.
func (in *instance) contributions(ctx context.Context, unitCols []spec.ColumnRef, quantum float64) ([]Contribution, []int, error) {
	k := len(unitCols)
	if err := in.keys.learn(ctx, in.s, unitCols); err != nil {
		return nil, nil, err
	}
	sel := make([]string, k)
	for i, c := range unitCols {
		sel[i] = in.keys.Group(c, in.col(c))
	}
	term := "1"
	if in.q.Agg == Sum {
		term = "CAST(round(" + in.psi() + " / " + floatLit(quantum) + ") AS BIGINT)"
	}
	q := "SELECT " + strings.Join(sel, ", ") + ", CAST(SUM(" + term + ") AS DOUBLE PRECISION)" + in.fromWhere() +
		" GROUP BY " + strings.Join(seq(k), ", ")
	ids := make([]map[string]int, k)
	for i := range ids {
		ids[i] = map[string]int{}
	}
	var out []Contribution
	keys := make([]sql.NullString, k)
	dest := make([]any, k+1)
	for i := range keys {
		dest[i] = &keys[i]
	}
	var psi float64
	dest[k] = &psi
	err := in.db.Aggregate(ctx, q, nil, func(r *sql.Rows) error {
		if err := r.Scan(dest...); err != nil {
			return err
		}
		c := Contribution{Units: make([]int, k), Psi: psi}
		for i, key := range keys {
			id, ok := ids[i][key.String]
			if !ok {
				id = len(ids[i])
				ids[i][key.String] = id
			}
			c.Units[i] = id
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	counts := make([]int, k)
	for i := range ids {
		counts[i] = len(ids[i])
	}
	return out, counts, nil
}

func seq(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i + 1)
	}
	return out
}

func ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// KeyTexter renders the expression a key column is compared on: its
// text, the rule every statistic of the engine follows ([engine.Engine.KeyText]
// states it and why the sensitivity bounds need it). Comparing raw columns
// instead would let the SQL engine cast text to BIGINT ("07" = 7) and join
// rows the residual sensitivity, computed by the engine, keeps apart; it
// would also make a selection's meaning depend on the storage.
// *engine.Engine implements it.
type KeyTexter interface {
	// KeyText returns the SQL expression on which the key held in the
	// column expression x is compared.
	KeyText(x string) string
}

// KeyStorage is implemented by a DB that tells how it stores a loaded
// column (*engine.Engine): whether two key columns may be compared as
// stored instead of as text (see [Keys]).
type KeyStorage interface {
	// StoredAsInteger reports whether the column of the loaded table is
	// stored as an integer that compares exactly as its canonical text.
	StoredAsInteger(ctx context.Context, table, column string) (bool, error)
}

// Keys is how the key columns of one query compare: through KeyText (the
// engine's rule), except that an equality between two key columns both
// stored as integers compares them as stored, and a unit column stored as
// an integer is grouped as stored. That is the same join and the same
// grouping as the text form on every instance — a stored integer key is
// canonical and an integer's text is an injective function of it (the
// rule is stated once, at [engine.Engine.KeyText]; TestKeysNativeEqualsText
// compares both forms on random instances) — and it is several times
// cheaper: on TPC-H SF 1 the R2T paper's Q18 (customer ⋈ orders ⋈
// lineitem, unit customer) spent most of its time hashing key texts.
// Selections on key columns still compare the text (a literal '07' must
// not match the integer 7). The zero value compares every key as text.
type Keys struct {
	KeyTexter
	integer map[spec.ColumnRef]bool
}

// QueryKeys returns how the key columns of q compare on db: which of the
// key columns of q's joins, and of more (unit columns, say), db stores as
// integers (asked through [KeyStorage]; with a db without it every key
// compares as text). The tables must be loaded.
func QueryKeys(ctx context.Context, db KeyTexter, s *spec.Spec, q *Query, more ...spec.ColumnRef) (Keys, error) {
	k := Keys{KeyTexter: db, integer: map[spec.ColumnRef]bool{}}
	var refs []spec.ColumnRef
	for _, j := range q.Joins {
		refs = append(refs, j.Left, j.Right)
	}
	if err := k.learn(ctx, s, append(refs, more...)); err != nil {
		return Keys{}, err
	}
	return k, nil
}

// learn asks how the key columns among refs are stored, once each.
func (k Keys) learn(ctx context.Context, s *spec.Spec, refs []spec.ColumnRef) error {
	ks, ok := k.KeyTexter.(KeyStorage)
	if !ok {
		return nil
	}
	for _, r := range refs {
		if _, done := k.integer[r]; done {
			continue
		}
		if c := s.Column(r); c == nil || c.Type != spec.Key {
			continue
		}
		in, err := ks.StoredAsInteger(ctx, r.Table, r.Column)
		if err != nil {
			return fmt.Errorf("relational: how key %s is stored: %w", r, err)
		}
		k.integer[r] = in
	}
	return nil
}

// native reports whether the equality of the key columns l and r may
// compare them as stored: both are stored as integers.
func (k Keys) native(l, r spec.ColumnRef) bool { return k.integer[l] && k.integer[r] }

// Group returns the expression on which the key column r, held in the
// column expression x, is grouped: x itself when it is stored as an
// integer (the same groups as its text, and the same text once scanned
// into a Go string), else its KeyText.
func (k Keys) Group(r spec.ColumnRef, x string) string {
	if k.integer[r] {
		return x
	}
	return k.KeyText(x)
}

// JoinSQL renders the join equality j of the spec s with col giving each
// column's (qualified, quoted) expression: both sides through k's
// KeyText when either column is a key, as every statistic of the engine
// compares join values — or, when k is a [Keys] that knows both columns
// are keys stored as integers, the columns as stored, which is the same
// equality. Packages building their own joins (relational/multi) use it so
// that one tuple reaches the units and rows the sensitivity bounds say.
func JoinSQL(k KeyTexter, s *spec.Spec, j spec.JoinEq, col func(spec.ColumnRef) string) string {
	l, r := col(j.Left), col(j.Right)
	if lc, rc := s.Column(j.Left), s.Column(j.Right); (lc != nil && lc.Type == spec.Key) || (rc != nil && rc.Type == spec.Key) {
		if kk, ok := k.(Keys); ok && lc != nil && rc != nil && lc.Type == spec.Key && rc.Type == spec.Key && kk.native(j.Left, j.Right) {
			return l + " = " + r
		}
		l, r = k.KeyText(l), k.KeyText(r)
	}
	return l + " = " + r
}

// PredSQL renders the selection p with col giving each column's expression,
// key columns compared through k's KeyText.
func PredSQL(k KeyTexter, s *spec.Spec, p Pred, col func(spec.ColumnRef) string) string {
	return p.sql(func(r spec.ColumnRef) string { return cmpCol(k, s, r, col(r)) })
}

// ExprSQL renders the summed expression e with col giving each column's
// expression; every column is cast to DOUBLE PRECISION first (see
// ColExpr).
func ExprSQL(e Expr, col func(spec.ColumnRef) string) string { return e.sql(col) }

// cmpCol is the column expression x of column r as selections compare it:
// its key text for a key column (see [KeyTexter]), the stored value
// otherwise.
func cmpCol(k KeyTexter, s *spec.Spec, r spec.ColumnRef, x string) string {
	if c := s.Column(r); c != nil && c.Type == spec.Key {
		return k.KeyText(x)
	}
	return x
}

// fkEdge is one foreign key of the spec's join: Child = Parent, Parent the
// parent table's one-column primary key.
type fkEdge struct{ Child, Parent spec.ColumnRef }

// fkEdges lists the foreign keys of the spec's join.
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

// references reports whether table t reaches table u through foreign keys
// of the spec's join (child column = parent's one-column primary key).
func references(s *spec.Spec, t, u string) bool { return len(fkPaths(s, t, u)) > 0 }

// unitColumns finds, for every unit, the column of the join that holds the
// unit's id of each join result, and checks that the query's join enforces
// the ownership: every private query table that references the unit
// through the spec's foreign keys must be joined along that path (every
// table on it in the query, every foreign key an equality of the query)
// up to the unit's key or to the last foreign key, and all these endpoints
// must be one join attribute. Then every private tuple of a join result
// belongs to the unit its unit column names, so deleting a unit deletes
// exactly the join results it owns — the structure R2T's LP truncation
// assumes. A unit that no query table references is left out (deleting it
// cannot change the query).
func unitColumns(s *spec.Spec, q *Query, units []string) (used []string, cols []spec.ColumnRef, err error) {
	return UnitColumns(s, q, units)
}

// UnitColumns is the ownership check of user-level DP shared by R2T and
// relational/multi: for every unit that q's tables reference, the column
// of the join holding its id (see unitColumns for the rules); used lists
// those units. Errors wrap [ErrInvalid].
func UnitColumns(s *spec.Spec, q *Query, units []string) (used []string, cols []spec.ColumnRef, err error) {
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
					return nil, nil, invalid("table %s references unit %s along more than one foreign-key path", qt, u)
				}
				for k, edge := range paths[0] {
					last := k == len(paths[0])-1
					if last && !inQuery(u) {
						e = edge.Child
						break
					}
					if !inQuery(edge.Parent.Table) || class(edge.Child) != class(edge.Parent) {
						return nil, nil, invalid("table %s references unit %s through %s = %s; add %s and that equality to the query's join so that every join result's unit is known",
							qt, u, edge.Child, edge.Parent, edge.Parent.Table)
					}
					if last {
						e = pk
					}
				}
			}
			if end == nil {
				end = &e
			} else if class(*end) != class(e) {
				return nil, nil, invalid("the query joins %s and %s, which reference different tuples of unit %s", end, e, u)
			}
		}
		if end != nil {
			used = append(used, u)
			cols = append(cols, *end)
		}
	}
	if len(used) == 0 {
		return nil, nil, invalid("the query references none of the units %v", units)
	}
	for _, qt := range q.Tables {
		if s.Table(qt).Public {
			continue
		}
		owned := false
		for _, u := range used {
			if qt == u || references(s, qt, u) {
				owned = true
			}
		}
		if !owned {
			return nil, nil, invalid("private table %s references none of the units %v by foreign keys: under user-level DP every private tuple belongs to a unit", qt, used)
		}
	}
	return used, cols, nil
}
