package rangeset

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/bits"
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

// The true counts of a set come from one aggregate over the table per
// block of queries: every row is mapped to its elementary cell — per
// dimension, how many of the boxes' distinct ends (cuts) it passes — and a
// row lies in a query's box exactly when its ranks lie in the query's rank
// box, so the counts are those of the query's own WHERE clause
// ([filterCounts], the oracle of the tests). The engine ranks every column
// and counts the rows per occupied cell ([newPlan]); Go adds each cell's
// count to the queries holding it, found as the AND of per-axis bitsets of
// the queries ([countBlock]).

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

// newAxes collects the cuts of every dimension of the boxes.
func newAxes(set *Set, boxes []Box) []axis {
	axes := make([]axis, len(set.Columns))
	for d := range axes {
		axes[d].col = set.cols[d]
		var cuts []Bound
		for _, b := range boxes {
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

// fewCuts is the most cuts an ordered axis ranks by a CASE over them in
// SQL; above it by an offset or a lookup (a variable for the tests).
var fewCuts = 64

// caseSQL returns the rank of the column px as SQL: for categorical and
// boolean columns a CASE over the declared values (the axis coordinate of
// a value is its index in the domain; boolean false 0, true 1),
// consecutive values of one rank sharing a WHEN; for ordered columns of
// at most fewCuts cuts a balanced CASE over the cuts, each the query's own
// comparison. NULL gets K + 1.
func (a *axis) caseSQL(px string) (string, error) {
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
		return b.String(), nil
	case spec.Integer, spec.Numeric, spec.Date:
	default:
		return "", fmt.Errorf("%w: column %s of type %s is not a range axis", ErrNotBox, a.col.Name, a.col.Type)
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
		return "CASE WHEN " + px + " IS NULL THEN " + null + " ELSE " + b.String() + " END", nil
	}
	return "", fmt.Errorf("rangeset: %s has %d cuts, more than a CASE takes", a.col.Name, k)
}

// thresholds returns the cuts of an ordered axis as tests x ≥ W on the
// value as the queries compare it, non-decreasing: a cut "x ≥ V" is W = V
// and a cut "x > V" is W = the next float64 above V (no float64 lies
// between them), or V + 1 on an integer-valued axis (integer and date
// columns, whose ends [Parse] made whole numbers). integral reports
// whether every W is a whole number below 2⁵³ in magnitude, to be compared
// on the column's whole numbers.
func (a *axis) thresholds() (w []float64, integral bool) {
	w = make([]float64, len(a.cuts))
	integral = a.col.Type == spec.Integer || a.col.Type == spec.Date
	for i, c := range a.cuts {
		switch {
		case c.Tick <= 0:
			w[i] = c.V
		case integral && c.V == math.Trunc(c.V):
			w[i] = c.V + 1
		default:
			w[i] = math.Nextafter(c.V, math.Inf(1))
		}
		integral = integral && w[i] == math.Trunc(w[i]) && math.Abs(w[i]) < 1<<53
	}
	return w, integral
}

// flt is f as a DOUBLE PRECISION literal: the shortest decimal that reads
// back as f, parsed from a string (a numeric literal of 16 or more digits
// is a DECIMAL whose cast to DOUBLE PRECISION can miss f by an ulp).
func flt(f float64) string { return "CAST('" + fltText(f) + "' AS DOUBLE PRECISION)" }

// fltArray is fs as an array of DOUBLE PRECISION, each element parsed
// from its text as in [flt]: one constant to bind, where a VALUES list of
// thousands of rows of casts cost the engine about a second to plan.
func fltArray(fs []float64) string {
	t := make([]string, len(fs))
	for i, f := range fs {
		t[i] = "'" + fltText(f) + "'"
	}
	return "CAST(ARRAY[" + strings.Join(t, ", ") + "] AS DOUBLE PRECISION[])"
}

// fltText is the shortest decimal that reads back as f (Infinity,
// -Infinity, NaN spelled as the engines read them).
func fltText(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
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

// Limits of the plan (variables for the tests).
var (
	// maxOffsets is the most whole numbers an integer-valued axis sends
	// as its clamped offset (a digit of the cell code) rather than as a
	// rank looked up in SQL.
	maxOffsets = 1.0 * (1 << 16)
	// maxBlock is the most queries counted in one scan: the per-rank
	// query bitsets of a block take about 2·maxBlock²/8 bytes per axis
	// (4 MiB).
	maxBlock = 4096
	// maxCodeBits bounds the bits of each BIGINT code of packed digits.
	maxCodeBits uint = 62
)

// How an axis reaches Go: its rank (by a CASE or a lookup in SQL) or its
// value's whole-number offset.
const (
	sendRank = iota
	sendOffset
)

// plan is the scan that counts one block of queries: per axis what the
// engine sends and how Go turns it into the rank.
type plan struct {
	axes  []axis
	send  []int
	radix []int64   // the axis's digit: [0, radix)
	width []uint    // the digit's bits in its code
	rank  [][]int32 // sendOffset: rank by digit (the last digit is NULL)
	codes [][]int   // the axes packed in each code column, most significant first
	text  string
	views []string // the lookup views, dropped by drop
}

// drop drops the plan's views.
func (p *plan) drop(ctx context.Context, db relational.DB) {
	for _, v := range p.views {
		db.DropView(context.WithoutCancel(ctx), v) //nolint:errcheck // a leftover view of the work schema holds no data
	}
}

// newPlan writes the aggregate that counts the rows of set's table per
// elementary cell of boxes: every row is mapped to its cell — per
// dimension its rank, how many of the boxes' cuts it passes — and the
// rows are counted per occupied cell, one result row per cell (the
// private data is read through an aggregate whose size is bounded by the
// public grid of the boxes, DESIGN.md §1). The engine computes, per axis,
// either the rank itself — categorical and boolean columns and ordered
// ones of at most fewCuts cuts by a CASE over the cuts, each the query's
// own comparison; other ordered columns by a lookup ([axis.lookupSQL]) —
// or, for an integer-valued axis (integer, date) of many cuts whose
// thresholds ([axis.thresholds]) span at most maxOffsets whole numbers,
// the value's offset clamped to [W₁ − 1, W_K] (Go reads the rank from a
// table: x ≥ W ⟺ ⌊x⌋ ≥ W for a whole W). NULL has the rank K + 1. The
// digits are packed in BIGINT codes, each digit in its own bits, at most
// maxCodeBits (62) a code.
func newPlan(ctx context.Context, db relational.DB, set *Set, boxes []Box) (_ *plan, err error) {
	axes := newAxes(set, boxes)
	d := len(axes)
	p := &plan{axes: axes, send: make([]int, d), radix: make([]int64, d), width: make([]uint, d), rank: make([][]int32, d)}
	defer func() {
		if err != nil {
			p.drop(ctx, db)
		}
	}()
	inner := make([]string, d)
	digits := make([]string, d)
	var joins []string
	seq := viewSeq.Add(1)
	for i := range axes {
		a := &axes[i]
		x := col(set.Columns[i])
		px := "p." + x // the column in the inner projection p
		inner[i] = x
		if a.col.Type == spec.Numeric {
			// Compared with DOUBLE PRECISION values, a numeric column
			// (DECIMAL in some Parquet files) is cast once here rather
			// than at each comparison.
			inner[i] = "CAST(" + x + " AS DOUBLE PRECISION) AS " + x
		}
		k := len(a.cuts)
		ordered := a.col.Type == spec.Integer || a.col.Type == spec.Numeric || a.col.Type == spec.Date
		if !ordered || k <= fewCuts {
			r, err := a.caseSQL(px)
			if err != nil {
				return nil, err
			}
			p.send[i], p.radix[i], digits[i] = sendRank, int64(k+2), r
			continue
		}
		w, integral := a.thresholds()
		if lo, hi := w[0]-1, w[k-1]; integral && hi-lo < maxOffsets {
			n := int64(hi - lo + 1) // offsets 0..n−1; n is NULL
			v := "floor(" + px + ")"
			if a.col.Type == spec.Date {
				v = "(" + px + " - DATE '1970-01-01')"
			}
			digits[i] = fmt.Sprintf("CASE WHEN %s IS NULL THEN %d ELSE CAST(LEAST(GREATEST(%s, %d), %d) AS BIGINT) - %d END",
				px, n, v, int64(lo), int64(hi), int64(lo))
			ranks := make([]int32, n+1)
			j := 0
			for o := range n {
				for j < k && w[j] <= lo+float64(o) {
					j++
				}
				ranks[o] = int32(j)
			}
			ranks[n] = int32(k + 1)
			p.send[i], p.radix[i], p.rank[i] = sendOffset, n+1, ranks
			continue
		}
		alias := "_synth_l" + strconv.Itoa(i)
		pre, view, r, err := a.lookupSQL(ctx, db, x, px, alias, w)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("_synth_answer_rangeset_%d_%d", seq, i)
		if err := db.CreateView(ctx, name, view); err != nil {
			return nil, fmt.Errorf("rangeset: %w", err)
		}
		p.views = append(p.views, name)
		inner = append(inner, pre+" AS _synth_b"+strconv.Itoa(i))
		joins = append(joins, " LEFT JOIN "+ident(name)+" AS "+alias+" ON "+alias+".b = p._synth_b"+strconv.Itoa(i))
		p.send[i], p.radix[i], digits[i] = sendRank, int64(k+2), r
	}
	// Pack the digits into codes of at most maxCodeBits bits.
	var exprs []string
	used := uint(0)
	for i := range axes {
		p.width[i] = uint(bits.Len64(uint64(p.radix[i] - 1)))
		if len(p.codes) == 0 || used+p.width[i] > maxCodeBits {
			p.codes = append(p.codes, nil)
			exprs = append(exprs, "")
			used = 0
		}
		c := len(p.codes) - 1
		if len(p.codes[c]) == 0 {
			exprs[c] = "CAST(" + digits[i] + " AS BIGINT)"
		} else {
			exprs[c] = "(" + exprs[c] + ") * " + strconv.FormatInt(1<<p.width[i], 10) + " + CAST(" + digits[i] + " AS BIGINT)"
		}
		p.codes[c] = append(p.codes[c], i)
		used += p.width[i]
	}
	from := " FROM (SELECT " + strings.Join(inner, ", ") + " FROM " + ident(set.Table) + ") AS p" + strings.Join(joins, "")
	if d == 0 {
		p.text = "SELECT COUNT(*) FROM " + ident(set.Table)
		return p, nil
	}
	names := make([]string, len(exprs))
	for c := range exprs {
		names[c] = "_synth_c" + strconv.Itoa(c)
		exprs[c] += " AS " + names[c]
	}
	p.text = "SELECT " + strings.Join(names, ", ") + ", COUNT(*) FROM (SELECT " + strings.Join(exprs, ", ") + from +
		") AS c GROUP BY " + strings.Join(names, ", ")
	return p, nil
}

// bitsets returns, per axis, the set of boxes whose span holds each rank:
// rank r's bits at [r·words, (r+1)·words), box q at bit q.
func (p *plan) bitsets(boxes []Box) (sets [][]uint64, words int) {
	words = (len(boxes) + 63) / 64
	sets = make([][]uint64, len(p.axes))
	for i := range p.axes {
		a := &p.axes[i]
		ranks := len(a.cuts) + 2
		// Sweep the ranks: box q joins at its lower rank and leaves after
		// its upper one.
		join := make([][]int32, ranks+1)
		leave := make([][]int32, ranks+1)
		for q, b := range boxes {
			lo, hi := a.span(b[i])
			if lo > hi {
				continue
			}
			join[lo] = append(join[lo], int32(q))
			leave[hi+1] = append(leave[hi+1], int32(q))
		}
		s := make([]uint64, ranks*words)
		cur := make([]uint64, words)
		for r := range ranks {
			for _, q := range leave[r] {
				cur[q/64] &^= 1 << (q % 64)
			}
			for _, q := range join[r] {
				cur[q/64] |= 1 << (q % 64)
			}
			copy(s[r*words:], cur)
		}
		sets[i] = s
	}
	return sets, words
}

// batch holds rows of the aggregate: the cells' codes and counts.
type batch struct {
	n     int
	codes []int64
	cnt   []int64
}

const batchRows = 4096

// bigint scans a BIGINT as a [sql.Scanner]: database/sql assigns to an
// *int64 through reflection, value by value (about 0.1 s of a fine set's
// 6 M cells at SF 1).
type bigint int64

// Scan implements [sql.Scanner].
func (x *bigint) Scan(src any) error {
	v, ok := src.(int64)
	if !ok {
		return fmt.Errorf("rangeset: a cell code or count of type %T, want a BIGINT", src)
	}
	*x = bigint(v)
	return nil
}

// countBlock counts the rows in each of boxes (at most maxBlock): one
// scan of the table, the rows' cells matched against the boxes in Go.
func countBlock(ctx context.Context, db relational.DB, set *Set, boxes []Box) ([]int64, error) {
	p, err := newPlan(ctx, db, set, boxes)
	if err != nil {
		return nil, err
	}
	defer p.drop(ctx, db)
	out := make([]int64, len(boxes))
	if len(p.axes) == 0 {
		var n int64
		if err := db.Aggregate(ctx, p.text, nil, func(r *sql.Rows) error { return r.Scan(&n) }); err != nil {
			return nil, fmt.Errorf("rangeset: counts: %w", err)
		}
		for q := range out {
			out[q] = n
		}
		return out, nil
	}
	sets, words := p.bitsets(boxes)
	nc := len(p.codes)
	workers := runtime.GOMAXPROCS(0)
	full := make(chan *batch, 2*workers)
	free := make(chan *batch, 3*workers)
	for range cap(free) {
		free <- &batch{codes: make([]int64, batchRows*nc), cnt: make([]int64, batchRows)}
	}
	g, gctx := errgroup.WithContext(ctx)
	sums := make([][]int64, workers)
	for w := range workers {
		g.Go(func() error {
			acc := make([]int64, len(boxes))
			sums[w] = acc
			offs := make([]int, len(p.axes))
			for b := range full {
				p.add(b, sets, words, offs, acc)
				free <- b
			}
			return nil
		})
	}
	row := make([]bigint, nc+1)
	dest := make([]any, nc+1)
	for c := range dest {
		dest[c] = &row[c]
	}
	var cur *batch
	err = db.Aggregate(gctx, p.text, nil, func(r *sql.Rows) error {
		if err := r.Scan(dest...); err != nil {
			return err
		}
		if cur == nil {
			select {
			case cur = <-free:
			case <-gctx.Done():
				return gctx.Err()
			}
			cur.n = 0
		}
		for c, v := range row[:nc] {
			cur.codes[cur.n*nc+c] = int64(v)
		}
		cur.cnt[cur.n] = int64(row[nc])
		cur.n++
		if cur.n == batchRows {
			full <- cur
			cur = nil
		}
		return nil
	})
	if cur != nil && cur.n > 0 {
		full <- cur
	}
	close(full)
	if werr := g.Wait(); err == nil {
		err = werr
	}
	if err != nil {
		return nil, fmt.Errorf("rangeset: counts: %w", err)
	}
	for _, acc := range sums {
		for q, v := range acc {
			out[q] += v
		}
	}
	return out, nil
}

// add adds the cells of b to the counts acc of the boxes holding them:
// each cell's ranks from its codes, then the AND over the axes
// of the bitsets of the boxes whose span holds the rank (offs: scratch,
// one per axis).
func (p *plan) add(b *batch, sets [][]uint64, words int, offs []int, acc []int64) {
	nc, d := len(p.codes), len(p.axes)
	and := make([]uint64, words)
	for j := range b.n {
		for c, axes := range p.codes {
			v := b.codes[j*nc+c]
			for k := len(axes) - 1; k >= 0; k-- {
				i := axes[k]
				digit := v & (1<<p.width[i] - 1)
				v >>= p.width[i]
				var r int
				if p.send[i] == sendOffset {
					r = int(p.rank[i][digit])
				} else {
					r = int(digit)
				}
				offs[i] = r * words
			}
		}
		n := b.cnt[j]
		// The AND of the axes' bitsets, word by word in tight loops.
		copy(and, sets[0][offs[0]:offs[0]+words])
		for i := 1; i < d; i++ {
			s := sets[i][offs[i] : offs[i]+words]
			for wd := range and {
				and[wd] &= s[wd]
			}
		}
		for wd, x := range and {
			for x != 0 {
				acc[wd*64+bits.TrailingZeros64(x)] += n
				x &= x - 1
			}
		}
	}
}

// lookupSQL ranks an ordered axis of many cuts, the cuts as the tests
// x ≥ W of thresholds w ([axis.thresholds]), through view, a SELECT of one
// row per bucket that the caller joins on b = pre (computed from the
// column x in the caller's inner projection) as alias; rank is the rank
// of the column px.
//
// The value v is compared as a DOUBLE PRECISION (as the queries compare a
// numeric column; a date as days since 1970-01-01); it falls in one of B
// buckets of [L, H], L and H the smallest and largest W, bucket(v) =
// min(⌊(clamp(v, L, H) − L)·S⌋, B − 1) with S = B/(H − L), computed in
// SQL for the values and, by the same expression in the same engine, for
// the thresholds. Every step is monotone in v, so a threshold in an
// earlier bucket than v's is passed and one in a later bucket is not:
// rank(v) = base(bucket) + the thresholds W of v's bucket with v ≥ W, at
// most M of them (the fullest bucket; missing ones NaN, which only a NaN
// passes: DuckDB and PostgreSQL order NaN above every number). A NaN
// passes every cut, as it passes every query's x ≥ V and x > V: its rank
// is capped at K. NULL gets K + 1.
func (a *axis) lookupSQL(ctx context.Context, db relational.DB, x, px, alias string, w []float64) (pre, view, rank string, err error) {
	k := len(w)
	value := func(x string) string {
		if a.col.Type == spec.Date {
			return "CAST(" + x + " - DATE '1970-01-01' AS DOUBLE PRECISION)"
		}
		return "CAST(" + x + " AS DOUBLE PRECISION)"
	}
	lo, hi := w[0], w[k-1]
	buckets, scale := 1, 0.0
	if hi > lo && !math.IsInf(hi-lo, 0) {
		buckets = min(2*k, 1<<14)
		scale = float64(buckets) / (hi - lo)
	}
	bucket := func(v string) string {
		return fmt.Sprintf("LEAST(CAST(floor((LEAST(GREATEST(%s, %s), %s) - %s) * %s) AS BIGINT), %d)",
			v, flt(lo), flt(hi), flt(lo), flt(scale), buckets-1)
	}
	// The thresholds' buckets, by the same expression.
	idx := make([]string, k)
	for i := range idx {
		idx[i] = strconv.Itoa(i)
	}
	cb := make([]int64, k)
	err = db.Aggregate(ctx, "SELECT i, "+bucket("v")+" FROM (SELECT UNNEST(ARRAY["+strings.Join(idx, ", ")+"]) AS i, UNNEST("+fltArray(w)+") AS v) AS c", nil,
		func(r *sql.Rows) error {
			var i, b int64
			if err := r.Scan(&i, &b); err != nil {
				return err
			}
			if i < 0 || i >= int64(k) {
				return fmt.Errorf("threshold %d of %d", i, k)
			}
			cb[i] = b
			return nil
		})
	if err != nil {
		return "", "", "", fmt.Errorf("rangeset: buckets of %s: %w", a.col.Name, err)
	}
	for i, b := range cb { // monotone, in range: what the ranks rest on
		if b < 0 || b >= int64(buckets) || i > 0 && b < cb[i-1] {
			return "", "", "", fmt.Errorf("rangeset: buckets of %s: threshold %d in bucket %d of %d", a.col.Name, i, b, buckets)
		}
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
	bs, bases := make([]string, buckets), make([]string, buckets)
	for b := range bs {
		bs[b], bases[b] = strconv.Itoa(b), strconv.Itoa(first[b])
	}
	cols := []string{"UNNEST(ARRAY[" + strings.Join(bs, ", ") + "]) AS b", "UNNEST(ARRAY[" + strings.Join(bases, ", ") + "]) AS base"}
	for j := 0; j < m; j++ {
		wj := make([]float64, buckets)
		for b := range wj {
			if i := first[b] + j; i < first[b+1] {
				wj[b] = w[i]
			} else {
				wj[b] = math.NaN()
			}
		}
		cols = append(cols, "UNNEST("+fltArray(wj)+") AS w"+strconv.Itoa(j+1))
	}
	view = "SELECT " + strings.Join(cols, ", ")
	v := value(px)
	terms := []string{alias + ".base"}
	for j := 1; j <= m; j++ {
		terms = append(terms, fmt.Sprintf("CASE WHEN %s >= %s.w%d THEN 1 ELSE 0 END", v, alias, j))
	}
	return bucket(value(x)), view, "CASE WHEN " + px + " IS NULL THEN " + strconv.Itoa(k+1) +
		" ELSE LEAST(" + strings.Join(terms, " + ") + ", " + strconv.Itoa(k) + ") END", nil
}

// viewSeq numbers the lookup views of concurrent calls.
var viewSeq atomic.Int64

// cubeCounts counts the rows of every query of set: one scan of the table
// per block of maxBlock queries, each row matched in Go against the
// block's boxes through its elementary cell ([newPlan]).
func cubeCounts(ctx context.Context, db relational.DB, set *Set) ([]int64, error) {
	out := make([]int64, 0, len(set.Boxes))
	for start := 0; start < len(set.Boxes); start += maxBlock {
		c, err := countBlock(ctx, db, set, set.Boxes[start:min(start+maxBlock, len(set.Boxes))])
		if err != nil {
			return nil, err
		}
		out = append(out, c...)
	}
	return out, nil
}
