package numerical

import (
	"fmt"
	"math"
	"math/bits"
)

// DefaultMemoryCap is the memory cap in bytes [NewUniverse] applies when
// [UniverseOptions.MemoryCap] is 0: a full universe whose dense state would
// need more is reduced (§4.1).
const DefaultMemoryCap int64 = 64 << 20

// bytesPerElement is the dense state the mechanism keeps per universe
// element: the current weights, the true histogram while the true answers
// are computed, and one scratch array.
const bytesPerElement = 24

// Grid is the public condition space X/R: the product of the condition
// columns' code ranges [0, Sizes[d]), cells indexed in mixed radix with the
// first column most significant.
type Grid struct {
	// Names are the condition columns, for messages.
	Names []string
	// Sizes are the columns' numbers of codes, each ≥ 1.
	Sizes []int
}

// Cells returns |X/R|, the number of cells.
func (g Grid) Cells() int64 {
	n := int64(1)
	for _, s := range g.Sizes {
		n *= int64(s)
	}
	return n
}

// Cell returns the mixed-radix index of the codes (one per column).
func (g Grid) Cell(codes ...int) int64 {
	var c int64
	for d, s := range g.Sizes {
		c = c*int64(s) + int64(codes[d])
	}
	return c
}

func (g Grid) validate() error {
	if len(g.Sizes) == 0 {
		return fmt.Errorf("%w: a grid needs at least one condition column", ErrInvalidInput)
	}
	if len(g.Names) != 0 && len(g.Names) != len(g.Sizes) {
		return fmt.Errorf("%w: %d names for %d grid columns", ErrInvalidInput, len(g.Names), len(g.Sizes))
	}
	n := int64(1)
	for d, s := range g.Sizes {
		if s < 1 {
			return fmt.Errorf("%w: grid column %d has %d codes, want ≥ 1", ErrInvalidInput, d, s)
		}
		if n > math.MaxInt32/int64(s) {
			return fmt.Errorf("%w: grid of more than 2³¹ cells", ErrInvalidInput)
		}
		n *= int64(s)
	}
	return nil
}

// Measure is the aggregated column g with its public domain [Min, Max]
// (from the spec, never the data) and resolution b: every value is
// represented as an integer number of units b (rounded to the nearest).
type Measure struct {
	// Name names the column, for messages.
	Name string
	// Min and Max are the declared domain; Min < 0 makes the measure
	// signed (§5: split into w⁺ and w⁻).
	Min, Max float64
	// Resolution is b > 0 (§5); 0 means 1 ([DefaultResolution] gives the
	// default a spec column gets from its declared domain). A value v
	// becomes round(v/b) units: the rounding error is at most b/2 a tuple.
	Resolution float64
}

// Reduction selects the universe.
type Reduction int

const (
	// ReduceAuto (the default) reduces when the full universe would exceed
	// the memory cap or [UniverseOptions.MaxFullElements].
	ReduceAuto Reduction = iota
	// ReduceNever keeps the full universe (refused above the cap).
	ReduceNever
	// ReduceAlways reduces.
	ReduceAlways
)

// UniverseOptions configures [NewUniverse].
type UniverseOptions struct {
	// MemoryCap in bytes; 0 means [DefaultMemoryCap].
	MemoryCap int64
	// Reduction chooses full or reduced; the zero value is [ReduceAuto].
	Reduction Reduction
	// MaxFullElements, when > 0, is the most elements a full universe may
	// have under [ReduceAuto]: a larger one is reduced. It bounds time
	// where the memory cap bounds memory: every multiplicative update of
	// a run is a pass over its item's support, and [Run] makes about
	// 20·T·(T+1)/2 of them (1,100 at T = 10). A public parameter.
	MaxFullElements int64
}

// Universe is the universe PMW runs on: X/R × V where the value axis V
// lists, per sign, the positive magnitudes an element may carry, in units
// of the resolution b:
//
//   - full: V_s = {1, 2, …, Δ_s} (a tuple with value y ≠ 0 is one
//     element (x, |y|) of its sign; y = 0 is no element, since it adds
//     nothing to any query);
//   - reduced (§4.1): V_s = {1, 2, 4, …, 2^L_s}, 2^L_s ≤ Δ_s (a tuple is
//     one element (x, 2^i) per set bit i of |y|).
//
// Δ₋ = ⌊−Min/b⌋ (0 when Min ≥ 0) and Δ₊ = ⌊Max/b⌋. GroupFactor is the
// largest number of elements one tuple becomes: 1 full, 1 + ⌊log₂ Δ⌋
// reduced (Δ = max(Δ₊, Δ₋)), the paper's group-privacy factor. All of it
// is public: it depends on the grid and the declared domain only.
type Universe struct {
	grid    Grid
	measure Measure
	b       float64
	reduced bool
	// bound[s] is Δ_s in units, s = 0 (positive) or 1 (negative).
	bound [2]int64
	// off[s], n[s]: the axis segment of sign s, values vals[off:off+n].
	off, n [2]int
	vals   []int64
	cells  int64
	group  int
	// testNoGroup is a mutation knob for the audits (unexported; no
	// production path sets it): calibrate every noise to ONE element per
	// tuple, forgetting the group-privacy factor of the reduction.
	testNoGroup bool
}

// NewUniverse returns the universe of measure m over grid g, reduced when
// opt says so or (auto) when the full universe's dense state would exceed
// the cap. Errors wrap [ErrInvalidInput]; a universe too large even
// reduced, or full when ReduceNever is asked above the cap, wraps
// [ErrTooLarge].
func NewUniverse(g Grid, m Measure, opt UniverseOptions) (*Universe, error) {
	if err := g.validate(); err != nil {
		return nil, err
	}
	b := m.Resolution
	if b == 0 {
		b = 1
	}
	switch {
	case math.IsNaN(b) || math.IsInf(b, 0) || b <= 0:
		return nil, fmt.Errorf("%w: measure %s: resolution %v, want a finite b > 0", ErrInvalidInput, m.Name, m.Resolution)
	case math.IsNaN(m.Min) || math.IsNaN(m.Max) || math.IsInf(m.Min, 0) || math.IsInf(m.Max, 0) || m.Min >= m.Max:
		return nil, fmt.Errorf("%w: measure %s: domain [%v, %v], want finite min < max", ErrInvalidInput, m.Name, m.Min, m.Max)
	}
	u := &Universe{grid: g, measure: m, b: b, cells: g.Cells()}
	units := func(v float64) (int64, error) {
		if v <= 0 {
			return 0, nil
		}
		x := math.Floor(v/b + 1e-9)
		if x > 1<<52 {
			return 0, fmt.Errorf("%w: measure %s: bound %v is more than 2⁵² units of %v", ErrInvalidInput, m.Name, v, b)
		}
		return int64(x), nil
	}
	var err error
	if u.bound[0], err = units(m.Max); err != nil {
		return nil, err
	}
	if u.bound[1], err = units(-m.Min); err != nil {
		return nil, err
	}
	if u.bound[0] == 0 && u.bound[1] == 0 {
		return nil, fmt.Errorf("%w: measure %s: domain [%v, %v] holds no non-zero unit of %v", ErrInvalidInput, m.Name, m.Min, m.Max, b)
	}
	memCap := opt.MemoryCap
	if memCap <= 0 {
		memCap = DefaultMemoryCap
	}
	fullLen := u.bound[0] + u.bound[1]
	fullBytes := float64(u.cells) * float64(fullLen) * bytesPerElement
	switch opt.Reduction {
	case ReduceAlways:
		u.reduced = true
	case ReduceNever:
		if fullBytes > float64(memCap) {
			return nil, fmt.Errorf("%w: full universe %d cells × %d values needs %.0f bytes, cap %d", ErrTooLarge, u.cells, fullLen, fullBytes, memCap)
		}
	default:
		u.reduced = fullBytes > float64(memCap) ||
			(opt.MaxFullElements > 0 && float64(u.cells)*float64(fullLen) > float64(opt.MaxFullElements))
	}
	for s := range 2 {
		u.off[s] = len(u.vals)
		if u.bound[s] == 0 {
			continue
		}
		if u.reduced {
			for v := int64(1); v <= u.bound[s]; v <<= 1 {
				u.vals = append(u.vals, v)
			}
		} else {
			for v := int64(1); v <= u.bound[s]; v++ {
				u.vals = append(u.vals, v)
			}
		}
		u.n[s] = len(u.vals) - u.off[s]
	}
	u.group = 1
	if u.reduced {
		u.group = max(u.n[0], u.n[1])
	}
	if need := float64(u.Size()) * bytesPerElement; need > float64(memCap) {
		return nil, fmt.Errorf("%w: universe of %d elements needs %.0f bytes, cap %d", ErrTooLarge, u.Size(), need, memCap)
	}
	return u, nil
}

// Size returns the number of elements |X/R|·|V|.
func (u *Universe) Size() int64 { return u.cells * int64(len(u.vals)) }

// Cells returns |X/R|.
func (u *Universe) Cells() int64 { return u.cells }

// Grid returns the condition grid.
func (u *Universe) Grid() Grid { return u.grid }

// Reduced reports whether the universe is the reduced one of §4.1.
func (u *Universe) Reduced() bool { return u.reduced }

// GroupFactor returns the most elements one tuple becomes (1 full,
// 1 + ⌊log₂ Δ⌋ reduced).
func (u *Universe) GroupFactor() int { return u.group }

// Resolution returns b.
func (u *Universe) Resolution() float64 { return u.b }

// Bound returns Δ₊ (neg false) or Δ₋ (neg true) in units of b.
func (u *Universe) Bound(neg bool) int64 { return u.bound[sgn(neg)] }

// Signed reports whether the measure has a negative part.
func (u *Universe) Signed() bool { return u.bound[1] > 0 }

func sgn(neg bool) int {
	if neg {
		return 1
	}
	return 0
}

// Units returns round(v/b) clamped to [−Δ₋, Δ₊]: the integer value the
// mechanism works with.
func (u *Universe) Units(v float64) int64 {
	x := math.Round(v / u.b)
	if x > float64(u.bound[0]) {
		return u.bound[0]
	}
	if -x > float64(u.bound[1]) {
		return -u.bound[1]
	}
	return int64(x)
}

// Elements calls fn(element, count) for every element a tuple with cell
// and value y (in units, within the bounds) becomes: none for y = 0, one
// element full, one per set bit of |y| reduced. It panics on an out-of-range
// cell or value (programmer error: use [Universe.Units]).
func (u *Universe) Elements(cell int64, y int64, fn func(elem int64)) {
	if cell < 0 || cell >= u.cells {
		panic("numerical: cell out of range")
	}
	if y == 0 {
		return
	}
	s := 0
	if y < 0 {
		s, y = 1, -y
	}
	if y > u.bound[s] {
		panic("numerical: value out of bounds")
	}
	base := cell*int64(len(u.vals)) + int64(u.off[s])
	if !u.reduced {
		fn(base + y - 1)
		return
	}
	for y != 0 {
		i := bits.TrailingZeros64(uint64(y))
		fn(base + int64(i))
		y &= y - 1
	}
}

// String describes the universe, e.g. "1600 cells × 13 values (reduced, group factor 13)".
func (u *Universe) String() string {
	kind := "full"
	if u.reduced {
		kind = "reduced"
	}
	return fmt.Sprintf("%d cells × %d values = %d elements (%s, group factor %d)", u.cells, len(u.vals), u.Size(), kind, u.group)
}

// DefaultResolution returns the resolution b a measure gets when the spec
// declares none (§5): for an integer column, 1 while its bound Δ =
// max(|Min|, |Max|) is at most 2²⁰, else the smallest power of ten with
// Δ/b ≤ 2²⁰; for a real column, that power of ten in any case. The
// rounding to b then moves a tuple by at most b/2 ≤ Δ·2⁻²⁰·5 and the
// reduced universe has at most 21 values a sign (group factor ≤ 21).
// Public: it reads the declared domain only.
func DefaultResolution(min, max float64, integer bool) float64 {
	bound := math.Max(math.Abs(min), math.Abs(max))
	const maxUnits = 1 << 20
	if integer && bound <= maxUnits {
		return 1
	}
	if !(bound > 0) || math.IsInf(bound, 0) || math.IsNaN(bound) {
		return 1
	}
	b := math.Pow(10, math.Ceil(math.Log10(bound/maxUnits)))
	for bound/b > maxUnits { // guard against rounding in Log10
		b *= 10
	}
	if integer {
		b = math.Max(b, 1)
	}
	return b
}

// CellSums returns, for every grid cell, the sum of the measure that the
// histogram h over the universe (len Size, e.g. [Result.Synthetic]) holds
// in that cell, in the measure's units: b·Σ_v v·h(cell, v), negative
// values counted negatively. On the reduced universe an element (x, 2^i)
// carries 2^i units, so the sum is the same. Applied to a DP output it is
// post-processing. It panics if len(h) ≠ Size (programmer error).
func (u *Universe) CellSums(h []float64) []float64 {
	if int64(len(h)) != u.Size() {
		panic("numerical: histogram length is not the universe size")
	}
	nv := len(u.vals)
	out := make([]float64, u.cells)
	for cell := range out {
		row := h[cell*nv : (cell+1)*nv]
		var s float64
		for k, x := range row {
			v := float64(u.vals[k])
			if k >= u.off[1] && u.n[1] > 0 {
				v = -v
			}
			s += v * x
		}
		out[cell] = s * u.b
	}
	return out
}

// SumNoiseScale returns b·Δ·⌈Δ̃⌉/ε in the measure's units, Δ = max(Δ₊, Δ₋)
// in units of b: the scale of the Laplace noise that one sum of the
// measure over any set of cells needs at ε when one neighbour moves up to
// ⌈Δ̃⌉ tuples (sensitivity 0 means 1), each by at most b·Δ. It is the
// error scale of a sum of the measure at this budget, the order of
// magnitude below which no sum released with ε alone can be trusted; a
// public parameter when ε is public and Δ̃ public or a DP output.
func (u *Universe) SumNoiseScale(eps, sensitivity float64) float64 {
	d := math.Ceil(math.Max(sensitivity, 1))
	return u.b * float64(max(u.bound[0], u.bound[1])) * d / eps
}
