package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/spec"
)

// declaredKeyReason explains why every declared primary key is checked.
const declaredKeyReason = "a declared primary_key must be unique and non-NULL: the join and its degree bounds rely on it; fix the data or the declared primary_key"

// CheckPrimaryKeys returns a [*DuplicateKeyError] for the first table of s
// (in spec order) whose declared primary key holds a duplicated value or a
// NULL (an empty value), whatever the table and the column types: the
// count plans and the degree bounds treat a declared key as unique, and a
// duplicated parent key would multiply its children's join rows. h is the
// spec's hypergraph (key columns that are join attributes compare as the
// join compares them). It reads the loaded tables: call it after
// [Engine.Load]. Like every other data check it fails the run (the
// custodian reads the error), and it decides nothing that is released.
func (e *Engine) CheckPrimaryKeys(ctx context.Context, s *spec.Spec, h *hypergraph.Hypergraph) error {
	for _, t := range s.Tables {
		if len(t.PrimaryKey) == 0 {
			continue
		}
		if err := e.checkPrimaryKey(ctx, h, t.Name, t.PrimaryKey, declaredKeyReason); err != nil {
			return err
		}
	}
	return nil
}

// Orphans counts the rows of a foreign key's table that reference no row
// of its parent table. The counts are true counts of private data: for the
// custodian (synth inspect, an error of synth release), never published.
type Orphans struct {
	// Key is the foreign key.
	Key spec.ForeignKey
	// Rows is the number of rows of Key.Child.
	Rows int64
	// Null counts the rows with an empty (NULL) foreign key column.
	Null int64
	// Unmatched counts the rows whose foreign key is not empty but equals
	// no primary key of Key.Parent.
	Unmatched int64
}

// Count is the number of orphan rows: Null + Unmatched.
func (o Orphans) Count() int64 { return o.Null + o.Unmatched }

// String describes the orphans in one line, e.g. "orders.o_custkey →
// customers.c_custkey: 750 of 1500 rows reference no row (0 empty, 750
// unmatched)".
func (o Orphans) String() string {
	return fmt.Sprintf("%s: %d of %d rows reference no row (%d with an empty key, %d with a key %s lacks)",
		o.Edge(), o.Count(), o.Rows, o.Null, o.Unmatched, o.Key.Parent)
}

// Edge names the foreign key: "orders.o_custkey → customers.c_custkey".
func (o Orphans) Edge() string {
	return keyRef(o.Key.Child, o.Key.Columns) + " → " + keyRef(o.Key.Parent, o.Key.Key)
}

// keyRef writes table.column or table.(c1, c2).
func keyRef(table string, cols []string) string {
	if len(cols) == 1 {
		return table + "." + cols[0]
	}
	return table + ".(" + strings.Join(cols, ", ") + ")"
}

// OrphanError refuses a release whose data holds orphans while the spec
// does not declare join.orphans: drop. Its message names the foreign keys
// and the kind of orphans, neither a key value nor a count: error text
// travels beyond the custodian (CI logs, tickets), as the key errors'
// does not (see [DuplicateKeyError]); the counts are in Orphans and
// `synth inspect` prints them.
type OrphanError struct {
	// File is the spec file.
	File string
	// Orphans lists the foreign keys with at least one orphan.
	Orphans []Orphans
}

// Error names every foreign key with orphans and the fix.
func (e *OrphanError) Error() string {
	parts := make([]string, len(e.Orphans))
	for i, o := range e.Orphans {
		var kinds []string
		if o.Null > 0 {
			kinds = append(kinds, "empty keys")
		}
		if o.Unmatched > 0 {
			kinds = append(kinds, "keys "+o.Key.Parent+" lacks")
		}
		parts[i] = o.Edge() + " (" + strings.Join(kinds, " and ") + ")"
	}
	return "engine: foreign keys that do not resolve: " + strings.Join(parts, "; ") +
		": fix the data, or declare join.orphans: drop in the spec (join: {on: [...], orphans: drop}) to release the join without them " +
		"(`synth inspect` counts them in its custodian section)"
}

// Unwrap returns [ErrData].
func (e *OrphanError) Unwrap() error { return ErrData }

// CountOrphans counts, for every foreign key of s ([spec.Spec.ForeignKeys]),
// the rows of the child table that reference no row of the parent: an
// empty (NULL) key column, or a key no parent row holds. Keys compare as
// the join compares them. It reads the loaded tables: call it after
// [Engine.Load].
func (e *Engine) CountOrphans(ctx context.Context, s *spec.Spec, h *hypergraph.Hypergraph) ([]Orphans, error) {
	fks := s.ForeignKeys()
	if len(fks) == 0 {
		return nil, nil
	}
	mixed, err := e.mixedAttrs(ctx, h)
	if err != nil {
		return nil, err
	}
	// value is the join's form of column col of table.
	value := func(alias, table, col string) string {
		x := alias + "." + e.d.ident(col)
		if i := h.Index(table); i >= 0 {
			for a, c := range h.Relation(i).Attrs {
				if c == col {
					return joinExpr(e.d, x, mixed[a])
				}
			}
		}
		return x
	}
	out := make([]Orphans, 0, len(fks))
	for _, fk := range fks {
		var nulls, eqs []string
		for i, c := range fk.Columns {
			nulls = append(nulls, "c."+e.d.ident(c)+" IS NULL")
			eqs = append(eqs, value("p", fk.Parent, fk.Key[i])+" = "+value("c", fk.Child, c))
		}
		isNull := strings.Join(nulls, " OR ")
		q := "SELECT CAST(count(*) AS BIGINT), CAST(COALESCE(sum(CASE WHEN " + isNull + " THEN 1 ELSE 0 END), 0) AS BIGINT), " +
			"CAST(COALESCE(sum(CASE WHEN NOT (" + isNull + ") AND NOT EXISTS (SELECT 1 FROM " + e.d.ident(fk.Parent) + " AS p WHERE " +
			strings.Join(eqs, " AND ") + ") THEN 1 ELSE 0 END), 0) AS BIGINT) FROM " + e.d.ident(fk.Child) + " AS c"
		o := Orphans{Key: fk}
		start := time.Now()
		err := e.db.QueryRowContext(ctx, q).Scan(&o.Rows, &o.Null, &o.Unmatched)
		slog.Debug("engine: check", "check", "orphans of "+keyRef(fk.Child, fk.Columns), "sql", q, "seconds", time.Since(start).Seconds())
		if err != nil {
			return nil, statError(ctx, "orphan count of "+keyRef(fk.Child, fk.Columns), err)
		}
		out = append(out, o)
	}
	return out, nil
}

// CheckOrphans returns an [*OrphanError] when a foreign key of s has
// orphans and s does not declare join.orphans: drop ([spec.OrphansDrop]).
func (e *Engine) CheckOrphans(ctx context.Context, s *spec.Spec, h *hypergraph.Hypergraph) error {
	if s.Orphans == spec.OrphansDrop {
		return nil
	}
	all, err := e.CountOrphans(ctx, s, h)
	if err != nil {
		return err
	}
	var bad []Orphans
	for _, o := range all {
		if o.Count() > 0 {
			bad = append(bad, o)
		}
	}
	if len(bad) > 0 {
		return &OrphanError{File: s.File, Orphans: bad}
	}
	return nil
}
