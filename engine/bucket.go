package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/synth-dp/synth/hypergraph"
)

// The statistics of a uniformized two-table release (Ghazi et al. Alg. 5)
// stay in the engine: the degree of every join value is computed by SQL
// into a table of the values, the caller draws the noise in Go and loads
// one bucket number per value back, and each bucket's sub-instance is a
// pair of views (each relation semi-joined with the values of the bucket)
// on which [Engine.MaxDegree] and [Engine.Histogram] run unchanged. The
// join is never materialised outside the engine.

// bucketPrefix starts the names of the tables and views a [Buckets] creates.
const bucketPrefix = ReservedPrefix + "ubkt_"

// Buckets is the engine side of one uniformized partition of a
// two-relation join: the table of its join values and their degrees, the
// bucket of each value once assigned, and the per-bucket views. Its table
// and view names depend on the hypergraph's relation names only, never on
// the data. [Buckets.Drop] removes everything it created.
type Buckets struct {
	e     *Engine
	h     *hypergraph.Hypergraph
	attrs []string
	// values is the table (id, v0…, d): every value of attrs present in
	// either relation, id 1..n ordered by value, d = max of its two
	// degrees; assigned adds the bucket of each id.
	values, assigned string
	n                int
	views            []string
	// mixed is from [Engine.mixedAttrs] on h, as NewBuckets computed it.
	mixed map[string]bool
}

// NewBuckets computes the degree of every value of the shared join
// attributes attrs of the two-relation join h, in one statement: the two
// relations are grouped by the join's equality ([joinValue]) and fully
// outer-joined, so that a value present in either relation appears once
// with d = max{deg₁, deg₂}. It returns the partition handle and the degrees
// in value order (the order of [Buckets.Assign]). Values with a NULL
// component join nothing and are left out (they are in no sub-instance and
// change no join row).
func (e *Engine) NewBuckets(ctx context.Context, h *hypergraph.Hypergraph, attrs []string) (*Buckets, []int64, error) {
	if h == nil || h.Len() != 2 {
		return nil, nil, fmt.Errorf("%w: uniformized buckets need a join of two relations", ErrInvalid)
	}
	if len(attrs) == 0 {
		return nil, nil, fmt.Errorf("%w: uniformized buckets: no join attributes", ErrInvalid)
	}
	mixed, err := e.mixedAttrs(ctx, h)
	if err != nil {
		return nil, nil, err
	}
	d := e.d
	var sides [2]string
	for i := range sides {
		if sides[i], err = groupQuery(d, h.Relation(i), attrs, mixed); err != nil {
			return nil, nil, err
		}
	}
	var vals, on, order []string
	for k := range attrs {
		v := d.ident(fmt.Sprintf("v%d", k))
		vals = append(vals, "COALESCE(a."+v+", b."+v+") AS "+v)
		on = append(on, "a."+v+" = b."+v)
		order = append(order, "COALESCE(a."+v+", b."+v+")")
	}
	base := bucketPrefix + strings.Join(h.Names(h.All()), "_")
	b := &Buckets{e: e, h: h, attrs: append([]string(nil), attrs...), values: base + "_values", assigned: base + "_assigned", mixed: mixed}
	q := "SELECT CAST(row_number() OVER (ORDER BY " + strings.Join(order, ", ") + ") AS BIGINT) AS id, " +
		strings.Join(vals, ", ") + ", CAST(GREATEST(COALESCE(a.c, 0), COALESCE(b.c, 0)) AS BIGINT) AS d FROM (" +
		sides[0] + ") a FULL OUTER JOIN (" + sides[1] + ") b ON " + strings.Join(on, " AND ")
	if _, err := e.db.ExecContext(ctx, d.replaceTable(b.values, q, false)); err != nil {
		return nil, nil, statError(ctx, "join value degrees", err)
	}
	rows, err := e.db.QueryContext(ctx, "SELECT d FROM "+d.ident(b.values)+" ORDER BY id")
	if err != nil {
		b.Drop(ctx)
		return nil, nil, statError(ctx, "join value degrees", err)
	}
	defer rows.Close()
	var degs []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			b.Drop(ctx)
			return nil, nil, statError(ctx, "join value degrees", err)
		}
		degs = append(degs, v)
	}
	if err := rows.Err(); err != nil {
		b.Drop(ctx)
		return nil, nil, statError(ctx, "join value degrees", err)
	}
	b.n = len(degs)
	return b, degs, nil
}

// assignBatch is the number of values per INSERT of [Buckets.Assign].
const assignBatch = 8192

// Assign loads the bucket of every value: bucket[k] is the bucket of the
// value with id k+1 (the k-th degree [Engine.NewBuckets] returned).
func (b *Buckets) Assign(ctx context.Context, bucket []int32) error {
	if len(bucket) != b.n {
		return fmt.Errorf("%w: %d buckets for %d join values", ErrInvalid, len(bucket), b.n)
	}
	d := b.e.d
	tmp := b.assigned + "_ids"
	if _, err := b.e.db.ExecContext(ctx, d.replaceTableDef(tmp, "id BIGINT, bucket INTEGER")); err != nil {
		return statError(ctx, "assign buckets", err)
	}
	defer b.e.db.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+d.ident(tmp))
	var sb strings.Builder
	for lo := 0; lo < len(bucket); lo += assignBatch {
		sb.Reset()
		sb.WriteString("INSERT INTO " + d.ident(tmp) + " VALUES ")
		for k := lo; k < min(lo+assignBatch, len(bucket)); k++ {
			if k > lo {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, "(%d,%d)", k+1, bucket[k])
		}
		if _, err := b.e.db.ExecContext(ctx, sb.String()); err != nil {
			return statError(ctx, "assign buckets", err)
		}
	}
	q := "SELECT v.*, k.bucket AS " + d.ident(bucketPrefix+"bucket") + " FROM " + d.ident(b.values) + " v JOIN " +
		d.ident(tmp) + " k ON v.id = k.id"
	if _, err := b.e.db.ExecContext(ctx, d.replaceTable(b.assigned, q, false)); err != nil {
		return statError(ctx, "assign buckets", err)
	}
	return nil
}

// Bucket creates the views of bucket i — every relation restricted to its
// tuples whose join value was assigned bucket i — and returns the
// hypergraph over them: the same attributes and public flags, relation k
// named [Buckets.ViewName](k, i). [Engine.MaxDegree], [Engine.Histogram]
// and the other statistics run on it as on h; a histogram column of
// relation k must name the view. Call [Buckets.Assign] first.
func (b *Buckets) Bucket(ctx context.Context, i int) (*hypergraph.Hypergraph, error) {
	e, d := b.e, b.e.d
	rels := b.h.Relations()
	for k, r := range rels {
		var conds []string
		for j, a := range b.attrs {
			conds = append(conds, "u."+d.ident(fmt.Sprintf("v%d", j))+" = "+joinExpr(d, "t."+d.ident(r.Attrs[a]), b.mixed[a]))
		}
		name := b.ViewName(k, i)
		q := "CREATE OR REPLACE VIEW " + d.ident(name) + " AS SELECT t.* FROM " + d.ident(r.Name) + " t WHERE EXISTS (SELECT 1 FROM " +
			d.ident(b.assigned) + " u WHERE u." + d.ident(bucketPrefix+"bucket") + fmt.Sprintf(" = %d AND ", i) +
			strings.Join(conds, " AND ") + ")"
		if _, err := e.db.ExecContext(ctx, q); err != nil {
			return nil, statError(ctx, fmt.Sprintf("bucket %d of %s", i, r.Name), err)
		}
		e.forget(name)
		if n, ok := e.sizesOf(r.Name); ok {
			e.mu.Lock()
			e.sizes[name] = n
			e.mu.Unlock()
		}
		e.inheritKeys(name, r.Name, nil) // a subset of r's rows
		b.views = append(b.views, name)
		rels[k].Name = name
	}
	return hypergraph.New(rels)
}

// ViewName is the name of relation k's view in bucket i.
func (b *Buckets) ViewName(k, i int) string {
	return fmt.Sprintf("%s%s_b%d", bucketPrefix, b.h.Relation(k).Name, i)
}

// Drop removes the tables and views of the partition. It runs even when
// ctx is cancelled.
func (b *Buckets) Drop(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	d := b.e.d
	var first error
	for _, v := range b.views {
		if _, err := b.e.db.ExecContext(ctx, "DROP VIEW IF EXISTS "+d.ident(v)); err != nil && first == nil {
			first = err
		}
		b.e.forget(v)
		b.e.dropKeys(v)
		b.e.mu.Lock()
		delete(b.e.sizes, v)
		b.e.mu.Unlock()
	}
	b.views = nil
	for _, t := range []string{b.assigned, b.values} {
		if _, err := b.e.db.ExecContext(ctx, "DROP TABLE IF EXISTS "+d.ident(t)); err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return fmt.Errorf("engine: dropping the bucket tables: %w", first)
	}
	return nil
}
