package synthfile

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/synth-dp/synth/spec"
)

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestDecoderValues(t *testing.T) {
	tests := []struct {
		name string
		col  spec.Column
		want []any
	}{
		{"categorical", spec.Column{Type: spec.Categorical, Values: []string{"1-URGENT", "2-HIGH", ""}},
			[]any{"1-URGENT", "2-HIGH", ""}},
		{"boolean", spec.Column{Type: spec.Boolean}, []any{false, true}},
		{"integer one bin per integer", spec.Column{Type: spec.Integer, Min: -1, Max: 2},
			[]any{int64(-1), int64(0), int64(1), int64(2)}},
		{"integer explicit edges, doc example [1, 6)", spec.Column{Type: spec.Integer, Min: 1, Max: 10, BinEdges: []float64{1, 6, 10}},
			// [1, 6) holds 1..5 → 3; the last bin [6, 10] is closed: 6..10 → 8.
			[]any{int64(3), int64(8)}},
		{"integer edges of width 1", spec.Column{Type: spec.Integer, Min: 4, Max: 7, BinEdges: []float64{4, 5, 6, 7}},
			// [4,5) → 4, [5,6) → 5, last closed [6,7] holds 6 and 7 → 6.
			[]any{int64(4), int64(5), int64(6)}},
		{"integer equal width", spec.Column{Type: spec.Integer, Min: 1, Max: 10, Bins: 2},
			// edges 1, 5.5, 11: [1, 5.5) holds 1..5 → 3; [5.5, 11] capped at Max: 6..10 → 8.
			[]any{int64(3), int64(8)}},
		{"integer equal width, last bin capped at Max", spec.Column{Type: spec.Integer, Min: 0, Max: 9, Bins: 5},
			// edges 0,2,4,6,8,10: the last bin holds 8, 9 (not 10) → 8.
			[]any{int64(0), int64(2), int64(4), int64(6), int64(8)}},
		{"integer negative, rounded down", spec.Column{Type: spec.Integer, Min: -10, Max: 0, BinEdges: []float64{-10, -3, 0}},
			// [-10, -3) holds -10..-4 → -7; [-3, 0] holds -3..0 → ⌊-1.5⌋ = -2.
			[]any{int64(-7), int64(-2)}},
		{"integer fractional edges", spec.Column{Type: spec.Integer, Min: 0.5, Max: 4, BinEdges: []float64{0.5, 2.5, 4}},
			// [0.5, 2.5) holds 1, 2 → 1; [2.5, 4] holds 3, 4 → 3.
			[]any{int64(1), int64(3)}},
		{"numeric equal width", spec.Column{Type: spec.Numeric, Min: 0, Max: 10, Bins: 4},
			[]any{1.25, 3.75, 6.25, 8.75}},
		{"numeric explicit edges", spec.Column{Type: spec.Numeric, Min: -1, Max: 100, BinEdges: []float64{-1, 0, 100}},
			[]any{-0.5, 50.0}},
		{"date by day across a leap day", spec.Column{Type: spec.Date, DateMin: day("2024-02-27"), DateMax: day("2024-03-01"), Granularity: spec.Day},
			[]any{day("2024-02-27"), day("2024-02-28"), day("2024-02-29"), day("2024-03-01")}},
		{"date by month, first bin clipped to DateMin", spec.Column{Type: spec.Date, DateMin: day("2023-11-15"), DateMax: day("2024-02-10"), Granularity: spec.Month},
			[]any{day("2023-11-15"), day("2023-12-01"), day("2024-01-01"), day("2024-02-01")}},
		{"date by year before the epoch", spec.Column{Type: spec.Date, DateMin: day("1969-07-20"), DateMax: day("1971-01-01"), Granularity: spec.Year},
			[]any{day("1969-07-20"), day("1970-01-01"), day("1971-01-01")}},
		{"date by month from a first day", spec.Column{Type: spec.Date, DateMin: day("2020-01-01"), DateMax: day("2020-03-31"), Granularity: spec.Month},
			[]any{day("2020-01-01"), day("2020-02-01"), day("2020-03-01")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.col
			c.Name = "c"
			d, err := NewDecoder([]string{"c"}, []*spec.Column{&c})
			if err != nil {
				t.Fatal(err)
			}
			if d.Size() != int64(len(tt.want)) || d.NumBins(0) != int64(len(tt.want)) {
				t.Fatalf("Size() = %d, NumBins(0) = %d, want %d", d.Size(), d.NumBins(0), len(tt.want))
			}
			for b, want := range tt.want {
				got := d.Value(0, b)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("Value(0, %d) = %#v, want %#v", b, got, want)
				}
				// The representative lies in its own bin, by the spec's
				// reference binning.
				if raw, ok := rawOf(got); ok {
					if gb, err := c.Bin(raw); err != nil || gb != b {
						t.Errorf("representative %s of bin %d falls in bin %d (err %v)", raw, b, gb, err)
					}
				}
			}
		})
	}
}

// rawOf renders a value as the text spec.Column.Bin parses.
func rawOf(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), true
	case time.Time:
		return v.Format(time.DateOnly), true
	}
	return "", false
}

func TestDecoderMixedRadix(t *testing.T) {
	cols := []*spec.Column{
		{Type: spec.Categorical, Values: []string{"a", "b", "c"}},
		{Type: spec.Boolean},
		{Type: spec.Integer, Min: 0, Max: 3},
	}
	d, err := NewDecoder([]string{"x", "y", "z"}, cols)
	if err != nil {
		t.Fatal(err)
	}
	if d.Size() != 24 || d.NumColumns() != 3 || d.Name(1) != "y" || d.Type(2) != spec.Integer {
		t.Fatalf("Size %d, NumColumns %d, Name(1) %q, Type(2) %q", d.Size(), d.NumColumns(), d.Name(1), d.Type(2))
	}
	cell := int64(0)
	var bins []int
	for b0 := range 3 {
		for b1 := range 2 {
			for b2 := range 4 {
				// The first column is the most significant digit.
				if want := int64((b0*2+b1)*4 + b2); cell != want {
					t.Fatalf("enumeration order broken: %d != %d", cell, want)
				}
				bins, err = d.Bins(cell, bins)
				if err != nil {
					t.Fatal(err)
				}
				if want := []int{b0, b1, b2}; !reflect.DeepEqual(bins, want) {
					t.Errorf("Bins(%d) = %v, want %v", cell, bins, want)
				}
				row, err := d.Row(cell)
				if err != nil {
					t.Fatal(err)
				}
				want := []any{[]string{"a", "b", "c"}[b0], b1 == 1, int64(b2)}
				if !reflect.DeepEqual(row, want) {
					t.Errorf("Row(%d) = %v, want %v", cell, row, want)
				}
				cell++
			}
		}
	}
	for _, bad := range []int64{-1, 24, math.MaxInt64} {
		if _, err := d.Bins(bad, nil); !errors.Is(err, ErrCellRange) {
			t.Errorf("Bins(%d) error = %v, want ErrCellRange", bad, err)
		}
		if _, err := d.Row(bad); !errors.Is(err, ErrCellRange) {
			t.Errorf("Row(%d) error = %v, want ErrCellRange", bad, err)
		}
	}
}

func TestDecoderValuePanics(t *testing.T) {
	d, err := NewDecoder([]string{"b"}, []*spec.Column{{Type: spec.Boolean}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Value(0, 2) did not panic")
		}
	}()
	d.Value(0, 2)
}

func TestNewDecoderErrors(t *testing.T) {
	boolean := &spec.Column{Type: spec.Boolean}
	big := &spec.Column{Type: spec.Integer, Min: 0, Max: 1<<20 - 1} // 2^20 bins
	tests := []struct {
		name  string
		names []string
		cols  []*spec.Column
	}{
		{"length mismatch", []string{"a", "b"}, []*spec.Column{boolean}},
		{"no columns", nil, nil},
		{"empty name", []string{""}, []*spec.Column{boolean}},
		{"repeated name", []string{"a", "a"}, []*spec.Column{boolean, boolean}},
		{"nil column", []string{"a"}, []*spec.Column{nil}},
		{"key column", []string{"a"}, []*spec.Column{{Type: spec.Key}}},
		{"unknown type", []string{"a"}, []*spec.Column{{Type: "money"}}},
		{"no categories", []string{"a"}, []*spec.Column{{Type: spec.Categorical}}},
		{"numeric without bins", []string{"a"}, []*spec.Column{{Type: spec.Numeric, Min: 0, Max: 1}}},
		{"integer bin without integer", []string{"a"}, []*spec.Column{{Type: spec.Integer, Min: 1, Max: 3, BinEdges: []float64{1, 1.2, 1.5, 3}}}},
		{"infinite edge", []string{"a"}, []*spec.Column{{Type: spec.Numeric, Min: 0, Max: math.Inf(1), BinEdges: []float64{0, 1, math.Inf(1)}}}},
		{"NaN edge", []string{"a"}, []*spec.Column{{Type: spec.Numeric, BinEdges: []float64{0, math.NaN(), 2}}}},
		{"decreasing edges", []string{"a"}, []*spec.Column{{Type: spec.Numeric, BinEdges: []float64{0, 2, 1}}}},
		{"integer beyond 2^53", []string{"a"}, []*spec.Column{{Type: spec.Integer, Min: 0, Max: 1e17, BinEdges: []float64{0, 1e17}}}},
		{"too many bins", []string{"a"}, []*spec.Column{{Type: spec.Integer, Min: 0, Max: 1 << 27}}},
		{"universe over 2^62", []string{"a", "b", "c", "d"}, []*spec.Column{big, big, big, big}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewDecoder(tt.names, tt.cols)
			if err == nil {
				t.Fatalf("NewDecoder succeeded with Size %d", d.Size())
			}
			if s := err.Error(); len(s) < 9 || s[:9] != "release: " {
				t.Errorf("error %q lacks the package prefix", s)
			}
		})
	}
}

// TestDecoderBinsLargeUniverses checks Bins against plain division on
// universes up to and past 2^32 cells, where Bins switches from division
// by multiplication to hardware division: radices of 1, powers of two and
// the largest column, at the first and last cells and at random ones.
func TestDecoderBinsLargeUniverses(t *testing.T) {
	integer := func(n int) *spec.Column { return &spec.Column{Type: spec.Integer, Min: 0, Max: float64(n - 1)} }
	cases := []struct {
		name  string
		radix []int
	}{
		{"2^32 exactly", []int{1 << 16, 1, 1 << 16}},
		{"just below 2^32", []int{65521, 65537, 1}},
		{"2^22 bins times 1021", []int{1021, 1 << 22}},
		{"just above 2^32", []int{65537, 65537}},
		// Division by multiplication is wrong here (for 7 at the last
		// cells): only hardware division passes.
		{"7·2^59", []int{1 << 20, 1 << 20, 1 << 19, 7}},
		{"small odd", []int{7, 3, 5, 1, 11}},
		{"one column", []int{1 << 26}},
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			names := make([]string, len(tc.radix))
			cols := make([]*spec.Column, len(tc.radix))
			for j, n := range tc.radix {
				names[j], cols[j] = fmt.Sprint("c", j), integer(n)
			}
			d, err := NewDecoder(names, cols)
			if err != nil {
				t.Fatal(err)
			}
			cells := []int64{0, 1, d.Size() - 1, d.Size() - 2, d.Size() / 2}
			for range 20000 {
				cells = append(cells, rnd.Int64N(d.Size()))
			}
			var bins []int
			for _, cell := range cells {
				if bins, err = d.Bins(cell, bins); err != nil {
					t.Fatal(err)
				}
				c := cell
				for j := len(tc.radix) - 1; j >= 0; j-- {
					n := int64(tc.radix[j])
					if want := int(c % n); bins[j] != want {
						t.Fatalf("Bins(%d)[%d] = %d, want %d (bins %v)", cell, j, bins[j], want, bins)
					}
					c /= n
				}
			}
		})
	}
}

// TestDecoderNarrowNumericBins: every numeric representative lies in its
// bin — [e_i, e_{i+1}), the last closed — also in bins one or two ulps
// wide (where the rounded midpoint can land on the next edge) and with
// subnormal edges (where halving rounds).
func TestDecoderNarrowNumericBins(t *testing.T) {
	up := func(x float64, n int) []float64 {
		e := []float64{x}
		for range n {
			x = math.Nextafter(x, math.Inf(1))
			e = append(e, x)
		}
		return e
	}
	for name, e := range map[string][]float64{
		"ulps from an odd mantissa":  up(math.Nextafter(1, 2), 6),
		"ulps from an even mantissa": up(1, 6),
		"subnormals":                 up(-3*5e-324, 7),
		"wider bins after ulps":      append(up(math.Nextafter(1, 2), 3), 5, 7, 1e300),
		"negative ulps":              up(-math.Nextafter(1, 2), 5),
	} {
		col := &spec.Column{Type: spec.Numeric, BinEdges: e, Min: e[0], Max: e[len(e)-1]}
		d, err := NewDecoder([]string{"x"}, []*spec.Column{col})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i := range len(e) - 1 {
			v := d.Value(0, i).(float64)
			last := i == len(e)-2
			if v < e[i] || v > e[i+1] || (v == e[i+1] && !last) {
				t.Errorf("%s: bin %d [%v, %v%s holds representative %v", name, i, e[i], e[i+1], map[bool]string{true: "]", false: ")"}[last], v)
			}
		}
	}
}
