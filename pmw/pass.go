package pmw

import (
	"golang.org/x/sync/errgroup"
)

// minBlock is the smallest inner block the fused pass walks as a unit: the
// trailing columns are grouped until their product reaches it, so that the
// per-block bookkeeping (one odometer step) is amortised over ≥ 8 cells.
const minBlock = 8

// parallelCells is the universe size below which the fused pass runs on one
// goroutine: below it the goroutine start-up costs more than it saves.
const parallelCells = 1 << 16

// passPlan is the fused answering pass: ONE sweep over the dense array that
// accumulates every cell into every projection table at once.
//
// The universe is viewed as nBlocks contiguous blocks of the trailing
// columns (block size B ≥ [minBlock]). Projections split in two kinds:
//
//   - outer projections use no trailing column: a block adds its sum into
//     one table entry, so they cost one add per block;
//   - inner projections use some trailing column: each cell of the block
//     adds into the table at base + off[j], off precomputed per position.
//
// The base index of every projection is kept incrementally by an odometer
// over the outer columns — no division or modulo per cell.
type passPlan struct {
	u        *Universe
	projs    []*projection
	tableOff []int // offset of each projection's table in the scratch table
	tableLen int
	outer    int   // number of outer columns
	block    int   // B
	nBlocks  int64 // |X| / B
	outerP   []int
	innerP   []int
	innerOff [][]int32
	ostr     []int // ostr[c*len(projs)+p]: stride of projection p on outer column c
	h        *hier // built on first use by scaleKernel
}

func newPassPlan(u *Universe, projs []*projection) *passPlan {
	return newPassPlanMin(u, projs, minBlock)
}

// newPassPlanMin is newPassPlan with inner blocks of at least minB cells
// (or the whole universe).
func newPassPlanMin(u *Universe, projs []*projection, minB int) *passPlan {
	m := len(u.sizes)
	pl := &passPlan{u: u, projs: projs, tableOff: make([]int, len(projs))}
	for i, p := range projs {
		pl.tableOff[i] = pl.tableLen
		pl.tableLen += p.size
	}
	pl.outer, pl.block = m, 1
	for pl.outer > 0 && pl.block < minB {
		pl.outer--
		pl.block *= u.sizes[pl.outer]
	}
	pl.nBlocks = u.size / int64(pl.block)
	nP := len(projs)
	pl.ostr = make([]int, pl.outer*nP)
	for c := 0; c < pl.outer; c++ {
		for i, p := range projs {
			pl.ostr[c*nP+i] = p.stride[c]
		}
	}
	d := make([]int, m)
	for i, p := range projs {
		inner := false
		for c := pl.outer; c < m; c++ {
			inner = inner || p.stride[c] != 0
		}
		if !inner {
			pl.outerP = append(pl.outerP, i)
			continue
		}
		off := make([]int32, pl.block)
		for j := range off {
			k := j
			for c := m - 1; c >= pl.outer; c-- {
				d[c] = k % u.sizes[c]
				k /= u.sizes[c]
			}
			o := 0
			for c := pl.outer; c < m; c++ {
				o += d[c] * p.stride[c]
			}
			off[j] = int32(o)
		}
		pl.innerP = append(pl.innerP, i)
		pl.innerOff = append(pl.innerOff, off)
	}
	return pl
}

// kernel adds blocks [b0, b1) of a into tab (not cleared) and returns the
// sum of those cells.
func (pl *passPlan) kernel(a, tab []float64, b0, b1 int64) float64 {
	nP := len(pl.projs)
	sizes := pl.u.sizes
	digits := make([]int, pl.outer)
	x := b0
	for c := pl.outer - 1; c >= 0; c-- {
		n := int64(sizes[c])
		digits[c] = int(x % n)
		x /= n
	}
	base := make([]int, nP)
	for i := range base {
		base[i] = pl.tableOff[i]
		for c := 0; c < pl.outer; c++ {
			base[i] += digits[c] * pl.ostr[c*nP+i]
		}
	}
	B := int64(pl.block)
	var total float64
	for blk := b0; blk < b1; blk++ {
		row := a[blk*B : blk*B+B]
		var s0, s1, s2, s3 float64
		j := 0
		for ; j+4 <= len(row); j += 4 {
			s0 += row[j]
			s1 += row[j+1]
			s2 += row[j+2]
			s3 += row[j+3]
		}
		for ; j < len(row); j++ {
			s0 += row[j]
		}
		s := (s0 + s1) + (s2 + s3)
		total += s
		for _, p := range pl.outerP {
			tab[base[p]] += s
		}
		for k, p := range pl.innerP {
			off := pl.innerOff[k][:len(row)]
			t := tab[base[p]:]
			for j, v := range row {
				t[off[j]] += v
			}
		}
		// Odometer step over the outer columns.
		for c := pl.outer - 1; c >= 0; c-- {
			st := pl.ostr[c*nP : c*nP+nP]
			digits[c]++
			if digits[c] < sizes[c] {
				for i, v := range st {
					base[i] += v
				}
				break
			}
			back := sizes[c] - 1
			digits[c] = 0
			for i, v := range st {
				base[i] -= v * back
			}
		}
	}
	return total
}

// run fills scratch[0] with every projection table of a (the other
// scratch tables are per-worker partials) and returns Σ a. len(scratch)
// bounds the number of workers.
func (pl *passPlan) run(a []float64, scratch [][]float64) float64 {
	return pl.parallel(scratch, func(tab []float64, b0, b1 int64) float64 {
		return pl.kernel(a, tab, b0, b1)
	})
}

// runScaled multiplies every cell of a by its factor under sc (see
// [scaleSpec]) and, in the same sweep, fills scratch[0] with every
// projection table of the scaled a; it returns the new Σ a.
func (pl *passPlan) runScaled(a []float64, sc *scaleSpec, scratch [][]float64) float64 {
	pl.hierarchy() // built here, before the workers share it
	return pl.parallel(scratch, func(tab []float64, b0, b1 int64) float64 {
		return pl.scaleKernel(a, tab, sc, b0, b1)
	})
}

// parallel splits the blocks over len(scratch) workers (one below
// [parallelCells]), runs kern on each range into its own cleared table,
// merges the tables into scratch[0] and returns the sum of kern's results.
func (pl *passPlan) parallel(scratch [][]float64, kern func(tab []float64, b0, b1 int64) float64) float64 {
	workers := len(scratch)
	if pl.u.size < parallelCells || int64(workers) > pl.nBlocks {
		workers = 1
	}
	return pl.parallelN(scratch, workers, kern)
}

// parallelN is parallel with exactly workers ≤ len(scratch) workers.
func (pl *passPlan) parallelN(scratch [][]float64, workers int, kern func(tab []float64, b0, b1 int64) float64) float64 {
	for w := 0; w < workers; w++ {
		clear(scratch[w])
	}
	if workers == 1 {
		return kern(scratch[0], 0, pl.nBlocks)
	}
	totals := make([]float64, workers)
	var g errgroup.Group
	for w := 0; w < workers; w++ {
		b0 := pl.nBlocks * int64(w) / int64(workers)
		b1 := pl.nBlocks * int64(w+1) / int64(workers)
		g.Go(func() error {
			totals[w] = kern(scratch[w], b0, b1)
			return nil
		})
	}
	_ = g.Wait() // the kernels return no errors
	total := totals[0]
	for w := 1; w < workers; w++ {
		dst := scratch[0]
		for i, v := range scratch[w] {
			dst[i] += v
		}
		total += totals[w]
	}
	return total
}

// scaleSpec is the multiplicative update of a scaled pass: every cell x
// is multiplied by
//
//	g · Π_{p : on[p]} fac[tableOff[p] + p.index(x)],
//
// a product of small per-projection factor tables (laid out like the
// scratch tables) looked up per cell. inner lists the positions k in
// innerP of the projections with on[innerP[k]].
type scaleSpec struct {
	fac   []float64
	g     float64
	on    []bool
	inner []int
}

// hier is the loop-nest view of the plan used by scaleKernel: the outer
// columns are nested loops, column 0 outermost, and an outer projection
// whose deepest column is c (its level) keeps one table cell for a whole
// subtree of level c. So its factor is looked up, and its table updated,
// once per subtree — when the odometer moves digit c or a shallower one —
// not once per block.
type hier struct {
	// levelP[c+1] lists the outer projections of level c; levelP[0] those
	// with no column at all.
	levelP [][]int
	// colP[c] lists the projections (inner ones too) that use outer
	// column c, and colS[c] their strides on it.
	colP [][]int
	colS [][]int
}

func (pl *passPlan) hierarchy() *hier {
	if pl.h != nil {
		return pl.h
	}
	h := &hier{levelP: make([][]int, pl.outer+1), colP: make([][]int, pl.outer), colS: make([][]int, pl.outer)}
	for _, p := range pl.outerP {
		lv := -1
		for c := 0; c < pl.outer; c++ {
			if pl.projs[p].stride[c] != 0 {
				lv = c
			}
		}
		h.levelP[lv+1] = append(h.levelP[lv+1], p)
	}
	for c := 0; c < pl.outer; c++ {
		for p, pr := range pl.projs {
			if st := pr.stride[c]; st != 0 {
				h.colP[c] = append(h.colP[c], p)
				h.colS[c] = append(h.colS[c], st)
			}
		}
	}
	pl.h = h
	return h
}

// scaleKernel multiplies blocks [b0, b1) of a by their factors under sc,
// adds them into every projection table of tab (not cleared), and returns
// the sum of the new values: the update and the answers of the next sweep
// in ONE pass over a.
//
// It walks the outer columns as a loop nest (see [hier]): F[c] is the
// product of g and the factors of the outer projections of level ≤ c at
// the current digits, S[c] the sum of the scaled cells since digit c last
// moved. Per block it does the inner projections' per-cell work and
// touches only the projections of the deepest outer column; a projection
// of level c is flushed (tab += S[c]) when its subtree ends, and at the end
// of the range every partial subtree is flushed, so any split of the
// blocks over workers adds up to the same tables.
func (pl *passPlan) scaleKernel(a, tab []float64, sc *scaleSpec, b0, b1 int64) float64 {
	if b0 >= b1 {
		return 0
	}
	h := pl.hierarchy()
	K := pl.outer
	sizes := pl.u.sizes
	fac := sc.fac
	digits := make([]int, K)
	x := b0
	for c := K - 1; c >= 0; c-- {
		n := int64(sizes[c])
		digits[c] = int(x % n)
		x /= n
	}
	base := make([]int, len(pl.projs))
	for p, pr := range pl.projs {
		base[p] = pl.tableOff[p]
		for c := 0; c < K; c++ {
			base[p] += digits[c] * pr.stride[c]
		}
	}
	// F[c+1] and S[c+1] for levels c = −1 … K−1.
	F := make([]float64, K+1)
	S := make([]float64, K+1)
	setF := func(from int) { // levels from … K−1 (from ≥ −1)
		for lv := from; lv < K; lv++ {
			f := sc.g
			if lv >= 0 {
				f = F[lv]
			}
			for _, p := range h.levelP[lv+1] {
				if sc.on[p] {
					f *= fac[base[p]]
				}
			}
			F[lv+1] = f
		}
	}
	setF(-1)
	flush := func(lv int) { // level lv's subtree is complete
		v := S[lv+1]
		for _, p := range h.levelP[lv+1] {
			tab[base[p]] += v
		}
		if lv >= 0 {
			S[lv] += v
		}
		S[lv+1] = 0
	}
	// The inner projections' tables and factors depend on the outer
	// digits down to level inLv only: above it the per-cell factor vector
	// fv is reused from block to block, and the scaled cells are summed
	// position by position into acc and added into the inner tables only
	// when a digit ≤ inLv moves.
	inLv := -1
	for _, p := range pl.innerP {
		for c := 0; c < K; c++ {
			if pl.projs[p].stride[c] != 0 {
				inLv = max(inLv, c)
			}
		}
	}
	useAcc := inLv < K-1
	B := int64(pl.block)
	fv := make([]float64, pl.block)
	acc := make([]float64, pl.block)
	setFV := func() {
		for j := range fv {
			fv[j] = 1
		}
		for _, k := range sc.inner {
			off := pl.innerOff[k]
			t := fac[base[pl.innerP[k]]:]
			for j, o := range off {
				fv[j] *= t[o]
			}
		}
	}
	flushAcc := func() {
		for k, p := range pl.innerP {
			off := pl.innerOff[k]
			t := tab[base[p]:]
			for j, v := range acc {
				t[off[j]] += v
			}
		}
		clear(acc)
	}
	if len(sc.inner) > 0 {
		setFV()
	}
	for blk := b0; blk < b1; blk++ {
		row := a[blk*B : blk*B+B]
		f0 := F[K]
		var s0, s1, s2, s3 float64
		if len(sc.inner) == 0 {
			j := 0
			for ; j+4 <= len(row); j += 4 {
				v0, v1, v2, v3 := row[j]*f0, row[j+1]*f0, row[j+2]*f0, row[j+3]*f0
				row[j], row[j+1], row[j+2], row[j+3] = v0, v1, v2, v3
				s0 += v0
				s1 += v1
				s2 += v2
				s3 += v3
			}
			for ; j < len(row); j++ {
				v := row[j] * f0
				row[j] = v
				s0 += v
			}
		} else if useAcc {
			fv, acc := fv[:len(row)], acc[:len(row)]
			j := 0
			for ; j+4 <= len(row); j += 4 {
				v0, v1, v2, v3 := row[j]*fv[j]*f0, row[j+1]*fv[j+1]*f0, row[j+2]*fv[j+2]*f0, row[j+3]*fv[j+3]*f0
				row[j], row[j+1], row[j+2], row[j+3] = v0, v1, v2, v3
				acc[j] += v0
				acc[j+1] += v1
				acc[j+2] += v2
				acc[j+3] += v3
				s0 += v0
				s1 += v1
				s2 += v2
				s3 += v3
			}
			for ; j < len(row); j++ {
				v := row[j] * fv[j] * f0
				row[j] = v
				acc[j] += v
				s0 += v
			}
		} else {
			fv := fv[:len(row)]
			j := 0
			for ; j+4 <= len(row); j += 4 {
				v0, v1, v2, v3 := row[j]*fv[j]*f0, row[j+1]*fv[j+1]*f0, row[j+2]*fv[j+2]*f0, row[j+3]*fv[j+3]*f0
				row[j], row[j+1], row[j+2], row[j+3] = v0, v1, v2, v3
				s0 += v0
				s1 += v1
				s2 += v2
				s3 += v3
			}
			for ; j < len(row); j++ {
				v := row[j] * fv[j] * f0
				row[j] = v
				s0 += v
			}
		}
		S[K] += (s0 + s1) + (s2 + s3)
		switch {
		case useAcc && len(sc.inner) == 0:
			acc := acc[:len(row)]
			for j, v := range row {
				acc[j] += v
			}
		case !useAcc:
			for k, p := range pl.innerP {
				off := pl.innerOff[k][:len(row)]
				t := tab[base[p]:]
				for j, v := range row {
					t[off[j]] += v
				}
			}
		}
		if blk+1 == b1 {
			break
		}
		// Odometer step: digit c moves, the deeper ones wrap to 0.
		c := K - 1
		for ; c >= 0; c-- {
			if digits[c]+1 < sizes[c] {
				break
			}
		}
		for lv := K - 1; lv >= c && lv >= 0; lv-- {
			flush(lv)
		}
		if useAcc && c <= inLv {
			flushAcc()
		}
		for lv := K - 1; lv > c; lv-- {
			back := digits[lv]
			digits[lv] = 0
			for i, p := range h.colP[lv] {
				base[p] -= h.colS[lv][i] * back
			}
		}
		if c >= 0 {
			digits[c]++
			for i, p := range h.colP[c] {
				base[p] += h.colS[c][i]
			}
		}
		setF(c)
		if c <= inLv && len(sc.inner) > 0 {
			setFV()
		}
	}
	if useAcc {
		flushAcc()
	}
	for lv := K - 1; lv >= -1; lv-- {
		if lv == -1 {
			v := S[0]
			for _, p := range h.levelP[0] {
				tab[base[p]] += v
			}
			break
		}
		flush(lv)
	}
	return S[0]
}
