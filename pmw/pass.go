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
}

func newPassPlan(u *Universe, projs []*projection) *passPlan {
	m := len(u.sizes)
	pl := &passPlan{u: u, projs: projs, tableOff: make([]int, len(projs))}
	for i, p := range projs {
		pl.tableOff[i] = pl.tableLen
		pl.tableLen += p.size
	}
	pl.outer, pl.block = m, 1
	for pl.outer > 0 && pl.block < minBlock {
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
	workers := len(scratch)
	if pl.u.size < parallelCells || int64(workers) > pl.nBlocks {
		workers = 1
	}
	for w := 0; w < workers; w++ {
		clear(scratch[w])
	}
	if workers == 1 {
		return pl.kernel(a, scratch[0], 0, pl.nBlocks)
	}
	totals := make([]float64, workers)
	var g errgroup.Group
	for w := 0; w < workers; w++ {
		b0 := pl.nBlocks * int64(w) / int64(workers)
		b1 := pl.nBlocks * int64(w+1) / int64(workers)
		g.Go(func() error {
			totals[w] = pl.kernel(a, scratch[w], b0, b1)
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
