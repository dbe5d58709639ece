package engine

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/synth-dp/synth/internal/stattest"
	"github.com/synth-dp/synth/spec"
)

// binCases are columns of every type and binning.
var binCases = []spec.Column{
	{Name: "cat", Type: spec.Categorical, Values: []string{"a", "b", "c d", "é", "x'y", `q"`}},
	{Name: "bool", Type: spec.Boolean},
	{Name: "int_each", Type: spec.Integer, Min: -3, Max: 7},
	{Name: "int_4", Type: spec.Integer, Min: 0, Max: 9, Bins: 4},
	{Name: "int_10", Type: spec.Integer, Min: 1, Max: 50, Bins: 10},
	{Name: "int_100", Type: spec.Integer, Min: 0, Max: 999, Bins: 100},
	{Name: "int_edges", Type: spec.Integer, Min: 0, Max: 100, BinEdges: []float64{0, 1, 10, 50, 100}},
	{Name: "num_7", Type: spec.Numeric, Min: -1.5, Max: 3.2, Bins: 7},
	{Name: "num_1000", Type: spec.Numeric, Min: 0, Max: 1, Bins: 1000},
	{Name: "num_333", Type: spec.Numeric, Min: -0.1, Max: 0.7, Bins: 333},
	{Name: "num_edges", Type: spec.Numeric, Min: 0, Max: 1000, BinEdges: []float64{0, 0.1, 0.3, 10, 1000}},
	{Name: "day", Type: spec.Date, DateMin: day("2020-01-01"), DateMax: day("2020-03-31"), Granularity: spec.Day},
	{Name: "month", Type: spec.Date, DateMin: day("2019-11-15"), DateMax: day("2021-02-10"), Granularity: spec.Month},
	{Name: "year", Type: spec.Date, DateMin: day("2000-06-01"), DateMax: day("2010-01-01"), Granularity: spec.Year},
}

// randomValue draws a raw value for a column: mostly inside the domain,
// with bin edges and their floating-point neighbours, some outside and some
// that do not parse. It avoids the spellings on which the SQL checks are
// knowingly stricter or looser than spec.Column.Bin (see Load).
func randomValue(r *rand.Rand, c *spec.Column) string {
	switch c.Type {
	case spec.Categorical:
		if r.IntN(5) == 0 {
			return []string{"z", "A", "c  d", "x''y"}[r.IntN(4)]
		}
		return c.Values[r.IntN(len(c.Values))]
	case spec.Boolean:
		return []string{"true", "false", "1", "0", "t", "f", "T", "F", "TRUE", "FALSE", "True", "False", "yes", "2"}[r.IntN(14)]
	case spec.Integer:
		span := int(c.Max - c.Min)
		if r.IntN(10) == 0 {
			return []string{"x", "1e1", "+3", "007", "5.0"}[r.IntN(5)]
		}
		return strconv.Itoa(int(c.Min) - 2 + r.IntN(span+5))
	case spec.Numeric:
		e := c.Edges()
		var x float64
		switch r.IntN(4) {
		case 0: // an edge or a neighbour
			x = e[r.IntN(len(e))]
			switch r.IntN(3) {
			case 1:
				x = math.Nextafter(x, math.Inf(1))
			case 2:
				x = math.Nextafter(x, math.Inf(-1))
			}
		case 1:
			return []string{"abc", "NaN", "inf", "1e400", ".5", "5.", "-0", "1E-1"}[r.IntN(8)]
		default:
			w := c.Max - c.Min
			x = c.Min - 0.05*w + r.Float64()*1.1*w
		}
		if r.IntN(2) == 0 {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		return strconv.FormatFloat(x, 'f', -1, 64)
	case spec.Date:
		if r.IntN(10) == 0 {
			return []string{"2020-02-30", "2020-1-05", "2020/01/05", "20200105", "2020-01-05 00:00"}[r.IntN(5)]
		}
		span := int(c.DateMax.Sub(c.DateMin).Hours()/24) + 1
		return c.DateMin.AddDate(0, 0, r.IntN(span+20)-10).Format(time.DateOnly)
	}
	panic(c.Type)
}

// TestBinAgreesWithSpec loads random values of every column type with the
// drop policy and checks, row by row, that a row is kept exactly when
// spec.Column.Bin accepts its value, and that its cell is Bin's.
func TestBinAgreesWithSpec(t *testing.T) {
	seed := stattest.Seed(t)
	r := rand.New(rand.NewPCG(seed, 0xb1))
	ctx := context.Background()
	dir := t.TempDir()
	e := openTest(t)
	const n = 400
	s := &spec.Spec{}
	raw := map[string][]string{}
	for _, c := range binCases {
		c.OutOfDomain = spec.OutOfDomainDrop
		var rows [][]string
		for range n {
			v := randomValue(r, &c)
			raw[c.Name] = append(raw[c.Name], v)
			rows = append(rows, []string{v})
		}
		src := writeCSV(t, dir, c.Name+".csv", []string{c.Name}, rows)
		s.Tables = append(s.Tables, spec.Table{Name: "t_" + c.Name, Source: src, Columns: []spec.Column{c}})
	}
	if err := e.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	for _, tab := range s.Tables {
		c := &tab.Columns[0]
		got := map[int64]int64{}
		rows, err := e.db.Query(fmt.Sprintf("SELECT %s, %s FROM %s", e.d.ident(RowColumn), e.d.ident(BinColumn(c.Name)), e.d.ident(tab.Name)))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var row, b int64
			if err := rows.Scan(&row, &b); err != nil {
				t.Fatal(err)
			}
			got[row] = b
		}
		rows.Close()
		bad := 0
		for i, v := range raw[c.Name] {
			want, err := c.Bin(v)
			b, kept := got[int64(i+1)]
			switch {
			case err != nil && kept:
				t.Errorf("seed %d: %s: %q: SQL kept it in cell %d, spec.Column.Bin: %v", seed, c.Name, v, b, err)
			case err == nil && !kept:
				t.Errorf("seed %d: %s: %q: SQL dropped it, spec.Column.Bin: cell %d", seed, c.Name, v, want)
			case err == nil && b != int64(want):
				t.Errorf("seed %d: %s: %q: SQL cell %d, spec.Column.Bin: cell %d", seed, c.Name, v, b, want)
			}
			if err != nil {
				bad++
			}
			if b < 0 || b >= int64(c.Size()) {
				t.Errorf("%s: %q: cell %d outside [0, %d)", c.Name, v, b, c.Size())
			}
		}
		if bad == 0 || bad == n {
			t.Errorf("%s: %d of %d values outside the domain; the generator should mix both", c.Name, bad, n)
		}
	}
}
