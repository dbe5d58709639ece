package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/spec"
)

// A count plan computes the size of the natural join of a set E of
// relations grouped by some of its variables (join attributes and binned
// columns). It takes one of two forms, chosen per query by [buildPlan]:
//
// The plain join: when every relation of E but one (the root) joins the
// relations before it on attributes covering a declared primary key of its
// own ([Engine.keysOf]), every tuple of the join extends at most one tuple
// of the root, so the join is no larger than the root. The statement is
// then one JOIN of the relations followed by one GROUP BY of the grouped
// variables: every relation is read once, and no intermediate result
// exceeds the root's size. This is the shape of a TPC-H join (lineitem →
// orders → customer), where pre-aggregation cannot shrink anything that
// matters: grouped by their primary key, orders and customer do not shrink
// at all, and lineitem grouped by its order key and binned columns keeps
// most of its rows (5.2M groups from 6.0M rows at scale factor 1).
//
// Sum-product variable elimination, otherwise:
//
//  1. every relation of E is pre-aggregated to one row per value of the
//     variables that matter outside it (attributes it shares with another
//     relation of E, grouped attributes, its binned columns) with the count
//     of its tuples — except a relation whose attributes among those
//     variables cover its declared primary key, which one row per tuple
//     with count 1 already is (grouping it would not shrink it);
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
//
// Why the choice is safe. Both forms compute the same exact integers for
// any data: a count of the join grouped by the kept variables does not
// depend on how the join is evaluated, and neither form relies on a
// declared key being unique — a key the data violates only makes the
// plain join larger (slower), never different, and an ungrouped factor
// with count 1 per tuple sums to the same products as its grouped form.
// The choice itself reads only public information: the hypergraph, the
// grouped variables and the primary keys declared in the spec, never the
// data. So the plan is control flow on public inputs, and the statistics
// it produces are the same numbers either way; they are internal inputs to
// the noisy mechanisms, never published as they are
// (TestStatisticsOracle checks both forms against brute force, with keys
// declared at random, some of them violated by the data).

// planVar is one variable of a plan: a join attribute, or the binned
// column of a relation.
type planVar struct {
	attr string // join attribute, or "" for a binned column
	rel  int    // relation of a binned column
	col  string // engine column of a binned column
}

// factor is a CTE of a plan: one row per value of vars, with count c,
// when grouped; otherwise possibly several rows per value, whose counts
// add up.
type factor struct {
	name    string
	vars    []int // indices into plan.vars
	grouped bool
}

// leaf is one relation of a plan: its variables and the columns holding
// them.
type leaf struct {
	rel   int
	table string   // quoted table name
	vars  []int    // indices into plan.vars: its attributes (by name), then its binned columns
	cols  []string // quoted column of vars[k]
	text  []bool   // whether vars[k] is compared as text ([joinExpr])
	attrs int      // vars[:attrs] are join attributes (NULL joins nothing), the rest binned columns
	keyed bool     // its attribute variables cover its declared primary key
}

// expr is the value of variable vars[k] of the leaf on table alias t.
func (lf *leaf) expr(d dialect, t string, k int) string {
	return joinExpr(d, t+"."+lf.cols[k], lf.text[k])
}

// conds are the conditions on table alias t excluding NULL join values.
func (lf *leaf) conds(t string) []string {
	out := make([]string, lf.attrs)
	for k := range out {
		out[k] = t + "." + lf.cols[k] + " IS NOT NULL"
	}
	return out
}

// plan builds the SQL of a count plan.
type plan struct {
	d     dialect
	h     *hypergraph.Hypergraph
	vars  []planVar
	ctes  []string
	alive []factor
	// leaves are the relations of the set; order is the root and join
	// order of the plain join, nil when elimination is chosen.
	leaves []leaf
	order  []int
}

// alias is the SQL column name of variable v.
func (p *plan) alias(v int) string { return fmt.Sprintf("v%d", v) }

// newPlan builds the plan of the relations in set of a loaded hypergraph
// (see [buildPlan]), reading which attributes are compared as text and the
// declared keys from the engine.
func (e *Engine) newPlan(ctx context.Context, h *hypergraph.Hypergraph, set hypergraph.Set, group []string, bins []planVar) (*plan, []int, error) {
	mixed, err := e.mixedAttrs(ctx, h)
	if err != nil {
		return nil, nil, err
	}
	return buildPlan(e.d, h, set, group, bins, mixed, e.keysOf(h))
}

// buildPlan builds the plan of the relations in set, keeping the grouped
// attributes group and the binned columns bins (one variable each, in
// order). The variables of group come first, then those of bins. mixed is
// from [Engine.mixedAttrs]; keys maps a relation's name to its declared
// primary key columns (public: from the spec), used only to choose the
// plan's form. It reads nothing from a database.
func buildPlan(d dialect, h *hypergraph.Hypergraph, set hypergraph.Set, group []string, bins []planVar, mixed map[string]bool, keys map[string][]string) (*plan, []int, error) {
	for _, a := range group {
		if h.Atom(a)&set == 0 {
			return nil, nil, fmt.Errorf("%w: attribute %q is in no relation of %v", ErrInvalid, a, h.Names(set))
		}
	}
	p := &plan{d: d, h: h}
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
	for _, i := range set.Members() {
		r := h.Relation(i)
		lf := leaf{rel: i, table: d.ident(r.Name)}
		var attrCols []string
		for _, a := range slices.Sorted(maps.Keys(r.Attrs)) {
			v, ok := attrVar[a]
			if !ok {
				continue
			}
			col := r.Attrs[a]
			lf.vars = append(lf.vars, v)
			lf.cols = append(lf.cols, d.ident(col))
			lf.text = append(lf.text, mixed[a])
			attrCols = append(attrCols, col)
		}
		lf.attrs = len(lf.vars)
		for k, b := range p.vars {
			if b.attr == "" && b.rel == i {
				lf.vars = append(lf.vars, k)
				lf.cols = append(lf.cols, d.ident(b.col))
				lf.text = append(lf.text, false)
			}
		}
		lf.keyed = covers(attrCols, keys[r.Name])
		p.leaves = append(p.leaves, lf)
	}
	p.order = p.keyJoinOrder(keys)
	return p, kept, nil
}

// covers reports whether cols holds every column of a non-empty key.
func covers(cols, key []string) bool {
	if len(key) == 0 {
		return false
	}
	for _, k := range key {
		if !slices.Contains(cols, k) {
			return false
		}
	}
	return true
}

// keyJoinOrder returns an order of the leaves (indices into p.leaves) in
// which every leaf after the first joins the leaves before it on
// attributes covering its declared primary key, or nil when there is none
// (then the plan eliminates variables). Such an order, when one exists
// from a given root, is found greedily: adding a leaf only adds
// attributes, so a leaf that can join keyed stays able to.
func (p *plan) keyJoinOrder(keys map[string][]string) []int {
	if len(p.leaves) == 1 {
		return []int{0}
	}
	for root := range p.leaves {
		order := []int{root}
		seen := map[string]bool{}
		for a := range p.h.Relation(p.leaves[root].rel).Attrs {
			seen[a] = true
		}
		used := map[int]bool{root: true}
		for progress := true; progress; {
			progress = false
			for k, lf := range p.leaves {
				if used[k] {
					continue
				}
				r := p.h.Relation(lf.rel)
				var on []string
				for a, c := range r.Attrs {
					if seen[a] {
						on = append(on, c)
					}
				}
				if !covers(on, keys[r.Name]) {
					continue
				}
				order = append(order, k)
				used[k] = true
				for a := range r.Attrs {
					seen[a] = true
				}
				progress = true
			}
		}
		if len(order) == len(p.leaves) {
			return order
		}
	}
	return nil
}

// statement returns the statement yielding one row per value of kept (in
// kept's order, columns v<k>) with count c: the plain join when the plan
// has a key-join order, else variable elimination. With kept empty the
// statement yields one row, whose c is 0 or NULL for an empty join.
func (p *plan) statement(kept []int) string {
	if p.order != nil {
		return p.plainJoin(kept)
	}
	return p.eliminate(kept)
}

// plainJoin is the statement of the plain join in p.order: one JOIN of the
// relations and one GROUP BY of the kept variables.
func (p *plan) plainJoin(kept []int) string {
	sel, q := p.plainFrom(kept)
	q = "SELECT " + strings.Join(append(sel, "count(*) AS c"), ", ") + q
	if len(sel) > 0 {
		q += " GROUP BY " + strings.Join(seq(len(sel)), ", ")
	}
	return q
}

// plainRows is the plain join in p.order without its GROUP BY: one row per
// join row, with the kept variables and a count c of 1. Summing c per
// value of kept gives [plan.plainJoin]'s rows; a caller that aggregates
// the join rows by something coarser (a function of the kept variables)
// saves the large GROUP BY. p.order must be set.
func (p *plan) plainRows(kept []int) string {
	sel, q := p.plainFrom(kept)
	return "SELECT " + strings.Join(append(sel, "1 AS c"), ", ") + q
}

// plainFrom returns the select list of kept (each variable as its alias)
// and the FROM … [WHERE …] of the plain join in p.order.
func (p *plan) plainFrom(kept []int) ([]string, string) {
	d := p.d
	owner := map[int]string{} // variable -> its value on the first leaf holding it
	// A join attribute of two leaves or more is compared by = in ON, which
	// no NULL passes; one of a single leaf (a grouped boundary attribute)
	// needs IS NOT NULL.
	leaves := map[int]int{}
	for _, lf := range p.leaves {
		for _, v := range lf.vars[:lf.attrs] {
			leaves[v]++
		}
	}
	var from strings.Builder
	var conds []string
	for k, li := range p.order {
		lf := p.leaves[li]
		t := fmt.Sprintf("t%d", k)
		var on []string
		for j, v := range lf.vars {
			x := lf.expr(d, t, j)
			if o, ok := owner[v]; ok {
				on = append(on, x+" = "+o)
			} else {
				owner[v] = x
			}
		}
		for j, c := range lf.conds(t) {
			if leaves[lf.vars[j]] == 1 {
				conds = append(conds, c)
			}
		}
		switch {
		case k == 0:
			from.WriteString(lf.table + " AS " + t)
		default:
			// Never a cross join: a leaf after the root joins on its key.
			from.WriteString(" JOIN " + lf.table + " AS " + t + " ON " + strings.Join(on, " AND "))
		}
	}
	var sel []string
	for _, v := range kept {
		sel = append(sel, owner[v]+" AS "+p.alias(v))
	}
	q := " FROM " + from.String()
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	return sel, q
}

// factors makes every leaf a factor: grouped by its variables with the
// count of its tuples, or, for a keyed leaf, one row per tuple with count 1.
func (p *plan) factors() {
	d := p.d
	for _, lf := range p.leaves {
		cols := make([]string, len(lf.vars))
		for k, v := range lf.vars {
			cols[k] = lf.expr(d, "t", k) + " AS " + p.alias(v)
		}
		cnt := "count(*) AS c"
		if lf.keyed {
			cnt = "1 AS c"
		}
		q := "SELECT " + strings.Join(append(cols, cnt), ", ") + " FROM " + lf.table + " AS t"
		if lf.attrs > 0 {
			q += " WHERE " + strings.Join(lf.conds("t"), " AND ")
		}
		grouped := true
		switch {
		case lf.keyed:
			grouped = false
		case len(cols) > 0:
			q += " GROUP BY " + strings.Join(seq(len(cols)), ", ")
		}
		p.add(q, lf.vars, grouped)
	}
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
func (p *plan) add(q string, vars []int, grouped bool) {
	name := fmt.Sprintf("f%d", len(p.ctes))
	p.ctes = append(p.ctes, p.d.ident(name)+" AS ("+q+")")
	p.alive = append(p.alive, factor{name: name, vars: vars, grouped: grouped})
}

// merge joins factors on their shared variables and sums the products of
// their counts per value of keep.
func (p *plan) merge(fs []factor, keep []int) string {
	d := p.d
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
	prod := ""
	for k, f := range order {
		t := d.ident(f.name)
		if k == 0 {
			prod = "CAST(" + t + ".c AS " + d.wide() + ")"
		} else {
			prod = "LEAST(" + prod + " * " + t + ".c, " + capLit + ")"
		}
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
	q := "SELECT " + strings.Join(append(sel, saturate(d, "SUM("+prod+")")+" AS c"), ", ") + " FROM " + from.String()
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
	p.factors()
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
		p.add(p.merge(in, vars), vars, true)
	}
	final := p.merge(p.alive, kept)
	if len(p.alive) == 1 && p.alive[0].grouped && len(kept) > 0 && sameSet(p.alive[0].vars, kept) {
		// The last factor is already grouped by exactly the kept
		// variables.
		sel := make([]string, len(kept))
		for i, v := range kept {
			sel[i] = p.alias(v)
		}
		final = "SELECT " + strings.Join(sel, ", ") + ", c FROM " + p.d.ident(p.alive[0].name)
	}
	return "WITH " + strings.Join(p.ctes, ", ") + " " + final
}

// sameSet reports whether two lists hold the same variables.
func sameSet(a, b []int) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// countCap is the public cap at which the count plans saturate: every
// count a plan computes is min(count, countCap). A product of counts of
// several relations overflows 64 bits long before any table is large (one
// tuple more turned 2⁴⁷ · 2¹⁶ into "Overflow in multiplication of INT64
// (140737488355328 * 65536)", an error after the budget was charged that
// quoted private counts and failed on one instance but not on its
// neighbour). So every product and sum of counts is computed exactly in a
// wide integer type ([dialect.wide]: two factors below 2⁶² multiply below
// 2¹²⁴) and clamped at countCap before the next one; no statistic query
// can overflow, on any instance.
//
// Why the clamp keeps the privacy arguments. Below the cap nothing
// changes: a count below countCap had every intermediate value below it
// too (the factors of a product are at least 1 where the product is
// non-zero, and sums only grow), so it is exact. Above it, x ↦ min(x, C) is
// monotone and 1-Lipschitz, so |min(f(I), C) − min(f(I′), C)| ≤
// |f(I) − f(I′)|: a clamped statistic changes between neighbours by no
// more than the true one, and a join size, degree or T_E that a bound
// dominates is dominated by that bound clamped alike. Where a statistic is
// an upper bound in a sensitivity argument (T_E in LŜ^k, degrees in Δ), a
// clamped term T·Πs_j with integer s_j is still at least min(T·Πs_j, C),
// so LŜ^k and RS^β computed from clamped T_E are at least the true ones
// clamped at C: they bound the sensitivity of every answer that is itself
// clamped at C, and an answer of 2⁶² join tuples is beyond every float64
// computation downstream (PMW refuses totals beyond 2⁵³) anyway.
const countCap = int64(1) << 62

// capLit is countCap as a SQL literal.
var capLit = strconv.FormatInt(countCap, 10)

// saturate is min(x, countCap) as a BIGINT, 0 where x is NULL (the sum
// over no rows), for an integer expression x in the wide type: a sum of
// counts, each already clamped. (LEAST ignores a NULL argument, so the
// COALESCE only states what happens.)
func saturate(d dialect, x string) string {
	return "CAST(LEAST(COALESCE(" + x + ", 0), " + capLit + ") AS " + d.bigint() + ")"
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
// column expression x, such as alias.column. Columns of one SQL type are
// compared as stored: for two BIGINT or two text key columns that is text
// equality already (see [keyText]).
func joinExpr(d dialect, x string, mixed bool) string {
	if mixed {
		return keyText(d, x)
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

// The engine's declared keys ([Engine].keys) are the primary key columns
// the spec declares for each loaded table and for the views derived from
// it. Keys are public (they come from the spec, never from the data) and
// serve only to choose a count plan's form: they are not checked against
// the data, and a plan's result does not depend on them.

// declareKeys records the declared primary keys of the tables of s (a
// table without one has none), replacing what earlier loads of the same
// names declared. [Engine.Load] calls it once the tables are loaded.
func (e *Engine) declareKeys(s *spec.Spec) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.keys == nil {
		e.keys = map[string][]string{}
	}
	for _, t := range s.Tables {
		if len(t.PrimaryKey) > 0 {
			e.keys[t.Name] = slices.Clone(t.PrimaryKey)
		} else {
			delete(e.keys, t.Name)
		}
	}
}

// inheritKeys gives view the declared key of base, renamed by rename (nil:
// same column names): the view holds a subset of base's rows, or one row
// per row of base, so a key of base is one of the view.
func (e *Engine) inheritKeys(view, base string, rename func(string) string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	k, ok := e.keys[base]
	if !ok {
		delete(e.keys, view)
		return
	}
	k = slices.Clone(k)
	if rename != nil {
		for i := range k {
			k[i] = rename(k[i])
		}
	}
	e.keys[view] = k
}

// dropKeys forgets the keys of dropped views.
func (e *Engine) dropKeys(views ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, v := range views {
		delete(e.keys, v)
	}
}

// keysOf returns the declared primary keys of the relations of h.
func (e *Engine) keysOf(h *hypergraph.Hypergraph) map[string][]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string][]string{}
	for _, r := range h.Relations() {
		if k, ok := e.keys[r.Name]; ok {
			out[r.Name] = k
		}
	}
	return out
}
