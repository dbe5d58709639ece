package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/synth-dp/synth/hypergraph"
)

// The statistics of a uniformized hierarchical release (Ghazi et al. Alg. 6
// and 7) stay in the engine, in the pattern of [Buckets]: every noisy
// degree query deg_{E,y}(t) is one SQL statement — a GROUP BY over the
// filtered relations of E — whose result is kept as a table of the values
// t (an id per value, in value order) and their degrees; the caller draws
// the noise in Go and loads back the bucket of the values whose bucket is
// not 1 (a small table joined in); the filtered relations of a degree query
// and of a sub-instance are views that semi-join each relation with those
// tables. The join is never materialised outside the engine.

// hierPrefix starts the names of the tables and views a [HierPartition]
// creates.
const hierPrefix = ReservedPrefix + "uhier_"

// HierFilter restricts the relations of Rels to the tuples whose value of
// Attrs (join attributes every relation of Rels has) lies in bucket Bucket
// of the split Split ([HierPartition.Degrees] returned it; assigned by
// [HierPartition.Assign]). A value the split's assignment does not list is
// in bucket 1, so bucket 1 also keeps the tuples whose value the split's
// degree query never saw (degree 0) and the tuples with a NULL attribute
// (which join nothing).
type HierFilter struct {
	Rels   hypergraph.Set
	Attrs  []string
	Split  int
	Bucket int
}

// HierPartition is the engine side of one hierarchical partition of the
// join h: the value tables of its degree queries, their bucket
// assignments and the views of filtered relations. Its table and view
// names are a fixed prefix and sequence numbers, never data. Not safe for
// concurrent use. [HierPartition.Drop] removes everything it created.
type HierPartition struct {
	e     *Engine
	h     *hypergraph.Hypergraph
	mixed map[string]bool
	// splits[k] is the k-th degree query: its value table (id, v0…, d),
	// attributes and, once assigned, the table (v0…, bucket) of its values
	// in buckets ≥ 2.
	splits []hierSplit
	views  []string
	tables []string
}

type hierSplit struct {
	attrs    []string
	values   string
	assigned string
}

// NewHierPartition starts a partition of the join h, whose relations must
// be loaded (or folded) tables of e.
func (e *Engine) NewHierPartition(ctx context.Context, h *hypergraph.Hypergraph) (*HierPartition, error) {
	if h == nil {
		return nil, fmt.Errorf("%w: hierarchical partition: no hypergraph", ErrInvalid)
	}
	mixed, err := e.mixedAttrs(ctx, h)
	if err != nil {
		return nil, err
	}
	return &HierPartition{e: e, h: h, mixed: mixed}, nil
}

// filterCond is the SQL condition on alias t (a tuple of relation r) of
// filter f.
func (p *HierPartition) filterCond(r hypergraph.Relation, f HierFilter) (string, error) {
	d := p.e.d
	if f.Split < 0 || f.Split >= len(p.splits) {
		return "", fmt.Errorf("%w: hierarchical filter: no split %d", ErrInvalid, f.Split)
	}
	s := p.splits[f.Split]
	if s.assigned == "" {
		return "", fmt.Errorf("%w: hierarchical filter: split %d has no bucket assignment", ErrInvalid, f.Split)
	}
	if !slices.Equal(f.Attrs, s.attrs) {
		return "", fmt.Errorf("%w: hierarchical filter on %v, split %d is on %v", ErrInvalid, f.Attrs, f.Split, s.attrs)
	}
	if f.Bucket < 1 {
		return "", fmt.Errorf("%w: hierarchical filter: bucket %d", ErrInvalid, f.Bucket)
	}
	var eq []string
	for k, a := range f.Attrs {
		c, ok := r.Attrs[a]
		if !ok {
			return "", fmt.Errorf("%w: relation %s has no attribute %q", ErrInvalid, r.Name, a)
		}
		// Both sides through joinExpr with the whole join's mixed map: the
		// degree table's v_k comes from a plan over E's relations only,
		// which may store the attribute as BIGINT while a relation outside
		// E stores it as text; comparing BIGINT with text fails on
		// PostgreSQL (and casts on DuckDB) — a run that succeeds or not
		// depending on one tuple's spelling.
		eq = append(eq, joinExpr(d, "u."+d.ident(fmt.Sprintf("v%d", k)), p.mixed[a])+" = "+joinExpr(d, "t."+d.ident(c), p.mixed[a]))
	}
	sub := "SELECT 1 FROM " + d.ident(s.assigned) + " u WHERE " + strings.Join(eq, " AND ")
	if f.Bucket == 1 {
		// The assignment lists buckets ≥ 2 only.
		return "NOT EXISTS (" + sub + ")", nil
	}
	return fmt.Sprintf("EXISTS (%s AND u.%s = %d)", sub, d.ident(hierPrefix+"bucket"), f.Bucket), nil
}

// view creates the view name of relation rel of h restricted by the
// filters that name it, and returns the relation renamed to it.
func (p *HierPartition) view(ctx context.Context, name string, rel int, filters []HierFilter) (hypergraph.Relation, error) {
	e, d := p.e, p.e.d
	r := p.h.Relation(rel)
	var conds []string
	for _, f := range filters {
		if !f.Rels.Has(rel) {
			continue
		}
		c, err := p.filterCond(r, f)
		if err != nil {
			return r, err
		}
		conds = append(conds, c)
	}
	q := "SELECT t.* FROM " + d.ident(r.Name) + " t"
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	if _, err := e.db.ExecContext(ctx, d.replaceView(name, q)); err != nil {
		return r, statError(ctx, fmt.Sprintf("hierarchical view of %s", r.Name), err)
	}
	e.forget(name)
	if n, ok := e.sizesOf(r.Name); ok {
		e.mu.Lock()
		e.sizes[name] = n
		e.mu.Unlock()
	}
	e.inheritKeys(name, r.Name, nil) // a subset of r's rows
	p.views = append(p.views, name)
	r.Name = name
	return r, nil
}

// Degrees computes deg_{E,y}(t) of Ghazi et al. Definition 4.7 for every
// value t of the attributes y with a positive degree, on the relations of
// set restricted by filters:
//
//   - one relation i: the number of its tuples (with multiplicity) whose
//     value of y is t, one GROUP BY;
//   - several: the number of distinct values of z (y followed by more
//     attributes, every one shared by all relations of set) of the join of
//     the relations of set whose projection on y is t — the join grouped
//     by z by the count plan of [Engine.JoinSize], then counted per t.
//
// It keeps the values in a table and returns the split's number (for
// [HierPartition.Assign] and [HierFilter]) and the degrees in value order:
// degs[k] belongs to the value with id k+1. Values with a NULL component
// join nothing and are left out.
func (p *HierPartition) Degrees(ctx context.Context, set hypergraph.Set, y, z []string, filters []HierFilter) (split int, degs []int64, err error) {
	e, d := p.e, p.e.d
	if set == 0 || set&^p.h.All() != 0 {
		return 0, nil, fmt.Errorf("%w: hierarchical degrees: relation set %b", ErrInvalid, uint64(set))
	}
	if len(y) == 0 || len(z) < len(y) || !slices.Equal(z[:len(y)], y) {
		return 0, nil, fmt.Errorf("%w: hierarchical degrees: y = %v must be a non-empty prefix of z = %v", ErrInvalid, y, z)
	}
	split = len(p.splits)
	members := set.Members()
	rels := make([]hypergraph.Relation, 0, len(members))
	for _, i := range members {
		r, err := p.view(ctx, fmt.Sprintf("%sq%d_%s", hierPrefix, split, p.h.Relation(i).Name), i, filters)
		if err != nil {
			return 0, nil, err
		}
		rels = append(rels, r)
	}
	var group string
	if len(members) == 1 {
		if group, err = groupQuery(d, rels[0], y, p.mixed); err != nil {
			return 0, nil, err
		}
	} else {
		sub, err := hypergraph.New(rels)
		if err != nil {
			return 0, nil, statError(ctx, "hierarchical degrees", err)
		}
		pl, kept, err := e.newPlan(ctx, sub, sub.All(), z, nil)
		if err != nil {
			return 0, nil, err
		}
		// kept lists z's variables first, aliased v0… in z's order, so
		// y's are v0…v_{|y|−1}.
		group = "SELECT " + strings.Join(hierCols(d, len(y)), ", ") + ", count(*) AS c FROM (" + pl.statement(kept) +
			") AS j GROUP BY " + strings.Join(seq(len(y)), ", ")
	}
	cols := hierCols(d, len(y))
	values := fmt.Sprintf("%sv%d", hierPrefix, split)
	q := "SELECT CAST(row_number() OVER (ORDER BY " + strings.Join(cols, ", ") + ") AS BIGINT) AS id, " +
		strings.Join(cols, ", ") + ", CAST(c AS BIGINT) AS d FROM (" + group + ") AS g"
	if _, err := e.db.ExecContext(ctx, d.replaceTable(values, q, false)); err != nil {
		return 0, nil, statError(ctx, "hierarchical degrees", err)
	}
	p.tables = append(p.tables, values)
	p.splits = append(p.splits, hierSplit{attrs: slices.Clone(y), values: values})
	rows, err := e.db.QueryContext(ctx, "SELECT d FROM "+d.ident(values)+" ORDER BY id")
	if err != nil {
		return 0, nil, statError(ctx, "hierarchical degrees", err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return 0, nil, statError(ctx, "hierarchical degrees", err)
		}
		degs = append(degs, v)
	}
	if err := rows.Err(); err != nil {
		return 0, nil, statError(ctx, "hierarchical degrees", err)
	}
	return split, degs, nil
}

func hierCols(d dialect, n int) []string {
	out := make([]string, n)
	for k := range out {
		out[k] = d.ident(fmt.Sprintf("v%d", k))
	}
	return out
}

// Assign loads the buckets of a split: buckets maps the id of a value
// (k+1 for the k-th degree [HierPartition.Degrees] returned) to its bucket
// ≥ 2; every other value of the split is in bucket 1. A split is assigned
// once, before any filter uses it.
func (p *HierPartition) Assign(ctx context.Context, split int, buckets map[int64]int) error {
	e, d := p.e, p.e.d
	if split < 0 || split >= len(p.splits) {
		return fmt.Errorf("%w: hierarchical assignment: no split %d", ErrInvalid, split)
	}
	s := &p.splits[split]
	if s.assigned != "" {
		return fmt.Errorf("%w: hierarchical assignment: split %d assigned twice", ErrInvalid, split)
	}
	ids := make([]int64, 0, len(buckets))
	for id, b := range buckets {
		if b < 2 {
			return fmt.Errorf("%w: hierarchical assignment: value %d in bucket %d (list buckets ≥ 2 only)", ErrInvalid, id, b)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	tmp := fmt.Sprintf("%sk%d", hierPrefix, split)
	if _, err := e.db.ExecContext(ctx, d.replaceTableDef(tmp, "id BIGINT, bucket INTEGER")); err != nil {
		return statError(ctx, "hierarchical assignment", err)
	}
	defer e.db.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+d.ident(tmp))
	var sb strings.Builder
	for lo := 0; lo < len(ids); lo += assignBatch {
		sb.Reset()
		sb.WriteString("INSERT INTO " + d.ident(tmp) + " VALUES ")
		for k := lo; k < min(lo+assignBatch, len(ids)); k++ {
			if k > lo {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, "(%d,%d)", ids[k], buckets[ids[k]])
		}
		if _, err := e.db.ExecContext(ctx, sb.String()); err != nil {
			return statError(ctx, "hierarchical assignment", err)
		}
	}
	assigned := fmt.Sprintf("%sa%d", hierPrefix, split)
	q := "SELECT " + strings.Join(prefixed("v.", hierCols(d, len(s.attrs))), ", ") + ", k.bucket AS " + d.ident(hierPrefix+"bucket") +
		" FROM " + d.ident(s.values) + " v JOIN " + d.ident(tmp) + " k ON v.id = k.id"
	if _, err := e.db.ExecContext(ctx, d.replaceTable(assigned, q, false)); err != nil {
		return statError(ctx, "hierarchical assignment", err)
	}
	p.tables = append(p.tables, assigned)
	s.assigned = assigned
	return nil
}

func prefixed(p string, xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = p + x
	}
	return out
}

// Sub creates the views of sub-instance number sub — every relation of h
// restricted by the filters that name it, the others whole — and returns
// the hypergraph over them: h's attributes and public flags, relation k
// named [HierPartition.SubName](sub, k). [Engine.Histogram],
// [Engine.MaxBoundaryCount] and the other statistics run on it as on h; a
// histogram column of relation k must name the view.
func (p *HierPartition) Sub(ctx context.Context, sub int, filters []HierFilter) (*hypergraph.Hypergraph, error) {
	rels := p.h.Relations()
	for k := range rels {
		r, err := p.view(ctx, p.SubName(sub, k), k, filters)
		if err != nil {
			return nil, err
		}
		rels[k] = r
	}
	return hypergraph.New(rels)
}

// SubName is the name of relation k's view in sub-instance sub.
func (p *HierPartition) SubName(sub, k int) string {
	return fmt.Sprintf("%ss%d_%s", hierPrefix, sub, p.h.Relation(k).Name)
}

// Drop removes the tables and views of the partition. It runs even when
// ctx is cancelled.
func (p *HierPartition) Drop(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	e, d := p.e, p.e.d
	var first error
	for _, v := range slices.Backward(p.views) {
		if _, err := e.db.ExecContext(ctx, "DROP VIEW IF EXISTS "+d.ident(v)); err != nil && first == nil {
			first = err
		}
		e.forget(v)
		e.dropKeys(v)
		e.mu.Lock()
		delete(e.sizes, v)
		e.mu.Unlock()
	}
	p.views = nil
	for _, t := range p.tables {
		if _, err := e.db.ExecContext(ctx, "DROP TABLE IF EXISTS "+d.ident(t)); err != nil && first == nil {
			first = err
		}
	}
	p.tables, p.splits = nil, nil
	if first != nil {
		return fmt.Errorf("engine: dropping the hierarchical partition: %w", first)
	}
	return nil
}
