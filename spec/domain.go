package spec

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Size is the number of cells of the column's binned domain: the number of
// values of a categorical column, 2 for a boolean, the number of bins of an
// integer or numeric column, the number of days, months or years of a date
// column, plus one for NULL when the column is [Column.Nullable]. A key
// column has size 0.
func (c *Column) Size() int {
	n := c.ValueSize()
	if c.Nullable && n > 0 {
		n++
	}
	return n
}

// NullCell is the cell of NULL in a nullable column: the last one,
// Size() − 1, after every value's cell (so the cells of the values are
// those of the same column declared without nullable). It is −1 when the
// column is not nullable.
func (c *Column) NullCell() int {
	if !c.Nullable || c.Type == Key {
		return -1
	}
	return c.Size() - 1
}

// ValueSize is the number of cells of the column's values, NULL left out:
// [Column.Size] of the column declared without nullable.
func (c *Column) ValueSize() int {
	switch c.Type {
	case Categorical:
		return len(c.Values)
	case Boolean:
		return 2
	case Integer, Numeric:
		if len(c.BinEdges) > 0 {
			return len(c.BinEdges) - 1
		}
		if c.Bins > 0 {
			return c.Bins
		}
		if c.Type == Integer {
			return int(c.Max-c.Min) + 1
		}
		return 0
	case Date:
		return dateIndex(c.DateMax, c.DateMin, c.Granularity) + 1
	}
	return 0
}

// Ordered reports whether the column's bins are ordered (integer, numeric,
// date).
func (c *Column) Ordered() bool {
	return c.Type == Integer || c.Type == Numeric || c.Type == Date
}

// Edges returns the bin edges e0 < ... < ek of an integer or numeric column:
// bin i is [e_i, e_{i+1}), the last bin closed. Equal-width bins of an
// integer column split [Min, Max+1) so that every bin holds whole integers
// when Bins divides the range; an integer column without bins has one bin per
// integer.
func (c *Column) Edges() []float64 {
	if len(c.BinEdges) > 0 {
		return append([]float64(nil), c.BinEdges...)
	}
	k := c.ValueSize()
	lo, hi := c.Min, c.Max
	if c.Type == Integer {
		hi = c.Max + 1
	}
	e := make([]float64, k+1)
	for i := 0; i <= k; i++ {
		e[i] = lo + (hi-lo)*float64(i)/float64(k)
	}
	e[k] = hi
	return e
}

// dateIndex is the index of d's calendar day, month or year counted from
// min's.
func dateIndex(d, min time.Time, g Granularity) int {
	switch g {
	case Month:
		return (d.Year()-min.Year())*12 + int(d.Month()) - int(min.Month())
	case Year:
		return d.Year() - min.Year()
	default:
		return int(d.Sub(min).Hours() / 24)
	}
}

// DateBinStart returns the first day of date bin i that lies in the
// domain. Month and year bins are calendar months and years, so bin 0
// starts at DateMin even when DateMin is not the first day of its month or
// year; every later bin starts on the first day of its month or year.
func (c *Column) DateBinStart(i int) time.Time {
	var d time.Time
	switch c.Granularity {
	case Month:
		y, m := c.DateMin.Year(), int(c.DateMin.Month())-1+i
		d = time.Date(y+m/12, time.Month(m%12+1), 1, 0, 0, 0, 0, time.UTC)
	case Year:
		d = time.Date(c.DateMin.Year()+i, 1, 1, 0, 0, 0, 0, time.UTC)
	default:
		return c.DateMin.AddDate(0, 0, i)
	}
	if d.Before(c.DateMin) {
		return c.DateMin
	}
	return d
}

// ErrOutOfDomain is wrapped by [Column.Bin] when a value lies outside the
// declared domain.
var ErrOutOfDomain = fmt.Errorf("spec: value outside the declared domain")

// Bin maps a raw value (as text) to its cell index in [0, Size()). It is the
// Go reference of the binning the engine does in SQL, used by oracles and
// tests. Categorical values match exactly; booleans are read by
// [strconv.ParseBool] (false is cell 0); integer columns accept only whole
// numbers; dates are YYYY-MM-DD. The empty text is NULL: the
// [Column.NullCell] of a nullable column, outside every other domain (no
// declared category is empty). It does not apply the out-of-domain
// policy: values outside the domain (and key columns) return an error
// wrapping [ErrOutOfDomain].
func (c *Column) Bin(raw string) (int, error) {
	if raw == "" && c.Nullable && c.Type != Key {
		return c.NullCell(), nil
	}
	switch c.Type {
	case Categorical:
		for i, v := range c.Values {
			if v == raw {
				return i, nil
			}
		}
	case Boolean:
		b, err := strconv.ParseBool(raw)
		if err == nil {
			if b {
				return 1, nil
			}
			return 0, nil
		}
	case Integer, Numeric:
		x, err := strconv.ParseFloat(raw, 64)
		if err != nil || math.IsNaN(x) || x < c.Min || x > c.Max {
			break
		}
		if c.Type == Integer && x != math.Trunc(x) {
			break
		}
		e := c.Edges()
		k := len(e) - 1
		for i := 0; i < k; i++ {
			if x < e[i+1] {
				return i, nil
			}
		}
		return k - 1, nil
	case Date:
		d, err := time.Parse(time.DateOnly, raw)
		if err != nil || d.Before(c.DateMin) || d.After(c.DateMax) {
			break
		}
		return dateIndex(d, c.DateMin, c.Granularity), nil
	}
	if h := c.RangeHint(); h != "" {
		return 0, fmt.Errorf("%w: column %s (%s): %q (%s)", ErrOutOfDomain, c.Name, c.Type, raw, h)
	}
	return 0, fmt.Errorf("%w: column %s (%s): %q", ErrOutOfDomain, c.Name, c.Type, raw)
}

// RangeHint explains, for an integer column declared with bin_edges, how
// the edges bound its values, for out-of-range error messages: the bins
// are half-open [e_i, e_{i+1}) over whole numbers, so the last edge itself
// is outside the domain and the largest accepted value is the last edge
// minus one. It returns "" for every other column.
func (c *Column) RangeHint() string {
	if c.Type != Integer || len(c.BinEdges) < 2 {
		return ""
	}
	last := c.BinEdges[len(c.BinEdges)-1]
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	return fmt.Sprintf("integer bin_edges are half-open [e_i, e_(i+1)), so the last edge %s is not in the domain and the largest "+
		"value is %s; to accept values up to M, make the last edge M+1 (e.g. %s to accept %s)",
		f(last), f(last-1), f(last+1), f(last))
}
