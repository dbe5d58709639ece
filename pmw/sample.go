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
	d := len(g.sizes)
	var gs groupSet
	gs.d = d
	root := g.order[0]
	for _, ic := range systematic(src, g.belief[root], rows) {
		x := gs.add(nil, ic.n)
		decodeInto32(g.sizes, g.cliques[root], ic.i, x)
	}
	for _, c := range g.order[1:] {
		gs = g.extend(src, r, c, gs)
	}
	return gs.emit(g.sizes, emit)
}

// groupSet is a list of groups of identical rows: per group its bins (d
// per group, −1 while unassigned, in one flat slice) and its row count.
type groupSet struct {
	d int
	x []int32
	n []int64
}

// add appends a group of n rows, a copy of from (or all −1), and returns
// its bins to fill in.
func (s *groupSet) add(from []int32, n int64) []int32 {
	k := len(s.x)
	if from != nil {
		s.x = append(s.x, from...)
	} else {
		for range s.d {
			s.x = append(s.x, -1)
		}
	}
	s.n = append(s.n, n)
	return s.x[k : k+s.d]
}

func (s *groupSet) bins(i int) []int32 { return s.x[i*s.d : (i+1)*s.d] }

// maxShufflePool is the largest pool whose rows extend deals one by one
// (a 4-byte card a row).
const maxShufflePool = 1 << 25

// extend assigns clique c's columns outside its separator to every row of
// gs (see drawCounts) and returns the new groups.
func (g *graphical) extend(src dp.Source, r *rand.Rand, c int, gs groupSet) groupSet {
	sep, cols := g.sep[c], g.cliques[c]
	nsep := cellsOf(g.sizes, sep)
	// The clique's cells by separator value.
	bySep := make([][]int, nsep)
	for cell := range g.belief[c] {
		s := g.sepProj[c][cell]
		bySep[s] = append(bySep[s], cell)
	}
	// The groups by separator value.
	pools := make([][]int, nsep)
	for i := range gs.n {
		x := gs.bins(i)
		s := 0
		for _, col := range sep {
			s = s*g.sizes[col] + int(x[col])
		}
		pools[s] = append(pools[s], i)
	}
	next := groupSet{d: gs.d}
	var w []float64
	var deck []int32
	var tally []int64
	for s, pool := range pools {
		if len(pool) == 0 {
			continue
		}
		var ns int64
		for _, i := range pool {
			ns += gs.n[i]
		}
		cells := bySep[s]
		w = w[:0]
		for _, cell := range cells {
			w = append(w, g.belief[c][cell])
		}
		split := systematic(src, w, ns)
		if ns > maxShufflePool {
			// A pool too large to shuffle: each group splits on its own
			// (the clique's counts are then within one row per group).
			for _, i := range pool {
				for _, ic := range systematic(src, w, gs.n[i]) {
					decodeInto32(g.sizes, cols, cells[ic.i], next.add(gs.bins(i), ic.n))
				}
			}
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
					decodeInto32(g.sizes, cols, cells[split[k].i], next.add(gs.bins(i), c))
					tally[k] = 0
				}
			}
		}
	}
	return next
}

// emit sums the groups by universe cell and emits the non-zero counts in
// increasing cell order. A column in no clique (none: every column has its
// 1-way factor) would stay at bin 0.
func (s *groupSet) emit(sizes []int, emit func(cell, count int64) error) error {
	type out struct{ cell, n int64 }
	outs := make([]out, 0, len(s.n))
	for i, n := range s.n {
		var cell int64
		for col, b := range s.bins(i) {
			cell = cell*int64(sizes[col]) + int64(max(b, 0))
		}
		outs = append(outs, out{cell, n})
	}
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

// decodeInto32 writes the bins of cell (mixed radix over cols) into x.
func decodeInto32(sizes, cols []int, cell int, x []int32) {
	for i := len(cols) - 1; i >= 0; i-- {
		x[cols[i]] = int32(cell % sizes[cols[i]])
		cell /= sizes[cols[i]]
	}
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
