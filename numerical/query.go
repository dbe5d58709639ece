package numerical

import (
	"fmt"
	"slices"
)

// Query is a numerical query w(t) = f_w([t]_R)·g(t) (Def. 4.1): f_w is the
// indicator of a box of the condition grid and g the measure. Its answer on
// a data set D is Σ_{t∈D} w(t) = the sum of the measure over the tuples
// whose cell lies in the box. Queries are public.
type Query struct {
	// Name describes the query in reports; it must hold no data.
	Name string
	// Where lists, per grid column, the accepted codes (any order,
	// duplicates ignored); nil accepts every code. A box with no code in
	// some column is an error.
	Where [][]int
}

// compiled is a query bound to a grid: its box as runs of codes per
// column, and the (offset, sign) terms that sum a summed-area table over
// the box by inclusion–exclusion.
type compiled struct {
	runs  [][][2]int // per column: inclusive [lo, hi] runs
	terms []satTerm
	size  int64 // cells in the box
}

type satTerm struct {
	off  int32
	sign float64
}

// satLayout is the padded summed-area table of a grid: sizes+1 per column,
// S[i₁…i_d] = Σ_{j < i} T[j].
type satLayout struct {
	sizes   []int
	strides []int // padded strides
	len     int
}

func newSATLayout(g Grid) satLayout {
	l := satLayout{sizes: g.Sizes, strides: make([]int, len(g.Sizes))}
	n := 1
	for d := len(g.Sizes) - 1; d >= 0; d-- {
		l.strides[d] = n
		n *= g.Sizes[d] + 1
	}
	l.len = n
	return l
}

// build fills sat (len l.len) with the summed-area table of tab (one value
// per grid cell, mixed radix).
func (l satLayout) build(tab, sat []float64) {
	clear(sat)
	d := len(l.sizes)
	codes := make([]int, d)
	for _, v := range tab {
		off := 0
		for k := range d {
			off += (codes[k] + 1) * l.strides[k]
		}
		sat[off] = v
		for k := d - 1; k >= 0; k-- {
			codes[k]++
			if codes[k] < l.sizes[k] {
				break
			}
			codes[k] = 0
		}
	}
	// Prefix sums along each column in turn.
	for k := range d {
		st := l.strides[k]
		span := (l.sizes[k] + 1) * st
		for base := 0; base < l.len; base += span {
			for inner := 0; inner < st; inner++ {
				x := base + inner + st
				for i := 1; i <= l.sizes[k]; i++ {
					sat[x] += sat[x-st]
					x += st
				}
			}
		}
	}
}

func (c *compiled) sum(sat []float64) float64 {
	var s float64
	for _, t := range c.terms {
		s += t.sign * sat[t.off]
	}
	return s
}

// compile checks q against g and builds its runs and terms.
func compile(g Grid, l satLayout, q Query) (*compiled, error) {
	if len(q.Where) != 0 && len(q.Where) != len(g.Sizes) {
		return nil, fmt.Errorf("%w: query %q: %d conditions for %d grid columns", ErrInvalidInput, q.Name, len(q.Where), len(g.Sizes))
	}
	c := &compiled{runs: make([][][2]int, len(g.Sizes)), size: 1}
	for d, n := range g.Sizes {
		if len(q.Where) == 0 || q.Where[d] == nil {
			c.runs[d] = [][2]int{{0, n - 1}}
			c.size *= int64(n)
			continue
		}
		codes := slices.Clone(q.Where[d])
		slices.Sort(codes)
		codes = slices.Compact(codes)
		if len(codes) == 0 {
			return nil, fmt.Errorf("%w: query %q: no accepted code in grid column %d", ErrInvalidInput, q.Name, d)
		}
		if codes[0] < 0 || codes[len(codes)-1] >= n {
			return nil, fmt.Errorf("%w: query %q: code outside [0, %d) in grid column %d", ErrInvalidInput, q.Name, n, d)
		}
		for i := 0; i < len(codes); {
			j := i
			for j+1 < len(codes) && codes[j+1] == codes[j]+1 {
				j++
			}
			c.runs[d] = append(c.runs[d], [2]int{codes[i], codes[j]})
			i = j + 1
		}
		c.size *= int64(len(codes))
	}
	// One term per corner of every product of runs.
	dims := len(g.Sizes)
	pick := make([]int, dims)
	for {
		for mask := 0; mask < 1<<dims; mask++ {
			off, sign := 0, 1.0
			for k := range dims {
				r := c.runs[k][pick[k]]
				if mask&(1<<k) != 0 {
					off += r[0] * l.strides[k]
					sign = -sign
				} else {
					off += (r[1] + 1) * l.strides[k]
				}
			}
			c.terms = append(c.terms, satTerm{off: int32(off), sign: sign})
		}
		k := dims - 1
		for ; k >= 0; k-- {
			pick[k]++
			if pick[k] < len(c.runs[k]) {
				break
			}
			pick[k] = 0
		}
		if k < 0 {
			break
		}
	}
	return c, nil
}

// eachCell calls fn for every grid cell of the box, in increasing order.
func (c *compiled) eachCell(g Grid, fn func(cell int64)) {
	dims := len(g.Sizes)
	codes := make([]int, dims)
	pick := make([]int, dims)
	for k := range dims {
		codes[k] = c.runs[k][0][0]
	}
	for {
		fn(g.Cell(codes...))
		k := dims - 1
		for ; k >= 0; k-- {
			r := c.runs[k][pick[k]]
			if codes[k] < r[1] {
				codes[k]++
				break
			}
			if pick[k]+1 < len(c.runs[k]) {
				pick[k]++
				codes[k] = c.runs[k][pick[k]][0]
				break
			}
			pick[k] = 0
			codes[k] = c.runs[k][0][0]
		}
		if k < 0 {
			return
		}
	}
}
