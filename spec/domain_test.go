package spec

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

func TestColumnDomain(t *testing.T) {
	type bin struct {
		raw  string
		want int // -1: out of domain
	}
	for _, tc := range []struct {
		name  string
		col   Column
		size  int
		edges []float64 // nil: not checked
		bins  []bin
	}{
		{"categorical", Column{Type: Categorical, Values: []string{"a", "b", "?"}}, 3, nil,
			[]bin{{"a", 0}, {"b", 1}, {"?", 2}, {"A", -1}, {"", -1}, {" a", -1}}},
		{"boolean", Column{Type: Boolean}, 2, nil,
			[]bin{{"false", 0}, {"true", 1}, {"0", 0}, {"1", 1}, {"TRUE", 1}, {"yes", -1}, {"", -1}}},
		{"integer with bins", Column{Type: Integer, Min: 1, Max: 50, Bins: 10}, 10,
			[]float64{1, 6, 11, 16, 21, 26, 31, 36, 41, 46, 51},
			[]bin{{"1", 0}, {"5", 0}, {"6", 1}, {"45", 8}, {"46", 9}, {"50", 9}, {"0", -1}, {"51", -1}, {"2.5", -1}, {"x", -1}, {"NaN", -1}, {"Inf", -1}}},
		{"integer one bin per value", Column{Type: Integer, Min: 0, Max: 9}, 10,
			[]float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
			[]bin{{"0", 0}, {"9", 9}, {"4", 4}, {"-1", -1}, {"10", -1}}},
		{"integer uneven bins", Column{Type: Integer, Min: 17, Max: 90, Bins: 8}, 8, nil,
			[]bin{{"17", 0}, {"26", 0}, {"27", 1}, {"90", 7}, {"91", -1}}},
		{"integer bin edges", Column{Type: Integer, Min: 1, Max: 50, BinEdges: []float64{1, 10, 25, 51}}, 3,
			[]float64{1, 10, 25, 51},
			[]bin{{"1", 0}, {"9", 0}, {"10", 1}, {"24", 1}, {"25", 2}, {"50", 2}, {"51", -1}, {"0", -1}}},
		{"numeric with bins", Column{Type: Numeric, Min: 0, Max: 100, Bins: 4}, 4,
			[]float64{0, 25, 50, 75, 100},
			[]bin{{"0", 0}, {"24.99", 0}, {"25", 1}, {"99.5", 3}, {"100", 3}, {"100.01", -1}, {"-0.1", -1}, {"NaN", -1}, {"abc", -1}}},
		{"numeric bin edges", Column{Type: Numeric, Min: 0, Max: 10, BinEdges: []float64{0, 1, 10}}, 2,
			[]float64{0, 1, 10},
			[]bin{{"0.5", 0}, {"1", 1}, {"10", 1}, {"10.5", -1}}},
		{"date by day", Column{Type: Date, DateMin: day(1992, 1, 1), DateMax: day(1992, 1, 31), Granularity: Day}, 31, nil,
			[]bin{{"1992-01-01", 0}, {"1992-01-31", 30}, {"1992-02-01", -1}, {"1991-12-31", -1}, {"1992/01/05", -1}}},
		{"date by day over a leap year", Column{Type: Date, DateMin: day(1992, 1, 1), DateMax: day(1992, 12, 31), Granularity: Day}, 366, nil,
			[]bin{{"1992-03-01", 60}, {"1992-12-31", 365}}},
		{"date by month", Column{Type: Date, DateMin: day(1992, 1, 15), DateMax: day(1992, 3, 10), Granularity: Month}, 3, nil,
			[]bin{{"1992-01-15", 0}, {"1992-01-31", 0}, {"1992-02-01", 1}, {"1992-03-10", 2}, {"1992-01-14", -1}, {"1992-03-11", -1}}},
		{"date by month across years", Column{Type: Date, DateMin: day(1992, 11, 15), DateMax: day(1993, 2, 1), Granularity: Month}, 4, nil,
			[]bin{{"1992-12-31", 1}, {"1993-01-01", 2}, {"1993-02-01", 3}}},
		{"date by year", Column{Type: Date, DateMin: day(1992, 1, 1), DateMax: day(1998, 12, 31), Granularity: Year}, 7, nil,
			[]bin{{"1992-01-01", 0}, {"1996-01-02", 4}, {"1998-12-31", 6}, {"1999-01-01", -1}}},
		{"date by year from mid-year", Column{Type: Date, DateMin: day(1992, 7, 1), DateMax: day(1998, 6, 30), Granularity: Year}, 7, nil,
			[]bin{{"1992-07-01", 0}, {"1992-12-31", 0}, {"1993-01-01", 1}, {"1998-06-30", 6}, {"1992-06-30", -1}, {"1998-07-01", -1}}},
		{"key", Column{Type: Key}, 0, nil, []bin{{"1", -1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.col
			c.Name = "c"
			if got := c.Size(); got != tc.size {
				t.Errorf("Size: got %d, want %d", got, tc.size)
			}
			if tc.edges != nil {
				if got := c.Edges(); !reflect.DeepEqual(got, tc.edges) {
					t.Errorf("Edges: got %v, want %v", got, tc.edges)
				}
			}
			if c.Type == Integer || c.Type == Numeric {
				e := c.Edges()
				if len(e) != c.Size()+1 || e[0] != c.Min {
					t.Errorf("Edges %v: want %d edges from %v", e, c.Size()+1, c.Min)
				}
				for i := 1; i < len(e); i++ {
					if e[i] <= e[i-1] {
						t.Errorf("Edges %v not increasing", e)
					}
				}
			}
			for _, b := range tc.bins {
				got, err := c.Bin(b.raw)
				switch {
				case b.want < 0 && err == nil:
					t.Errorf("Bin(%q) = %d, want out of domain", b.raw, got)
				case b.want < 0 && !errors.Is(err, ErrOutOfDomain):
					t.Errorf("Bin(%q): error %v does not wrap ErrOutOfDomain", b.raw, err)
				case b.want >= 0 && (err != nil || got != b.want):
					t.Errorf("Bin(%q) = %d, %v; want %d", b.raw, got, err, b.want)
				}
			}
		})
	}
}

func TestIntegerBinsCoverEveryValue(t *testing.T) {
	// Every integer in [Min, Max] lands in a bin, bins are in order, and
	// every bin is hit.
	for _, c := range []Column{
		{Type: Integer, Min: 17, Max: 90, Bins: 8},
		{Type: Integer, Min: 1, Max: 99, Bins: 10},
		{Type: Integer, Min: -5, Max: 5, Bins: 11},
		{Type: Integer, Min: 1, Max: 50, BinEdges: []float64{1, 10, 25, 51}},
	} {
		hit := make([]bool, c.Size())
		prev := 0
		for x := int(c.Min); x <= int(c.Max); x++ {
			i, err := c.Bin(itoa(x))
			if err != nil {
				t.Fatalf("%+v: Bin(%d): %v", c, x, err)
			}
			if i < prev {
				t.Fatalf("%+v: Bin(%d) = %d after %d", c, x, i, prev)
			}
			prev = i
			hit[i] = true
		}
		for i, h := range hit {
			if !h {
				t.Errorf("%+v: bin %d holds no integer", c, i)
			}
		}
	}
}

func itoa(x int) string {
	if x < 0 {
		return "-" + itoa(-x)
	}
	if x < 10 {
		return string(rune('0' + x))
	}
	return itoa(x/10) + string(rune('0'+x%10))
}

func TestDateBinStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		col  Column
		want []time.Time
	}{
		{"day", Column{Type: Date, DateMin: day(1992, 2, 28), DateMax: day(1992, 3, 1), Granularity: Day},
			[]time.Time{day(1992, 2, 28), day(1992, 2, 29), day(1992, 3, 1)}},
		{"month from mid-month", Column{Type: Date, DateMin: day(1992, 11, 15), DateMax: day(1993, 2, 1), Granularity: Month},
			[]time.Time{day(1992, 11, 15), day(1992, 12, 1), day(1993, 1, 1), day(1993, 2, 1)}},
		{"year from Jan 1", Column{Type: Date, DateMin: day(1992, 1, 1), DateMax: day(1994, 12, 31), Granularity: Year},
			[]time.Time{day(1992, 1, 1), day(1993, 1, 1), day(1994, 1, 1)}},
		{"year from mid-year", Column{Type: Date, DateMin: day(1992, 7, 1), DateMax: day(1994, 6, 30), Granularity: Year},
			[]time.Time{day(1992, 7, 1), day(1993, 1, 1), day(1994, 1, 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.col
			if c.Size() != len(tc.want) {
				t.Fatalf("Size: got %d, want %d", c.Size(), len(tc.want))
			}
			for i, w := range tc.want {
				got := c.DateBinStart(i)
				if !got.Equal(w) {
					t.Errorf("DateBinStart(%d) = %s, want %s", i, got.Format(time.DateOnly), w.Format(time.DateOnly))
				}
				// The start of a bin bins to that bin.
				if b, err := c.Bin(got.Format(time.DateOnly)); err != nil || b != i {
					t.Errorf("Bin(DateBinStart(%d)) = %d, %v", i, b, err)
				}
			}
		})
	}
}

func TestUniverseSize(t *testing.T) {
	mk := func(sizes ...int) *Spec {
		s := &Spec{Tables: []Table{{Name: "t"}}}
		for i, k := range sizes {
			name := string(rune('a' + i))
			s.Tables[0].Columns = append(s.Tables[0].Columns, Column{Name: name, Type: Integer, Min: 0, Max: float64(k - 1)})
			s.Release.Columns = append(s.Release.Columns, ColumnRef{"t", name})
		}
		return s
	}
	if n, ok := mk(5, 5, 3, 10, 7).UniverseSize(); !ok || n != 5250 {
		t.Errorf("got %d %v, want 5250", n, ok)
	}
	if n, ok := mk(1<<24, 1<<24, 1<<14).UniverseSize(); !ok || n != 1<<62 {
		t.Errorf("got %d %v, want 2^62", n, ok)
	}
	if _, ok := mk(1<<24, 1<<24, 1<<15).UniverseSize(); ok {
		t.Error("2^63 cells: want overflow")
	}
}

func TestFormatOf(t *testing.T) {
	for src, want := range map[string]string{
		"a.csv": "csv", "A.CSV": "csv", "a.csv.gz": "csv", "a.csv.zst": "csv",
		"a.parquet": "parquet", "a.pq": "parquet", "a.parquet.gz": "", "a.txt": "", "a": "",
	} {
		if got := FormatOf(src); got != want {
			t.Errorf("FormatOf(%q) = %q, want %q", src, got, want)
		}
	}
}
