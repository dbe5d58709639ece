package engine

import (
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

	duckdb "github.com/duckdb/duckdb-go/v2"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/synth-dp/synth/internal/stattest"
	"github.com/synth-dp/synth/spec"
)

// postgresEnv names the environment variable holding the URL of a
// PostgreSQL server for the tests (scripts/pg-throwaway.sh start DIR
// prints one); the PostgreSQL cases skip when it is unset.
const postgresEnv = "SYNTH_TEST_POSTGRES"

// postgresURL returns the test server's URL, or skips the test.
func postgresURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(postgresEnv)
	if u == "" {
		t.Skipf("%s is not set: PostgreSQL case skipped (start a server with scripts/pg-throwaway.sh start DIR and export its URL)", postgresEnv)
	}
	return u
}

// openPostgresTest opens an engine on the test server, closed at the end
// of the test.
func openPostgresTest(t testing.TB) *Engine { t.Helper(); return openDSNTest(t, postgresURL(t)) }

// forEachEngine runs f as a subtest on embedded DuckDB and on PostgreSQL
// (skipped without a server).
func forEachEngine(t *testing.T, f func(t *testing.T, e *Engine)) {
	t.Run("duckdb", func(t *testing.T) { f(t, openTest(t)) })
	t.Run("postgres", func(t *testing.T) { f(t, openPostgresTest(t)) })
}

// forEachOpener runs f as a subtest on embedded DuckDB and on PostgreSQL
// (skipped without a server), passing the function that opens an engine
// of that kind.
func forEachOpener(t *testing.T, f func(t *testing.T, open func(testing.TB) *Engine)) {
	t.Run("duckdb", func(t *testing.T) { f(t, openTest) })
	t.Run("postgres", func(t *testing.T) {
		postgresURL(t)
		f(t, openPostgresTest)
	})
}

// duckTest is an in-memory DuckDB database closed at the end of the test,
// for writing test inputs (Parquet files) whatever the engine under test.
func duckTest(t testing.TB) *sql.DB {
	t.Helper()
	c, err := duckdb.NewConnector("", nil)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	// The inputs are a few rows each: one thread writes the same files
	// without waking DuckDB's idle worker for every statement (see
	// oneThread).
	if _, err := db.Exec("SET threads = 1"); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestPostgresOpenError checks that a server that cannot be reached fails
// Open with an error that does not show the password.
func TestPostgresOpenError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Open(ctx, "postgres://synth:s3cret@127.0.0.1:1/db?sslmode=disable&connect_timeout=2")
	if err == nil {
		t.Fatal("Open of a closed port succeeded")
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error shows the password: %v", err)
	}
	if !strings.Contains(err.Error(), "xxxxx") {
		t.Errorf("error %q does not name the redacted URL", err)
	}
}

// TestPostgresWorkSchema checks the work schema's life on the server:
// dropped by Close; a crashed engine's schema dropped by the next Open; a
// live engine's schema (another session holds its lock) kept.
func TestPostgresWorkSchema(t *testing.T) {
	url := postgresURL(t)
	ctx := context.Background()
	admin, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	exists := func(schema string) bool {
		var n int
		if err := admin.QueryRow("SELECT count(*) FROM pg_namespace WHERE nspname = $1", schema).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	dir := t.TempDir()
	src := writeCSV(t, dir, "a.csv", []string{"k", "x"}, [][]string{{"1", "p"}, {"2", "q"}})
	s := &spec.Spec{Tables: []spec.Table{{Name: "a", Source: src, Columns: []spec.Column{
		{Name: "k", Type: spec.Key}, {Name: "x", Type: spec.Categorical, Values: []string{"p", "q"}}}}}}

	live, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := live.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	// A crashed engine: a work schema with the marker table and rows, and
	// no session holding its lock.
	crashed := WorkSchemaPrefix + "00000000000000ab"
	if _, err := admin.Exec(`CREATE SCHEMA ` + crashed + `; CREATE TABLE ` + crashed + `.` + ownerTable + ` (owner TEXT);
		CREATE TABLE ` + crashed + `.private AS SELECT 1 AS x`); err != nil {
		t.Fatal(err)
	}
	// A schema that merely looks like one (no marker) is never touched.
	lookalike := WorkSchemaPrefix + "00000000000000cd"
	if _, err := admin.Exec(`CREATE SCHEMA ` + lookalike); err != nil {
		t.Fatal(err)
	}
	defer admin.Exec(`DROP SCHEMA IF EXISTS ` + lookalike + ` CASCADE`)
	e, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if exists(crashed) {
		t.Error("the crashed engine's schema survived Open")
	}
	if !exists(live.schema) || tableCount(t, live, "a") != 2 {
		t.Error("Open dropped a live engine's schema")
	}
	if !exists(lookalike) {
		t.Error("Open dropped a schema without the marker table")
	}
	if err := e.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	if !exists(e.schema) {
		t.Fatal("no work schema while open")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(e.schema) {
		t.Error("Close left the work schema")
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestPostgresBareQuote: the PostgreSQL engine's loader stops at a "
// inside an unquoted field with a *CSVError naming its line.
func TestPostgresBareQuote(t *testing.T) {
	e := openPostgresTest(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "a.csv")
	if err := os.WriteFile(p, []byte("k,x\n1,p\n2,a\"b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &spec.Spec{Tables: []spec.Table{{Name: "a", Source: p, Columns: []spec.Column{
		{Name: "k", Type: spec.Key}, {Name: "x", Type: spec.Categorical, Values: []string{"p"}}}}}}
	err := e.Load(context.Background(), s)
	var ce *CSVError
	if !errors.As(err, &ce) || ce.Line != 3 || !errors.Is(err, ErrData) {
		t.Fatalf("Load = %v, want a *CSVError at line 3", err)
	}
}

// TestPostgresAgreesWithDuckDB loads random values — numbers in many
// spellings, dates valid and not, categories, booleans — under the drop
// policy (every value outside its domain removes its row) and the clamp
// policy on both engines, and checks that the same rows survive with the
// same cells: the PostgreSQL dialect's parsing and binning agree with
// DuckDB's.
func TestPostgresAgreesWithDuckDB(t *testing.T) {
	postgresURL(t)
	seed := stattest.Seed(t)
	r := rand.New(rand.NewPCG(seed, 7))
	numbers := []string{"0", "-0", "1", "1.0", "1.5", "2.", ".5", "+3", "-2.5e0", "1e1", "1E+1", "12e-1", "1e400", "-1e400",
		"1e-400", "NaN", "inf", "-Infinity", "0x10", " 1", "1 ", "", "1,5", "abc", "99.999", "100", "100.0000001", "-100",
		"5e-324", "7", "49.99", "50", "3.14159", "+-1", "1-2", "..5", "1..2", "-.", "+", ".", "1.2.3", "--1", "١", "1_000",
		"-5", "+.5", "-0.0", "0e0", "1e", "e1", ".e1", "1" + strings.Repeat("0", 310), "0." + strings.Repeat("0", 300) + "1"}
	dates := []string{"2020-01-01", "2020-02-29", "2021-02-29", "2020-04-31", "2020-13-01", "2020-00-10", "1999-12-31",
		"2030-01-01", "0000-01-01", "2020-1-1", "20200101", "", "2024-12-31", "2022-06-15", "2020-06-15 ", "2020-06-15T00:00:00",
		"2020-6-015", "2020--6-15", "-020-06-15", "2020-06-1a", "2020-02-30", "2023-02-28", "2000-01-01", "2025-12-31"}
	cats := []string{"a", "b", "c", "A", "", " a", "é", "a,b"}
	bools := []string{"true", "false", "TRUE", "F", "t", "1", "0", "yes", "", "tRuE"}
	var rows [][]string
	for i := range 400 {
		rows = append(rows, []string{fmt.Sprint(i), numbers[r.IntN(len(numbers))], numbers[r.IntN(len(numbers))],
			dates[r.IntN(len(dates))], cats[r.IntN(len(cats))], bools[r.IntN(len(bools))], numbers[r.IntN(len(numbers))]})
	}
	dir := t.TempDir()
	header := []string{"k", "n", "i", "d", "c", "b", "m"}
	src := writeCSV(t, dir, "v.csv", header, rows)
	decl := []spec.Column{
		{Name: "n", Type: spec.Numeric, Min: -100, Max: 100, Bins: 7},
		{Name: "i", Type: spec.Integer, Min: 0, Max: 50, Bins: 100},
		{Name: "d", Type: spec.Date, DateMin: day("2000-01-01"), DateMax: day("2025-12-31"), Granularity: spec.Month},
		{Name: "c", Type: spec.Categorical, Values: []string{"a", "b", "c", "é"}},
		{Name: "b", Type: spec.Boolean},
		{Name: "m", Type: spec.Numeric, Min: 0, Max: 50, BinEdges: []float64{0, 1, 7, 49.99, 50}},
		{Name: "n", Type: spec.Integer, Min: -100, Max: 100},
		{Name: "d", Type: spec.Date, DateMin: day("2000-01-01"), DateMax: day("2025-12-31"), Granularity: spec.Day},
	}
	for k, c := range decl {
		for _, pol := range []spec.OutOfDomain{spec.OutOfDomainDrop, spec.OutOfDomainClamp} {
			if pol == spec.OutOfDomainClamp && (c.Type == spec.Categorical || c.Type == spec.Boolean) {
				continue
			}
			c.OutOfDomain = pol
			t.Run(fmt.Sprintf("%d-%s-%s-%s", k, c.Name, c.Type, pol), func(t *testing.T) {
				s := &spec.Spec{Tables: []spec.Table{{Name: "v", Source: src, Columns: []spec.Column{{Name: "k", Type: spec.Key}, c}}}}
				var got [2][]string
				var errs [2]error
				for k, e := range []*Engine{openTest(t), openPostgresTest(t)} {
					if errs[k] = e.Load(context.Background(), s); errs[k] != nil {
						continue
					}
					q := `SELECT CAST("_synth_row" AS BIGINT), CAST("k" AS BIGINT), CAST(` + e.d.ident(BinColumn(c.Name)) +
						` AS BIGINT), ` + e.d.toText(e.d.ident(c.Name)) + ` FROM "v" ORDER BY 1`
					rs, err := e.db.Query(q)
					if err != nil {
						t.Fatal(err)
					}
					for rs.Next() {
						v := make([]sql.NullString, 4)
						if err := rs.Scan(&v[0], &v[1], &v[2], &v[3]); err != nil {
							t.Fatal(err)
						}
						if c.Type == spec.Numeric {
							// The stored DOUBLE's text differs (1 vs 1.0); compare the
							// number.
							f, err := strconv.ParseFloat(v[3].String, 64)
							if err != nil {
								t.Fatal(err)
							}
							v[3].String = strconv.FormatFloat(f, 'g', -1, 64)
						}
						got[k] = append(got[k], fmt.Sprint(v))
					}
					rs.Close()
				}
				if (errs[0] == nil) != (errs[1] == nil) {
					t.Fatalf("DuckDB: %v; PostgreSQL: %v", errs[0], errs[1])
				}
				if errs[0] != nil {
					var a, b *DataError
					if !errors.As(errs[0], &a) || !errors.As(errs[1], &b) || *a != *b {
						t.Fatalf("different errors:\nDuckDB:     %v\nPostgreSQL: %v", errs[0], errs[1])
					}
					return
				}
				if !slices.Equal(got[0], got[1]) {
					t.Fatalf("different tables:\nDuckDB:     %v\nPostgreSQL: %v", got[0], got[1])
				}
				if len(got[0]) < 20 {
					t.Fatalf("%d rows survived: too few to compare", len(got[0]))
				}
			})
		}
	}
}

// TestPostgresSerializeSQL: synth answer's parser works on a PostgreSQL
// engine (DuckDB parses; the server sees nothing).
func TestPostgresSerializeSQL(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e *Engine) {
		out, err := e.SerializeSQL(context.Background(), "SELECT count(*) FROM orders WHERE x = 'a'")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, `"error":false`) || !strings.Contains(out, "orders") {
			t.Errorf("SerializeSQL = %.200s", out)
		}
	})
}

// TestPostgresSessionSettings: synth's session settings apply unless the
// URL sets them.
func TestPostgresSessionSettings(t *testing.T) {
	url := postgresURL(t)
	show := func(e *Engine, name string) string {
		var v string
		if err := e.db.QueryRow("SHOW " + name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	e := openPostgresTest(t)
	if got := show(e, "jit"); got != "off" {
		t.Errorf("jit = %s, want off", got)
	}
	if got := show(e, "work_mem"); got != pgSession["work_mem"] {
		t.Errorf("work_mem = %s, want %s", got, pgSession["work_mem"])
	}
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	e2, err := Open(context.Background(), url+sep+"work_mem=8MB")
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	if got := show(e2, "work_mem"); got != "8MB" {
		t.Errorf("work_mem = %s with the URL's 8MB", got)
	}
}
