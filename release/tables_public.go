package release

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/spec"
)

// publicFK is a foreign key of a tree table into a public table
// (table.column = lookup.primary_key), written with real keys of the
// public table: for every synthetic row, one of the public rows whose
// released columns (those of the lookup and of the public tables it
// reaches in turn, folded into the tree table) hold the row's values,
// chosen uniformly at random; so the synthetic table joins the public one
// as the original did, and the join gives back the row's released values.
// The public table is public and the choice reads only it and the
// synthetic rows: post-processing.
type publicFK struct {
	column string
	isInt  bool
	ints   []int64  // per synthetic row, when isInt
	strs   []string // otherwise
	// unmatched counts the rows whose released values no public row holds
	// (their key is any public row's, chosen uniformly).
	unmatched int64
}

// publicFKs finds table i's foreign keys into public tables: its columns
// c with a join edge i.c = P.pk, P public with the one-column primary key
// pk (not i's key into its parent, nor a column of its own primary key).
func (r *tablesRun) publicFKs(i int) [][2]spec.ColumnRef {
	s, t := r.plan.Spec, r.tree.tables[i]
	var out [][2]spec.ColumnRef
	for _, eq := range s.Join {
		for _, e := range [][2]spec.ColumnRef{{eq.Left, eq.Right}, {eq.Right, eq.Left}} {
			mine, pub := e[0], e[1]
			if mine.Table != t.name || mine.Column == t.fk || slices.Contains(t.pk, mine.Column) {
				continue
			}
			p := s.Table(pub.Table)
			if p == nil || !p.Public || len(p.PrimaryKey) != 1 || p.PrimaryKey[0] != pub.Column {
				continue
			}
			out = append(out, e)
		}
	}
	return out
}

// lookupClosure returns the public tables reachable from public table p
// through foreign keys into public primary keys (p first), with the join
// edges that reach them (edges[k] joins tables[k+1] to an earlier one).
func lookupClosure(s *spec.Spec, p string) (tables []string, edges [][2]spec.ColumnRef) {
	tables = []string{p}
	for grew := true; grew; {
		grew = false
		for _, eq := range s.Join {
			for _, e := range [][2]spec.ColumnRef{{eq.Left, eq.Right}, {eq.Right, eq.Left}} {
				from, to := e[0], e[1]
				q := s.Table(to.Table)
				if !slices.Contains(tables, from.Table) || slices.Contains(tables, to.Table) || q == nil || !q.Public ||
					len(q.PrimaryKey) != 1 || q.PrimaryKey[0] != to.Column {
					continue
				}
				tables = append(tables, to.Table)
				edges = append(edges, e)
				grew = true
			}
		}
	}
	return tables, edges
}

// choosePublicKeys computes every tree table's foreign keys into public
// tables (see [publicFK]) from the loaded public tables.
func (r *tablesRun) choosePublicKeys(ctx context.Context, src dp.Source, eng *engine.Engine) error {
	s := r.plan.Spec
	rnd := rand.New(src)
	r.public = make([][]*publicFK, len(r.tree.tables))
	for i := range r.tree.tables {
		lv, syn := r.levels[i], r.synth[i]
		width := int64(lv.ownWidth())
		for _, e := range r.publicFKs(i) {
			mine, pub := e[0], e[1]
			closure, edges := lookupClosure(s, pub.Table)
			// The released columns of the closure, and where the level
			// holds them.
			var refs []spec.ColumnRef
			var at []int64
			for k, c := range lv.cols {
				if c.fanChild < 0 && k >= lv.nCtx && slices.Contains(closure, c.ref.Table) {
					refs = append(refs, c.ref)
					at = append(at, int64(k-lv.nCtx))
				}
			}
			byBins := map[string][]int{}
			var keys []any // int64 or string, as the engine stores the key
			if err := eng.LookupRows(ctx, pub.Table, pub.Column, edges, refs, func(key any, bins []sql.NullInt64) error {
				byBins[binsKey(bins)] = append(byBins[binsKey(bins)], len(keys))
				keys = append(keys, key)
				return nil
			}); err != nil {
				return fmt.Errorf("release: foreign key %s into public table %s: %w", mine, pub.Table, err)
			}
			n := len(keys)
			if n == 0 {
				continue // an empty public table: nothing to point at
			}
			_, isInt := keys[0].(int64)
			fk := &publicFK{column: mine.Column, isInt: isInt}
			row := make([]sql.NullInt64, len(refs))
			for x := int64(0); x < syn.rows; x++ {
				for k, p := range at {
					row[k] = sql.NullInt64{Int64: int64(syn.bins[x*width+p]), Valid: true}
				}
				cands := byBins[binsKey(row)]
				var pick int
				if len(cands) == 0 {
					fk.unmatched++
					pick = rnd.IntN(n)
				} else {
					pick = cands[rnd.IntN(len(cands))]
				}
				if isInt {
					fk.ints = append(fk.ints, keys[pick].(int64))
				} else {
					fk.strs = append(fk.strs, keys[pick].(string))
				}
			}
			r.public[i] = append(r.public[i], fk)
		}
	}
	return nil
}

// binsKey is a map key of a row of bins (NULL bins, which a public
// column outside the domain would give, never match a synthetic row).
func binsKey(b []sql.NullInt64) string {
	var sb []byte
	for _, v := range b {
		if v.Valid {
			sb = strconv.AppendInt(sb, v.Int64, 10)
			sb = append(sb, ',')
		} else {
			sb = append(sb, "n,"...)
		}
	}
	return string(sb)
}
