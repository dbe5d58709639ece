package engine

import (
	"compress/gzip"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synth-dp/synth/internal/stattest"
	"github.com/synth-dp/synth/spec"
)

// nullFuzzEnv sets the number of random instances (pairs of tables)
// TestNullableFuzz loads (default: 200, 400 tables, when a PostgreSQL
// server or SYNTH_SLOW_AUDITS is there, as in CI; 50 otherwise, two loads
// of nullBatch, 20 with -short).
const nullFuzzEnv = "SYNTH_NULL_FUZZ_N"

// nullBatch is the number of instances one load of TestNullableFuzz reads
// (the cluster distributes each load's tables in one round of DDL).
const nullBatch = 25

// nullInstance is a random pair of tables a ⋈ b (a.k = b.fk) with nullable
// and plain columns of every type, and its rows as text.
type nullInstance struct {
	a, b       spec.Table
	rowsA      [][]string // columns in declaration order, key first
	rowsB      [][]string
	formatA    string
	formatB    string
	nullsA     int // NULL cells drawn in a
	nullsB     int
	parquetTyp [2][]string
}

// randomNullColumn declares a random non-key column: a type, a domain, a
// policy (error or drop), nullable or not, and a generator of its text
// (valid values, "" for NULL when nullable, and under drop an occasional
// value outside the domain that the load removes), with the SQL type its
// Parquet version gets.
func randomNullColumn(rng *rand.Rand, name string) (spec.Column, func() string, string) {
	c := spec.Column{Name: name, OutOfDomain: spec.OutOfDomainError, Nullable: rng.IntN(3) > 0}
	if rng.IntN(4) == 0 {
		c.OutOfDomain = spec.OutOfDomainDrop
	}
	var valid func() string
	var bad, ty string
	switch rng.IntN(5) {
	case 0:
		c.Type = spec.Categorical
		c.Values = []string{"a", "b", "c d"}[:1+rng.IntN(3)]
		valid = func() string { return pickFrom(rng, c.Values...) }
		bad, ty = "zzz", "VARCHAR"
	case 1:
		c.Type = spec.Boolean
		valid = func() string { return pickFrom(rng, "true", "false", "t", "0") }
		ty = pickFrom(rng, "BOOLEAN", "VARCHAR")
	case 2:
		c.Type = spec.Integer
		c.Min, c.Max = 0, 9
		switch rng.IntN(3) {
		case 1:
			c.Bins = 3
		case 2:
			c.BinEdges, c.Max = []float64{0, 2, 5, 10}, 9
		}
		valid = func() string { return strconv.Itoa(rng.IntN(10)) }
		bad, ty = "99", pickFrom(rng, "BIGINT", "VARCHAR", "DOUBLE")
	case 3:
		c.Type = spec.Numeric
		c.Min, c.Max, c.Bins = 0, 10, 4
		if rng.IntN(2) == 0 {
			c.Bins, c.BinEdges = 0, []float64{0, 2.5, 7, 10}
		}
		valid = func() string { return strconv.FormatFloat(float64(rng.IntN(41))/4, 'f', -1, 64) }
		bad, ty = "-3", pickFrom(rng, "DOUBLE", "VARCHAR")
	default:
		c.Type = spec.Date
		c.DateMin, c.DateMax = day("2020-01-01"), day("2020-12-31")
		c.Granularity = pickFrom(rng, spec.Month, spec.Year, spec.Day)
		valid = func() string { return c.DateMin.AddDate(0, 0, rng.IntN(366)).Format(time.DateOnly) }
		bad, ty = "2031-01-01", pickFrom(rng, "DATE", "VARCHAR")
	}
	gen := func() string {
		switch {
		case c.Nullable && rng.IntN(4) == 0:
			return ""
		case c.OutOfDomain == spec.OutOfDomainDrop && bad != "" && rng.IntN(6) == 0:
			return bad
		}
		return valid()
	}
	return c, gen, ty
}

// randomNullInstance draws instance i: tables of 1 to 3 non-key columns
// and 0 to 12 rows, keys 1..5 in a and 0..6 in b (some match nothing),
// each table CSV, gzipped CSV or Parquet.
func randomNullInstance(rng *rand.Rand, i int) *nullInstance {
	in := &nullInstance{}
	for side, tb := range []*spec.Table{&in.a, &in.b} {
		key := "k"
		if side == 1 {
			key = "fk"
		}
		// Names repeat every nullBatch instances: a load replaces the
		// previous batch's tables (the engine's catalogue stays small).
		*tb = spec.Table{Name: fmt.Sprintf("n%d_%c", i%nullBatch, 'a'+side), Columns: []spec.Column{{Name: key, Type: spec.Key}}}
		gens := []func() string{func() string {
			if side == 0 {
				return strconv.Itoa(1 + rng.IntN(5))
			}
			return strconv.Itoa(rng.IntN(7))
		}}
		types := []string{pickFrom(rng, "BIGINT", "VARCHAR")}
		for k := range 1 + rng.IntN(3) {
			c, g, ty := randomNullColumn(rng, fmt.Sprintf("%c%d", 'x'+side, k))
			tb.Columns = append(tb.Columns, c)
			gens = append(gens, g)
			types = append(types, ty)
		}
		rows := make([][]string, rng.IntN(13))
		nulls := 0
		for r := range rows {
			rows[r] = make([]string, len(gens))
			for k, g := range gens {
				rows[r][k] = g()
				if k > 0 && rows[r][k] == "" {
					nulls++
				}
			}
		}
		format := pickFrom(rng, "csv", "csv.gz", "parquet")
		if side == 0 {
			in.rowsA, in.formatA, in.nullsA = rows, format, nulls
		} else {
			in.rowsB, in.formatB, in.nullsB = rows, format, nulls
		}
		in.parquetTyp[side] = types
	}
	return in
}

// writeNullSource writes tb's rows into dir in the given format (Parquet:
// each column cast to its SQL type, "" as NULL except, half the time, in a
// text column, where the load must read "" as NULL too) and sets tb's
// source and format.
func writeNullSource(t *testing.T, rng *rand.Rand, duck *sql.DB, dir string, tb *spec.Table, rows [][]string, format string, types []string) {
	t.Helper()
	header := make([]string, len(tb.Columns))
	for k, c := range tb.Columns {
		header[k] = c.Name
	}
	csvPath := writeCSV(t, dir, tb.Name+".csv", header, rows)
	tb.Source, tb.Format = csvPath, "csv"
	switch format {
	case "csv.gz":
		data, err := os.ReadFile(csvPath)
		if err != nil {
			t.Fatal(err)
		}
		gz := csvPath + ".gz"
		f, err := os.Create(gz)
		if err != nil {
			t.Fatal(err)
		}
		w := gzip.NewWriter(f)
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		tb.Source = gz
	case "parquet":
		pq := filepath.Join(dir, tb.Name+".parquet")
		sel := make([]string, len(header))
		cols := make([]string, len(header))
		for k, h := range header {
			cols[k] = fmt.Sprintf("'%s': 'VARCHAR'", h)
			v := fmt.Sprintf(`NULLIF("%s", '')`, h)
			if types[k] == "VARCHAR" && rng.IntN(2) == 0 {
				v = fmt.Sprintf(`COALESCE("%s", '')`, h)
			}
			sel[k] = fmt.Sprintf(`CAST(%s AS %s) AS "%s"`, v, types[k], h)
		}
		q := fmt.Sprintf(`COPY (SELECT %s FROM read_csv('%s', header = true, auto_detect = false, columns = {%s})) TO '%s' (FORMAT parquet)`,
			strings.Join(sel, ", "), csvPath, strings.Join(cols, ", "), pq)
		if _, err := duck.Exec(q); err != nil {
			t.Fatal(err)
		}
		tb.Source, tb.Format = pq, "parquet"
	}
}

// oracleCells returns, per data row (1-based), the cells of t's non-key
// columns as spec.Column.Bin computes them from the text, for the rows the
// load keeps (a value outside the domain of a drop column removes its
// row); a failure of Bin anywhere else fails the test.
func oracleCells(t *testing.T, tb *spec.Table, rows [][]string) map[int64][]int {
	t.Helper()
	out := map[int64][]int{}
rows:
	for r, row := range rows {
		var cells []int
		for k, c := range tb.Columns {
			if c.Type == spec.Key {
				continue
			}
			b, err := c.Bin(row[k])
			if err != nil {
				if c.OutOfDomain == spec.OutOfDomainDrop {
					continue rows
				}
				t.Fatalf("table %s row %d column %s: the generator drew %q: %v", tb.Name, r+1, c.Name, row[k], err)
			}
			cells = append(cells, b)
		}
		out[int64(r+1)] = cells
	}
	return out
}

// nullRows returns t's loaded rows as text: the row number, every declared
// column (NULL as "NULL"; numbers, dates and booleans in one spelling
// whatever the engine) and every cell, in row order.
func nullRows(t *testing.T, e *Engine, tb *spec.Table) []string {
	t.Helper()
	d := e.d
	sel := []string{d.ident(rowColumn)}
	for _, c := range tb.Columns {
		sel = append(sel, d.ident(c.Name))
		if c.Type != spec.Key {
			sel = append(sel, "CAST("+d.ident(BinColumn(c.Name))+" AS BIGINT)")
		}
	}
	rows, err := e.db.QueryContext(context.Background(), "SELECT "+strings.Join(sel, ", ")+" FROM "+d.ident(tb.Name)+" ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals := make([]any, len(sel))
		ptrs := make([]any, len(sel))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = normalValue(v)
		}
		out = append(out, strings.Join(parts, " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// normalValue spells a scanned value the same way for every engine.
func normalValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case time.Time:
		return x.UTC().Format(time.DateOnly)
	case []byte:
		return string(x)
	case string:
		return x
	}
	return fmt.Sprintf("%T:%v", v, v)
}

// TestNullableFuzz loads random pairs of small tables with nullable
// columns of every type holding NULLs (empty CSV fields, Parquet nulls,
// empty Parquet text), from CSV, gzipped CSV and Parquet, on embedded
// DuckDB (Parquet stored, and read in place), PostgreSQL
// (SYNTH_TEST_POSTGRES) and the sharded cluster
// (SYNTH_TEST_POSTGRES_CLUSTER), and requires of every engine:
//   - every kept row's cells equal spec.Column.Bin of its text (NULL: the
//     column's NULL cell), a NULL stored as NULL, and the rows a drop
//     column removes absent (a brute-force oracle of the load);
//   - the histogram of the join a ⋈ b over all non-key columns equal to
//     the one enumerated in Go from the text (the oracle of the marginal
//     counts with NULL cells);
//   - the same rows, value for value, as DuckDB.
func TestNullableFuzz(t *testing.T) {
	n := 50
	if os.Getenv("SYNTH_SLOW_AUDITS") != "" || os.Getenv(postgresEnv) != "" {
		n = 200
	}
	if testing.Short() {
		n = 20
	}
	if v := os.Getenv(nullFuzzEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("%s=%q: %v", nullFuzzEnv, v, err)
		}
	}
	seed := stattest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0x4e11))
	dir := t.TempDir()
	duck := duckTest(t)
	ins := make([]*nullInstance, n)
	for i := range ins {
		in := randomNullInstance(rng, i)
		sub := filepath.Join(dir, strconv.Itoa(i))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		writeNullSource(t, rng, duck, sub, &in.a, in.rowsA, in.formatA, in.parquetTyp[0])
		writeNullSource(t, rng, duck, sub, &in.b, in.rowsB, in.formatB, in.parquetTyp[1])
		ins[i] = in
	}
	engines := []struct {
		name string
		open func(testing.TB) *Engine
	}{{"duckdb", openTest}, {"duckdb in place", openInPlaceTest}, {"postgres", openPostgresTest}, {"cluster", openClusterTest}}
	var want [][2][]string // DuckDB's rows per instance
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			if eng.name != "duckdb" && want == nil {
				t.Skip("the DuckDB case failed")
			}
			e := eng.open(t)
			oneThread(t, e)
			ctx := context.Background()
			got := make([][2][]string, n) // per instance, a's and b's rows
			nulls, joined, nullJoined := 0, 0, 0
			for i, in := range ins {
				if i%nullBatch == 0 {
					// One load reads the next batch's tables.
					s := &spec.Spec{}
					for _, in := range ins[i:min(i+nullBatch, n)] {
						s.Tables = append(s.Tables, in.a, in.b)
						s.Join = append(s.Join, spec.JoinEq{Left: spec.ColumnRef{Table: in.a.Name, Column: "k"}, Right: spec.ColumnRef{Table: in.b.Name, Column: "fk"}})
					}
					if err := e.Load(ctx, s); err != nil {
						t.Fatalf("seed %d, instances %d..: %v", seed, i, err)
					}
				}
				fail := func(format string, args ...any) {
					t.Helper()
					t.Fatalf("seed %d, instance %d (a: %s %v; b: %s %v): %s", seed, i, in.formatA, in.a.Columns, in.formatB, in.b.Columns, fmt.Sprintf(format, args...))
				}
				nulls += in.nullsA + in.nullsB
				cells := [2]map[int64][]int{oracleCells(t, &in.a, in.rowsA), oracleCells(t, &in.b, in.rowsB)}
				for side, tb := range []*spec.Table{&in.a, &in.b} {
					rows := nullRows(t, e, tb)
					got[i][side] = rows
					if len(rows) != len(cells[side]) {
						fail("table %s: %d rows loaded, the oracle keeps %d", tb.Name, len(rows), len(cells[side]))
					}
					for _, row := range rows {
						f := strings.Split(row, " | ")
						r, _ := strconv.ParseInt(f[0], 10, 64)
						want, ok := cells[side][r]
						if !ok {
							fail("table %s: row %d loaded, the oracle drops it", tb.Name, r)
						}
						k, j := 2, 0 // f[1] is the key
						for _, c := range tb.Columns[1:] {
							val, cell := f[k], f[k+1]
							if cell != strconv.Itoa(want[j]) {
								fail("table %s row %d column %s: cell %s, the oracle's %d (loaded %q)", tb.Name, r, c.Name, cell, want[j], row)
							}
							if (val == "NULL") != (want[j] == c.NullCell()) {
								fail("table %s row %d column %s: value %s in cell %s", tb.Name, r, c.Name, val, cell)
							}
							k, j = k+2, j+1
						}
					}
				}
				// The join's histogram over every non-key column, brute force.
				var cols []spec.ColumnRef
				var sizes []int
				for _, tb := range []*spec.Table{&in.a, &in.b} {
					for _, c := range tb.Columns[1:] {
						cols = append(cols, spec.ColumnRef{Table: tb.Name, Column: c.Name})
						sizes = append(sizes, c.Size())
					}
				}
				wantH := map[int64]int64{}
				for ra, ca := range cells[0] {
					for rb, cb := range cells[1] {
						if in.rowsA[ra-1][0] != in.rowsB[rb-1][0] {
							continue
						}
						idx := int64(0)
						for x, b := range append(slices.Clone(ca), cb...) {
							idx = idx*int64(sizes[x]) + int64(b)
						}
						wantH[idx]++
						joined++
						for x, b := range append(slices.Clone(ca), cb...) {
							if c := tableColumn(in, cols[x]); b == c.NullCell() {
								nullJoined++
								break
							}
						}
					}
				}
				s := &spec.Spec{Tables: []spec.Table{in.a, in.b}, Join: []spec.JoinEq{{Left: spec.ColumnRef{Table: in.a.Name, Column: "k"}, Right: spec.ColumnRef{Table: in.b.Name, Column: "fk"}}}}
				h, err := s.Hypergraph()
				if err != nil {
					t.Fatal(err)
				}
				hist, err := e.Histogram(ctx, h, cols, sizes)
				if err != nil {
					fail("histogram: %v", err)
				}
				gotH := map[int64]int64{}
				for _, c := range hist {
					gotH[c.Index] = c.Count
				}
				if !mapsEqual(gotH, wantH) {
					fail("histogram %v, brute force %v", gotH, wantH)
				}
			}
			t.Logf("%d instances (%d tables), %d NULL cells loaded, %d join rows (%d with a NULL cell)", n, 2*n, nulls, joined, nullJoined)
			if nullJoined < n/4 {
				t.Errorf("only %d join rows hold a NULL cell in %d instances: the test hardly checks NULLs", nullJoined, n)
			}
			if eng.name == "duckdb" {
				want = got
				return
			}
			for i := range ins {
				for side := range 2 {
					if !slices.Equal(got[i][side], want[i][side]) {
						t.Fatalf("seed %d, instance %d, table %c: %s rows\n%s\nDuckDB rows\n%s", seed, i, 'a'+side, eng.name,
							strings.Join(got[i][side], "\n"), strings.Join(want[i][side], "\n"))
					}
				}
			}
		})
	}
}

// tableColumn returns the declaration of r in the instance.
func tableColumn(in *nullInstance, r spec.ColumnRef) *spec.Column {
	for _, tb := range []*spec.Table{&in.a, &in.b} {
		if tb.Name == r.Table {
			return tb.Column(r.Column)
		}
	}
	return nil
}

// TestNullableRefused checks that an empty value is still refused, with
// the file, row, column and domain named, in a column not declared
// nullable, on every engine and format, beside a nullable column that
// accepts it.
func TestNullableRefused(t *testing.T) {
	forEachOpenerInPlace(t, func(t *testing.T, open func(testing.TB) *Engine) {
		e := open(t)
		dir := t.TempDir()
		src := writeCSV(t, dir, "t.csv", []string{"k", "opt", "req"}, [][]string{{"1", "", "a"}, {"2", "b", ""}})
		tb := spec.Table{Name: "t", Source: src, Format: "csv", Columns: []spec.Column{
			{Name: "k", Type: spec.Key},
			{Name: "opt", Type: spec.Categorical, Values: []string{"a", "b"}, Nullable: true, OutOfDomain: spec.OutOfDomainError},
			{Name: "req", Type: spec.Categorical, Values: []string{"a", "b"}, OutOfDomain: spec.OutOfDomainError},
		}}
		for _, format := range []string{"csv", "parquet"} {
			tb := tb
			if format == "parquet" {
				pq := filepath.Join(dir, "t.parquet")
				if _, err := duckTest(t).Exec(fmt.Sprintf(`COPY (SELECT k, NULLIF(opt, '') AS opt, NULLIF(req, '') AS req FROM read_csv('%s', header = true, all_varchar = true)) TO '%s' (FORMAT parquet)`, src, pq)); err != nil {
					t.Fatal(err)
				}
				tb.Source, tb.Format = pq, "parquet"
			}
			err := e.Load(context.Background(), &spec.Spec{Tables: []spec.Table{tb}})
			var de *DataError
			if !errors.As(err, &de) {
				t.Fatalf("%s: Load error %v, want a *DataError", format, err)
			}
			want := DataError{File: tb.Source, Row: 2, Column: "req", Problem: problemEmpty, Expected: `one of "a", "b"`}
			if *de != want {
				t.Errorf("%s: error %+v, want %+v", format, *de, want)
			}
			if !strings.Contains(err.Error(), "row 2, column req: value is empty (expected one of \"a\", \"b\"); if the column has missing values, declare it nullable: true") {
				t.Errorf("%s: message %q", format, err)
			}
		}
	})
}
