package pmw

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// graphical is a log-linear model over d columns of the given domain
// sizes: p(x) ∝ exp(Σ_s θ_s(x_{C_s})), one log-potential table θ_s per
// column set C_s (a factor). It is the distribution a multiplicative-
// weights iterate over the dense universe represents when every update is
// on a marginal (A_T(x) ∝ A₀(x)·Π_t exp(u_t(x_{C_t}))), stored as factors:
// only the cliques of a junction tree of the factors' graph are tables.
//
// Inference is exact: min-fill triangulation of the graph whose edges join
// the columns of each factor, the maximal cliques of the elimination, a
// maximum-weight spanning tree on separator sizes (a junction tree of a
// chordal graph), and two-pass sum-product message passing in log space.
// Everything here is post-processing of DP outputs: the potentials are fit
// to noisy measurements only.
type graphical struct {
	sizes   []int
	sets    [][]int     // factor column sets, sorted
	theta   [][]float64 // per factor: log-potential table over its set
	home    []int       // per factor: the clique holding its set
	cliques [][]int     // maximal cliques, sorted columns
	cells   []int       // per clique: table size
	parent  []int       // per clique: parent in the tree (−1 for the root)
	order   []int       // cliques, parents before children
	sep     [][]int     // per clique: columns shared with its parent
	// proj[c][k] maps the cells of clique c to the cells of its k-th
	// projection (factor sets homed in c, then the separator with its
	// parent, then those of its children).
	factorProj [][]int32 // per factor: clique cell → factor cell
	sepProj    [][]int32 // per clique: clique cell → separator cell
	parentSep  [][]int32 // per clique: parent's cell → separator cell
	belief     [][]float64
	logZ       float64
}

// cellsOf returns the table size of cols over sizes (mixed radix).
func cellsOf(sizes []int, cols []int) int {
	n := 1
	for _, c := range cols {
		n *= sizes[c]
	}
	return n
}

// JunctionTreeSize returns the total number of clique cells of the
// junction tree of a model whose factors are sets over columns of sizes
// (min-fill triangulation): the memory the factored model needs, public.
// It saturates at math.MaxInt64.
func JunctionTreeSize(sizes []int, sets [][]int) int64 {
	cl := triangulate(sizes, sets)
	var n int64
	for _, c := range cl {
		k := int64(1)
		for _, col := range c {
			if k > math.MaxInt64/int64(sizes[col]) {
				return math.MaxInt64
			}
			k *= int64(sizes[col])
		}
		if n > math.MaxInt64-k {
			return math.MaxInt64
		}
		n += k
	}
	return n
}

// triangulate returns the maximal cliques of a min-fill elimination of
// the graph on the columns whose edges join the columns of every set (each
// column of sizes is a vertex, joined to nothing when no set holds it).
// Ties in fill-in are broken by the smallest product of the neighbours'
// domain sizes, then by the column index: deterministic and public.
func triangulate(sizes []int, sets [][]int) [][]int {
	d := len(sizes)
	adj := make([]map[int]bool, d)
	for i := range adj {
		adj[i] = map[int]bool{}
	}
	for _, s := range sets {
		for _, a := range s {
			for _, b := range s {
				if a != b {
					adj[a][b] = true
				}
			}
		}
	}
	alive := make([]bool, d)
	for i := range alive {
		alive[i] = true
	}
	var cliques [][]int
	for range d {
		best, bestFill, bestW := -1, 0, math.Inf(1)
		for v := range d {
			if !alive[v] {
				continue
			}
			nb := slices.Sorted(func(yield func(int) bool) {
				for u := range adj[v] {
					if alive[u] && !yield(u) {
						return
					}
				}
			})
			fill := 0
			for i, a := range nb {
				for _, b := range nb[i+1:] {
					if !adj[a][b] {
						fill++
					}
				}
			}
			w := float64(sizes[v])
			for _, u := range nb {
				w *= float64(sizes[u])
			}
			if best < 0 || fill < bestFill || fill == bestFill && w < bestW {
				best, bestFill, bestW = v, fill, w
			}
		}
		v := best
		var cl []int
		cl = append(cl, v)
		var nb []int
		for u := range adj[v] {
			if alive[u] {
				nb = append(nb, u)
			}
		}
		for _, a := range nb {
			for _, b := range nb {
				if a != b {
					adj[a][b] = true
				}
			}
		}
		cl = append(cl, nb...)
		slices.Sort(cl)
		cliques = append(cliques, cl)
		alive[v] = false
	}
	// Keep the maximal cliques.
	var out [][]int
	for i, c := range cliques {
		maximal := true
		for j, o := range cliques {
			if i != j && len(o) >= len(c) && subset(c, o) && (len(o) > len(c) || j < i) {
				maximal = false
				break
			}
		}
		if maximal {
			out = append(out, c)
		}
	}
	return out
}

// subset reports whether the sorted set a is inside the sorted set b.
func subset(a, b []int) bool {
	i := 0
	for _, x := range b {
		if i < len(a) && a[i] == x {
			i++
		}
	}
	return i == len(a)
}

// intersect returns the sorted intersection of sorted sets.
func intersect(a, b []int) []int {
	var out []int
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// projectCells returns, for every cell of the table over cols (mixed radix,
// the first column most significant), the index of its cell in the table
// over sub ⊆ cols.
func projectCells(sizes []int, cols, sub []int) []int32 {
	n := cellsOf(sizes, cols)
	out := make([]int32, n)
	// stride of each col of cols in the sub table (0 when not in sub)
	stride := make([]int, len(cols))
	for i, c := range cols {
		if k := slices.Index(sub, c); k >= 0 {
			s := 1
			for _, c2 := range sub[k+1:] {
				s *= sizes[c2]
			}
			stride[i] = s
		}
	}
	digit := make([]int, len(cols))
	idx := 0
	for x := range n {
		out[x] = int32(idx)
		// increment the mixed-radix counter
		for i := len(cols) - 1; i >= 0; i-- {
			digit[i]++
			idx += stride[i]
			if digit[i] < sizes[cols[i]] {
				break
			}
			idx -= stride[i] * digit[i]
			digit[i] = 0
		}
	}
	return out
}

// newGraphical returns the model with zero potentials (the uniform
// distribution) on the factors sets, which must cover every column (the
// 1-way sets at least).
func newGraphical(sizes []int, sets [][]int) (*graphical, error) {
	g, err := newTree(sizes, sets)
	if err != nil {
		return nil, err
	}
	for _, s := range g.sets {
		home := -1
		for i, c := range g.cliques {
			if subset(s, c) && (home < 0 || g.cells[i] < g.cells[home]) {
				home = i
			}
		}
		if home < 0 {
			return nil, fmt.Errorf("pmw: factor %v is in no clique", s)
		}
		g.home = append(g.home, home)
		g.theta = append(g.theta, make([]float64, cellsOf(sizes, s)))
		g.factorProj = append(g.factorProj, projectCells(sizes, g.cliques[home], s))
	}
	g.calibrate()
	return g, nil
}

// newTree is the structure of [newGraphical]'s model without its factors:
// the sets, the junction tree's cliques, tree order, separators and their
// projections, and room for the beliefs (not computed). For callers that
// set the beliefs themselves (drawing rows from a dense model).
func newTree(sizes []int, sets [][]int) (*graphical, error) {
	g := &graphical{sizes: slices.Clone(sizes)}
	for _, s := range sets {
		c := slices.Clone(s)
		slices.Sort(c)
		g.sets = append(g.sets, c)
	}
	g.cliques = triangulate(sizes, g.sets)
	for _, c := range g.cliques {
		g.cells = append(g.cells, cellsOf(sizes, c))
	}
	// Maximum-weight spanning tree on |C_i ∩ C_j| (Kruskal; weight-0
	// edges join the components into one tree).
	type edge struct{ i, j, w int }
	var edges []edge
	for i := range g.cliques {
		for j := i + 1; j < len(g.cliques); j++ {
			edges = append(edges, edge{i, j, len(intersect(g.cliques[i], g.cliques[j]))})
		}
	}
	sort.SliceStable(edges, func(a, b int) bool { return edges[a].w > edges[b].w })
	comp := make([]int, len(g.cliques))
	for i := range comp {
		comp[i] = i
	}
	var find func(int) int
	find = func(x int) int {
		for comp[x] != x {
			comp[x] = comp[comp[x]]
			x = comp[x]
		}
		return x
	}
	nbr := make([][]int, len(g.cliques))
	for _, e := range edges {
		a, b := find(e.i), find(e.j)
		if a == b {
			continue
		}
		comp[a] = b
		nbr[e.i] = append(nbr[e.i], e.j)
		nbr[e.j] = append(nbr[e.j], e.i)
	}
	g.parent = make([]int, len(g.cliques))
	g.sep = make([][]int, len(g.cliques))
	seen := make([]bool, len(g.cliques))
	g.parent[0] = -1
	seen[0] = true
	g.order = []int{0}
	for k := 0; k < len(g.order); k++ {
		c := g.order[k]
		for _, n := range nbr[c] {
			if !seen[n] {
				seen[n] = true
				g.parent[n] = c
				g.sep[n] = intersect(g.cliques[n], g.cliques[c])
				g.order = append(g.order, n)
			}
		}
	}
	if len(g.order) != len(g.cliques) {
		return nil, fmt.Errorf("pmw: junction tree: %d of %d cliques reached", len(g.order), len(g.cliques))
	}
	g.sepProj = make([][]int32, len(g.cliques))
	g.parentSep = make([][]int32, len(g.cliques))
	for c, p := range g.parent {
		if p < 0 {
			continue
		}
		g.sepProj[c] = projectCells(sizes, g.cliques[c], g.sep[c])
		g.parentSep[c] = projectCells(sizes, g.cliques[p], g.sep[c])
	}
	g.belief = make([][]float64, len(g.cliques))
	return g, nil
}

// logsumexpGroups returns, for the groups of vals by key (key[x] < n),
// log Σ exp(vals[x]) per group.
func logsumexpGroups(vals []float64, key []int32, n int) []float64 {
	mx := make([]float64, n)
	for i := range mx {
		mx[i] = math.Inf(-1)
	}
	for x, v := range vals {
		if v > mx[key[x]] {
			mx[key[x]] = v
		}
	}
	sum := make([]float64, n)
	for x, v := range vals {
		k := key[x]
		if !math.IsInf(mx[k], -1) {
			sum[k] += math.Exp(v - mx[k])
		}
	}
	for k := range sum {
		if math.IsInf(mx[k], -1) {
			sum[k] = math.Inf(-1)
		} else {
			sum[k] = mx[k] + math.Log(sum[k])
		}
	}
	return sum
}

// calibrate runs sum-product on the junction tree and sets every clique's
// belief (probabilities summing to 1) and log Z.
func (g *graphical) calibrate() {
	n := len(g.cliques)
	psi := make([][]float64, n)
	for c := range psi {
		psi[c] = make([]float64, g.cells[c])
	}
	for f, s := range g.theta {
		h, pr := g.home[f], g.factorProj[f]
		for x := range psi[h] {
			psi[h][x] += s[pr[x]]
		}
	}
	// Upward: up[c] is the message from c to its parent (over sep[c]).
	up := make([][]float64, n)
	inc := make([][]float64, n) // ψ_c + messages from children
	for c := range inc {
		inc[c] = slices.Clone(psi[c])
	}
	for k := n - 1; k >= 1; k-- {
		c := g.order[k]
		p := g.parent[c]
		up[c] = logsumexpGroups(inc[c], g.sepProj[c], cellsOf(g.sizes, g.sep[c]))
		pp := g.parentSep[c]
		for x := range inc[p] {
			inc[p][x] += up[c][pp[x]]
		}
	}
	// Downward: full[c] = inc[c] + message from the parent.
	full := make([][]float64, n)
	root := g.order[0]
	full[root] = inc[root]
	for k := 1; k < n; k++ {
		c := g.order[k]
		p := g.parent[c]
		// The parent's belief without c's message, summed onto sep[c].
		pp := g.parentSep[c]
		ns := cellsOf(g.sizes, g.sep[c])
		without := make([]float64, len(full[p]))
		for x, v := range full[p] {
			without[x] = v - up[c][pp[x]]
		}
		down := logsumexpGroups(without, pp, ns)
		full[c] = inc[c]
		sp := g.sepProj[c]
		for x := range full[c] {
			full[c][x] += down[sp[x]]
		}
	}
	g.logZ = logsumexpGroups(full[root], make([]int32, len(full[root])), 1)[0]
	for c := range full {
		b := make([]float64, len(full[c]))
		for x, v := range full[c] {
			b[x] = math.Exp(v - g.logZ)
		}
		g.belief[c] = b
	}
}

// marginal returns the model's marginal (probabilities) over the sorted
// set cols, which must lie inside one clique.
func (g *graphical) marginal(cols []int) ([]float64, error) {
	best := -1
	for i, c := range g.cliques {
		if subset(cols, c) && (best < 0 || g.cells[i] < g.cells[best]) {
			best = i
		}
	}
	if best < 0 {
		return nil, fmt.Errorf("pmw: marginal %v spans several cliques", cols)
	}
	return g.marginalIn(best, cols, projectCells(g.sizes, g.cliques[best], cols)), nil
}

// marginalIn sums clique c's belief onto the set cols by the projection pr.
func (g *graphical) marginalIn(c int, cols []int, pr []int32) []float64 {
	out := make([]float64, cellsOf(g.sizes, cols))
	for x, v := range g.belief[c] {
		out[pr[x]] += v
	}
	return out
}
