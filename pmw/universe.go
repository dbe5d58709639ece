package pmw

import (
	"fmt"
	"math"
	"math/bits"
)

// DefaultMemoryCap is the memory cap [NewUniverse] applies when given a cap
// ≤ 0: 2 GiB.
const DefaultMemoryCap int64 = 2 << 30

// bytesPerCell is the dense state [Run] keeps per universe cell: the
// unnormalised weights and the running-average accumulator, both float64.
const bytesPerCell = 16

// Universe is the product X of the released columns' binned domains. A cell
// is a tuple (b0, …, b_{m−1}) of bin indices, indexed in mixed radix with
// the first column most significant:
//
//	index = ((b0·n1 + b1)·n2 + b2)·… + b_{m−1},
//
// which is the engine's histogram cell index. The universe is public: it is
// built from the spec's declared domains, never from data. A Universe is
// immutable and safe for concurrent use.
type Universe struct {
	names   []string
	sizes   []int
	strides []int64 // strides[c] = Π_{c' > c} sizes[c']
	size    int64
	memCap  int64
}

// NewUniverse returns the universe over the named columns with the given
// domain sizes. Before anything is allocated it estimates the memory [Run]
// needs — 16 bytes per cell (float64 weights and the float64 running
// average) plus the per-worker marginal tables, which Run checks again once
// the families are known — and refuses with a [*TooLargeError] wrapping
// [ErrTooLarge], naming the columns and their sizes, when the estimate is
// above memCap (memCap ≤ 0 means [DefaultMemoryCap]).
func NewUniverse(names []string, sizes []int, memCap int64) (*Universe, error) {
	if memCap <= 0 {
		memCap = DefaultMemoryCap
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: universe with no columns", ErrInvalidInput)
	}
	if len(names) != len(sizes) {
		return nil, fmt.Errorf("%w: %d column names but %d sizes", ErrInvalidInput, len(names), len(sizes))
	}
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		if seen[n] {
			return nil, fmt.Errorf("%w: column %q appears twice in the universe", ErrInvalidInput, n)
		}
		seen[n] = true
		if sizes[i] < 1 {
			return nil, fmt.Errorf("%w: column %q has domain size %d, want ≥ 1", ErrInvalidInput, n, sizes[i])
		}
	}
	u := &Universe{
		names:   append([]string(nil), names...),
		sizes:   append([]int(nil), sizes...),
		strides: make([]int64, len(sizes)),
		memCap:  memCap,
	}
	tooLarge := func(cells, bytes int64) error {
		return &TooLargeError{Columns: u.names, Sizes: u.sizes, Cells: cells, Bytes: bytes, Cap: memCap}
	}
	size := uint64(1)
	for c := len(sizes) - 1; c >= 0; c-- {
		u.strides[c] = int64(size)
		hi, lo := bits.Mul64(size, uint64(sizes[c]))
		if hi != 0 || lo > math.MaxInt64 {
			return nil, tooLarge(-1, -1)
		}
		size = lo
	}
	u.size = int64(size)
	hi, lo := bits.Mul64(size, bytesPerCell)
	if hi != 0 || lo > math.MaxInt64 {
		return nil, tooLarge(u.size, -1)
	}
	if int64(lo) > memCap {
		return nil, tooLarge(u.size, int64(lo))
	}
	return u, nil
}

// Len returns |X|, the number of cells.
func (u *Universe) Len() int64 { return u.size }

// NumColumns returns the number of released columns.
func (u *Universe) NumColumns() int { return len(u.sizes) }

// Columns returns a copy of the column names, most significant first.
func (u *Universe) Columns() []string { return append([]string(nil), u.names...) }

// Sizes returns a copy of the column domain sizes.
func (u *Universe) Sizes() []int { return append([]int(nil), u.sizes...) }

// MemoryCap returns the cap the universe was built with.
func (u *Universe) MemoryCap() int64 { return u.memCap }

// MemoryEstimate returns the bytes of dense per-cell state [Run] allocates:
// 16·|X| (weights and running average, float64). Per-worker marginal tables
// come on top and depend on the families; Run checks the sum.
func (u *Universe) MemoryEstimate() int64 { return bytesPerCell * u.size }

// Column returns the position of the named column, or false.
func (u *Universe) Column(name string) (int, bool) {
	for i, n := range u.names {
		if n == name {
			return i, true
		}
	}
	return 0, false
}

// Index returns the cell index of the bin tuple b (one bin per column). It
// returns an error wrapping [ErrInvalidInput] when a bin is out of range.
func (u *Universe) Index(b []int) (int64, error) {
	if len(b) != len(u.sizes) {
		return 0, fmt.Errorf("%w: %d bins for a universe of %d columns", ErrInvalidInput, len(b), len(u.sizes))
	}
	var x int64
	for c, v := range b {
		if v < 0 || v >= u.sizes[c] {
			return 0, fmt.Errorf("%w: bin %d of column %q outside [0, %d)", ErrInvalidInput, v, u.names[c], u.sizes[c])
		}
		x += int64(v) * u.strides[c]
	}
	return x, nil
}

// Decode writes the bin tuple of cell x into dst (grown as needed) and
// returns it. It panics if x is outside [0, |X|) (programmer error).
func (u *Universe) Decode(x int64, dst []int) []int {
	if x < 0 || x >= u.size {
		panic("pmw: Decode of a cell outside the universe")
	}
	if cap(dst) < len(u.sizes) {
		dst = make([]int, len(u.sizes))
	}
	dst = dst[:len(u.sizes)]
	for c := len(u.sizes) - 1; c >= 0; c-- {
		n := int64(u.sizes[c])
		dst[c] = int(x % n)
		x /= n
	}
	return dst
}

// checkCols validates a list of distinct column positions of u.
func (u *Universe) checkCols(what string, cols []int) error {
	seen := make(map[int]bool, len(cols))
	for _, c := range cols {
		if c < 0 || c >= len(u.sizes) {
			return fmt.Errorf("%w: %s: column %d outside [0, %d)", ErrInvalidInput, what, c, len(u.sizes))
		}
		if seen[c] {
			return fmt.Errorf("%w: %s: column %q listed twice", ErrInvalidInput, what, u.names[c])
		}
		seen[c] = true
	}
	return nil
}

// colNames returns "a,b" for the listed columns.
func (u *Universe) colNames(cols []int) string {
	s := ""
	for i, c := range cols {
		if i > 0 {
			s += ","
		}
		s += u.names[c]
	}
	return s
}
