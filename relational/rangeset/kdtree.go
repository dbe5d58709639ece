package rangeset

// kdTree sums weighted points of a small integer grid over boxes: the
// occupied cells of a set's rank grid and their row counts. Each node holds
// a contiguous run of the (reordered) points, their bounding box and their
// total; a query adds a node's total when the box holds the node's bounding
// box, skips it when they are disjoint, and otherwise descends, testing
// the points of a leaf one by one.
type kdTree struct {
	dims  int
	pts   []int32 // point i, dimension d at i*dims+d
	cnt   []int64
	nodes []kdNode
	box   []int32 // node j's bounding box: lo at (2j)*dims, hi at (2j+1)*dims
}

type kdNode struct {
	start, end  int32 // the node's points
	left, right int32 // children (0: a leaf)
	sum         int64
}

// kdLeaf is the most points a leaf holds.
const kdLeaf = 8

// build orders the points into the tree.
func (t *kdTree) build() {
	n := len(t.cnt)
	t.nodes = t.nodes[:0]
	t.box = t.box[:0]
	if n == 0 {
		return
	}
	t.node(0, n)
}

// node builds the node over points [start, end) and returns its index.
func (t *kdTree) node(start, end int) int32 {
	d := t.dims
	j := int32(len(t.nodes))
	t.nodes = append(t.nodes, kdNode{start: int32(start), end: int32(end)})
	lo := make([]int32, d)
	hi := make([]int32, d)
	copy(lo, t.pts[start*d:start*d+d])
	copy(hi, lo)
	var sum int64
	for i := start; i < end; i++ {
		p := t.pts[i*d : i*d+d]
		for k, v := range p {
			lo[k] = min(lo[k], v)
			hi[k] = max(hi[k], v)
		}
		sum += t.cnt[i]
	}
	t.box = append(append(t.box, lo...), hi...)
	t.nodes[j].sum = sum
	if end-start <= kdLeaf {
		return j
	}
	// Split at the median of the widest dimension.
	w := 0
	for k := 1; k < d; k++ {
		if hi[k]-lo[k] > hi[w]-lo[w] {
			w = k
		}
	}
	if hi[w] == lo[w] {
		return j // every point in one cell: only one (GROUP BY), kept as a leaf
	}
	mid := (start + end) / 2
	t.selectNth(start, end, mid, w)
	l := t.node(start, mid)
	r := t.node(mid, end)
	t.nodes[j].left, t.nodes[j].right = l, r
	return j
}

// selectNth reorders points [start, end) so that the one at nth has the
// value it would have sorted by dimension w, none before it larger and
// none after it smaller (Hoare's selection).
func (t *kdTree) selectNth(start, end, nth, w int) {
	d := t.dims
	key := func(i int) int32 { return t.pts[i*d+w] }
	lo, hi := start, end-1
	for lo < hi {
		pivot := key(lo + (hi-lo)/2)
		i, k := lo, hi
		for i <= k {
			for key(i) < pivot {
				i++
			}
			for key(k) > pivot {
				k--
			}
			if i <= k {
				t.swap(i, k)
				i++
				k--
			}
		}
		switch {
		case nth <= k:
			hi = k
		case nth >= i:
			lo = i
		default:
			return
		}
	}
}

func (t *kdTree) swap(i, k int) {
	d := t.dims
	for x := 0; x < d; x++ {
		t.pts[i*d+x], t.pts[k*d+x] = t.pts[k*d+x], t.pts[i*d+x]
	}
	t.cnt[i], t.cnt[k] = t.cnt[k], t.cnt[i]
}

// count sums the points inside the box [lo, hi] (closed, per dimension).
func (t *kdTree) count(lo, hi []int32) int64 {
	if len(t.nodes) == 0 {
		return 0
	}
	return t.countNode(0, lo, hi)
}

func (t *kdTree) countNode(j int32, lo, hi []int32) int64 {
	d := t.dims
	nlo := t.box[2*int(j)*d : 2*int(j)*d+d]
	nhi := t.box[(2*int(j)+1)*d : (2*int(j)+1)*d+d]
	inside := true
	for k := 0; k < d; k++ {
		if nhi[k] < lo[k] || nlo[k] > hi[k] {
			return 0
		}
		inside = inside && lo[k] <= nlo[k] && nhi[k] <= hi[k]
	}
	n := &t.nodes[j]
	if inside {
		return n.sum
	}
	if n.left == 0 {
		var s int64
	points:
		for i := n.start; i < n.end; i++ {
			p := t.pts[int(i)*d : int(i)*d+d]
			for k, v := range p {
				if v < lo[k] || v > hi[k] {
					continue points
				}
			}
			s += t.cnt[i]
		}
		return s
	}
	return t.countNode(n.left, lo, hi) + t.countNode(n.right, lo, hi)
}
