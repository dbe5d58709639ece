package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/synth-dp/synth/spec"
)

// loadFuzzEnv sets the number of random tables TestLoadScanMatchesStaged
// loads (default 120, 30 with -short).
const loadFuzzEnv = "SYNTH_LOAD_FUZZ_N"

// TestLoadScanMatchesStaged loads random tables (CSV, and Parquet with
// typed and text columns) of random declarations and policies, holding
// valid values and odd spellings (signs, leading zeros, exponents,
// spaces, hexadecimal, 19-digit keys, impossible dates, years beyond
// 9999, mixed-case booleans, empty values; nullable columns holding
// NULLs among them), with [Engine.Load] (the
// one-scan load of DuckDB) and with the staged load the PostgreSQL dialect
// runs (the source as text in a staging table, [Engine.checkDomains],
// [Engine.keyTypes], [Engine.buildTable]: regular expressions on the text)
// on the same engine, and requires the same error or the same table:
// column types, and every value as text in row order. Half the Parquet
// tables are read in place ([Engine.ReadInPlace]).
func TestLoadScanMatchesStaged(t *testing.T) {
	// 40 random tables by default; SYNTH_SLOW_AUDITS (.ci/run) loads 120.
	n := 40
	if os.Getenv("SYNTH_SLOW_AUDITS") != "" {
		n = 120
	}
	if testing.Short() {
		n = 30
	}
	if v := os.Getenv(loadFuzzEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("%s=%q: %v", loadFuzzEnv, v, err)
		}
	}
	ctx := context.Background()
	e := openMemoryTest(t)
	oneThread(t, e)
	duck := duckTest(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(16, 5))
	// nullable marks a third of the columns that may be nullable (not
	// joined, no empty category) nullable, and empties a quarter of their
	// values; a generator of its own leaves rng's draws as they were.
	nrng := rand.New(rand.NewPCG(16, 6))
	var failed, loaded, nullable int
	for i := range n {
		tb, join, header, rows, types := randomLoadTable(rng, i)
		for k := range tb.Columns {
			c := &tb.Columns[k]
			if c.Type == spec.Key || slices.Contains(c.Values, "") || nrng.IntN(3) > 0 || slices.ContainsFunc(join, func(eq spec.JoinEq) bool { return eq.Left.Column == c.Name }) {
				continue
			}
			c.Nullable = true
			nullable++
			h := slices.Index(header, c.Name)
			for _, r := range rows {
				if nrng.IntN(4) == 0 {
					r[h] = ""
				}
			}
		}
		src := writeCSV(t, dir, fmt.Sprintf("t%d.csv", i), header, rows)
		tb.Source = src
		if rng.IntN(2) == 0 {
			// Parquet, each column cast to its type (NULL where the text
			// does not cast).
			pq := filepath.Join(dir, fmt.Sprintf("t%d.parquet", i))
			sel := make([]string, len(header))
			cols := make([]string, len(header))
			for k, h := range header {
				cols[k] = fmt.Sprintf("'%s': 'VARCHAR'", h)
				sel[k] = fmt.Sprintf(`TRY_CAST("%s" AS %s) AS "%s"`, h, types[k], h)
			}
			q := fmt.Sprintf(`COPY (SELECT %s FROM read_csv('%s', header = true, auto_detect = false, columns = {%s})) TO '%s' (FORMAT parquet)`,
				strings.Join(sel, ", "), src, strings.Join(cols, ", "), pq)
			if _, err := duck.Exec(q); err != nil {
				t.Fatal(err)
			}
			tb.Source = pq
		}
		// Half the loads read a Parquet file in place ([Engine.ReadInPlace]).
		inPlace := rng.IntN(2) == 0
		e.ReadInPlace(inPlace)
		s := &spec.Spec{Tables: []spec.Table{tb}, Join: join}
		got, gotErr := loadedRows(ctx, t, e, s, func() error { return e.Load(ctx, s) }, tb.Name)
		ref := tb
		ref.Name = "ref_" + tb.Name
		want, wantErr := loadedRows(ctx, t, e, s, func() error { return stagedLoad(ctx, e, &ref) }, ref.Name)
		where := fmt.Sprintf("table %d (%s, in place %v, columns %v, types %v)", i, filepath.Base(tb.Source), inPlace, tb.Columns, types)
		switch {
		case (gotErr == nil) != (wantErr == nil):
			t.Errorf("%s: Load error %v, staged %v", where, gotErr, wantErr)
			failed++
		case gotErr != nil:
			var a, b *DataError
			if !errors.As(gotErr, &a) || !errors.As(wantErr, &b) || *a != *b {
				t.Errorf("%s: Load error %v, staged %v", where, gotErr, wantErr)
				failed++
			}
		default:
			loaded++
			if !slices.Equal(got, want) {
				t.Errorf("%s: Load\n%s\nstaged\n%s", where, strings.Join(got, "\n"), strings.Join(want, "\n"))
				failed++
			}
		}
		if failed > 5 {
			t.Fatal("too many differences")
		}
	}
	t.Logf("%d of %d random tables loaded, the others failed alike; %d nullable columns", loaded, n, nullable)
	if loaded < n/4 {
		t.Errorf("only %d of %d tables loaded: the generator makes too many bad values", loaded, n)
	}
}

// stagedLoad loads t the way the staged path of PostgreSQL does, on
// DuckDB: the source read as text into a staging table, checked, and the
// table built from it.
func stagedLoad(ctx context.Context, e *Engine, t *spec.Table) error {
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	const stage = stagePrefix + "ref"
	defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+e.d.ident(stage))
	sel, row, header, cols, err := e.sourceSelect(ctx, conn, t)
	if err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, e.d.replaceTable(stage, sel, true)); err != nil {
		return readError(t, header, cols, err)
	}
	if err := e.checkDomains(ctx, conn, t, stage, row); err != nil {
		return err
	}
	keyTypes, err := e.keyTypes(ctx, conn, t, stage)
	if err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, e.buildTable(t, stage, row, keyTypes))
	return err
}

// loadedRows runs load and returns the loaded table's column types and
// rows as text in row order, or load's error.
func loadedRows(ctx context.Context, t *testing.T, e *Engine, s *spec.Spec, load func() error, table string) ([]string, error) {
	t.Helper()
	if err := load(); err != nil {
		return nil, err
	}
	var cols []string
	cols = append(cols, rowColumn)
	for _, c := range s.Tables[0].Columns {
		cols = append(cols, c.Name)
		if c.Type != spec.Key {
			cols = append(cols, BinColumn(c.Name))
		}
	}
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = fmt.Sprintf(`typeof("%s") || ':' || COALESCE(CAST("%s" AS VARCHAR), 'NULL')`, c, c)
	}
	rows, err := e.db.QueryContext(ctx, fmt.Sprintf(`SELECT %s FROM "%s" ORDER BY "%s"`, strings.Join(sel, " || ' | ' || "), table, rowColumn))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out, nil
}

// randomLoadTable declares a random table and draws its rows: the table,
// a join naming some of its categorical columns, the CSV header and rows,
// and the SQL type of each column in a Parquet version of the file.
func randomLoadTable(rng *rand.Rand, i int) (spec.Table, []spec.JoinEq, []string, [][]string, []string) {
	tb := spec.Table{Name: fmt.Sprintf("t%d", i)}
	var join []spec.JoinEq
	type gen func(odd int) string // odd: 0 never, 1 sometimes, 2 always
	var gens []gen
	var header, types []string
	policies := []spec.OutOfDomain{"", spec.OutOfDomainError, spec.OutOfDomainDrop}
	nKeys := 1 + rng.IntN(2)
	nCols := nKeys + 1 + rng.IntN(4)
	for k := range nCols {
		name := fmt.Sprintf("c%d", k)
		c := spec.Column{Name: name}
		var g gen
		var ty string
		if k < nKeys {
			c.Type = spec.Key
			ty = pickFrom(rng, "BIGINT", "INTEGER", "VARCHAR", "UBIGINT", "HUGEINT")
			odds := []string{"01", "-0", "", "x", "+5", " 7", "1e2", "999999999999999999", "-999999999999999999",
				"1000000000000000000", "9223372036854775807", "1.0", "0x10", "1_0"}
			g = func(odd int) string {
				if odd == 2 || odd == 1 && rng.IntN(8) == 0 {
					return pickFrom(rng, odds...)
				}
				return strconv.Itoa(rng.IntN(40) - 3)
			}
		} else {
			switch rng.IntN(5) {
			case 0, 1:
				c.Type = pickFrom(rng, spec.Integer, spec.Numeric)
				c.Min, c.Max = float64(rng.IntN(5)-2), float64(5+rng.IntN(60))
				switch rng.IntN(3) {
				case 0:
					c.Bins = 1 + rng.IntN(12)
				case 1:
					if c.Type == spec.Numeric {
						c.Bins = 3
					}
				case 2:
					c.BinEdges = []float64{c.Min, c.Min + 1.5, c.Min + 2.5, c.Max}
				}
				if c.Type == spec.Integer && len(c.BinEdges) == 0 && c.Bins == 0 {
					c.Bins = 0 // one bin per integer
				}
				if c.Type == spec.Numeric && len(c.BinEdges) == 0 && c.Bins == 0 {
					c.Bins = 4
				}
				c.OutOfDomain = pickFrom(rng, append(policies, spec.OutOfDomainClamp, spec.OutOfDomainClamp)...)
				ty = pickFrom(rng, "BIGINT", "INTEGER", "SMALLINT", "DOUBLE", "VARCHAR", "UINTEGER", "DECIMAL(9,2)")
				odds := []string{"+5", "05", "5.0", "5e0", " 5", "-0", "", "1e2", "0x5", "1_0", "1.5", "nan", "inf", ".5", "5.",
					"9223372036854775808", "-3", "1e400", "-0.0", "2.50", "1E1"}
				lo, hi := int(c.Min), int(c.Max)
				g = func(odd int) string {
					if odd == 2 || odd == 1 && rng.IntN(6) == 0 {
						return pickFrom(rng, odds...)
					}
					if odd == 2 || odd == 1 && rng.IntN(10) == 0 {
						return strconv.Itoa(hi + 1 + rng.IntN(3))
					}
					if c.Type == spec.Numeric && rng.IntN(3) == 0 {
						return strconv.FormatFloat(float64(lo)+rng.Float64()*float64(hi-lo), 'f', rng.IntN(4), 64)
					}
					return strconv.Itoa(lo + rng.IntN(hi-lo+1))
				}
			case 2:
				c.Type = spec.Date
				c.DateMin, c.DateMax = day("2020-01-01"), day("2021-06-30")
				c.Granularity = pickFrom(rng, spec.Day, spec.Month, spec.Year)
				c.OutOfDomain = pickFrom(rng, append(policies, spec.OutOfDomainClamp, spec.OutOfDomainClamp)...)
				ty = pickFrom(rng, "DATE", "VARCHAR", "TIMESTAMP")
				odds := []string{"2020-1-05", "20-01-05", "2020-02-30", "2020-01-05 ", " 2020-01-05", "0000-01-01", "10000-01-01",
					"2019-12-31", "2022-01-01", "", "2020/01/05", "2020-01-05T00:00:00", "infinity", "0999-03-04"}
				g = func(odd int) string {
					if odd == 2 || odd == 1 && rng.IntN(6) == 0 {
						return pickFrom(rng, odds...)
					}
					return c.DateMin.AddDate(0, 0, rng.IntN(540)).Format("2006-01-02")
				}
			case 3:
				c.Type = spec.Boolean
				c.OutOfDomain = pickFrom(rng, policies...)
				ty = pickFrom(rng, "BOOLEAN", "VARCHAR")
				odds := []string{"yes", "", "TRUE", "tRuE", "F", "2", " true"}
				g = func(odd int) string {
					if odd == 2 || odd == 1 && rng.IntN(6) == 0 {
						return pickFrom(rng, odds...)
					}
					return pickFrom(rng, "true", "false", "t", "f", "1", "0", "True")
				}
			default:
				c.Type = spec.Categorical
				c.Values = []string{"a", "b", "B c", "7"}
				if rng.IntN(4) == 0 {
					c.Values = append(c.Values, "")
				}
				c.OutOfDomain = pickFrom(rng, policies...)
				ty = pickFrom(rng, "VARCHAR", "VARCHAR", "INTEGER")
				if rng.IntN(3) == 0 {
					join = append(join, spec.JoinEq{Left: spec.ColumnRef{Table: tb.Name, Column: name}, Right: spec.ColumnRef{Table: "other", Column: "x"}})
				}
				g = func(odd int) string {
					if odd == 2 || odd == 1 && rng.IntN(6) == 0 {
						return pickFrom(rng, "A", "", "x", " a", "07")
					}
					return pickFrom(rng, c.Values...)
				}
			}
		}
		tb.Columns = append(tb.Columns, c)
		header = append(header, name)
		types = append(types, ty)
		gens = append(gens, g)
		if rng.IntN(3) == 0 {
			// An undeclared column.
			header = append(header, "u"+name)
			types = append(types, "VARCHAR")
			gens = append(gens, func(int) string { return pickFrom(rng, "x", "", "1") })
		}
	}
	// A third of the tables hold valid values only, a third one odd value,
	// a third odd values anywhere.
	mode := rng.IntN(3)
	rows := make([][]string, rng.IntN(40))
	for r := range rows {
		rows[r] = make([]string, len(gens))
		for k, g := range gens {
			rows[r][k] = g(mode / 2)
		}
	}
	if mode == 1 && len(rows) > 0 {
		r, k := rng.IntN(len(rows)), rng.IntN(len(gens))
		rows[r][k] = gens[k](2)
	}
	return tb, join, header, rows, types
}

// pickFrom draws one of vs.
func pickFrom[T any](rng *rand.Rand, vs ...T) T { return vs[rng.IntN(len(vs))] }

// TestLoadScanOddValues loads, for every odd spelling of an integer, a
// date and a key, a table holding it after a valid row (a key after the
// rows its type is guessed from), under the error
// and the clamp policy, from CSV and from Parquet (typed where the spelling
// casts, NULL where not), with [Engine.Load] and with the staged load, and
// requires the same error or the same table.
func TestLoadScanOddValues(t *testing.T) {
	ctx := context.Background()
	e := openMemoryTest(t)
	oneThread(t, e)
	duck := duckTest(t)
	dir := t.TempDir()
	ints := []string{"+5", "05", "5.0", "5e0", " 5", "5 ", "-0", "0", "1e2", "0x5", "1_0", "1.5", "nan", "inf", "-inf", ".5", "5.",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-3", "1e400", "-0.0", "2.50", "1E1", "٣", "7"}
	dates := []string{"2020-1-05", "20-01-05", "2020-02-30", "2020-02-29", "2020-01-05 ", " 2020-01-05", "0000-01-01", "10000-01-01",
		"2019-12-31", "2022-01-01", "2020/01/05", "2020-01-05T00:00:00", "infinity", "-infinity", "0999-03-04", "9999-12-31",
		"0001-01-01", "-2020-01-01", "2020-06-15", "2020-06-15 (BC)", "+2020-06-15"}
	keys := []string{"01", "-0", "0", "x", "+5", " 7", "1e2", "999999999999999999", "-999999999999999999", "1000000000000000000",
		"-1000000000000000000", "9223372036854775807", "1.0", "0x10", "1_0", "-5"}
	n := 0
	for _, tc := range []struct {
		col    spec.Column
		values []string
		types  []string // Parquet types of the column
	}{
		{spec.Column{Type: spec.Integer, Min: -5, Max: 60, Bins: 5}, ints, []string{"BIGINT", "DOUBLE"}},
		{spec.Column{Type: spec.Numeric, Min: -5, Max: 60, Bins: 5}, ints, []string{"INTEGER"}},
		{spec.Column{Type: spec.Date, DateMin: day("2020-01-01"), DateMax: day("2021-06-30"), Granularity: spec.Month}, dates, []string{"DATE"}},
		{spec.Column{Type: spec.Key}, keys, []string{"BIGINT", "HUGEINT"}},
	} {
		policies := []spec.OutOfDomain{spec.OutOfDomainError, spec.OutOfDomainClamp}
		if tc.col.Type == spec.Key {
			policies = []spec.OutOfDomain{""}
		}
		for _, p := range policies {
			for _, v := range tc.values {
				types := append([]string{"csv"}, tc.types...)
				if testing.Short() {
					types = types[:1]
				}
				for _, ty := range types {
					n++
					c := tc.col
					c.Name, c.OutOfDomain = "v", p
					tb := spec.Table{Name: fmt.Sprintf("o%d", n), Columns: []spec.Column{{Name: "k", Type: spec.Key}, c}}
					valid := "7"
					if c.Type == spec.Date {
						valid = "2020-03-04"
					}
					rows := [][]string{{"1", valid}}
					if c.Type == spec.Key {
						// After the rows the key types are guessed from.
						for r := range sniffRows {
							rows = append(rows, []string{strconv.Itoa(r + 2), strconv.Itoa(r)})
						}
					}
					rows = append(rows, []string{"0", v})
					tb.Source = writeCSV(t, dir, fmt.Sprintf("o%d.csv", n), []string{"k", "v"}, rows)
					if ty != "csv" {
						pq := filepath.Join(dir, fmt.Sprintf("o%d.parquet", n))
						q := fmt.Sprintf(`COPY (SELECT k, TRY_CAST(v AS %s) AS v FROM read_csv('%s', header = true, auto_detect = false, columns = {'k': 'VARCHAR', 'v': 'VARCHAR'})) TO '%s' (FORMAT parquet)`,
							ty, tb.Source, pq)
						if _, err := duck.Exec(q); err != nil {
							t.Fatal(err)
						}
						tb.Source = pq
					}
					s := &spec.Spec{Tables: []spec.Table{tb}}
					got, gotErr := loadedRows(ctx, t, e, s, func() error { return e.Load(ctx, s) }, tb.Name)
					ref := tb
					ref.Name = "ref_" + tb.Name
					want, wantErr := loadedRows(ctx, t, e, s, func() error { return stagedLoad(ctx, e, &ref) }, ref.Name)
					var a, b *DataError
					switch {
					case (gotErr == nil) != (wantErr == nil),
						gotErr != nil && (!errors.As(gotErr, &a) || !errors.As(wantErr, &b) || *a != *b):
						t.Errorf("%s %q (%s, %s): Load error %v, staged %v", c.Type, v, ty, p, gotErr, wantErr)
					case !slices.Equal(got, want):
						t.Errorf("%s %q (%s, %s): Load\n%s\nstaged\n%s", c.Type, v, ty, p, strings.Join(got, "\n"), strings.Join(want, "\n"))
					}
				}
			}
		}
	}
}

// openMemoryTest is an in-memory DuckDB engine closed at the end of the
// test: the one-scan load is the same as on the default engine, faster
// for many small tables.
func openMemoryTest(t testing.TB) *Engine { t.Helper(); return openDSNTest(t, "duckdb::memory:") }
