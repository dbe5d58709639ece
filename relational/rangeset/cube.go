package rangeset

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/synth-dp/synth/relational"
	"github.com/synth-dp/synth/spec"
)

// The true counts of a set come from one aggregate over the table: every
// row is mapped to its elementary cell — per dimension, how many of the
// set's cuts (the distinct box ends on that axis) it passes — and the rows
// are counted per occupied cell (GROUP BY the ranks, one scan). Each query
// is then a box of ranks, summed over the cells by a kd-tree in Go. A row
// lies in a query's box exactly when its ranks lie in the query's rank box,
// so the counts are those of the query's own WHERE clause (the filtered
// counts [filterCounts] computes, the oracle of the tests), at one scan
// for the whole set instead of one aggregate per query.

// axis holds one dimension's cuts: the distinct lower ends and the points
// just above the upper ends of the boxes, in the order of [Bound], each a
// test "x ≥ V" (Tick 0) or "x > V" (Tick 1). A value x passes the first
// rank(x) cuts and no other (the tests are nested), so rank(x) ∈ [0, K];
// NULL, which fails every comparison, gets the rank K + 1 that only the
// boxes leaving the column unconstrained cover.
type axis struct {
	col  *spec.Column
	cuts []Bound
}

// cut normalises a bound to the test it stands for on a value x: a bound
// at or below V (Tick ≤ 0) is passed by x ≥ V, one above it by x > V.
func cut(b Bound) Bound {
	if b.Tick <= 0 {
		return Bound{V: b.V}
	}
	return Bound{V: b.V, Tick: 1}
}

// upper is the cut just above the upper end hi: x ≤ V fails x > V, x < V
// fails x ≥ V.
func upper(hi Bound) Bound { return cut(Bound{V: hi.V, Tick: hi.Tick + 1}) }

func finite(b Bound) bool { return !math.IsInf(b.V, 0) }

// newAxes collects the cuts of every dimension.
func newAxes(set *Set) []axis {
	axes := make([]axis, len(set.Columns))
	for d := range axes {
		axes[d].col = set.cols[d]
		var cuts []Bound
		for _, b := range set.Boxes {
			if finite(b[d].Lo) {
				cuts = append(cuts, cut(b[d].Lo))
			}
			if finite(b[d].Hi) {
				cuts = append(cuts, upper(b[d].Hi))
			}
		}
		slices.SortFunc(cuts, Bound.Compare)
		axes[d].cuts = slices.CompactFunc(cuts, func(a, b Bound) bool { return a.Compare(b) == 0 })
	}
	return axes
}

// index is the 1-based position of cut c among the axis's cuts: x passes
// c exactly when rank(x) ≥ index(c).
func (a *axis) index(c Bound) int32 {
	i, ok := slices.BinarySearchFunc(a.cuts, c, Bound.Compare)
	if !ok {
		panic("rangeset: a box end is not a cut") // programmer error
	}
	return int32(i + 1)
}

// span is the interval of ranks whose values lie in iv: [0, K + 1] (NULL
// included) when iv is the whole line, which only an unconstrained column
// gives ([Parse]: every constraint has a finite end); empty when lo > hi.
func (a *axis) span(iv Interval) (lo, hi int32) {
	k := int32(len(a.cuts))
	if !finite(iv.Lo) && !finite(iv.Hi) {
		return 0, k + 1
	}
	lo, hi = 0, k
	if finite(iv.Lo) {
		lo = a.index(cut(iv.Lo))
	}
	if finite(iv.Hi) {
		hi = a.index(upper(iv.Hi)) - 1
	}
	return lo, hi
}

// fewCuts is the most cuts an ordered axis ranks by a CASE over them;
// above it the axis's rank goes through its buckets (a variable for the
// tests). A CASE over thousands of cuts runs far slower than the lookup.
var fewCuts = 64

// rankSQL returns the rank of column x as SQL. Categorical and boolean
// columns: a CASE over the declared values (the axis coordinate of a
// value is its index in the domain; boolean false 0, true 1), consecutive
// values of one rank sharing a WHEN; pre and view are empty.
//
// Ordered columns: a value v (a date as days since 1970-01-01) falls in
// one of B buckets of [L, H], L and H the smallest and largest cut,
// bucket(v) = min(⌊(clamp(v, L, H) − L)·S⌋, B − 1) with S = B/(H − L),
// computed in SQL for the values (pre, the column name of the caller's
// inner projection) and, by the same expression in the same engine, for
// the cuts. Every step is monotone in v, so a cut in an earlier bucket
// than v's is below v (passed) and one in a later bucket above it
// (failed): rank(v) = base(bucket) + the cuts of v's bucket it passes, at
// most M of them (the fullest bucket), each compared as the query
// compares, v ≥ V or v > V against the same float64. An axis of at most
// fewCuts cuts is ranked by a balanced CASE over them instead (no view). view is a SELECT of
// one row per bucket (b, base, v1, t1, …, vM, tM; missing cuts +∞) that
// the caller joins on b = pre as alias; rank reads alias's columns. NULL
// gets K + 1.
func (a *axis) rankSQL(ctx context.Context, db relational.DB, x, alias string) (pre, view, rank string, err error) {
	px := "p." + x // the column in the caller's inner projection p
	k := len(a.cuts)
	null := strconv.Itoa(k + 1)
	switch a.col.Type {
	case spec.Categorical, spec.Boolean:
		lits := make([]string, len(a.col.Values))
		for i, v := range a.col.Values {
			lits[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		}
		if a.col.Type == spec.Boolean {
			lits = []string{"FALSE", "TRUE"}
		}
		var b strings.Builder
		b.WriteString("CASE")
		for i := 0; i < len(lits); {
			r := a.rank(float64(i))
			j := i
			for j < len(lits) && a.rank(float64(j)) == r {
				j++
			}
			fmt.Fprintf(&b, " WHEN %s IN (%s) THEN %d", px, strings.Join(lits[i:j], ", "), r)
			i = j
		}
		b.WriteString(" ELSE " + null + " END")
		return "", "", b.String(), nil
	case spec.Integer, spec.Numeric, spec.Date:
	default:
		return "", "", "", fmt.Errorf("%w: column %s of type %s is not a range axis", ErrNotBox, a.col.Name, a.col.Type)
	}
	if k <= fewCuts {
		// Few cuts: a balanced CASE over them (⌈log₂(K + 1)⌉ comparisons
		// a value), each the query's own comparison.
		var b strings.Builder
		var tree func(lo, hi int) // cuts [0, lo) passed, [hi, K) failed
		tree = func(lo, hi int) {
			if lo == hi {
				b.WriteString(strconv.Itoa(lo))
				return
			}
			mid := (lo + hi) / 2
			c := a.cuts[mid]
			op := " >= "
			if c.Tick > 0 {
				op = " > "
			}
			lit := flt(c.V)
			switch {
			case a.col.Type == spec.Date:
				lit = "DATE '" + time.Unix(int64(c.V)*86400, 0).UTC().Format(time.DateOnly) + "'"
			case a.col.Type == spec.Integer && c.V == math.Trunc(c.V) && math.Abs(c.V) < 1<<53:
				// An integer literal: the same test on the column's whole
				// numbers, without casting the column to DOUBLE.
				lit = strconv.FormatInt(int64(c.V), 10)
			}
			b.WriteString("CASE WHEN " + px + op + lit + " THEN ")
			tree(mid+1, hi)
			b.WriteString(" ELSE ")
			tree(lo, mid)
			b.WriteString(" END")
		}
		tree(0, k)
		return "", "", "CASE WHEN " + px + " IS NULL THEN " + null + " ELSE " + b.String() + " END", nil
	}
	value := func(x string) string {
		if a.col.Type == spec.Date {
			return "CAST(" + x + " - DATE '1970-01-01' AS DOUBLE PRECISION)"
		}
		return "CAST(" + x + " AS DOUBLE PRECISION)"
	}
	v := value(px)
	lo, hi := a.cuts[0].V, a.cuts[k-1].V
	buckets, scale := 1, 0.0
	if hi > lo {
		buckets = min(2*k, 1<<14)
		if span := hi - lo; a.col.Type != spec.Numeric && span < float64(buckets) {
			buckets = int(span) + 1 // whole numbers: one bucket each
		}
		scale = float64(buckets) / (hi - lo)
	}
	bucket := func(v string) string {
		return fmt.Sprintf("LEAST(CAST(floor((LEAST(GREATEST(%s, %s), %s) - %s) * %s) AS BIGINT), %d)",
			v, flt(lo), flt(hi), flt(lo), flt(scale), buckets-1)
	}
	// The cuts' buckets, by the same expression.
	vals := make([]string, k)
	for i, c := range a.cuts {
		vals[i] = "(" + flt(c.V) + ")"
	}
	cb := make([]int64, 0, k)
	err = db.Aggregate(ctx, "SELECT "+bucket("v")+" FROM (VALUES "+strings.Join(vals, ", ")+") AS c(v) ORDER BY v", nil,
		func(r *sql.Rows) error {
			var b int64
			if err := r.Scan(&b); err != nil {
				return err
			}
			cb = append(cb, b)
			return nil
		})
	if err != nil {
		return "", "", "", fmt.Errorf("rangeset: buckets of %s: %w", a.col.Name, err)
	}
	if len(cb) != k {
		return "", "", "", fmt.Errorf("rangeset: buckets of %s: %d rows for %d cuts", a.col.Name, len(cb), k)
	}
	m, first := 0, make([]int, buckets+1)
	for b, i := 0, 0; b < buckets; b++ {
		first[b] = i
		for i < k && cb[i] == int64(b) {
			i++
		}
		m = max(m, i-first[b])
	}
	first[buckets] = k
	rows := make([]string, buckets)
	names := []string{"b", "base"}
	for j := 1; j <= m; j++ {
		names = append(names, "v"+strconv.Itoa(j), "t"+strconv.Itoa(j))
	}
	for b := range rows {
		r := []string{strconv.Itoa(b), strconv.Itoa(first[b])}
		for j := 0; j < m; j++ {
			if i := first[b] + j; i < first[b+1] {
				r = append(r, flt(a.cuts[i].V), strconv.Itoa(int(a.cuts[i].Tick)))
			} else {
				r = append(r, "CAST('inf' AS DOUBLE PRECISION)", "1")
			}
		}
		rows[b] = "(" + strings.Join(r, ", ") + ")"
	}
	view = "SELECT * FROM (VALUES " + strings.Join(rows, ", ") + ") AS c(" + strings.Join(names, ", ") + ")"
	terms := []string{alias + ".base"}
	for j := 1; j <= m; j++ {
		c, t := alias+".v"+strconv.Itoa(j), alias+".t"+strconv.Itoa(j)
		terms = append(terms, fmt.Sprintf("CASE WHEN %s > %s OR %s = %s AND %s = 0 THEN 1 ELSE 0 END", v, c, v, c, t))
	}
	return bucket(value(x)), view, "CASE WHEN " + px + " IS NULL THEN " + null + " ELSE " + strings.Join(terms, " + ") + " END", nil
}

func flt(f float64) string {
	return "CAST(" + strconv.FormatFloat(f, 'g', -1, 64) + " AS DOUBLE PRECISION)"
}

// rank is the number of cuts the axis coordinate v passes.
func (a *axis) rank(v float64) int32 {
	i, _ := slices.BinarySearchFunc(a.cuts, v, func(c Bound, v float64) int {
		if c.V < v || c.V == v && c.Tick <= 0 {
			return -1 // passed
		}
		return 1
	})
	return int32(i)
}

// cubeCounts counts the rows of every query of set: one aggregate of the
// table's rows per elementary cell, then each query's box summed over the
// occupied cells.
// viewSeq numbers the lookup views of concurrent calls.
var viewSeq atomic.Int64

func cubeCounts(ctx context.Context, db relational.DB, set *Set) ([]int64, error) {
	axes := newAxes(set)
	d := len(axes)
	inner := make([]string, 0, 2*d)
	sel := make([]string, d)
	grp := make([]string, d)
	var joins []string
	seq := viewSeq.Add(1)
	for i := range axes {
		x := col(set.Columns[i])
		alias := "_synth_l" + strconv.Itoa(i)
		pre, view, r, err := axes[i].rankSQL(ctx, db, x, alias)
		if err != nil {
			return nil, err
		}
		if axes[i].col.Type == spec.Numeric {
			// Compared with DOUBLE PRECISION literals, a numeric column
			// (DECIMAL in some Parquet files) is cast to DOUBLE PRECISION
			// anyway: once here rather than at each comparison.
			inner = append(inner, "CAST("+x+" AS DOUBLE PRECISION) AS "+x)
		} else {
			inner = append(inner, x)
		}
		if view != "" {
			name := fmt.Sprintf("_synth_answer_rangeset_%d_%d", seq, i)
			if err := db.CreateView(ctx, name, view); err != nil {
				return nil, fmt.Errorf("rangeset: %w", err)
			}
			defer db.DropView(context.WithoutCancel(ctx), name) //nolint:errcheck // a leftover view of the work schema holds no data
			inner = append(inner, pre+" AS _synth_b"+strconv.Itoa(i))
			joins = append(joins, " LEFT JOIN "+ident(name)+" AS "+alias+" ON "+alias+".b = p._synth_b"+strconv.Itoa(i))
		}
		sel[i] = "CAST(" + r + " AS BIGINT) AS _synth_r" + strconv.Itoa(i) // the cell index below is BIGINT arithmetic
		grp[i] = "_synth_r" + strconv.Itoa(i)
	}
	// When the grid of ranks (K + 2 per axis) has fewer than 2⁶² cells,
	// one BIGINT cell index (mixed radix) is grouped instead of d ranks.
	radix := make([]int64, d)
	cells := int64(1)
	for i := range axes {
		radix[i] = int64(len(axes[i].cuts) + 2)
		if cells > 0 && cells <= (1<<62)/radix[i] {
			cells *= radix[i]
		} else {
			cells = 0
		}
	}
	from := " FROM (SELECT " + strings.Join(sel, ", ") + " FROM (SELECT " + strings.Join(inner, ", ") + " FROM " + ident(set.Table) +
		") AS p" + strings.Join(joins, "") + ") AS c"
	var text string
	switch {
	case d == 0:
		text = "SELECT COUNT(*) FROM " + ident(set.Table)
	case cells > 0:
		id := grp[0]
		for i := 1; i < d; i++ {
			id = "(" + id + ") * " + strconv.FormatInt(radix[i], 10) + " + " + grp[i]
		}
		text = "SELECT CAST(" + id + " AS BIGINT) AS _synth_cell, COUNT(*)" + from + " GROUP BY _synth_cell"
	default:
		text = "SELECT " + strings.Join(grp, ", ") + ", COUNT(*)" + from + " GROUP BY " + strings.Join(grp, ", ")
	}
	t := &kdTree{dims: d}
	cols := d
	if cells > 0 && d > 0 {
		cols = 1
	}
	row := make([]int64, cols+1)
	dest := make([]any, cols+1)
	for i := range row {
		dest[i] = &row[i]
	}
	err := db.Aggregate(ctx, text, nil, func(r *sql.Rows) error {
		if err := r.Scan(dest...); err != nil {
			return err
		}
		if cols == 1 && d > 0 {
			at := len(t.pts)
			t.pts = append(t.pts, make([]int32, d)...)
			for i, c := d-1, row[0]; i >= 0; i-- {
				t.pts[at+i] = int32(c % radix[i])
				c /= radix[i]
			}
		} else {
			for i := 0; i < d; i++ {
				t.pts = append(t.pts, int32(row[i]))
			}
		}
		t.cnt = append(t.cnt, row[cols])
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rangeset: counts: %w", err)
	}
	t.build()
	// The queries in parallel: the tree is only read.
	out := make([]int64, len(set.Boxes))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(out)/64))
	var g errgroup.Group
	for w := range workers {
		g.Go(func() error {
			lo, hi := make([]int32, d), make([]int32, d)
			for q := w; q < len(out); q += workers {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				empty := false
				for i := range axes {
					lo[i], hi[i] = axes[i].span(set.Boxes[q][i])
					empty = empty || lo[i] > hi[i]
				}
				if !empty {
					out[q] = t.count(lo, hi)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}
