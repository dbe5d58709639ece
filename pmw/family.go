package pmw

import (
	"math"
	"strconv"
	"strings"
)

// Family is a set of linear queries, described independently of any
// universe; [Family.Bind] checks it against a [Universe] and returns its
// [Queries]. Every query q takes values q(x) ∈ [−1, 1] per cell; its
// answer on a dense vector a is q(a) = Σ_x q(x)·a(x), so on the join's
// histogram J a neighbour that changes J by at most Δ̃ tuples changes every
// q(J) by at most Δ̃.
//
// The set of families is closed — [Marginal], [Range], [Weighted] and
// [Linear] — because [Run] fuses their passes over the dense array: all
// marginal-like families are answered in ONE pass that accumulates into
// every family's table at once. Families are immutable and safe for
// concurrent use.
type Family interface {
	// Bind validates the family against u (column positions, weights,
	// cells) and returns its queries over u. Errors wrap
	// [ErrInvalidInput].
	Bind(u *Universe) (Queries, error)
	family()
}

// Queries is a [Family] bound to a universe: it answers all its queries
// on a dense vector in one pass and lists each query's per-cell values.
type Queries interface {
	// Name describes the family, e.g. "marginal(a,b)".
	Name() string
	// Universe returns the universe the queries are over.
	Universe() *Universe
	// Len returns the number of queries.
	Len() int
	// Describe names query i, e.g. "marginal(a,b)[a=3,b=7]". Queries are
	// public: the text holds no data.
	Describe(i int) string
	// Answer writes q_i(a) for every query i into out (len Len()) in one
	// pass over a (len |X|). It panics on wrong lengths (programmer error).
	Answer(a []float64, out []float64)
	// Each calls fn(x, q_i(x)) for every cell x where q_i(x) ≠ 0, in
	// increasing cell order for all families but [Linear] (which follows
	// the order given).
	Each(i int, fn func(cell int64, v float64))

	// proj is the table the fused pass fills for these queries (nil when
	// they read cells directly).
	proj() *projection
	// finish derives all answers from the projection table.
	finish(table, out []float64)
	// direct answers all queries straight from a (families without proj).
	direct(a, out []float64)
	// directSparse answers all queries on a sparse histogram.
	directSparse(h map[int64]float64, out []float64)
	// sum returns q_i(a), touching only q_i's support.
	sum(a []float64, i int) float64
	// update multiplies w(x) by exp(η·q_i(x)) on q_i's support, adds
	// (w_old − w_new)·r to s(x) there (the lazy running average, see
	// engine) and returns Σ_x (w_new − w_old).
	update(w, s []float64, i int, eta, r float64) float64
	// runs calls fn for every run of cells of q_i's support (see
	// Universe.forRuns), in increasing cell order for boxes.
	runs(i int, fn runFunc)
	// supportSize returns the number of cells runs visits for q_i.
	supportSize(i int) int64
}

// runFunc receives a run of cells start, start+stride, …,
// start+(n−1)·stride that differ only in column col; d holds the bins of
// the first cell and must not be modified.
type runFunc = func(start, stride int64, n int, d []int, col int)

// projection is a marginal table over an ordered list of columns (first
// most significant), with each universe column's stride in the table.
type projection struct {
	cols   []int
	size   int
	stride []int // per universe column; 0 when the column is absent
}

func newProjection(u *Universe, cols []int) *projection {
	p := &projection{cols: append([]int(nil), cols...), stride: make([]int, len(u.sizes))}
	size := 1
	for i := len(cols) - 1; i >= 0; i-- {
		p.stride[cols[i]] = size
		size *= u.sizes[cols[i]]
	}
	p.size = size
	return p
}

// index returns the table index of the cell with bins d.
func (p *projection) index(d []int) int {
	k := 0
	for _, c := range p.cols {
		k += d[c] * p.stride[c]
	}
	return k
}

// key identifies the table layout, so families sharing a layout share a
// table in the fused pass.
func (p *projection) key() string {
	var b strings.Builder
	for _, s := range p.stride {
		b.WriteString(strconv.Itoa(s))
		b.WriteByte(',')
	}
	return b.String()
}

// digitsOf writes the bins of table index k over p.cols into d.
func (p *projection) digitsOf(u *Universe, k int, d []int) {
	for i := len(p.cols) - 1; i >= 0; i-- {
		n := u.sizes[p.cols[i]]
		d[p.cols[i]] = k % n
		k /= n
	}
}

// forRuns calls fn for every run of the box lo[c] ≤ b_c ≤ hi[c]: the cells
// start, start+stride, …, start+(n−1)·stride, which differ only in the
// innermost varying column col; d holds the bins of the run's first cell
// and must not be modified. Runs come in increasing cell order.
func (u *Universe) forRuns(lo, hi []int, fn func(start, stride int64, n int, d []int, col int)) {
	m := len(u.sizes)
	col := m - 1
	for col > 0 && hi[col] == lo[col] {
		col--
	}
	d := append([]int(nil), lo...)
	var start int64
	for c := range m {
		start += int64(lo[c]) * u.strides[c]
	}
	n := hi[col] - lo[col] + 1
	for {
		fn(start, u.strides[col], n, d, col)
		c := col - 1
		for ; c >= 0; c-- {
			if d[c] < hi[c] {
				d[c]++
				start += u.strides[c]
				break
			}
			start -= int64(d[c]-lo[c]) * u.strides[c]
			d[c] = lo[c]
		}
		if c < 0 {
			return
		}
	}
}

// box is the support of a marginal-like query: a box of bins, carrying the
// value 1 (wp == nil) or the weight wt[wp.index(d)] in each cell.
type box struct {
	lo, hi []int
	wp     *projection
	wt     []float64
}

func (b *box) sum(u *Universe, a []float64) float64 {
	var total float64
	u.forRuns(b.lo, b.hi, func(start, stride int64, n int, d []int, col int) {
		if b.wp == nil {
			var s0, s1 float64
			x := start
			k := 0
			for ; k+1 < n; k += 2 {
				s0 += a[x]
				s1 += a[x+stride]
				x += 2 * stride
			}
			if k < n {
				s0 += a[x]
			}
			total += s0 + s1
			return
		}
		wi, ws := b.wp.index(d), b.wp.stride[col]
		var s float64
		for k, x := 0, start; k < n; k, x = k+1, x+stride {
			s += a[x] * b.wt[wi]
			wi += ws
		}
		total += s
	})
	return total
}

func (b *box) update(u *Universe, w, s []float64, eta, r float64) float64 {
	if eta == 0 {
		return 0
	}
	var dz float64
	if b.wp == nil {
		f := math.Exp(eta)
		c := (1 - f) * r
		var sum float64
		u.forRuns(b.lo, b.hi, func(start, stride int64, n int, d []int, col int) {
			x := start
			if c == 0 {
				for k := 0; k < n; k++ {
					wo := w[x]
					sum += wo
					w[x] = wo * f
					x += stride
				}
				return
			}
			for k := 0; k < n; k++ {
				wo := w[x]
				sum += wo
				w[x] = wo * f
				s[x] += wo * c
				x += stride
			}
		})
		return (f - 1) * sum
	}
	// One exponential per weight-table entry, not per cell.
	fw := make([]float64, len(b.wt))
	for l, v := range b.wt {
		fw[l] = math.Exp(eta * v)
	}
	u.forRuns(b.lo, b.hi, func(start, stride int64, n int, d []int, col int) {
		wi, ws := b.wp.index(d), b.wp.stride[col]
		x := start
		for k := 0; k < n; k++ {
			wo := w[x]
			wn := wo * fw[wi]
			w[x] = wn
			s[x] += (wo - wn) * r
			dz += wn - wo
			x += stride
			wi += ws
		}
	})
	return dz
}

func (b *box) size() int64 {
	n := int64(1)
	for c := range b.lo {
		n *= int64(b.hi[c] - b.lo[c] + 1)
	}
	return n
}

func (b *box) each(u *Universe, fn func(cell int64, v float64)) {
	u.forRuns(b.lo, b.hi, func(start, stride int64, n int, d []int, col int) {
		wi, ws := 0, 0
		if b.wp != nil {
			wi, ws = b.wp.index(d), b.wp.stride[col]
		}
		for k, x := 0, start; k < n; k, x = k+1, x+stride {
			v := 1.0
			if b.wp != nil {
				v = b.wt[wi]
				wi += ws
			}
			if v != 0 {
				fn(x, v)
			}
		}
	})
}

// fullBox returns lo = 0, hi = n−1 for every column.
func fullBox(u *Universe) (lo, hi []int) {
	lo, hi = make([]int, len(u.sizes)), make([]int, len(u.sizes))
	for c, n := range u.sizes {
		hi[c] = n - 1
	}
	return lo, hi
}

// answerByPass answers a projection family on a with a one-worker pass.
func answerByPass(f Queries, a []float64, out []float64) {
	u := f.Universe()
	if int64(len(a)) != u.size || len(out) != f.Len() {
		panic("pmw: Answer with wrong lengths")
	}
	p := f.proj()
	pl := newPassPlan(u, []*projection{p})
	tab := make([]float64, pl.tableLen)
	pl.kernel(a, tab, 0, pl.nBlocks)
	f.finish(tab[:p.size], out)
}

// cellLabel writes "a=3,b=7" for the listed columns of d.
func cellLabel(u *Universe, cols []int, d []int) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(u.names[c])
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(d[c]))
	}
	return b.String()
}
