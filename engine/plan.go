package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/synth-dp/synth/hypergraph"
)

// A count plan computes the size of the natural join of a set E of
// relations grouped by some of its variables (join attributes and binned
// columns), by sum-product variable elimination in SQL:
//
//  1. every relation of E is pre-aggregated to one row per value of the
//     variables that matter outside it (attributes it shares with another
//     relation of E, grouped attributes, its binned columns) with the count
//     of its tuples;
//  2. repeatedly, an attribute that is not grouped is eliminated: the
//     factors holding it are joined on their shared variables and summed
//     over it, multiplying counts — the attribute with the smallest
//     resulting factor goes first;
//  3. the remaining factors are joined on their shared variables and the
//     products of counts summed per value of the grouped variables.
//
// On an acyclic join this is Yannakakis-style bottom-up aggregation and
// every intermediate result is bounded by a relation's size; on a cyclic one
// it stays correct, with larger intermediate results. A NULL join value
// joins nothing, as in SQL.

// planVar is one variable of a plan: a join attribute, or the binned
// column of a relation.
type planVar struct {
	attr string // join attribute, or "" for a binned column
	rel  int    // relation of a binned column
	col  string // engine column of a binned column
}

// factor is a CTE of a plan: one row per value of vars, with count c.
type factor struct {
	name string
	vars []int // indices into plan.vars, increasing
}

// plan builds the SQL of a count plan.
type plan struct {
	e     *Engine
	vars  []planVar
	ctes  []string
	alive []factor
}

// alias is the SQL column name of variable v.
func (p *plan) alias(v int) string { return fmt.Sprintf("v%d", v) }

// newPlan builds the factors of the relations in set, keeping the grouped
// attributes group and the binned columns bins (one variable each, in
// order). The variables of group come first, then those of bins.
func (e *Engine) newPlan(ctx context.Context, h *hypergraph.Hypergraph, set hypergraph.Set, group []string, bins []planVar) (*plan, []int, error) {
	for _, a := range group {
		if h.Atom(a)&set == 0 {
			return nil, nil, fmt.Errorf("%w: attribute %q is in no relation of %v", ErrInvalid, a, h.Names(set))
		}
	}
	p := &plan{e: e}
	d := e.d
	attrVar := map[string]int{}
	var kept []int
	for _, a := range group {
		attrVar[a] = len(p.vars)
		kept = append(kept, len(p.vars))
		p.vars = append(p.vars, planVar{attr: a})
	}
	for _, b := range bins {
		kept = append(kept, len(p.vars))
		p.vars = append(p.vars, b)
	}
	// An attribute matters when grouped or shared by two relations of set.
	for _, a := range h.AttrsOf(set) {
		if _, ok := attrVar[a]; !ok && (h.Atom(a)&set).Len() >= 2 {
			attrVar[a] = len(p.vars)
			p.vars = append(p.vars, planVar{attr: a})
		}
	}
	text, err := e.mixedAttrs(ctx, h)
	if err != nil {
		return nil, nil, err
	}
	for _, i := range set.Members() {
		r := h.Relation(i)
		var vars []int
		var cols, conds []string
		for _, a := range slices.Sorted(maps.Keys(r.Attrs)) {
			v, ok := attrVar[a]
			if !ok {
				continue
			}
			col := r.Attrs[a]
			vars = append(vars, v)
			cols = append(cols, joinValue(d, col, text[a])+" AS "+p.alias(v))
			conds = append(conds, d.ident(col)+" IS NOT NULL")
		}
		for k, b := range p.vars {
			if b.attr == "" && b.rel == i {
				vars = append(vars, k)
				cols = append(cols, d.ident(b.col)+" AS "+p.alias(k))
			}
		}
		q := "SELECT " + strings.Join(append(cols, "count(*) AS c"), ", ") + " FROM " + d.ident(r.Name)
		if len(conds) > 0 {
			q += " WHERE " + strings.Join(conds, " AND ")
		}
		if len(cols) > 0 {
			q += " GROUP BY " + strings.Join(seq(len(cols)), ", ")
		}
		slices.Sort(vars)
		p.add(q, vars)
	}
	return p, kept, nil
}

// seq is "1", "2", …, "n" (GROUP BY positions).
func seq(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprint(i + 1)
	}
	return s
}

// add appends a CTE and makes it a live factor.
func (p *plan) add(q string, vars []int) {
	name := fmt.Sprintf("f%d", len(p.ctes))
	p.ctes = append(p.ctes, p.e.d.ident(name)+" AS ("+q+")")
	p.alive = append(p.alive, factor{name: name, vars: vars})
}

// merge joins factors on their shared variables and sums the products of
// their counts per value of keep.
func (p *plan) merge(fs []factor, keep []int) string {
	d := p.e.d
	// Join order: each factor shares a variable with an earlier one when
	// possible.
	order := []factor{fs[0]}
	left := slices.Clone(fs[1:])
	for len(left) > 0 {
		pick := 0
		for k, f := range left {
			if p.sharesWith(f, order) {
				pick = k
				break
			}
		}
		order = append(order, left[pick])
		left = slices.Delete(left, pick, pick+1)
	}
	owner := map[int]string{}
	var from strings.Builder
	var prod []string
	for k, f := range order {
		t := d.ident(f.name)
		prod = append(prod, t+".c")
		var on []string
		for _, v := range f.vars {
			if o, ok := owner[v]; ok {
				on = append(on, t+"."+p.alias(v)+" = "+o+"."+p.alias(v))
			} else {
				owner[v] = t
			}
		}
		switch {
		case k == 0:
			from.WriteString(t)
		case len(on) == 0:
			from.WriteString(" CROSS JOIN " + t)
		default:
			from.WriteString(" JOIN " + t + " ON " + strings.Join(on, " AND "))
		}
	}
	var sel []string
	for _, v := range keep {
		sel = append(sel, owner[v]+"."+p.alias(v)+" AS "+p.alias(v))
	}
	q := "SELECT " + strings.Join(append(sel, "SUM("+strings.Join(prod, " * ")+") AS c"), ", ") + " FROM " + from.String()
	if len(sel) > 0 {
		q += " GROUP BY " + strings.Join(seq(len(sel)), ", ")
	}
	return q
}

func (p *plan) sharesWith(f factor, fs []factor) bool {
	for _, g := range fs {
		for _, v := range f.vars {
			if slices.Contains(g.vars, v) {
				return true
			}
		}
	}
	return false
}

// eliminate sums out every variable not in kept and returns the statement
// yielding one row per value of kept (in kept's order) with count c. With
// kept empty the statement yields one row, whose c is NULL for an empty
// join.
func (p *plan) eliminate(kept []int) string {
	for {
		// Candidates: variables of live factors not kept.
		best, bestSize := -1, 0
		var bestUnion []int
		for v := range p.vars {
			if slices.Contains(kept, v) {
				continue
			}
			var union []int
			found := false
			for _, f := range p.alive {
				if slices.Contains(f.vars, v) {
					found = true
					union = append(union, f.vars...)
				}
			}
			if !found {
				continue
			}
			slices.Sort(union)
			union = slices.Compact(union)
			if best < 0 || len(union) < bestSize {
				best, bestSize, bestUnion = v, len(union), union
			}
		}
		if best < 0 {
			break
		}
		var in, out []factor
		for _, f := range p.alive {
			if slices.Contains(f.vars, best) {
				in = append(in, f)
			} else {
				out = append(out, f)
			}
		}
		vars := slices.DeleteFunc(bestUnion, func(v int) bool { return v == best })
		p.alive = out
		p.add(p.merge(in, vars), vars)
	}
	final := p.merge(p.alive, kept)
	if len(p.alive) == 1 && len(kept) > 0 && sameSet(p.alive[0].vars, kept) {
		// The last factor is already grouped by exactly the kept
		// variables.
		sel := make([]string, len(kept))
		for i, v := range kept {
			sel[i] = p.alias(v)
		}
		final = "SELECT " + strings.Join(sel, ", ") + ", c FROM " + p.e.d.ident(p.alive[0].name)
	}
	return "WITH " + strings.Join(p.ctes, ", ") + " " + final
}

// sameSet reports whether two lists hold the same variables.
func sameSet(a, b []int) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// joinValue is the SQL expression a join attribute stored in column col is
// compared on: the stored value, or its text when the attribute's columns
// do not all have the same SQL type (mixed, from [Engine.mixedAttrs]). Every
// statistic — joins, grouping by boundary values, degrees — groups and
// compares through this one expression, so that grouping equality is join
// equality, which the sensitivity bounds need (see canonicalNumber).
func joinValue(d dialect, col string, mixed bool) string {
	return joinExpr(d, d.ident(col), mixed)
}

// joinExpr is [joinValue] for an already quoted (possibly qualified)
// column expression x, such as alias.column.
func joinExpr(d dialect, x string, mixed bool) string {
	if mixed {
		return d.toText(x)
	}
	return x
}

// mixedAttrs reports the attributes whose columns do not all have the same
// SQL type; their values are compared as text.
func (e *Engine) mixedAttrs(ctx context.Context, h *hypergraph.Hypergraph) (map[string]bool, error) {
	types := map[string]string{}
	mixed := map[string]bool{}
	for _, r := range h.Relations() {
		cols, err := e.columnTypes(ctx, r.Name)
		if err != nil {
			return nil, err
		}
		for a, c := range r.Attrs {
			t, ok := cols[c]
			if !ok {
				return nil, fmt.Errorf("engine: table %q has no column %q (attribute %s)", r.Name, c, a)
			}
			if prev, ok := types[a]; ok && prev != t {
				mixed[a] = true
			}
			types[a] = t
		}
	}
	return mixed, nil
}
