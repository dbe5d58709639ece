package pmw

import (
	"cmp"
	"math/rand/v2"
	"slices"

	"github.com/synth-dp/synth/dp"
)

// drawCounts draws rows rows from the calibrated model g and emits the
// count of every non-empty cell of the full universe (mixed radix over the
// columns, the first most significant), in increasing cell order.
//
// Rows are drawn by forward sampling through the junction tree, as
// Private-PGM's synthetic-data step does (McKenna, Sheldon, Miklau 2019),
// with controlled rounding:
//
//   - the root clique's counts are rows·P(x_root) rounded systematically
//     (each count is the floor or the ceiling of its expectation);
//   - for every next clique c in the tree order, the rows drawn so far are
//     pooled by their value s on the separator between c and its parent;
//     the pool's n_s rows are split over c's cells with separator s by
//     systematic rounding of n_s·P(x_c | s); and the split is dealt to
//     the pooled rows uniformly at random (a shuffled deck of n_s cards).
//
// So every marginal over a clique's columns is within about one row per
// cell of rows times the model's (pooling by separator, not by the whole
// prefix drawn so far, is what keeps the rounding errors from adding up
// across prefixes: the sampler that split each prefix on its own let a
// 16-cell workload marginal of Adult drift by Poisson noise, and the
// released table's error was twice the model's at ε = 4). The deal is a
// uniformly random matching, so each pooled row's new cell has the
// model's conditional law given s whatever the rest of its prefix, as the
// model's conditional independence given s asks, and rows of different
// groups are not correlated beyond it (dealing the cells in blocks to
// groups in blocks would give each group a few cells only). Pools larger
// than maxShufflePool rows split group by group instead. Post-processing
// of the DP model with src's randomness.
func (g *graphical) drawCounts(src dp.Source, rows int64, emit func(cell, count int64) error) error {
	if rows <= 0 || len(g.cliques) == 0 {
		return nil
	}
	r := rand.New(src)
	gs := groupSet{stride: strides(g.sizes)}
	root := g.order[0]
	for _, ic := range systematic(src, g.belief[root], rows) {
		gs.add(gs.encode(g.sizes, g.cliques[root], ic.i), ic.n)
	}
	for _, c := range g.order[1:] {
		gs = g.extend(src, r, c, gs)
	}
	return gs.emit(emit)
}

// groupSet is a list of groups of identical rows: per group its universe
// cell (mixed radix over all columns, the first most significant; a
// column not assigned yet holds bin 0) and its row count. Sixteen bytes a
// group, whatever the number of columns: drawing the 6 M rows of a
// 13-column TPC-H SF 1 release held 52 bytes of bins a group before.
type groupSet struct {
	stride []int64 // stride[col]: the cell weight of one step of col
	cell   []int64
	n      []int64
}

// strides returns the mixed-radix weight of each column (the last column
// least significant). The universe fits in int64 (NewFactored and
// Universe refuse larger ones).
func strides(sizes []int) []int64 {
	st := make([]int64, len(sizes))
	w := int64(1)
	for col := len(sizes) - 1; col >= 0; col-- {
		st[col] = w
		w *= int64(sizes[col])
	}
	return st
}

// add appends a group of n rows in cell.
func (s *groupSet) add(cell, n int64) {
	s.cell = append(s.cell, cell)
	s.n = append(s.n, n)
}

// encode returns the universe offset of a clique cell (mixed radix over
// cols): the sum of its bins times their columns' strides.
func (s *groupSet) encode(sizes, cols []int, cell int) int64 {
	var off int64
	for i := len(cols) - 1; i >= 0; i-- {
		off += int64(cell%sizes[cols[i]]) * s.stride[cols[i]]
		cell /= sizes[cols[i]]
	}
	return off
}

// bin returns column col's bin in a universe cell.
func (s *groupSet) bin(sizes []int, cell int64, col int) int {
	return int(cell / s.stride[col] % int64(sizes[col]))
}

// dealByHypergeometric reports whether extend deals a pool of rows rows
// in groups groups over cells cells by [graphical.dealHypergeometric]
// (when the pool has more rows than groups times cells) rather than by
// the shuffled deck; both give the same law, and tests force either.
var dealByHypergeometric = func(groups, cells, rows int64) bool { return groups*cells < rows }

// maxShufflePool is the largest pool whose rows extend deals one by one
// (a 4-byte card a row).
const maxShufflePool = 1 << 25

// extend assigns clique c's columns outside its separator to every row of
// gs (see drawCounts) and returns the new groups.
func (g *graphical) extend(src dp.Source, r *rand.Rand, c int, gs groupSet) groupSet {
	sep, cols := g.sep[c], g.cliques[c]
	nsep := cellsOf(g.sizes, sep)
	// The clique's cells by separator value, and each one's offset in
	// the universe (its columns outside the separator only: the group's
	// cell already holds the separator's bins, and 0 in the others).
	bySep := make([][]int, nsep)
	for cell := range g.belief[c] {
		s := g.sepProj[c][cell]
		bySep[s] = append(bySep[s], cell)
	}
	inSep := make([]bool, len(g.sizes))
	for _, col := range sep {
		inSep[col] = true
	}
	offset := func(cell int) int64 {
		var off int64
		for i := len(cols) - 1; i >= 0; i-- {
			if !inSep[cols[i]] {
				off += int64(cell%g.sizes[cols[i]]) * gs.stride[cols[i]]
			}
			cell /= g.sizes[cols[i]]
		}
		return off
	}
	// The groups by separator value, in group order (a counting sort:
	// first[s] … first[s+1] index order).
	key := make([]int32, len(gs.n))
	first := make([]int, nsep+1)
	for i, cell := range gs.cell {
		s := 0
		for _, col := range sep {
			s = s*g.sizes[col] + gs.bin(g.sizes, cell, col)
		}
		key[i] = int32(s)
		first[s+1]++
	}
	for s := range nsep {
		first[s+1] += first[s]
	}
	order := make([]int, len(gs.n))
	fill := slices.Clone(first[:nsep])
	for i, s := range key {
		order[fill[s]] = i
		fill[s]++
	}
	next := groupSet{stride: gs.stride, cell: make([]int64, 0, len(gs.n)), n: make([]int64, 0, len(gs.n))}
	var w []float64
	var offs []int64
	var deck []int32
	var tally []int64
	for s := range nsep {
		pool := order[first[s]:first[s+1]]
		if len(pool) == 0 {
			continue
		}
		var ns int64
		for _, i := range pool {
			ns += gs.n[i]
		}
		cells := bySep[s]
		w, offs = w[:0], offs[:0]
		for _, cell := range cells {
			w = append(w, g.belief[c][cell])
			offs = append(offs, offset(cell))
		}
		split := systematic(src, w, ns)
		if ns > maxShufflePool {
			// A pool too large to shuffle: each group splits on its own
			// (the clique's counts are then within one row per group).
			for _, i := range pool {
				for _, ic := range systematic(src, w, gs.n[i]) {
					next.add(gs.cell[i]+offs[ic.i], ic.n)
				}
			}
			continue
		}
		if dealByHypergeometric(int64(len(pool)), int64(len(split)), ns) {
			g.dealHypergeometric(r, gs, pool, split, offs, ns, &next)
			continue
		}
		// Deal the split to the pooled rows uniformly at random: the
		// cells' multiset shuffled, each group taking the next n_g.
		deck = deck[:0]
		for k, ic := range split {
			for range ic.n {
				deck = append(deck, int32(k))
			}
		}
		r.Shuffle(len(deck), func(a, b int) { deck[a], deck[b] = deck[b], deck[a] })
		if cap(tally) < len(split) {
			tally = make([]int64, len(split))
		}
		tally = tally[:len(split)]
		pos := 0
		for _, i := range pool {
			hand := deck[pos : pos+int(gs.n[i])]
			pos += len(hand)
			for _, k := range hand {
				tally[k]++
			}
			for k, c := range tally {
				if c > 0 {
					next.add(gs.cell[i]+offs[split[k].i], c)
					tally[k] = 0
				}
			}
		}
	}
	return next
}

// dealHypergeometric deals a pool's split as extend's shuffled deck does,
// with the same law, without the deck: dealing a uniformly shuffled deck
// to the groups in order gives the first group a uniformly random hand of
// its n_g cards, whose tally over the split's cells is multivariate
// hypergeometric, and the rest of the deck stays uniformly shuffled for
// the next group. So each group's tally is one dp.DrawWithoutReplacement
// from the cards left, and the drawn cards leave the deck. Work is
// one hypergeometric draw per (group, cell) until the hand is placed,
// against one swap per row for the deck: extend takes this path when the
// pool has more rows than groups times cells (a 6 M-row TPC-H SF 1 release
// shuffled 30 M cards, about 1 s). dp.Hypergeometric's law is exact up to
// float64 rounding in its inversion (relative 1e-9): post-processing of
// the DP model either way.
func (g *graphical) dealHypergeometric(r *rand.Rand, gs groupSet, pool []int, split []idxCount, offs []int64, ns int64, next *groupSet) {
	left := make([]int64, len(split))
	for k, ic := range split {
		left[k] = ic.n
	}
	rest := ns // cards left in the deck
	for _, i := range pool {
		dp.DrawWithoutReplacement(r, left, rest, gs.n[i], dp.HypergeometricDirect, func(k int, x int64) {
			next.add(gs.cell[i]+offs[split[k].i], x)
		})
		rest -= gs.n[i]
	}
}

// emit sums the groups by universe cell and emits the non-zero counts in
// increasing cell order. A column in no clique (none: every column has its
// 1-way factor) would stay at bin 0.
func (s *groupSet) emit(emit func(cell, count int64) error) error {
	type out struct{ cell, n int64 }
	outs := make([]out, len(s.n))
	for i := range outs {
		outs[i] = out{s.cell[i], s.n[i]}
	}
	s.cell, s.n = nil, nil
	slices.SortFunc(outs, func(a, b out) int { return cmp.Compare(a.cell, b.cell) })
	for i := 0; i < len(outs); {
		j, n := i, int64(0)
		for j < len(outs) && outs[j].cell == outs[i].cell {
			n += outs[j].n
			j++
		}
		if err := emit(outs[i].cell, n); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// denseModel returns the junction-tree model of a dense MWEM result: the
// iterate is a log-linear model whose factors are the measured column sets
// (A₀ is a product of 1-way factors and every update multiplies by a
// function of one measured marginal's cells), so it factorises exactly over
// a junction tree of those sets, and its clique marginals, summed from the
// weights, are its beliefs. ok is false when the tree's cliques would hold
// more cells than the universe (then the universe-order sampler is used).
func denseModel(res *Result) (g *graphical, ok bool) {
	u := res.Universe
	if u == nil || int64(len(res.Weights)) != u.size {
		return nil, false
	}
	var sets [][]int
	seen := map[string]bool{}
	for c := range u.sizes {
		sets = append(sets, []int{c})
		seen[setKey([]int{c})] = true
	}
	for _, s := range res.Selections {
		cols := slices.Clone(s.Columns)
		slices.Sort(cols)
		if k := setKey(cols); len(cols) > 0 && !seen[k] {
			seen[k] = true
			sets = append(sets, cols)
		}
	}
	if JunctionTreeSize(u.sizes, sets) > int64(u.size) {
		return nil, false
	}
	g, err := newTree(u.sizes, sets)
	if err != nil {
		return nil, false
	}
	// Clique marginals of the weights: one pass over the universe, with an
	// odometer over the cell's bins, then one normalisation.
	for ci := range g.cliques {
		g.belief[ci] = make([]float64, g.cells[ci])
	}
	d := len(u.sizes)
	x := make([]int, d)
	var tot float64
	for _, v := range res.Weights {
		if v > 0 {
			tot += v
			for ci, cols := range g.cliques {
				k := 0
				for _, col := range cols {
					k = k*u.sizes[col] + x[col]
				}
				g.belief[ci][k] += v
			}
		}
		for i := d - 1; i >= 0; i-- {
			x[i]++
			if x[i] < u.sizes[i] {
				break
			}
			x[i] = 0
		}
	}
	if !(tot > 0) {
		return nil, false
	}
	for _, b := range g.belief {
		for k := range b {
			b[k] /= tot
		}
	}
	return g, true
}
