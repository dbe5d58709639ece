package pmw

import (
	"fmt"
)

// RangeFamily holds every range query over an ordered column inside every
// cell of the marginal over a set of "by" columns:
// q_{j,lo,hi}(x) = 1[x_by = j and lo ≤ x_col ≤ hi]. With n bins in the
// column it has n(n+1)/2 · |by-marginal| queries, indexed
// i = j·n(n+1)/2 + k where k enumerates (lo, hi) with lo outermost
// ((0,0), (0,1), …, (0,n−1), (1,1), …). All answers come from the marginal
// over by ∪ {col} by prefix sums: one pass plus O(#queries).
type RangeFamily struct {
	col int
	by  []int
}

var _ Family = (*RangeFamily)(nil)

// Range returns the family of all ranges [lo, hi] of column col within each
// cell of the marginal over by (none: ranges over the whole universe). col
// must not be among by; Bind (and so [Run]) checks the columns.
func Range(col int, by []int) *RangeFamily {
	return &RangeFamily{col: col, by: append([]int(nil), by...)}
}

func (*RangeFamily) family() {}

// Bind returns the family's queries over u.
func (f *RangeFamily) Bind(u *Universe) (Queries, error) {
	all := append(append([]int(nil), f.by...), f.col)
	if err := u.checkCols("range", all); err != nil {
		return nil, err
	}
	n := u.sizes[f.col]
	q := &rangeQ{u: u, col: f.col, by: f.by, p: newProjection(u, all),
		pBy: newProjection(u, f.by), n: n, pairs: n * (n + 1) / 2}
	for lo := 0; lo < n; lo++ {
		for hi := lo; hi < n; hi++ {
			q.lo = append(q.lo, lo)
			q.hi = append(q.hi, hi)
		}
	}
	return q, nil
}

// rangeQ is a RangeFamily bound to a universe.
type rangeQ struct {
	u      *Universe
	col    int
	by     []int
	p      *projection // over by..., col (col least significant)
	pBy    *projection
	n      int
	pairs  int
	lo, hi []int // per pair index
}

// Name returns "range(c|a,b)".
func (f *rangeQ) Name() string {
	return "range(" + f.u.names[f.col] + "|" + f.u.colNames(f.by) + ")"
}

// Universe returns the family's universe.
func (f *rangeQ) Universe() *Universe { return f.u }

// Len returns n(n+1)/2 · |by-marginal|.
func (f *rangeQ) Len() int { return f.pairs * f.pBy.size }

// Describe returns "range(c|a,b)[a=3,b=7; c∈[2,5]]".
func (f *rangeQ) Describe(i int) string {
	d := make([]int, len(f.u.sizes))
	f.pBy.digitsOf(f.u, i/f.pairs, d)
	k := i % f.pairs
	return fmt.Sprintf("%s[%s; %s∈[%d,%d]]", f.Name(), cellLabel(f.u, f.by, d), f.u.names[f.col], f.lo[k], f.hi[k])
}

// Answer writes every range answer of a into out: one pass for the
// marginal over by ∪ {col}, then prefix sums.
func (f *rangeQ) Answer(a, out []float64) { answerByPass(f, a, out) }

// Each calls fn(x, 1) for every cell x in range query i.
func (f *rangeQ) Each(i int, fn func(int64, float64)) { f.box(i).each(f.u, fn) }

func (f *rangeQ) box(i int) *box {
	lo, hi := fullBox(f.u)
	f.pBy.digitsOf(f.u, i/f.pairs, lo)
	for _, c := range f.by {
		hi[c] = lo[c]
	}
	k := i % f.pairs
	lo[f.col], hi[f.col] = f.lo[k], f.hi[k]
	return &box{lo: lo, hi: hi}
}

func (f *rangeQ) proj() *projection { return f.p }

func (f *rangeQ) finish(table, out []float64) {
	n := f.n
	prefix := make([]float64, n+1)
	for j := 0; j < f.pBy.size; j++ {
		t := table[j*n : j*n+n]
		for k, v := range t {
			prefix[k+1] = prefix[k] + v
		}
		o := out[j*f.pairs : j*f.pairs+f.pairs]
		k := 0
		for lo := 0; lo < n; lo++ {
			for hi := lo; hi < n; hi++ {
				o[k] = prefix[hi+1] - prefix[lo]
				k++
			}
		}
	}
}

func (f *rangeQ) direct(a, out []float64) { panic("pmw: range answered by the pass") }
func (f *rangeQ) directSparse(map[int64]float64, []float64) {
	panic("pmw: range answered by the pass")
}
func (f *rangeQ) sum(a []float64, i int) float64 { return f.box(i).sum(f.u, a) }
func (f *rangeQ) update(w, s []float64, i int, eta, r float64) float64 {
	return f.box(i).update(f.u, w, s, eta, r)
}

func (f *rangeQ) runs(i int, fn runFunc) {
	b := f.box(i)
	f.u.forRuns(b.lo, b.hi, fn)
}
func (f *rangeQ) supportSize(i int) int64 { return f.box(i).size() }
