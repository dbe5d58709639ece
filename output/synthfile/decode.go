package synthfile

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/synth-dp/synth/spec"
)

// ErrCellRange is wrapped by the errors of [Decoder.Bins], [Decoder.Row]
// and [Writer.Add] for a cell index outside [0, [Decoder.Size]).
var ErrCellRange = errors.New("release: cell index outside the universe")

// maxUniverse bounds the universe size, as [spec.Spec.UniverseSize] does.
const maxUniverse = int64(1) << 62

// maxColumnBins bounds the number of bins of one column, so that the
// decoder's tables stay small; a dense universe with a larger column would
// not fit a release's memory anyway.
const maxColumnBins = int64(1) << 26

// maxExactInt is the largest integer every float64 near it represents
// exactly; integer representatives beyond ±maxExactInt are rejected.
const maxExactInt = float64(1 << 53)

// Decoder maps the cells of a release universe to rows of values.
//
// The universe is the product of the released columns' binned domains,
// indexed in mixed radix with the first column most significant: with n_j
// bins in column j, cell = ((b0·n1 + b1)·n2 + b2)·… .
//
// Each bin has one representative value, fixed by the public domain alone
// (see [Decoder.Value]). Choosing a deterministic representative is
// post-processing: given the cell, the value is a public function of the
// spec, so it needs no noise, consumes no budget and says nothing about the
// data that the released count of the cell does not already say. Sampling
// a value inside the bin instead would add randomness without adding
// information, and would make two releases of the same counts differ.
//
// A Decoder holds one precomputed value per bin of every column (memory
// O(Σ n_j)). It is immutable after [NewDecoder] and safe for concurrent use.
type Decoder struct {
	cols []decodedColumn
	size int64
}

// decodedColumn holds the representatives of one released column, in the
// slice that matches its type.
type decodedColumn struct {
	name   string
	typ    spec.ColumnType
	n      int64
	null   int       // the NULL bin of a nullable column (the last), −1 otherwise
	magic  uint64    // ⌈2^64/n⌉ for n ≥ 2 (see Decoder.Bins); 0 for n = 1
	strs   []string  // categorical
	ints   []int64   // integer
	floats []float64 // numeric
	days   []int32   // date: days since 1970-01-01 (Arrow date32)
}

// NewDecoder builds the decoder of the universe over cols, the released
// columns in release order; names[j] is the name column j gets in the
// output (it need not equal cols[j].Name, which may be ambiguous across
// tables). It returns an error when the lengths differ, there are no
// columns, a name is empty or repeated, a column is nil, has a key type or
// an empty domain or more than 2^26 bins, an integer bin holds no integer,
// an edge is not finite, or the universe has more than 2^62 cells.
func NewDecoder(names []string, cols []*spec.Column) (*Decoder, error) {
	if len(names) != len(cols) {
		return nil, fmt.Errorf("release: %d column names for %d columns", len(names), len(cols))
	}
	if len(cols) == 0 {
		return nil, errors.New("release: no released columns")
	}
	d := &Decoder{cols: make([]decodedColumn, len(cols)), size: 1}
	seen := make(map[string]bool, len(names))
	for j, c := range cols {
		name := names[j]
		if name == "" {
			return nil, fmt.Errorf("release: released column %d has an empty name", j)
		}
		if seen[name] {
			return nil, fmt.Errorf("release: column name %q is repeated", name)
		}
		seen[name] = true
		if c == nil {
			return nil, fmt.Errorf("release: column %q has no declaration", name)
		}
		if k := int64(c.Size()); k > maxColumnBins {
			return nil, fmt.Errorf("release: column %q (%s) has %d bins, more than the decoder's limit of 2^26", name, c.Type, k)
		} else if k > 0 && d.size > maxUniverse/k {
			return nil, fmt.Errorf("release: universe over the released columns has more than 2^62 cells")
		}
		dc, err := decodeColumn(name, c)
		if err != nil {
			return nil, err
		}
		d.size *= dc.n
		d.cols[j] = dc
	}
	return d, nil
}

// decodeColumn precomputes the representatives of every bin of c.
func decodeColumn(name string, c *spec.Column) (decodedColumn, error) {
	dc := decodedColumn{name: name, typ: c.Type, null: -1}
	k := c.ValueSize() // the values' bins; NULL's, if any, comes after them
	if k <= 0 {
		return dc, fmt.Errorf("release: column %q (%s) has an empty domain", name, c.Type)
	}
	n := c.Size()
	if c.Nullable {
		dc.null = c.NullCell()
	}
	dc.n = int64(n)
	if n > 1 {
		dc.magic = ^uint64(0)/uint64(n) + 1
	}
	switch c.Type {
	case spec.Categorical:
		dc.strs = append([]string(nil), c.Values...)
	case spec.Boolean:
		// bin 0 is false, bin 1 true: nothing to precompute.
	case spec.Integer:
		e := c.Edges()
		if err := checkEdges(name, c, e); err != nil {
			return dc, err
		}
		dc.ints = make([]int64, k)
		for i := range k {
			v, ok := integerRepresentative(e, i, c.Max)
			if !ok {
				return dc, fmt.Errorf("release: column %q (integer): bin %d [%g, %g) holds no integer", name, i, e[i], e[i+1])
			}
			dc.ints[i] = v
		}
	case spec.Numeric:
		e := c.Edges()
		if err := checkEdges(name, c, e); err != nil {
			return dc, err
		}
		dc.floats = make([]float64, k)
		for i := range k {
			m := e[i]/2 + e[i+1]/2 // no overflow near ±MaxFloat64
			// The halves round: in a bin one or two ulps wide the sum can
			// land on the next edge (outside a half-open bin) or, with
			// subnormal edges, below e[i]. Its lower edge is in the bin.
			if m < e[i] || m > e[i+1] || (m == e[i+1] && i < k-1) {
				m = e[i]
			}
			dc.floats[i] = m
		}
	case spec.Date:
		min := utcDay(c.DateMin)
		dc.days = make([]int32, k)
		for i := range k {
			t := utcDay(c.DateBinStart(i))
			if t.Before(min) {
				t = min
			}
			days := t.Unix() / 86400 // exact: t is a UTC midnight
			if days < math.MinInt32 || days > math.MaxInt32 {
				return dc, fmt.Errorf("release: column %q (date): bin %d starts at %s, outside the date32 range", name, i, t.Format(time.DateOnly))
			}
			dc.days[i] = int32(days)
		}
	default:
		return dc, fmt.Errorf("release: column %q has type %q, which cannot be released", name, c.Type)
	}
	return dc, nil
}

// checkEdges rejects non-finite or non-increasing edges.
func checkEdges(name string, c *spec.Column, e []float64) error {
	for i, x := range e {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("release: column %q (%s): bin edge %d is %g", name, c.Type, i, x)
		}
		if i > 0 && !(e[i-1] < x) {
			return fmt.Errorf("release: column %q (%s): bin edges %g and %g do not increase", name, c.Type, e[i-1], x)
		}
	}
	return nil
}

// integerRepresentative returns the representative of integer bin i of the
// edges e: the integers of the bin are lo = ⌈e_i⌉ … hi, with hi the largest
// integer < e_{i+1} (≤ e_k for the last bin, which is closed), and never
// above max, the column's Max (equal-width integer bins end at Max+1, which
// is not in the domain). The representative is the midpoint ⌊(lo+hi)/2⌋.
// ok is false when the bin holds no integer or its integers are beyond
// ±2^53.
func integerRepresentative(e []float64, i int, max float64) (v int64, ok bool) {
	k := len(e) - 1
	lo := math.Ceil(e[i])
	var hi float64
	if i == k-1 {
		hi = math.Floor(e[k])
	} else {
		hi = math.Ceil(e[i+1]) - 1
	}
	hi = math.Min(hi, math.Floor(max))
	if lo > hi || lo < -maxExactInt || hi > maxExactInt {
		return 0, false
	}
	a, b := int64(lo), int64(hi)
	return (a + b) >> 1, true // arithmetic shift: floor, also for negatives
}

// utcDay returns the UTC midnight starting t's day (as seen in UTC).
func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// NumColumns returns the number of released columns.
func (d *Decoder) NumColumns() int { return len(d.cols) }

// Name returns the output name of column j. It panics if j is out of range.
func (d *Decoder) Name(j int) string { return d.cols[j].name }

// Type returns the declared type of column j. It panics if j is out of
// range.
func (d *Decoder) Type(j int) spec.ColumnType { return d.cols[j].typ }

// NumBins returns the number of bins n_j of column j, its NULL bin
// included. It panics if j is out of range.
func (d *Decoder) NumBins(j int) int64 { return d.cols[j].n }

// NullBin returns the NULL bin of column j ([spec.Column.NullCell]), −1
// when the column is not nullable. It panics if j is out of range.
func (d *Decoder) NullBin(j int) int { return d.cols[j].null }

// Size returns the number of cells of the universe, Π_j n_j.
func (d *Decoder) Size() int64 { return d.size }

// Bins writes the bins of cell into dst (grown or allocated as needed) and
// returns it: dst[j] is the bin of column j. It returns an error wrapping
// [ErrCellRange] if cell is outside [0, Size()).
func (d *Decoder) Bins(cell int64, dst []int) ([]int, error) {
	if cell < 0 || cell >= d.size {
		return dst, fmt.Errorf("%w: cell %d, universe of %d cells", ErrCellRange, cell, d.size)
	}
	if cap(dst) < len(d.cols) {
		dst = make([]int, len(d.cols))
	}
	dst = dst[:len(d.cols)]
	if d.size <= 1<<32 {
		// Division by multiplication (Lemire, Kaser and Kurz, "Faster
		// remainder by direct computation", 2019, Theorem 1 with
		// N = 32, F = 64): for a numerator and a divisor below 2^32,
		// ⌊c/n⌋ is the high word of c·⌈2^64/n⌉. Every quotient here is
		// below the universe size, so below 2^32. Bins was a quarter of the
		// writer's CPU with hardware division.
		c := uint64(cell)
		for j := len(d.cols) - 1; j >= 0; j-- {
			col := &d.cols[j]
			q := c
			if col.magic != 0 {
				q, _ = bits.Mul64(c, col.magic)
			}
			dst[j] = int(c - q*uint64(col.n))
			c = q
		}
		return dst, nil
	}
	for j := len(d.cols) - 1; j >= 0; j-- {
		n := d.cols[j].n
		dst[j] = int(cell % n)
		cell /= n
	}
	return dst, nil
}

// Value returns the representative value of bin of column j:
//
//   - categorical: the declared value Values[bin], as a string;
//   - boolean: false for bin 0, true for bin 1;
//   - integer: an int64, the midpoint of the integers of the bin
//     [e_i, e_{i+1}), that is ⌊(lo+hi)/2⌋ with lo = ⌈e_i⌉ and hi the largest
//     integer below e_{i+1} (for the last, closed bin: at most e_k), capped at
//     the column's Max; the bin [1, 6) gives 3, a bin of width 1 its integer;
//   - numeric: a float64, the bin midpoint (e_i + e_{i+1})/2, or e_i in
//     a bin so narrow (an ulp or two) that the rounded midpoint falls
//     outside it;
//   - date: a time.Time at UTC midnight, the first day of the bin
//     ([spec.Column.DateBinStart]) but not before DateMin: a month or year
//     bin that DateMin cuts starts at DateMin;
//   - the NULL bin of a nullable column ([spec.Column.NullCell], its last):
//     nil, written as NULL.
//
// Every representative lies inside its bin and the domain. Value panics if
// j or bin is out of range (a programming error).
func (d *Decoder) Value(j, bin int) any {
	c := &d.cols[j]
	if bin < 0 || int64(bin) >= c.n {
		panic(fmt.Sprintf("release: bin %d out of range for column %q with %d bins", bin, c.name, c.n))
	}
	if bin == c.null {
		return nil
	}
	switch c.typ {
	case spec.Categorical:
		return c.strs[bin]
	case spec.Boolean:
		return bin == 1
	case spec.Integer:
		return c.ints[bin]
	case spec.Numeric:
		return c.floats[bin]
	default: // spec.Date
		return time.Unix(int64(c.days[bin])*86400, 0).UTC()
	}
}

// Row returns the representative values of cell, one per column, as
// [Decoder.Value] gives them. It returns an error wrapping [ErrCellRange] if
// cell is outside [0, Size()).
func (d *Decoder) Row(cell int64) ([]any, error) {
	bins, err := d.Bins(cell, nil)
	if err != nil {
		return nil, err
	}
	row := make([]any, len(bins))
	for j, b := range bins {
		row[j] = d.Value(j, b)
	}
	return row, nil
}
