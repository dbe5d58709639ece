package pmw

import (
	"fmt"
	"math"
)

// WeightedFamily is a marginal whose cells carry a weight: for every cell j
// of the marginal over cols, q_j(x) = 1[x_cols = j] · W[x_wcols], where W
// is a dense table over the marginal over wcols with entries in [−1, 1].
// It expresses the linear queries of numerical workloads (Qiu et al.:
// ℓ_{w,τ}(t) = min{w(t)/τ, 1} grouped by cols, with w a function of the
// columns wcols). Answers come from one pass filling the marginal over
// cols ∪ wcols, then O(|cols ∪ wcols marginal|) work; keep wcols small —
// that marginal is a per-worker table.
type WeightedFamily struct {
	cols, wcols []int
	wt          []float64
}

var _ Family = (*WeightedFamily)(nil)

// Weighted returns the family over the marginal of cols with weights over
// the marginal of wcols: weights[l] is the weight of the wcols-cell l (mixed
// radix over wcols in the order given, first most significant). Bind (and
// so [Run]) checks that every weight is finite and in [−1, 1] and that the
// table has one weight per wcols-cell. The slices are copied.
func Weighted(cols, wcols []int, weights []float64) *WeightedFamily {
	return &WeightedFamily{cols: append([]int(nil), cols...), wcols: append([]int(nil), wcols...),
		wt: append([]float64(nil), weights...)}
}

func (*WeightedFamily) family() {}

// Bind returns the family's queries over u.
func (f *WeightedFamily) Bind(u *Universe) (Queries, error) {
	cols, wcols, weights := f.cols, f.wcols, f.wt
	if err := u.checkCols("weighted", cols); err != nil {
		return nil, err
	}
	if err := u.checkCols("weighted (weight columns)", wcols); err != nil {
		return nil, err
	}
	pw := newProjection(u, wcols)
	if len(weights) != pw.size {
		return nil, fmt.Errorf("%w: weighted: %d weights for a weight marginal of %d cells", ErrInvalidInput, len(weights), pw.size)
	}
	for l, v := range weights {
		if math.IsNaN(v) || v < -1 || v > 1 {
			return nil, fmt.Errorf("%w: weighted: weight %d = %v, want a value in [−1, 1]", ErrInvalidInput, l, v)
		}
	}
	union := append([]int(nil), cols...)
	in := make(map[int]bool)
	for _, c := range cols {
		in[c] = true
	}
	for _, c := range wcols {
		if !in[c] {
			union = append(union, c)
		}
	}
	q := &weightedQ{u: u, cols: cols, wcols: wcols, wt: weights, p: newProjection(u, union),
		pc: newProjection(u, cols), pw: pw}
	q.jOf, q.lOf = make([]int32, q.p.size), make([]int32, q.p.size)
	d := make([]int, len(u.sizes))
	for k := range q.p.size {
		q.p.digitsOf(u, k, d)
		q.jOf[k], q.lOf[k] = int32(q.pc.index(d)), int32(q.pw.index(d))
	}
	return q, nil
}

// weightedQ is a WeightedFamily bound to a universe.
type weightedQ struct {
	u        *Universe
	cols     []int
	wcols    []int
	wt       []float64
	p        *projection // over cols, then wcols not in cols
	pc, pw   *projection
	jOf, lOf []int32 // per p-table index: query index, weight index
}

// Name returns "weighted(a,b|w:c,d)".
func (f *weightedQ) Name() string {
	return "weighted(" + f.u.colNames(f.cols) + "|w:" + f.u.colNames(f.wcols) + ")"
}

// Universe returns the family's universe.
func (f *weightedQ) Universe() *Universe { return f.u }

// Len returns the number of cells of the marginal over cols.
func (f *weightedQ) Len() int { return f.pc.size }

// Describe returns "weighted(a,b|w:c)[a=3,b=7]".
func (f *weightedQ) Describe(i int) string {
	d := make([]int, len(f.u.sizes))
	f.pc.digitsOf(f.u, i, d)
	return fmt.Sprintf("%s[%s]", f.Name(), cellLabel(f.u, f.cols, d))
}

// Answer writes every weighted marginal cell of a into out in one pass.
func (f *weightedQ) Answer(a, out []float64) { answerByPass(f, a, out) }

// Each calls fn(x, q_i(x)) for every cell x of marginal cell i with a
// non-zero weight.
func (f *weightedQ) Each(i int, fn func(int64, float64)) { f.box(i).each(f.u, fn) }

func (f *weightedQ) box(i int) *box {
	lo, hi := fullBox(f.u)
	f.pc.digitsOf(f.u, i, lo)
	for _, c := range f.cols {
		hi[c] = lo[c]
	}
	return &box{lo: lo, hi: hi, wp: f.pw, wt: f.wt}
}

func (f *weightedQ) proj() *projection { return f.p }

func (f *weightedQ) finish(table, out []float64) {
	clear(out)
	for k, v := range table {
		out[f.jOf[k]] += v * f.wt[f.lOf[k]]
	}
}

func (f *weightedQ) direct(a, out []float64) { panic("pmw: weighted answered by the pass") }
func (f *weightedQ) directSparse(map[int64]float64, []float64) {
	panic("pmw: weighted answered by the pass")
}
func (f *weightedQ) sum(a []float64, i int) float64 { return f.box(i).sum(f.u, a) }
func (f *weightedQ) update(w, s []float64, i int, eta, r float64) float64 {
	return f.box(i).update(f.u, w, s, eta, r)
}

func (f *weightedQ) runs(i int, fn runFunc) {
	b := f.box(i)
	f.u.forRuns(b.lo, b.hi, fn)
}
func (f *weightedQ) supportSize(i int) int64 { return f.box(i).size() }
