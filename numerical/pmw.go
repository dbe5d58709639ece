package numerical

import (
	"fmt"
	"math"

	"github.com/synth-dp/synth/dp"
)

// Point is one group of the private data: Count tuples whose condition
// cell is Cell and whose measure is Units (signed, in units of b, within
// the universe's bounds). It is private data: an aggregate the engine
// computes (GROUP BY cell, value).
type Point struct {
	Cell  int64
	Units int64
	Count int64
}

// sensitivity returns the native sensitivity of table t per tuple: how
// much one tuple can move a box sum of t. Full universe: the largest
// value of t on one element; reduced: the sum over all the values of the
// sign's axis (one tuple is at most one element per value).
func (u *Universe) sensitivity(t table) float64 {
	off, n := u.off[t.sign], u.n[t.sign]
	var best, sum float64
	for j := range n {
		v := t.value(u.vals[off+j])
		best = math.Max(best, v)
		sum += v
	}
	if u.reduced && !u.testNoGroup {
		return sum
	}
	return best
}

// measurement is one round's selected item and its noisy normalised
// answer.
type measurement struct {
	item  int
	value float64
}

// core is one PMW run over a fixed list of derived queries (the items of
// ev): the single-query rounds of Hardt–Ligett–McSherry (MWEM), each
// measurement re-applied in every later round (post-processing).
//
// Weights are unnormalised: A = n̂·w/z with z = Σ w.
type core struct {
	ev     *evaluator
	sens   []float64 // native, per item: per-tuple sensitivity × ⌈Δ̃⌉ (an integer)
	truth  []float64 // native true answers (integers)
	ans    []float64
	scores []float64
	w      []float64
	z      float64
	nhat   float64
	meas   []measurement
	// Scratch of apply: an item's non-zero values and update factors.
	val, fac []float64
}

// newCore computes the true answers from the data (private) and the
// per-item sensitivities (public).
func newCore(ev *evaluator, data []Point, dtilde int64) (*core, int64, error) {
	u := ev.u
	h := make([]float64, u.Size())
	var n int64
	for _, p := range data {
		if p.Count < 0 {
			return nil, 0, fmt.Errorf("%w: negative count %d", ErrInvalidInput, p.Count)
		}
		if p.Cell < 0 || p.Cell >= u.cells {
			return nil, 0, fmt.Errorf("%w: cell %d outside [0, %d)", ErrInvalidInput, p.Cell, u.cells)
		}
		if p.Units > u.bound[0] || -p.Units > u.bound[1] {
			return nil, 0, fmt.Errorf("%w: value %d units outside [−%d, %d]", ErrInvalidInput, p.Units, u.bound[1], u.bound[0])
		}
		if p.Count == 0 {
			continue
		}
		u.Elements(p.Cell, p.Units, func(e int64) {
			h[e] += float64(p.Count)
			n += p.Count
		})
	}
	c := &core{ev: ev, sens: make([]float64, len(ev.items)), truth: make([]float64, len(ev.items)),
		ans: make([]float64, len(ev.items)), scores: make([]float64, len(ev.items))}
	ev.answer(h, 1, c.truth)
	for i, v := range c.truth {
		c.truth[i] = math.Round(v) // integers, up to float rounding of the table sums
	}
	perTable := make([]float64, len(ev.tables))
	for t, tb := range ev.tables {
		perTable[t] = u.sensitivity(tb) * float64(dtilde)
	}
	for i, it := range ev.items {
		c.sens[i] = perTable[it.t]
	}
	// Reuse the histogram's memory for the weights.
	c.w = h
	return c, n, nil
}

// start sets the total n̂ of A; the weights hold A₀ up to scale.
func (c *core) start(nhat float64) {
	c.nhat = math.Max(nhat, 1)
	c.renormalise()
}

// answers fills c.ans with every item's native answer on A.
func (c *core) answers() { c.ev.answer(c.w, c.nhat/c.z, c.ans) }

// scoreCap and scoreErr make the selection exact ([dp.ExponentialGrid]):
// a computed score |ans − truth|/sens is s·(1 + θ) with |θ| ≤ 2u (two
// roundings, u = 2⁻⁵³; ans is computed identically on neighbours, truth is
// an integer), so once clamped at the public cap S = 2³⁶ (1-Lipschitz) it
// is within 4u·(S + 1) ≤ scoreErr of the clamped exact score, whose
// sensitivity is 1. The grid is then 2⁻¹⁰ (K = 1025 steps): the
// exponential mechanism at ε₀, sampled exactly, with a noise scale within
// 0.1% of the float mechanism's. Scores above 2³⁶ sensitivities tie at
// the cap.
const (
	scoreCap = 0x1p36
	scoreErr = 4 * 0x1p-53 * (scoreCap + 1)
)

// round runs one PMW round at per-step ε₀: select by the exponential
// mechanism on the errors in units of each item's sensitivity (score
// sensitivity 1), measure with discrete Laplace noise of scale
// sens_i/ε₀ on the integer native answer, then re-apply all measurements
// sweeps times.
func (c *core) round(src dp.Source, eps0 float64, sweeps int) error {
	c.answers()
	for i := range c.ans {
		c.scores[i] = math.Min(math.Abs(c.ans[i]-c.truth[i])/c.sens[i], scoreCap)
	}
	i := dp.ExponentialGrid(src, c.scores, eps0, 1, scoreErr)
	lap, err := dp.NewDiscreteLaplace(dp.NoiseScale(c.sens[i], eps0))
	if err != nil {
		return fmt.Errorf("numerical: measurement noise: %w", err)
	}
	noisy := c.truth[i] + float64(lap.Sample(src))
	t := c.ev.tables[c.ev.items[i].t]
	c.meas = append(c.meas, measurement{item: i, value: noisy / t.norm()})
	for range sweeps {
		for _, m := range c.meas {
			c.apply(m)
		}
	}
	c.renormalise()
	return nil
}

// apply is one multiplicative-weights update towards measurement m.
//
// Cost: two passes over the item's support (|box| cells × the sign's
// values above τ, a contiguous run of each cell's row), with one
// multiplication an element; the factors exp(η·v/τ) depend on the value
// only, so they are computed once per value, not once per element (and
// once in all for a counting item, whose v is 1). Every number is the one
// the per-element form computes (same expressions — x·1/1 is x exactly —
// and the same order of summation: TestApplyMatchesReference checks it
// bit for bit).
func (c *core) apply(m measurement) {
	it := c.ev.items[m.item]
	t := c.ev.tables[it.t]
	u := c.ev.u
	norm := t.norm()
	nv := int64(len(u.vals))
	off, n := int64(u.off[t.sign]), int64(u.n[t.sign])
	// The item is non-zero exactly on the values above τ (counting) or on
	// every value (linear; all are ≥ 1): the run [lo, hi) of each row.
	lo, hi := off, off+n
	for lo < hi && t.value(u.vals[lo]) == 0 {
		lo++
	}
	if cap(c.val) < int(n) {
		c.val, c.fac = make([]float64, n), make([]float64, n)
	}
	val, fac := c.val[:hi-lo], c.fac[:hi-lo]
	for k := range val {
		val[k] = t.value(u.vals[lo+int64(k)])
	}
	counting := t.kind == countKind // v = 1 and norm = 1
	q := c.ev.qs[it.q]
	var cur float64
	q.eachCell(u.grid, func(cell int64) {
		row := c.w[cell*nv+lo : cell*nv+hi]
		if counting {
			for _, x := range row {
				cur += x
			}
			return
		}
		for k, x := range row {
			cur += x * val[k] / norm
		}
	})
	cur *= c.nhat / c.z
	target := math.Max(0, math.Min(c.nhat, m.value))
	// The log-ratio step fits the measurement (exactly, for a counting
	// query) where Hardt–Ligett–McSherry's (m − q(A))/(2n̂) creeps towards
	// it; either is post-processing of the measurement.
	eta := math.Log((target + 1) / (cur + 1))
	if eta == 0 {
		return
	}
	for k, v := range val {
		fac[k] = math.Exp(eta * v / norm)
	}
	var dz float64
	q.eachCell(u.grid, func(cell int64) {
		row := c.w[cell*nv+lo : cell*nv+hi]
		if len(row) == 0 {
			return // no value above τ
		}
		if counting {
			f := fac[0]
			for k, old := range row {
				row[k] = old * f
				dz += row[k] - old
			}
			return
		}
		for k, old := range row {
			row[k] = old * fac[k]
			dz += row[k] - old
		}
	})
	c.z += dz
	if ratio := c.z / float64(len(c.w)); !(ratio > 1e-100 && ratio < 1e100) {
		c.renormalise() // A is scale-free: keep w away from under- and overflow
	}
}

func (c *core) renormalise() {
	var z float64
	for _, x := range c.w {
		z += x
	}
	k := float64(len(c.w)) / z
	for i := range c.w {
		c.w[i] *= k
	}
	c.z = float64(len(c.w))
}

// synthetic returns A = n̂·w/z, the output histogram.
func (c *core) synthetic() []float64 {
	out := make([]float64, len(c.w))
	k := c.nhat / c.z
	for i, x := range c.w {
		out[i] = x * k
	}
	return out
}
