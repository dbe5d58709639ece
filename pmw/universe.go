package pmw

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
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
// domain sizes. Before anything is allocated it checks the dense state
// [Run] needs, 16 bytes per cell (float64 weights and the float64 running
// average), and refuses with a [*TooLargeError] wrapping [ErrTooLarge],
// naming the columns and their sizes, when it is above memCap (memCap ≤ 0
// means [DefaultMemoryCap]). The families' arrays come on top:
// [CheckMemory] counts everything once the workload is known, still before
// any data is read.
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

// Memory is what a [Run] over a universe and a workload allocates, by kind
// of array, in bytes. Every part is a function of the universe's column
// sizes, the families and two public settings (variant and workers), so it
// is known before any data is read: [PlanMemory] computes it and
// [CheckMemory] refuses a run above the cap up front: the paper variant's
// count is the one Run itself checks later, the mwem variant's that plus
// the families' bound arrays (which Run's own check leaves out), so a run
// CheckMemory passes is never refused by Run, which calls CheckMemory
// itself (one count). The histogram handed to Run, and the caller's copy
// it was converted from, are counted ([Memory.Histogram]), and so is the
// dense sum of several runs' counts when the caller merges them
// ([Config.MergeCounts]). Not counted: what the caller does with the
// result beyond that (writing rows is bounded by the row cap, not |X|).
type Memory struct {
	// Cells is the dense per-cell state, 16 bytes a universe cell: the
	// weights and the running average (paper), or the weights and their
	// copy in the universe's column order (mwem).
	Cells int64
	// Tables is the marginal tables of the fused pass, 8 bytes a table
	// cell per copy: one per worker and the true tables, with (mwem) the
	// measurements' three tables, the log-ratios and the factors, or
	// (paper) a bound on the weighted families' per-table-cell indices.
	Tables int64
	// Queries is, for paper, 40 bytes a query: the true answers, the
	// synthetic answers and the scores, and a bound on the range families'
	// (lo, hi) pairs. 0 for mwem.
	Queries int64
	// Families is, for mwem, what binding the families allocates: 16
	// bytes per (lo, hi) pair of a range family (n(n+1)/2 pairs for n
	// bins) and 8 bytes a table cell of a weighted family (its indices).
	// 0 for paper, whose Tables and Queries bound these.
	Families int64
	// Offsets is the fused pass's inner-block offsets, 4 bytes each.
	Offsets int64
	// Histogram is the true histogram: the []Cell handed to Run and the
	// caller's copy it was converted from (the engine's cells), 16 bytes
	// a non-empty cell each and at most |X| cells, so 32·|X|; plus, for
	// the paper variant with explicit linear families, the sparse copy
	// Run answers them from (a map of at most |X| entries, counted at 48
	// bytes an entry: 16 of key and value, a control byte, the 7/8 load
	// factor and up to a doubling after growth).
	Histogram int64
	// Merged is the dense int64 sum of several runs' counts, 8 bytes a
	// cell, when [Config.MergeCounts] is set (uniformized releases).
	Merged int64
}

// Total returns the sum of the parts, saturating at math.MaxInt64.
func (m Memory) Total() int64 {
	t := int64(0)
	for _, p := range []int64{m.Cells, m.Tables, m.Queries, m.Families, m.Offsets, m.Histogram, m.Merged} {
		t = satAdd(t, p)
	}
	return t
}

// String lists the non-zero parts in exact bytes.
func (m Memory) String() string {
	var parts []string
	for _, p := range []struct {
		what string
		n    int64
	}{{"dense cells", m.Cells}, {"marginal tables", m.Tables}, {"per-query arrays", m.Queries},
		{"family indices and range pairs", m.Families}, {"pass offsets", m.Offsets},
		{"histogram", m.Histogram}, {"merged counts", m.Merged}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d B", p.what, p.n))
		}
	}
	return strings.Join(parts, " + ")
}

// PlanMemory returns the memory [Run] would allocate for fams over u with
// cfg's variant and workers (the other fields of cfg do not matter),
// without allocating it and without reading data. It checks the families'
// columns against u (errors wrap [ErrInvalidInput]) but not their weights
// or cells, which Run checks. A count that overflows saturates at
// math.MaxInt64.
func PlanMemory(u *Universe, fams []Family, cfg Config) (Memory, error) {
	if u == nil {
		return Memory{}, fmt.Errorf("%w: nil universe", ErrInvalidInput)
	}
	shapes := make([]famShape, len(fams))
	for i, f := range fams {
		s, err := shapeOf(u, f)
		if err != nil {
			return Memory{}, fmt.Errorf("pmw: family %d: %w", i, err)
		}
		shapes[i] = s
	}
	workers := int64(cfg.workers())
	m := Memory{Cells: u.MemoryEstimate(), Histogram: satMul(32, u.size)}
	if cfg.MergeCounts {
		m.Merged = satMul(8, u.size)
	}
	if cfg.variant() == VariantMWEM {
		// As newMWEM: the 1-way marginals, then each family's marginal
		// (sorted columns), deduplicated, in the internal column order.
		var sets [][]int
		seen := map[string]bool{}
		add := func(cols []int) {
			cols = slices.Clone(cols)
			slices.Sort(cols)
			k := fmt.Sprint(cols)
			if !seen[k] {
				seen[k] = true
				sets = append(sets, cols)
			}
		}
		for c := range u.sizes {
			add([]int{c})
		}
		for _, s := range shapes {
			if s.proj {
				add(s.cols)
			}
			m.Families = satAdd(m.Families, s.bind)
		}
		perm, block := passOrder(u.sizes, sets)
		sizes := make([]int, len(perm))
		for i, c := range perm {
			sizes[i] = u.sizes[c]
		}
		iu := &Universe{sizes: sizes, size: u.size}
		tableLen, offsets := passShape(iu, permutedProjections(iu, perm, sets), block)
		m.Tables = satMul(satMul(workers+6, 8), tableLen)
		m.Offsets = satMul(4, offsets)
		return m, nil
	}
	// As newEngine: one table per distinct projection.
	var projs []*projection
	seen := map[string]bool{}
	var nq int64
	sparse := false
	for _, s := range shapes {
		nq = satAdd(nq, s.queries)
		if !s.proj {
			sparse = true
			continue
		}
		p := newProjection(u, s.cols)
		if k := p.key(); !seen[k] {
			seen[k] = true
			projs = append(projs, p)
		}
	}
	tableLen, offsets := passShape(u, projs, minBlock)
	m.Tables = satMul(satMul(workers+2, 8), tableLen)
	m.Queries = satMul(5*8, nq)
	m.Offsets = satMul(4, offsets)
	if sparse {
		m.Histogram = satAdd(m.Histogram, satMul(48, u.size))
	}
	return m, nil
}

// CheckMemory returns [PlanMemory] and, when its total is above u's cap, a
// [*TooLargeError] (wrapping [ErrTooLarge]) that gives the parts: the
// refusal [Run] would make, made before any data is read.
func CheckMemory(u *Universe, fams []Family, cfg Config) (Memory, error) {
	m, err := PlanMemory(u, fams, cfg)
	if err != nil {
		return m, err
	}
	if need := m.Total(); need > u.memCap {
		return m, &TooLargeError{Columns: u.names, Sizes: u.sizes, Cells: u.size, Bytes: need, Cap: u.memCap, Parts: &m}
	}
	return m, nil
}

// famShape is what the memory plan needs of a family: whether it has a
// projection and its columns in Bind's order, its number of queries and
// the bytes Bind allocates beyond the projection.
type famShape struct {
	proj    bool
	cols    []int
	queries int64
	bind    int64
}

// shapeOf returns f's shape over u without binding it (binding a range
// family allocates its pairs).
func shapeOf(u *Universe, f Family) (famShape, error) {
	tableSize := func(cols []int) int64 {
		n := int64(1)
		for _, c := range cols {
			n = satMul(n, int64(u.sizes[c]))
		}
		return n
	}
	switch f := f.(type) {
	case *MarginalFamily:
		if err := u.checkCols("marginal", f.cols); err != nil {
			return famShape{}, err
		}
		return famShape{proj: true, cols: f.cols, queries: tableSize(f.cols)}, nil
	case *RangeFamily:
		all := append(slices.Clone(f.by), f.col)
		if err := u.checkCols("range", all); err != nil {
			return famShape{}, err
		}
		n := int64(u.sizes[f.col])
		pairs := satMul(n, n+1) / 2
		return famShape{proj: true, cols: all, queries: satMul(pairs, tableSize(f.by)), bind: satMul(16, pairs)}, nil
	case *WeightedFamily:
		if err := u.checkCols("weighted", f.cols); err != nil {
			return famShape{}, err
		}
		if err := u.checkCols("weighted (weight columns)", f.wcols); err != nil {
			return famShape{}, err
		}
		union := slices.Clone(f.cols)
		for _, c := range f.wcols {
			if !slices.Contains(f.cols, c) {
				union = append(union, c)
			}
		}
		return famShape{proj: true, cols: union, queries: tableSize(f.cols), bind: satMul(8, tableSize(union))}, nil
	case *LinearFamily:
		return famShape{queries: int64(len(f.qs))}, nil
	case nil:
		return famShape{}, fmt.Errorf("%w: nil family", ErrInvalidInput)
	}
	return famShape{}, fmt.Errorf("%w: unknown family type %T", ErrInvalidInput, f)
}

// passShape returns the table length and the number of inner-block
// offsets of newPassPlanMin(u, projs, minB), without building the plan.
func passShape(u *Universe, projs []*projection, minB int) (tableLen, offsets int64) {
	m := len(u.sizes)
	outer, block := m, int64(1)
	for outer > 0 && block < int64(minB) {
		outer--
		block = satMul(block, int64(u.sizes[outer]))
	}
	for _, p := range projs {
		tableLen = satAdd(tableLen, int64(p.size))
		for c := outer; c < m; c++ {
			if p.stride[c] != 0 {
				offsets = satAdd(offsets, block)
				break
			}
		}
	}
	return tableLen, offsets
}

// satAdd and satMul are a + b and a·b for a, b ≥ 0, saturating at
// math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}
