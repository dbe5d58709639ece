package pmw

import (
	"fmt"
)

// MarginalFamily is the marginal over a set of columns: every cell j of the
// marginal table is a counting query q_j(x) = 1[x restricted to the columns
// = j]. Query j is the j-th cell of the table in mixed radix over the
// columns in the order given (first most significant). Its answers take
// one pass; the update of one cell touches only that cell's sub-grid of
// the universe.
type MarginalFamily struct {
	cols []int
}

var _ Family = (*MarginalFamily)(nil)

// Marginal returns the family of all cells of the marginal over the given
// column positions (distinct; none means the single query "total count").
// The columns are checked against the universe by Bind (and so by [Run]).
func Marginal(cols []int) *MarginalFamily {
	return &MarginalFamily{cols: append([]int(nil), cols...)}
}

func (*MarginalFamily) family() {}

// Bind returns the family's queries over u.
func (f *MarginalFamily) Bind(u *Universe) (Queries, error) {
	if err := u.checkCols("marginal", f.cols); err != nil {
		return nil, err
	}
	return &marginalQ{u: u, cols: f.cols, p: newProjection(u, f.cols)}, nil
}

// marginalQ is a MarginalFamily bound to a universe.
type marginalQ struct {
	u    *Universe
	cols []int
	p    *projection
}

// Name returns "marginal(a,b)".
func (f *marginalQ) Name() string { return "marginal(" + f.u.colNames(f.cols) + ")" }

// Universe returns the family's universe.
func (f *marginalQ) Universe() *Universe { return f.u }

// Len returns the number of marginal cells.
func (f *marginalQ) Len() int { return f.p.size }

// Describe returns "marginal(a,b)[a=3,b=7]".
func (f *marginalQ) Describe(i int) string {
	d := make([]int, len(f.u.sizes))
	f.p.digitsOf(f.u, i, d)
	return fmt.Sprintf("%s[%s]", f.Name(), cellLabel(f.u, f.cols, d))
}

// Answer writes every marginal cell of a into out in one pass.
func (f *marginalQ) Answer(a, out []float64) { answerByPass(f, a, out) }

// Each calls fn(x, 1) for every cell x of marginal cell i.
func (f *marginalQ) Each(i int, fn func(int64, float64)) {
	b := f.box(i)
	b.each(f.u, fn)
}

func (f *marginalQ) box(i int) *box {
	lo, hi := fullBox(f.u)
	f.p.digitsOf(f.u, i, lo)
	for _, c := range f.cols {
		hi[c] = lo[c]
	}
	return &box{lo: lo, hi: hi}
}

func (f *marginalQ) proj() *projection           { return f.p }
func (f *marginalQ) finish(table, out []float64) { copy(out, table) }
func (f *marginalQ) direct(a, out []float64)     { panic("pmw: marginal answered by the pass") }
func (f *marginalQ) directSparse(map[int64]float64, []float64) {
	panic("pmw: marginal answered by the pass")
}
func (f *marginalQ) sum(a []float64, i int) float64 { return f.box(i).sum(f.u, a) }
func (f *marginalQ) update(w, s []float64, i int, eta, r float64) float64 {
	return f.box(i).update(f.u, w, s, eta, r)
}

func (f *marginalQ) runs(i int, fn runFunc) {
	b := f.box(i)
	f.u.forRuns(b.lo, b.hi, fn)
}
func (f *marginalQ) supportSize(i int) int64 { return f.box(i).size() }
