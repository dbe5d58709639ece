package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/synth-dp/synth/spec"
)

// ordersColumns is the declaration of the bad-data test table.
func ordersColumns() []spec.Column {
	return []spec.Column{
		{Name: "o_orderkey", Type: spec.Key},
		{Name: "o_totalprice", Type: spec.Numeric, Min: 0, Max: 600000, Bins: 4},
		{Name: "o_qty", Type: spec.Integer, Min: 1, Max: 50, Bins: 10},
		{Name: "o_prio", Type: spec.Categorical, Values: []string{"1-URGENT", "2-HIGH", "3-MEDIUM"}},
		{Name: "o_date", Type: spec.Date, DateMin: day("2020-01-01"), DateMax: day("2020-12-31"), Granularity: spec.Month},
		{Name: "o_flag", Type: spec.Boolean},
	}
}

var ordersHeader = []string{"o_orderkey", "o_comment", "o_totalprice", "o_qty", "o_prio", "o_date", "o_flag"}

// ordersRows are good rows; the second comment holds a newline, so file
// lines and data rows differ from row 3 on.
func ordersRows() [][]string {
	return [][]string{
		{"1", "plain", "100.5", "1", "1-URGENT", "2020-01-01", "true"},
		{"2", "two\nlines, and a comma", "600000", "50", "2-HIGH", "2020-12-31", "F"},
		{"3", "", "0", "17", "3-MEDIUM", "2020-06-15", "0"},
		{"4", "x", "250000", "25", "1-URGENT", "2020-02-29", "True"},
	}
}

func ordersSpec(src string, mod func(cols []spec.Column)) *spec.Spec {
	cols := ordersColumns()
	if mod != nil {
		mod(cols)
	}
	return &spec.Spec{Tables: []spec.Table{{Name: "orders", Source: src, Columns: cols}}}
}

func column(cols []spec.Column, name string) *spec.Column {
	for i := range cols {
		if cols[i].Name == name {
			return &cols[i]
		}
	}
	panic(name)
}

// set returns the rows with row r (1-based) column c replaced.
func set(r int, c, v string) [][]string {
	rows := ordersRows()
	rows[r-1][slices.Index(ordersHeader, c)] = v
	return rows
}

func TestLoadBadData(t *testing.T) { forEachOpener(t, testLoadBadData) }

func testLoadBadData(t *testing.T, openTest func(testing.TB) *Engine) {
	ctx := context.Background()
	tests := []struct {
		name     string
		rows     [][]string
		mod      func([]spec.Column)
		row      int64
		column   string
		value    string
		problem  string
		expected string
	}{
		{name: "not a number", rows: set(3, "o_totalprice", "abc"), row: 3, column: "o_totalprice", value: "abc",
			problem: "is not a number", expected: "numeric in [0, 600000]"},
		{name: "above max", rows: set(4, "o_totalprice", "600000.01"), row: 4, column: "o_totalprice", value: "600000.01",
			problem: "is out of range"},
		{name: "below min", rows: set(1, "o_qty", "0"), row: 1, column: "o_qty", value: "0", problem: "is out of range",
			expected: "integer in [1, 50]"},
		{name: "integer with a fraction", rows: set(2, "o_qty", "2.5"), row: 2, column: "o_qty", value: "2.5",
			problem: "is not an integer"},
		{name: "number with spaces", rows: set(2, "o_qty", " 2"), row: 2, column: "o_qty", value: " 2",
			problem: "is not a number"},
		{name: "unknown category", rows: set(3, "o_prio", "4-LOW"), row: 3, column: "o_prio", value: "4-LOW",
			problem: "is not a declared category", expected: `one of "1-URGENT", "2-HIGH", "3-MEDIUM"`},
		{name: "bad date", rows: set(2, "o_date", "2020-02-30"), row: 2, column: "o_date", value: "2020-02-30",
			problem: "is not a date"},
		{name: "date out of range", rows: set(4, "o_date", "2021-01-01"), row: 4, column: "o_date", value: "2021-01-01",
			problem: "is out of range", expected: "date in [2020-01-01, 2020-12-31]"},
		{name: "bad boolean", rows: set(3, "o_flag", "yes"), row: 3, column: "o_flag", value: "yes", problem: "is not a boolean"},
		{name: "empty value", rows: set(2, "o_prio", ""), row: 2, column: "o_prio", value: "", problem: "is empty"},
		{name: "first bad row wins", rows: func() [][]string {
			r := set(4, "o_qty", "x")
			r[2][slices.Index(ordersHeader, "o_flag")] = "maybe"
			return r
		}(), row: 3, column: "o_flag", value: "maybe", problem: "is not a boolean"},
		{name: "clamp does not fix a parse error", rows: set(2, "o_totalprice", "1,000"),
			mod: func(c []spec.Column) { column(c, "o_totalprice").OutOfDomain = spec.OutOfDomainClamp },
			row: 2, column: "o_totalprice", value: "1,000", problem: "is not a number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := writeCSV(t, t.TempDir(), "orders.csv", ordersHeader, tc.rows)
			e := openTest(t)
			err := e.Load(ctx, ordersSpec(src, tc.mod))
			var de *DataError
			if !errors.As(err, &de) {
				t.Fatalf("Load = %v, want a *DataError", err)
			}
			if !errors.Is(err, ErrData) {
				t.Errorf("error %v does not wrap ErrData", err)
			}
			if de.File != src || de.Row != tc.row || de.Column != tc.column || de.Value != tc.value ||
				!strings.HasPrefix(de.Problem, tc.problem) || !strings.Contains(de.Expected, tc.expected) {
				t.Errorf("DataError = %+v, want row %d, column %s, value %q, problem %q, expected %q",
					*de, tc.row, tc.column, tc.value, tc.problem, tc.expected)
			}
			msg := err.Error()
			for _, want := range []string{src + ": ", fmt.Sprintf("row %d,", tc.row), "column " + tc.column + ":", tc.problem, "(expected "} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
			if tc.value != "" && !strings.Contains(msg, fmt.Sprintf("%q", tc.value)) {
				t.Errorf("message %q lacks the value %q", msg, tc.value)
			}
			assertNoTables(t, e)
		})
	}
}

// assertNoTables checks that the engine holds no table (a failed Load left
// nothing behind) but the marker of its work schema.
func assertNoTables(t *testing.T, e *Engine) {
	t.Helper()
	var n int
	if err := e.db.QueryRow("SELECT count(*) FROM information_schema.tables WHERE table_name <> $1 AND table_schema NOT LIKE 'pg_%' AND table_schema <> 'information_schema'", ownerTable).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d tables left after a failed load", n)
	}
}

func TestLoadMessage(t *testing.T) {
	err := &DataError{File: "testdata/tpch/orders.csv", Row: 17, Column: "o_totalprice", Value: "abc",
		Problem: "is not a number", Expected: "numeric in [0, 600000]"}
	want := `testdata/tpch/orders.csv: row 17, column o_totalprice: value "abc" is not a number (expected numeric in [0, 600000])`
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
}

func TestLoadFileErrors(t *testing.T) { forEachOpener(t, testLoadFileErrors) }

func testLoadFileErrors(t *testing.T, openTest func(testing.TB) *Engine) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Run("missing column", func(t *testing.T) {
		hdr := slices.DeleteFunc(slices.Clone(ordersHeader), func(s string) bool { return s == "o_qty" })
		var rows [][]string
		for _, r := range ordersRows() {
			rows = append(rows, slices.Delete(r, 3, 4))
		}
		src := writeCSV(t, dir, "noqty.csv", hdr, rows)
		e := openTest(t)
		err := e.Load(ctx, ordersSpec(src, nil))
		if !errors.Is(err, ErrData) || !strings.Contains(fmt.Sprint(err), src) || !strings.Contains(fmt.Sprint(err), `"o_qty"`) {
			t.Errorf("Load = %v, want an ErrData naming %s and o_qty", err, src)
		}
		assertNoTables(t, e)
	})
	t.Run("missing file", func(t *testing.T) {
		src := filepath.Join(dir, "nope.csv")
		e := openTest(t)
		err := e.Load(ctx, ordersSpec(src, nil))
		if !errors.Is(err, ErrData) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(fmt.Sprint(err), src) {
			t.Errorf("Load = %v, want ErrData and fs.ErrNotExist naming %s", err, src)
		}
	})
	t.Run("ragged csv", func(t *testing.T) {
		src := filepath.Join(dir, "ragged.csv")
		os.WriteFile(src, []byte(strings.Join(ordersHeader, ",")+"\n1,a,1,1,1-URGENT,2020-01-01,t\n2,b,1,1\n"), 0o644)
		e := openTest(t)
		err := e.Load(ctx, ordersSpec(src, nil))
		if !errors.Is(err, ErrData) || !strings.Contains(fmt.Sprint(err), src) {
			t.Errorf("Load = %v, want ErrData naming %s", err, src)
		}
		assertNoTables(t, e)
	})
	t.Run("second table fails", func(t *testing.T) {
		good := writeCSV(t, dir, "good.csv", ordersHeader, ordersRows())
		bad := writeCSV(t, dir, "bad.csv", ordersHeader, set(1, "o_qty", "x"))
		s := ordersSpec(good, nil)
		s.Tables = append(s.Tables, spec.Table{Name: "orders2", Source: bad, Columns: ordersColumns()})
		e := openTest(t)
		if err := e.Load(ctx, s); err == nil {
			t.Fatal("Load succeeded")
		}
		assertNoTables(t, e)
	})
}

// tableCount is the number of rows of an engine table.
func tableCount(t testing.TB, e *Engine, table string) int64 {
	var n int64
	if err := e.db.QueryRow("SELECT count(*) FROM " + e.d.ident(table)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// singleHistogram is the histogram of one loaded column of a one-table
// spec.
func singleHistogram(t *testing.T, e *Engine, s *spec.Spec, col string) []Cell {
	t.Helper()
	h, err := s.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	c := s.Tables[0].Column(col)
	cells, err := e.Histogram(context.Background(), h, []spec.ColumnRef{{Table: s.Tables[0].Name, Column: col}}, []int{c.Size()})
	if err != nil {
		t.Fatal(err)
	}
	return cells
}

func TestLoadClamp(t *testing.T) { forEachOpener(t, testLoadClamp) }

func testLoadClamp(t *testing.T, openTest func(testing.TB) *Engine) {
	ctx := context.Background()
	rows := set(1, "o_totalprice", "700000") // clamps to 600000: last bin
	rows[2][slices.Index(ordersHeader, "o_totalprice")] = "-5"
	rows[3][slices.Index(ordersHeader, "o_date")] = "2019-07-04" // clamps to 2020-01-01: bin 0
	src := writeCSV(t, t.TempDir(), "orders.csv", ordersHeader, rows)
	s := ordersSpec(src, func(c []spec.Column) {
		column(c, "o_totalprice").OutOfDomain = spec.OutOfDomainClamp
		column(c, "o_date").OutOfDomain = spec.OutOfDomainClamp
	})
	e := openTest(t)
	if err := e.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	// Prices 600000, 600000, 0, 250000 in bins of 150000: 3, 3, 0, 1.
	if got, want := singleHistogram(t, e, s, "o_totalprice"), []Cell{{0, 1}, {1, 1}, {3, 2}}; !slices.Equal(got, want) {
		t.Errorf("price histogram = %v, want %v", got, want)
	}
	// Dates 2020-01-01, 2020-12-31, 2020-06-15, 2020-01-01 (clamped).
	if got, want := singleHistogram(t, e, s, "o_date"), []Cell{{0, 2}, {5, 1}, {11, 1}}; !slices.Equal(got, want) {
		t.Errorf("date histogram = %v, want %v", got, want)
	}
	var p float64
	if err := e.db.QueryRow(`SELECT o_totalprice FROM orders WHERE _synth_row = 1`).Scan(&p); err != nil || p != 600000 {
		t.Errorf("clamped price = %v, %v; want 600000", p, err)
	}
}

func TestLoadDrop(t *testing.T) { forEachOpener(t, testLoadDrop) }

func testLoadDrop(t *testing.T, openTest func(testing.TB) *Engine) {
	ctx := context.Background()
	rows := set(2, "o_prio", "9-NEVER")
	rows[3][slices.Index(ordersHeader, "o_prio")] = ""
	src := writeCSV(t, t.TempDir(), "orders.csv", ordersHeader, rows)
	s := ordersSpec(src, func(c []spec.Column) { column(c, "o_prio").OutOfDomain = spec.OutOfDomainDrop })
	e := openTest(t)
	if err := e.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	if n := tableCount(t, e, "orders"); n != 2 {
		t.Errorf("%d rows after drop, want 2", n)
	}
	if got, want := singleHistogram(t, e, s, "o_prio"), []Cell{{0, 1}, {2, 1}}; !slices.Equal(got, want) {
		t.Errorf("histogram = %v, want %v", got, want)
	}
	var kept []int64
	r, err := e.db.Query(`SELECT _synth_row FROM orders ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var x int64
		r.Scan(&x)
		kept = append(kept, x)
	}
	if !slices.Equal(kept, []int64{1, 3}) {
		t.Errorf("kept rows %v, want [1 3]", kept)
	}
}

// TestLoadRowNumbers checks the row of an error deep in a file large enough
// for DuckDB to read it in parallel, in CSV and in Parquet.
func TestLoadRowNumbers(t *testing.T) { forEachOpenerInPlace(t, testLoadRowNumbers) }

func testLoadRowNumbers(t *testing.T, openTest func(testing.TB) *Engine) {
	ctx := context.Background()
	const n, bad = 150000, 123457
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("k,v\n")
	for i := 1; i <= n; i++ {
		v := fmt.Sprint(i % 10)
		if i == bad {
			v = "11"
		}
		if i == 5 {
			fmt.Fprintf(&b, "%d,\"%s\"\n", i, v) // quoted
			continue
		}
		fmt.Fprintf(&b, "%d,%s\n", i, v)
	}
	src := filepath.Join(dir, "big.csv")
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	pq := filepath.Join(dir, "big.parquet")
	e := openTest(t)
	if _, err := duckTest(t).Exec(fmt.Sprintf(`COPY (SELECT * FROM read_csv('%s', all_varchar = true)) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE 10000)`, src, pq)); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{src, pq} {
		s := &spec.Spec{Tables: []spec.Table{{Name: "big", Source: path, Columns: []spec.Column{
			{Name: "k", Type: spec.Key}, {Name: "v", Type: spec.Integer, Min: 0, Max: 9}}}}}
		err := e.Load(ctx, s)
		var de *DataError
		if !errors.As(err, &de) || de.Row != bad || de.Value != "11" || de.File != path {
			t.Errorf("%s: Load = %v, want row %d value 11", path, err, bad)
		}
		s.Tables[0].Columns[1].OutOfDomain = spec.OutOfDomainDrop
		if err := e.Load(ctx, s); err != nil {
			t.Fatal(err)
		}
		var mismatched int64
		if err := e.db.QueryRow(`SELECT count(*) FROM big WHERE k <> _synth_row`).Scan(&mismatched); err != nil || mismatched != 0 {
			t.Errorf("%s: %d rows whose key differs from the row number (%v)", path, mismatched, err)
		}
		if c := tableCount(t, e, "big"); c != n-1 {
			t.Errorf("%s: %d rows, want %d", path, c, n-1)
		}
	}
}

func TestLoadIdempotent(t *testing.T) { forEachOpener(t, testLoadIdempotent) }

func testLoadIdempotent(t *testing.T, openTest func(testing.TB) *Engine) {
	ctx := context.Background()
	dir := t.TempDir()
	src := writeCSV(t, dir, "orders.csv", ordersHeader, ordersRows())
	e := openTest(t)
	s := ordersSpec(src, nil)
	for range 2 {
		if err := e.Load(ctx, s); err != nil {
			t.Fatal(err)
		}
		if n := tableCount(t, e, "orders"); n != 4 {
			t.Fatalf("%d rows, want 4", n)
		}
	}
	// A failing reload keeps the loaded table.
	bad := writeCSV(t, dir, "bad.csv", ordersHeader, set(2, "o_flag", "nope"))
	if err := e.Load(ctx, ordersSpec(bad, nil)); err == nil {
		t.Fatal("Load of bad data succeeded")
	}
	if n := tableCount(t, e, "orders"); n != 4 {
		t.Fatalf("%d rows after a failed reload, want 4", n)
	}
	if got, want := singleHistogram(t, e, s, "o_flag"), []Cell{{0, 2}, {1, 2}}; !slices.Equal(got, want) {
		t.Errorf("boolean histogram = %v, want %v", got, want)
	}
}

func TestLoadInvalidSpec(t *testing.T) {
	ctx := context.Background()
	src := writeCSV(t, t.TempDir(), "orders.csv", ordersHeader, ordersRows())
	e := openTest(t)
	for name, mod := range map[string]func([]spec.Column){
		"clamp categorical": func(c []spec.Column) { column(c, "o_prio").OutOfDomain = spec.OutOfDomainClamp },
		"reserved name":     func(c []spec.Column) { c[0].Name = "_synth_row" },
		"duplicate":         func(c []spec.Column) { c[1].Name = c[2].Name },
		"unknown type":      func(c []spec.Column) { c[1].Type = "money" },
		"empty categories":  func(c []spec.Column) { column(c, "o_prio").Values = nil },
		"inverted range":    func(c []spec.Column) { column(c, "o_qty").Min = 60 },
	} {
		if err := e.Load(ctx, ordersSpec(src, mod)); err == nil || !strings.HasPrefix(err.Error(), "engine: ") {
			t.Errorf("%s: Load = %v, want an engine error", name, err)
		}
	}
	if err := e.Load(ctx, nil); err == nil {
		t.Error("Load(nil) succeeded")
	}
}

// TestLoadParquetTyped loads a Parquet file with typed columns: they are
// cast to text and checked like CSV values.
func TestLoadParquetTyped(t *testing.T) { forEachOpenerInPlace(t, testLoadParquetTyped) }

func testLoadParquetTyped(t *testing.T, openTest func(testing.TB) *Engine) {
	ctx := context.Background()
	pq := filepath.Join(t.TempDir(), "typed.parquet")
	e := openTest(t)
	_, err := duckTest(t).Exec(fmt.Sprintf(`COPY (SELECT * FROM (VALUES
		(1, 0.5::DOUBLE, 3::INTEGER, DATE '2020-03-01', TIMESTAMP '2020-03-04 00:00:00', true, 'b'),
		(2, 1e-5::DOUBLE, 50::BIGINT, DATE '2020-12-31', TIMESTAMP '2020-01-01 00:00:00', false, 'a'),
		(3, 9.99::DOUBLE, 7::BIGINT, DATE '2020-01-01', TIMESTAMP '2020-05-05 00:00:00', true, 'b'))
		t(k, x, n, d, ts, f, c)) TO '%s' (FORMAT parquet)`, pq))
	if err != nil {
		t.Fatal(err)
	}
	cols := []spec.Column{
		{Name: "k", Type: spec.Key},
		{Name: "x", Type: spec.Numeric, Min: 0, Max: 10, Bins: 2},
		{Name: "n", Type: spec.Integer, Min: 1, Max: 50, Bins: 10},
		{Name: "d", Type: spec.Date, DateMin: day("2020-01-01"), DateMax: day("2020-12-31"), Granularity: spec.Month},
		{Name: "ts", Type: spec.Date, DateMin: day("2020-01-01"), DateMax: day("2020-12-31"), Granularity: spec.Day},
		{Name: "f", Type: spec.Boolean},
		{Name: "c", Type: spec.Categorical, Values: []string{"a", "b"}},
	}
	s := &spec.Spec{Tables: []spec.Table{{Name: "typed", Source: pq, Columns: cols}}}
	if err := e.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	for col, want := range map[string][]Cell{
		"x":  {{0, 2}, {1, 1}},
		"n":  {{0, 1}, {1, 1}, {9, 1}},
		"d":  {{0, 1}, {2, 1}, {11, 1}},
		"ts": {{0, 1}, {63, 1}, {125, 1}},
		"f":  {{0, 1}, {1, 2}},
		"c":  {{0, 1}, {1, 2}},
	} {
		if got := singleHistogram(t, e, s, col); !slices.Equal(got, want) {
			t.Errorf("%s: histogram %v, want %v", col, got, want)
		}
	}
	// A timestamp that is not a midnight is not a date.
	_, err = duckTest(t).Exec(fmt.Sprintf(`COPY (SELECT 1 AS k, TIMESTAMP '2020-03-04 10:30:00' AS ts) TO '%s' (FORMAT parquet)`, pq))
	if err != nil {
		t.Fatal(err)
	}
	s.Tables[0].Columns = []spec.Column{cols[0], cols[4]}
	var de *DataError
	if err := e.Load(ctx, s); !errors.As(err, &de) || de.Row != 1 || de.Column != "ts" || !strings.HasPrefix(de.Value, "2020-03-04 10:30") {
		t.Errorf("Load = %v, want a DataError at row 1, column ts", err)
	}
}

// TestLoadKeyTypesOneScan checks the key types the one-scan load decides
// when its guess from the first rows is wrong (a non-canonical key after
// them: the source is scanned again) or right, that the rows keep their
// file order and row numbers, and that reloading leaves one data table per
// engine table.
func TestLoadKeyTypesOneScan(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const n = 3 * sniffRows
	for _, tc := range []struct {
		name string
		at   int    // 1-based row whose key is odd
		key  string // its key
		want string // the key column's type
	}{
		{"all canonical", 0, "", "BIGINT"},
		{"late leading zero", n - 1, "007", "VARCHAR"},
		{"late minus zero", sniffRows + 1, "-0", "VARCHAR"},
		{"early text", 2, "x2", "VARCHAR"},
		{"late empty", n, "", "BIGINT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := make([][]string, n)
			for i := range rows {
				rows[i] = []string{strconv.Itoa(i + 1), strconv.Itoa(i % 10)}
				if i+1 == tc.at {
					rows[i][0] = tc.key
				}
			}
			src := writeCSV(t, dir, strings.ReplaceAll(tc.name, " ", "_")+".csv", []string{"k", "v"}, rows)
			s := &spec.Spec{Tables: []spec.Table{{Name: "t", Source: src, Columns: []spec.Column{
				{Name: "k", Type: spec.Key}, {Name: "v", Type: spec.Integer, Min: 0, Max: 9}}}}}
			e := openTest(t)
			for range 3 {
				if err := e.Load(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
			types, err := e.columnTypes(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			if types["k"] != tc.want {
				t.Errorf("key type %s, want %s", types["k"], tc.want)
			}
			var wrong int64
			if err := e.db.QueryRow(`SELECT count(*) FROM t WHERE _synth_row IS DISTINCT FROM TRY_CAST(k AS BIGINT) AND k IS NOT NULL AND _synth_row <> ` +
				strconv.Itoa(tc.at) + ` OR v <> (_synth_row - 1) % 10`).Scan(&wrong); err != nil {
				t.Fatal(err)
			}
			if wrong != 0 {
				t.Errorf("%d rows out of file order", wrong)
			}
			if tc.at > 0 {
				var k sql.NullString
				if err := e.db.QueryRow(`SELECT CAST(k AS VARCHAR) FROM t WHERE _synth_row = ` + strconv.Itoa(tc.at)).Scan(&k); err != nil {
					t.Fatal(err)
				}
				if want := (sql.NullString{String: tc.key, Valid: tc.key != ""}); k != want {
					t.Errorf("key of row %d = %v, want %v", tc.at, k, want)
				}
			}
			var tables int
			if err := e.db.QueryRow("SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND starts_with(table_name, $1)", dataPrefix).Scan(&tables); err != nil {
				t.Fatal(err)
			}
			if tables != 1 {
				t.Errorf("%d data tables after three loads, want 1", tables)
			}
		})
	}
}

// TestLoadOneBin loads integer and numeric columns declared with a single
// bin (bins: 1, or two bin edges): every value falls into cell 0. The bin
// expression used to be a CASE without a WHEN, which does not parse.
func TestLoadOneBin(t *testing.T) { forEachOpener(t, testLoadOneBin) }

func testLoadOneBin(t *testing.T, openTest func(testing.TB) *Engine) {
	ctx := context.Background()
	src := writeCSV(t, t.TempDir(), "one.csv", []string{"k", "n", "x"}, [][]string{{"1", "3", "0.5"}, {"2", "9", "10"}})
	s := &spec.Spec{Tables: []spec.Table{{Name: "one", Source: src, Columns: []spec.Column{
		{Name: "k", Type: spec.Key},
		{Name: "n", Type: spec.Integer, Min: 1, Max: 9, Bins: 1},
		{Name: "x", Type: spec.Numeric, Min: 0, Max: 10, BinEdges: []float64{0, 10}},
	}}}}
	e := openTest(t)
	if err := e.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	for _, col := range []string{"n", "x"} {
		if got, want := singleHistogram(t, e, s, col), []Cell{{0, 2}}; !slices.Equal(got, want) {
			t.Errorf("%s: histogram %v, want %v", col, got, want)
		}
	}
}

// TestLoadParquetRowOrder loads a Parquet file of many row groups, which
// DuckDB reads in parallel: the row numbers are still the file's (the data
// table is stored in file order, and its row ids number the rows).
func TestLoadParquetRowOrder(t *testing.T) {
	ctx := context.Background()
	pq := filepath.Join(t.TempDir(), "groups.parquet")
	const n = 200_000
	if _, err := duckTest(t).Exec(fmt.Sprintf(`COPY (SELECT i AS k, i %% 7 AS v FROM range(1, %d) t(i)) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE 2048)`, n+1, pq)); err != nil {
		t.Fatal(err)
	}
	for _, dsn := range []string{"", "duckdb::memory:", "in place"} {
		e, err := Open(ctx, strings.TrimSuffix(dsn, "in place"))
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		e.ReadInPlace(dsn == "in place")
		s := &spec.Spec{Tables: []spec.Table{{Name: "g", Source: pq, Columns: []spec.Column{
			{Name: "k", Type: spec.Key}, {Name: "v", Type: spec.Integer, Min: 0, Max: 6}}}}}
		if err := e.Load(ctx, s); err != nil {
			t.Fatal(err)
		}
		var rows, wrong int64
		if err := e.db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE _synth_row <> k OR v <> k % 7) FROM g`).Scan(&rows, &wrong); err != nil {
			t.Fatal(err)
		}
		if rows != n || wrong != 0 {
			t.Errorf("engine %q: %d rows, %d out of file order", dsn, rows, wrong)
		}
	}
}
