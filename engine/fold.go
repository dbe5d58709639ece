package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/synth-dp/synth/hypergraph"
)

// DuplicateKeyError reports a folded public table whose primary key is not
// unique: a tuple of the private table it is folded into could match
// several of its tuples, and folding would no longer map a neighbour to a
// neighbour. The check reads public data only.
type DuplicateKeyError struct {
	// Table is the public table.
	Table string
	// Columns are its primary key columns.
	Columns []string
	// Value is one duplicated key value, as text, per key column; the
	// smallest such value.
	Value []string
	// Count is the number of rows holding Value.
	Count int64
	// Null reports that Value holds a NULL key column (a private key must
	// have none); Count then counts the rows with that NULL key.
	Null bool
	// Reason, when set, replaces the folded lookup's explanation (a
	// private table's key, checked by [Engine.CheckPrimaryKey]).
	Reason string
}

// Error names the table and the key column(s), and for a public table
// the duplicated value and its count (a private table's are left out:
// see the comment inside).
func (e *DuplicateKeyError) Error() string {
	cols, val := e.Columns[0], fmt.Sprintf("%q", e.Value[0])
	what := "column"
	if len(e.Columns) > 1 {
		q := make([]string, len(e.Value))
		for i, v := range e.Value {
			q[i] = fmt.Sprintf("%q", v)
		}
		cols, val, what = "("+strings.Join(e.Columns, ", ")+")", "("+strings.Join(q, ", ")+")", "columns"
	}
	if e.Reason != "" {
		// A private table's key: the message names neither the value nor
		// its count. Error text travels beyond the custodian (CI logs,
		// tickets, a colleague's terminal), and a private key value with
		// the number of its rows is personal data (a customer id and how
		// many orders it has). The fields keep both for the custodian:
		// `synth inspect` prints them in its NON-PRIVATE section.
		if e.Null {
			return fmt.Sprintf("engine: table %s: primary key %s %s is NULL in some row (%s; `synth inspect` shows the rows' count in its custodian section)", e.Table, what, cols, e.Reason)
		}
		return fmt.Sprintf("engine: table %s: primary key %s %s is not unique: a value appears in more than one row (%s; `synth inspect` shows the value and its count in its custodian section)", e.Table, what, cols, e.Reason)
	}
	return fmt.Sprintf("engine: public table %s: primary key %s %s is not unique: value %s appears in %d rows "+
		"(the table is folded into a private table as a lookup, which needs a unique key; fix the data or the declared primary_key)",
		e.Table, what, cols, val, e.Count)
}

// Unwrap returns [ErrData].
func (e *DuplicateKeyError) Unwrap() error { return ErrData }

// Fold makes the folded relations of f available to the statistics
// methods: for every group of several tables ([hypergraph.Group]) it
// checks that each folded public table's primary key is unique in its data
// (a [*DuplicateKeyError] otherwise) and then creates a view named after the
// group, the natural join of its members on their shared join attributes
// in fold order. The view holds every column c of every member table m
// (except [RowColumn]) as [hypergraph.MemberColumn](m, c), and its bin
// column as [BinColumn] of that name, so that [Engine.MaxDegree],
// [Engine.MaxBoundaryCount], [Engine.JoinSize] and [Engine.Histogram] run
// unchanged on f.Folded() — histogram columns mapped by
// spec.FoldColumns. Groups of one table need nothing. The tables must have
// been loaded ([Engine.Load]) first; calling Fold again after a new Load
// refreshes the views.
//
// Join values are compared as the original join compares them (as text
// for an attribute whose columns have different SQL types in f.Original()),
// and the view's column for such an attribute holds that text, so that the
// folded join, its degrees and its boundary groups use the original join's
// equality. The key check groups by that same equality: a key is unique
// exactly when no tuple of the private table can match two of its rows.
//
// Only the key check depends on the data, and it reads public tables only;
// the views and their names depend on f alone.
func (e *Engine) Fold(ctx context.Context, f *hypergraph.Folding) error {
	if f == nil {
		return fmt.Errorf("%w: fold: no folding", ErrInvalid)
	}
	h := f.Original()
	mixed, err := e.mixedAttrs(ctx, h)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.passed = nil // a folded relation may be redefined
	e.mu.Unlock()
	fh := f.Folded()
	for gi, g := range f.Groups() {
		if !g.Folded() {
			continue
		}
		for _, st := range g.Steps {
			if err := e.checkKey(ctx, h.Relation(h.Index(st.Public)), st.Key, mixed); err != nil {
				return err
			}
		}
		q, sizes, err := e.foldView(ctx, h, fh.Relation(gi), g, mixed)
		if err != nil {
			return err
		}
		if _, err := e.db.ExecContext(ctx, e.d.replaceView(g.Name, q)); err != nil {
			return fmt.Errorf("engine: fold %s: %w", g.Name, err)
		}
		e.forget(g.Name)
		e.mu.Lock()
		e.sizes[g.Name] = sizes
		e.mu.Unlock()
		// Every public member joins on its key, checked unique above: the
		// view has at most one row per row of its private member, whose
		// declared key (under its member column names) is a key of the
		// view. It only chooses count plans ([buildPlan]).
		var private []string
		for _, name := range g.Members {
			if !h.Relation(h.Index(name)).Public {
				private = append(private, name)
			}
		}
		if len(private) == 1 {
			e.inheritKeys(g.Name, private[0], func(c string) string { return hypergraph.MemberColumn(private[0], c) })
		} else {
			e.dropKeys(g.Name)
		}
	}
	return nil
}

// checkKey returns a [*DuplicateKeyError] when two rows of the public
// relation r hold the same non-NULL value of the key columns (rows with a
// NULL key column join nothing).
func (e *Engine) checkKey(ctx context.Context, r hypergraph.Relation, key []string, mixed map[string]bool) error {
	d := e.d
	attrOf := map[string]string{}
	for a, c := range r.Attrs {
		attrOf[c] = a
	}
	var sel, labels, conds []string
	for k, c := range key {
		a, ok := attrOf[c]
		if !ok {
			return fmt.Errorf("%w: fold: key column %s.%s holds no join attribute", ErrInvalid, r.Name, c)
		}
		alias := d.ident(fmt.Sprintf("k%d", k))
		sel = append(sel, joinValue(d, c, mixed[a])+" AS "+alias)
		labels = append(labels, d.toText(alias))
		conds = append(conds, d.ident(c)+" IS NOT NULL")
	}
	q := "SELECT " + strings.Join(labels, ", ") + ", CAST(c AS BIGINT) FROM (SELECT " + strings.Join(sel, ", ") +
		", count(*) AS c FROM " + d.ident(r.Name) + " WHERE " + strings.Join(conds, " AND ") +
		" GROUP BY " + strings.Join(seq(len(sel)), ", ") + ") AS g WHERE c > 1 ORDER BY " + strings.Join(seq(len(labels)), ", ") + " LIMIT 1"
	vals := make([]string, len(key))
	var n int64
	dst := make([]any, 0, len(key)+1)
	for i := range vals {
		dst = append(dst, &vals[i])
	}
	switch err := e.db.QueryRowContext(ctx, q).Scan(append(dst, &n)...); {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("engine: fold: checking the primary key of %s: %w", r.Name, err)
	}
	return &DuplicateKeyError{Table: r.Name, Columns: slices.Clone(key), Value: vals, Count: n}
}

// foldView is the SELECT of group g's view and the declared sizes of its
// binned columns. rel is g's relation in the folded hypergraph.
func (e *Engine) foldView(ctx context.Context, h *hypergraph.Hypergraph, rel hypergraph.Relation, g hypergraph.Group, mixed map[string]bool) (string, map[string]int, error) {
	d := e.d
	// The view column of each attribute, and whether it holds text.
	asText := map[string]bool{}
	for a, c := range rel.Attrs {
		asText[c] = mixed[a]
	}
	var cols []string
	var from strings.Builder
	sizes := map[string]int{}
	holder := map[string]string{} // attribute -> "tK" alias.column of its first member
	for k, name := range g.Members {
		r := h.Relation(h.Index(name))
		alias := fmt.Sprintf("t%d", k)
		types, err := e.columnTypes(ctx, name)
		if err != nil {
			return "", nil, err
		}
		for _, c := range slices.Sorted(maps.Keys(types)) {
			if c == rowColumn {
				continue
			}
			out := hypergraph.MemberColumn(name, c)
			if b, ok := strings.CutPrefix(c, binPrefix); ok {
				out = BinColumn(hypergraph.MemberColumn(name, b))
			}
			cols = append(cols, joinExpr(d, alias+"."+d.ident(c), asText[out])+" AS "+d.ident(out))
		}
		if n, ok := e.sizesOf(name); ok {
			for c, s := range n {
				sizes[hypergraph.MemberColumn(name, c)] = s
			}
		}
		var on []string
		for _, a := range slices.Sorted(maps.Keys(r.Attrs)) {
			x := alias + "." + d.ident(r.Attrs[a])
			if prev, ok := holder[a]; ok {
				on = append(on, joinExpr(d, x, mixed[a])+" = "+joinExpr(d, prev, mixed[a]))
			} else {
				holder[a] = x
			}
		}
		t := d.ident(name) + " AS " + alias
		switch {
		case k == 0:
			from.WriteString(t)
		case len(on) == 0:
			// Cannot happen: a folded relation joins on its key.
			return "", nil, fmt.Errorf("%w: fold %s: %s shares no attribute with the tables before it", ErrInvalid, g.Name, name)
		default:
			from.WriteString(" JOIN " + t + " ON " + strings.Join(on, " AND "))
		}
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM " + from.String(), sizes, nil
}

// sizesOf returns the declared sizes of a loaded table's non-key columns.
func (e *Engine) sizesOf(table string) (map[string]int, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.sizes[table]
	return maps.Clone(n), ok
}
