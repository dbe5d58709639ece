package engine

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/spec"
)

// Degree is the number of tuples of a relation holding one value of a set
// of attributes.
type Degree struct {
	// Values holds the value of every attribute, as text, in the order the
	// attributes were asked for. Tuples are grouped by the join's equality
	// of the stored values, not by this text (see [Engine.Degrees]).
	Values []string
	// Count is the number of tuples (with multiplicity) holding Values.
	Count int64
}

// AttrDegrees are the degrees of the values of one join attribute in one
// relation.
type AttrDegrees struct {
	// Relation is the relation's index in the hypergraph.
	Relation int
	// Attr is the join attribute.
	Attr string
	// Degrees lists every value's degree, sorted by value.
	Degrees []Degree
}

// Cell is a non-empty cell of a histogram.
type Cell struct {
	// Index is the cell's index in mixed radix over the released columns,
	// the first column most significant.
	Index int64
	// Count is the number of join tuples in the cell.
	Count int64
}

// degreeSQL is the GROUP BY of relation rel over attrs in dialect d, with
// the attributes compared as text given (mixed, from [Engine.mixedAttrs]):
// one row per value, each attribute's value as text (in attrs order), then
// its count c, sorted by the texts. It reads no database.
//
// The groups are formed on the values the join compares ([joinValue]), not
// on their text: a degree must count exactly the tuples that one tuple of
// another relation joins, or the maximum degree undercuts the sensitivity
// of the join size (see canonicalNumber). The text is only the label of a
// group.
func degreeSQL(d dialect, h *hypergraph.Hypergraph, rel int, attrs []string, mixed map[string]bool) (string, error) {
	if h == nil || rel < 0 || rel >= h.Len() {
		return "", fmt.Errorf("%w: relation %d", ErrInvalid, rel)
	}
	r := h.Relation(rel)
	if len(attrs) == 0 {
		return "", fmt.Errorf("%w: degrees in %s: no attributes", ErrInvalid, r.Name)
	}
	g, err := groupQuery(d, r, attrs, mixed)
	if err != nil {
		return "", err
	}
	labels := make([]string, len(attrs))
	for k := range attrs {
		labels[k] = d.toText(d.ident(fmt.Sprintf("v%d", k)))
	}
	// Sorted by the labels in the engine (in parallel there); text orders
	// byte by byte as in Go (toText), and Degrees checks the order.
	return "SELECT " + strings.Join(labels, ", ") + ", c FROM (" + g + ") AS g ORDER BY " + strings.Join(seq(len(attrs)), ", "), nil
}

// maxDegreeSQL is the statement of [Engine.MaxDegree] of relation r over
// attrs in dialect d: the largest count of [groupQuery], whose groups need
// no text label.
func maxDegreeSQL(d dialect, r hypergraph.Relation, attrs []string, mixed map[string]bool) (string, error) {
	if len(attrs) == 0 {
		return "", fmt.Errorf("%w: degrees in %s: no attributes", ErrInvalid, r.Name)
	}
	g, err := groupQuery(d, r, attrs, mixed)
	if err != nil {
		return "", err
	}
	return "SELECT CAST(COALESCE(MAX(c), 0) AS BIGINT) FROM (" + g + ") AS g", nil
}

// groupQuery is the GROUP BY of relation r over attrs on the values the
// join compares ([joinValue]): columns v0… (the compared values, in attrs
// order) and c, the number of tuples holding them; tuples with a NULL
// attribute join nothing and are left out. mixed is from
// [Engine.mixedAttrs].
func groupQuery(d dialect, r hypergraph.Relation, attrs []string, mixed map[string]bool) (string, error) {
	var keys, conds []string
	for k, a := range attrs {
		c, ok := r.Attrs[a]
		if !ok {
			return "", fmt.Errorf("%w: relation %s has no attribute %q", ErrInvalid, r.Name, a)
		}
		if slices.Contains(attrs[:k], a) {
			return "", fmt.Errorf("%w: attribute %q given twice", ErrInvalid, a)
		}
		keys = append(keys, joinValue(d, c, mixed[a])+" AS "+d.ident(fmt.Sprintf("v%d", k)))
		conds = append(conds, d.ident(c)+" IS NOT NULL")
	}
	return "SELECT " + strings.Join(keys, ", ") + ", count(*) AS c FROM " + d.ident(r.Name) +
		" WHERE " + strings.Join(conds, " AND ") + " GROUP BY " + strings.Join(seq(len(keys)), ", "), nil
}

// Degrees returns the degree of every value of the attributes attrs in
// relation rel: the number of its tuples holding that value, where two
// values are the same exactly when the join of h finds them equal (so that
// a degree is the number of tuples one tuple of another relation joins).
// Values are sorted by their text; values with a NULL component are left
// out. Every table of h must be loaded.
//
// One BIGINT attribute (a canonical integer key, an integer column) is
// grouped and sorted as integers and labelled here ([intDegrees]); other
// attributes are labelled and sorted by their text in the engine.
func (e *Engine) Degrees(ctx context.Context, h *hypergraph.Hypergraph, rel int, attrs []string) ([]Degree, error) {
	if h == nil || rel < 0 || rel >= h.Len() {
		return nil, fmt.Errorf("%w: relation %d", ErrInvalid, rel)
	}
	mixed, err := e.mixedAttrs(ctx, h)
	if err != nil {
		return nil, err
	}
	r := h.Relation(rel)
	if len(attrs) == 1 && !mixed[attrs[0]] {
		if c, ok := r.Attrs[attrs[0]]; ok {
			cols, err := e.columnTypes(ctx, r.Name)
			if err != nil {
				return nil, err
			}
			if cols[c] == "BIGINT" {
				return e.intDegrees(ctx, r, attrs, mixed)
			}
		}
	}
	q, err := degreeSQL(e.d, h, rel, attrs, mixed)
	if err != nil {
		return nil, err
	}
	rows, err := e.db.QueryContext(ctx, q)
	if err != nil {
		return nil, statError(ctx, fmt.Sprintf("degrees in %s", r.Name), err)
	}
	defer rows.Close()
	var out []Degree
	var labels []string // the Values of the next rows, allocated in blocks
	dg := Degree{Values: make([]string, len(attrs))}
	dst := make([]any, 0, len(attrs)+1)
	for i := range dg.Values {
		dst = append(dst, &dg.Values[i])
	}
	dst = append(dst, &dg.Count)
	for rows.Next() {
		if err := rows.Scan(dst...); err != nil {
			return nil, statError(ctx, fmt.Sprintf("degrees in %s", r.Name), err)
		}
		if len(labels) < len(attrs) {
			labels = make([]string, 1024*len(attrs))
		}
		v := labels[:len(attrs):len(attrs)]
		labels = labels[len(attrs):]
		copy(v, dg.Values)
		out = append(out, Degree{Values: v, Count: dg.Count})
	}
	if err := rows.Err(); err != nil {
		return nil, statError(ctx, fmt.Sprintf("degrees in %s", r.Name), err)
	}
	// The query sorted the values; sort here only if the engine's text
	// order differs from Go's (a linear check otherwise).
	byValues := func(a, b Degree) int { return slices.Compare(a.Values, b.Values) }
	if !slices.IsSortedFunc(out, byValues) {
		slices.SortFunc(out, byValues)
	}
	return out, nil
}

// intDegrees is [Engine.Degrees] of one BIGINT attribute: the engine
// groups and sorts the integers, and the labels, the decimal text that
// CAST(v AS VARCHAR) writes, are written and put in text order here
// ([intDegreeList]). Sorting text in the engine costs about as much as the
// grouping itself (TPC-H SF 1: 1.5 million keys); sorting the integers
// costs it a fifth of that, and the text order of sorted integers is a
// merge.
func (e *Engine) intDegrees(ctx context.Context, r hypergraph.Relation, attrs []string, mixed map[string]bool) ([]Degree, error) {
	g, err := groupQuery(e.d, r, attrs, mixed)
	if err != nil {
		return nil, err
	}
	rows, err := e.db.QueryContext(ctx, "SELECT "+e.d.ident("v0")+", c FROM ("+g+") AS g ORDER BY 1")
	if err != nil {
		return nil, statError(ctx, fmt.Sprintf("degrees in %s", r.Name), err)
	}
	defer rows.Close()
	var vals, counts []int64
	var v, c int64
	for rows.Next() {
		if err := rows.Scan(&v, &c); err != nil {
			return nil, statError(ctx, fmt.Sprintf("degrees in %s", r.Name), err)
		}
		vals, counts = append(vals, v), append(counts, c)
	}
	if err := rows.Err(); err != nil {
		return nil, statError(ctx, fmt.Sprintf("degrees in %s", r.Name), err)
	}
	return intDegreeList(vals, counts), nil
}

// intDegreeList is the degree list of the distinct integer values vals
// (best sorted) with their counts: each labelled by its decimal text,
// sorted by that text ([decimalTextOrder]).
func intDegreeList(vals, counts []int64) []Degree {
	order := decimalTextOrder(vals)
	// Every label is a substring of one string: one allocation for all.
	width := 0 // the longest label: that of the least or the greatest value
	if len(vals) > 0 {
		width = max(len(strconv.FormatInt(slices.Min(vals), 10)), len(strconv.FormatInt(slices.Max(vals), 10)))
	}
	buf := make([]byte, 0, len(vals)*width)
	ends := make([]int, len(order))
	for k, i := range order {
		buf = strconv.AppendInt(buf, vals[i], 10)
		ends[k] = len(buf)
	}
	text := string(buf)
	labels := make([]string, len(order))
	out := make([]Degree, len(order))
	start := 0
	for k, i := range order {
		labels[k] = text[start:ends[k]]
		start = ends[k]
		out[k] = Degree{Values: labels[k : k+1 : k+1], Count: counts[i]}
	}
	return out
}

// pow10 holds 10⁰ … 10¹⁹, every power of ten below 2⁶⁴.
var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// decimalTextOrder returns the indices of vals, distinct integers, in the
// byte order of their decimal text (strconv.FormatInt; also DuckDB's and
// PostgreSQL's text of a BIGINT): "-1" < "-10" < "-2" < "0" < "1" < "10" <
// "100" < "2". It sorts vals first unless they are sorted already, as
// [Engine.intDegrees] has the engine do; from sorted values it takes
// linear time per distinct number of digits.
//
// A '-' sorts before every digit, so the negative values come first,
// ordered by the text of their magnitudes, then the others. Among values
// of one sign and one number of digits, text order is the order of the
// magnitudes, so the ascending magnitudes form one sorted run per number
// of digits, and the runs are merged comparing the magnitudes as text: m
// of d digits compares as the pair (m·10^(19−d), d), its digits padded
// with zeros to 19 (which fits a uint64), a prefix before its extensions
// ("1" < "10" < "100" pad alike).
func decimalTextOrder(vals []int64) []int {
	idx := make([]int, len(vals))
	for i := range idx {
		idx[i] = i
	}
	if !slices.IsSorted(vals) {
		slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(vals[a], vals[b]) })
	}
	neg, _ := slices.BinarySearchFunc(idx, int64(0), func(i int, t int64) int { return cmp.Compare(vals[i], t) })
	slices.Reverse(idx[:neg]) // ascending magnitudes
	keys := make([]textKey, len(vals))
	tmp := make([]textKey, len(vals))
	textRuns(keys[:neg], tmp[:neg], vals, idx[:neg])
	textRuns(keys[neg:], tmp[neg:], vals, idx[neg:])
	for j, k := range keys {
		idx[j] = k.i
	}
	return idx
}

// textKey is a magnitude's place in text order (see [decimalTextOrder]).
type textKey struct {
	padded uint64 // the digits, padded with zeros to 19
	i      int    // index in vals
	digits uint8
}

// textRuns fills keys (using tmp, both as long as idx) with the keys of
// idx, the indices of values of one sign in ascending magnitude, in the
// text order of their magnitudes.
func textRuns(keys, tmp []textKey, vals []int64, idx []int) {
	runs := []int{0} // where each run of one number of digits starts, then len(idx)
	for k, i := range idx {
		m := uint64(vals[i])
		if vals[i] < 0 {
			m = -m // two's complement: also |math.MinInt64|
		}
		d := 1
		for d < len(pow10) && m >= pow10[d] {
			d++
		}
		keys[k] = textKey{padded: m * pow10[19-d], i: i, digits: uint8(d)}
		if k > 0 && keys[k-1].digits != uint8(d) {
			runs = append(runs, k)
		}
	}
	runs = append(runs, len(idx))
	// Merge the two neighbouring runs with the fewest values until one run
	// is left: the long runs (most values have the most digits) are
	// merged once or twice, not once per level.
	for len(runs) > 2 {
		j := 0 // merge runs j and j+1
		for r := 1; r+2 < len(runs); r++ {
			if runs[r+2]-runs[r] < runs[j+2]-runs[j] {
				j = r
			}
		}
		lo, mid, hi := runs[j], runs[j+1], runs[j+2]
		a, b, k := lo, mid, lo
		for a < mid && b < hi {
			if x, y := keys[a], keys[b]; y.padded < x.padded || y.padded == x.padded && y.digits < x.digits {
				tmp[k] = y
				b++
			} else {
				tmp[k] = x
				a++
			}
			k++
		}
		k += copy(tmp[k:], keys[a:mid])
		copy(tmp[k:], keys[b:hi])
		copy(keys[lo:hi], tmp[lo:hi])
		runs = slices.Delete(runs, j+1, j+2)
	}
}

// MaxDegree returns the largest degree of a value of attrs in relation rel,
// 0 for an empty relation.
func (e *Engine) MaxDegree(ctx context.Context, h *hypergraph.Hypergraph, rel int, attrs []string) (int64, error) {
	if h == nil || rel < 0 || rel >= h.Len() {
		return 0, fmt.Errorf("%w: relation %d", ErrInvalid, rel)
	}
	mixed, err := e.mixedAttrs(ctx, h)
	if err != nil {
		return 0, err
	}
	q, err := maxDegreeSQL(e.d, h.Relation(rel), attrs, mixed)
	if err != nil {
		return 0, err
	}
	n, err := e.count(ctx, q)
	if err != nil {
		return 0, statError(ctx, "max degree in "+h.Relation(rel).Name, err)
	}
	return n, nil
}

// AllDegrees returns the degrees of every attribute of every relation,
// relations in index order and attributes sorted.
func (e *Engine) AllDegrees(ctx context.Context, h *hypergraph.Hypergraph) ([]AttrDegrees, error) {
	var out []AttrDegrees
	for i, r := range h.Relations() {
		attrs := make([]string, 0, len(r.Attrs))
		for a := range r.Attrs {
			attrs = append(attrs, a)
		}
		slices.Sort(attrs)
		for _, a := range attrs {
			dg, err := e.Degrees(ctx, h, i, []string{a})
			if err != nil {
				return nil, err
			}
			out = append(out, AttrDegrees{Relation: i, Attr: a, Degrees: dg})
		}
	}
	return out, nil
}

// JoinSize returns |⋈ of all relations| of h. Relations that share no
// attribute multiply (a cross product).
func (e *Engine) JoinSize(ctx context.Context, h *hypergraph.Hypergraph) (int64, error) {
	if h == nil {
		return 0, fmt.Errorf("%w: no hypergraph", ErrInvalid)
	}
	mixed, err := e.mixedAttrs(ctx, h)
	if err != nil {
		return 0, err
	}
	q, err := joinSizeSQL(e.d, h, mixed, e.keysOf(h))
	if err != nil {
		return 0, err
	}
	n, err := e.count(ctx, q)
	if err != nil {
		return 0, statError(ctx, fmt.Sprintf("join size of %v", h.Names(h.All())), err)
	}
	return n, nil
}

// MaxBoundaryCount returns T_E for a connected non-empty set e of
// relations (Ghazi et al. Def. 3.6): the maximum, over the values of the
// boundary ∂E ([hypergraph.Hypergraph.Boundary]), of the size of the join of
// the relations in e restricted to that value; the join size of e when ∂E is
// empty; 0 when the join of e is empty. A disconnected e is the product over
// its components, left to the caller: it is an error here, as is an empty
// one.
func (e *Engine) MaxBoundaryCount(ctx context.Context, h *hypergraph.Hypergraph, set hypergraph.Set) (int64, error) {
	if h == nil {
		return 0, fmt.Errorf("%w: no hypergraph", ErrInvalid)
	}
	if set == 0 || set&^h.All() != 0 {
		return 0, fmt.Errorf("%w: relation set %b", ErrInvalid, uint64(set))
	}
	if !h.Connected(set) {
		return 0, fmt.Errorf("%w: relations %v are not connected", ErrInvalid, h.Names(set))
	}
	mixed, err := e.mixedAttrs(ctx, h)
	if err != nil {
		return 0, err
	}
	q, err := maxBoundarySQL(e.d, h, set, mixed, e.keysOf(h))
	if err != nil {
		return 0, err
	}
	n, err := e.count(ctx, q)
	if err != nil {
		return 0, statError(ctx, fmt.Sprintf("T_E of %v", h.Names(set)), err)
	}
	return n, nil
}

// Histogram returns the sparse histogram of the join of all relations of h
// over the binned columns cols (loaded columns, Table naming a relation of
// h): the count of join tuples in every non-empty cell, sorted by index. A
// cell's index is mixed radix over the columns' cells with sizes sizes,
// the first column most significant: ((b0·n1 + b1)·n2 + b2)…; sizes must
// be the columns' declared domain sizes (checked for tables loaded by this
// engine). It is one statement whose last step is a GROUP BY over the cells.
func (e *Engine) Histogram(ctx context.Context, h *hypergraph.Hypergraph, cols []spec.ColumnRef, sizes []int) ([]Cell, error) {
	if h == nil {
		return nil, fmt.Errorf("%w: no hypergraph", ErrInvalid)
	}
	if len(cols) == 0 || len(cols) != len(sizes) {
		return nil, fmt.Errorf("%w: histogram over %d columns with %d sizes", ErrInvalid, len(cols), len(sizes))
	}
	for i, c := range cols {
		if h.Index(c.Table) < 0 {
			return nil, fmt.Errorf("%w: histogram column %s: no relation %q", ErrInvalid, c, c.Table)
		}
		types, err := e.columnTypes(ctx, c.Table)
		if err != nil {
			return nil, err
		}
		if _, ok := types[BinColumn(c.Column)]; !ok {
			return nil, fmt.Errorf("%w: histogram column %s is not a loaded non-key column", ErrInvalid, c)
		}
		if n, ok := e.declaredSize(c.Table, c.Column); ok && n != sizes[i] {
			return nil, fmt.Errorf("%w: histogram column %s: size %d, but its declared domain has %d cells", ErrInvalid, c, sizes[i], n)
		}
	}
	mixed, err := e.mixedAttrs(ctx, h)
	if err != nil {
		return nil, err
	}
	q, err := histogramSQL(e.d, h, cols, sizes, mixed, e.keysOf(h))
	if err != nil {
		return nil, err
	}
	rows, err := e.db.QueryContext(ctx, q)
	if err != nil {
		return nil, statError(ctx, "histogram", err)
	}
	defer rows.Close()
	var out []Cell
	for rows.Next() {
		var c Cell
		if err := rows.Scan(&c.Index, &c.Count); err != nil {
			return nil, statError(ctx, "histogram", err)
		}
		if c.Index < 0 {
			return nil, fmt.Errorf("%w: histogram: a cell lies outside the sizes %v", ErrInvalid, sizes)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, statError(ctx, "histogram", err)
	}
	return out, nil // sorted by the query's ORDER BY i
}

// joinSizeSQL is the statement of [Engine.JoinSize] in dialect d: one row,
// the join size. mixed is from [Engine.mixedAttrs], keys are the declared
// primary keys (they choose the plan's form, see [buildPlan]); it reads no
// database.
func joinSizeSQL(d dialect, h *hypergraph.Hypergraph, mixed map[string]bool, keys map[string][]string) (string, error) {
	p, kept, err := buildPlan(d, h, h.All(), nil, nil, mixed, keys)
	if err != nil {
		return "", err
	}
	return "SELECT CAST(COALESCE(c, 0) AS BIGINT) FROM (" + p.statement(kept) + ") AS j", nil
}

// maxBoundarySQL is the statement of [Engine.MaxBoundaryCount] of the
// connected non-empty set of relations set, in dialect d; see
// [joinSizeSQL].
func maxBoundarySQL(d dialect, h *hypergraph.Hypergraph, set hypergraph.Set, mixed map[string]bool, keys map[string][]string) (string, error) {
	p, kept, err := buildPlan(d, h, set, h.Boundary(set), nil, mixed, keys)
	if err != nil {
		return "", err
	}
	return "SELECT CAST(COALESCE(MAX(c), 0) AS BIGINT) FROM (" + p.statement(kept) + ") AS j", nil
}

// histogramSQL is the statement of [Engine.Histogram] over the binned
// columns cols with sizes, in dialect d: rows (i, c), i the cell's index
// (−1 for a cell outside the sizes), sorted by i; see [joinSizeSQL].
func histogramSQL(d dialect, h *hypergraph.Hypergraph, cols []spec.ColumnRef, sizes []int, mixed map[string]bool, keys map[string][]string) (string, error) {
	if len(cols) == 0 || len(cols) != len(sizes) {
		return "", fmt.Errorf("%w: histogram over %d columns with %d sizes", ErrInvalid, len(cols), len(sizes))
	}
	total := int64(1)
	bins := make([]planVar, len(cols))
	for i, c := range cols {
		rel := h.Index(c.Table)
		if rel < 0 {
			return "", fmt.Errorf("%w: histogram column %s: no relation %q", ErrInvalid, c, c.Table)
		}
		if sizes[i] < 1 || total > (1<<62)/int64(sizes[i]) {
			return "", fmt.Errorf("%w: histogram column %s: size %d (universe too large or empty)", ErrInvalid, c, sizes[i])
		}
		total *= int64(sizes[i])
		bins[i] = planVar{rel: rel, col: BinColumn(c.Column)}
	}
	p, kept, err := buildPlan(d, h, h.All(), nil, bins, mixed, keys)
	if err != nil {
		return "", err
	}
	idx := "CAST(" + p.alias(kept[0]) + " AS BIGINT)"
	var check []string
	for i, v := range kept {
		check = append(check, fmt.Sprintf("%s < 0 OR %s >= %d", p.alias(v), p.alias(v), sizes[i]))
		if i > 0 {
			idx = fmt.Sprintf("(%s * %d + %s)", idx, sizes[i], p.alias(v))
		}
	}
	// A cell outside its size makes the index -1, reported by
	// [Engine.Histogram]. It cannot happen for tables loaded by an engine,
	// whose sizes are checked without looking at the data.
	return "SELECT CASE WHEN " + strings.Join(check, " OR ") + " THEN -1 ELSE " + idx + " END AS i, CAST(c AS BIGINT) FROM (" +
		p.statement(kept) + ") AS j ORDER BY i", nil
}

// count runs a query returning one integer.
func (e *Engine) count(ctx context.Context, q string) (int64, error) {
	var n sql.NullInt64
	if err := e.db.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return 0, err
	}
	return n.Int64, nil
}
