package cli

import (
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/synth-dp/synth/internal/demo"
	"github.com/synth-dp/synth/output/layout"
)

// writeQueryParquet writes a small Parquet file with DuckDB COPY into dir
// under layout.ParquetName and returns its path.
func writeQueryParquet(t *testing.T, dir string) string {
	t.Helper()
	conn, err := duckdb.NewConnector("?autoinstall_known_extensions=false&autoload_known_extensions=false", nil)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	path := filepath.Join(dir, layout.ParquetName)
	q := `COPY (SELECT * FROM (VALUES ('red', 3, DATE '2024-01-01', true), ('red', 5, DATE '2024-02-01', false),
		('blue', 7, DATE '2024-03-01', true)) AS t(color, qty, day, flag)) TO '` + path + `' (FORMAT parquet)`
	if _, err := db.Exec(q); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestQuery(t *testing.T) {
	dir := t.TempDir()
	file := writeQueryParquet(t, dir)
	const q = "SELECT color, count(*) AS n, sum(qty) AS total, min(day) AS first, bool_or(flag) AS any FROM synthetic GROUP BY color ORDER BY color"

	r := mustRun(t, "query", file, q)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "color") || !strings.Contains(lines[2], "blue") ||
		!strings.Contains(lines[3], "2024-01-01") || lines[4] != "(2 rows)" {
		t.Errorf("text output:\n%s", r.stdout)
	}
	if f := strings.Fields(lines[3]); len(f) != 5 || f[0] != "red" || f[1] != "2" || f[2] != "8" || f[4] != "true" {
		t.Errorf("red row = %q", lines[3])
	}

	// A release folder stands for its synthetic.parquet.
	r = mustRun(t, "query", dir, q, "--format", "csv")
	recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"color", "n", "total", "first", "any"}, {"blue", "1", "7", "2024-03-01", "true"}, {"red", "2", "8", "2024-01-01", "true"}}
	if len(recs) != len(want) || strings.Join(recs[1], ",") != strings.Join(want[1], ",") || strings.Join(recs[2], ",") != strings.Join(want[2], ",") {
		t.Errorf("csv = %q, want %q", recs, want)
	}

	r = mustRun(t, "query", file, q, "--format", "json")
	var objs []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &objs); err != nil {
		t.Fatalf("json output %q: %v", r.stdout, err)
	}
	if len(objs) != 2 || objs[1]["color"] != "red" || objs[1]["n"] != 2.0 || objs[1]["total"] != 8.0 ||
		objs[1]["first"] != "2024-01-01" || objs[1]["any"] != true {
		t.Errorf("json = %v", objs)
	}
	if !strings.HasPrefix(r.stdout, "[\n  {\"color\": ") {
		t.Errorf("json keys are not in column order: %q", r.stdout)
	}
	r = mustRun(t, "query", file, "SELECT * FROM synthetic WHERE qty > 100", "--format", "json")
	if strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("empty json = %q", r.stdout)
	}
}

func TestQueryExitCodes(t *testing.T) {
	dir := t.TempDir()
	file := writeQueryParquet(t, dir)
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no args", []string{"query"}, ExitUsage, "takes FILE and SQL"},
		{"one arg", []string{"query", file}, ExitUsage, "takes FILE and SQL"},
		{"bad format", []string{"query", file, "SELECT 1", "--format", "xml"}, ExitUsage, "--format"},
		{"empty sql", []string{"query", file, "  "}, ExitUsage, "SQL is empty"},
		{"syntax error", []string{"query", file, "SELEC 1"}, ExitUsage, "syntax error"},
		{"unknown column", []string{"query", file, "SELECT nope FROM synthetic"}, ExitUsage, "nope"},
		{"missing file", []string{"query", filepath.Join(dir, "missing.parquet"), "SELECT 1"}, ExitRuntime, "missing.parquet"},
		{"folder without release", []string{"query", t.TempDir(), "SELECT 1"}, ExitRuntime, layout.ParquetName},
		{"not parquet", []string{"query", "query_test.go", "SELECT 1"}, ExitRuntime, "query_test.go"},
		{"runtime error", []string{"query", file, "SELECT CAST(color AS INTEGER) FROM synthetic"}, ExitRuntime, "Conversion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
				t.Errorf("exit %d, stderr %q; want exit %d mentioning %q", r.code, r.stderr, tc.code, tc.msg)
			}
		})
	}
}

// TestDemoQueries runs every query the demo prints with synth query over
// the demo's release.
func TestDemoQueries(t *testing.T) {
	out := filepath.Join(t.TempDir(), "demo")
	r := mustRun(t, "-q", "demo", "--out", out, "--k", "16", "--seed", "1")
	if strings.Contains(r.stdout, "duckdb -c") {
		t.Errorf("demo still tells users to run the duckdb CLI:\n%s", r.stdout)
	}
	for _, q := range demo.Queries() {
		pq := filepath.Join(out, layout.ParquetName)
		if q.Tables {
			pq = out
		}
		if !strings.Contains(r.stdout, `query `+shellQuote(pq)+` "`+q.SQL+`"`) {
			t.Errorf("demo does not print %q:\n%s", q.SQL, r.stdout)
		}
		qr := mustRun(t, "query", pq, q.SQL)
		if !strings.Contains(qr.stdout, " rows)") {
			t.Errorf("%s:\n%s", q.SQL, qr.stdout)
		}
	}
}

// TestDemoPattern runs the demo's first printed query, fresh noise, on the
// default demo (k = 128, ε = 1, unit customers) and checks the pattern it
// advertises: every tier's most frequent channel in the released file is
// its favourite. In the data 60% of a tier's transactions use its
// favourite and about 10% each other channel, some 2,800 against 470
// customers' weight per cell, while the noise per cell is about 25 rows:
// a false failure would need a ~90σ draw.
func TestDemoPattern(t *testing.T) {
	out := filepath.Join(t.TempDir(), "demo")
	r := mustRun(t, "-q", "demo", "--out", out)
	q := demo.Queries()[0]
	pq := filepath.Join(out, layout.ParquetName)
	if !strings.Contains(r.stdout, q.SQL) {
		t.Fatalf("the demo does not print %q:\n%s", q.SQL, r.stdout)
	}
	if !strings.Contains(r.stdout, "user-level") {
		t.Errorf("the demo does not say it protects each customer:\n%s", r.stdout)
	}
	qr := mustRun(t, "query", "--format", "csv", pq, q.SQL)
	lines := strings.Split(strings.TrimSpace(qr.stdout), "\n")
	if len(lines) != len(demo.Tiers)+1 {
		t.Fatalf("query output:\n%s", qr.stdout)
	}
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if demo.Favourite[f[0]] != f[1] {
			t.Errorf("tier %s: most frequent channel %s, want %s (the demo's advertised pattern)\n%s", f[0], f[1], demo.Favourite[f[0]], qr.stdout)
		}
	}
}

// TestDemoTablesPattern runs the demo's query over its released tables,
// fresh noise, on the default demo (k = 128, ε = 1): customers by their
// number of transactions keep the data's skew, k² customers with one,
// k²/8 with two and k²/64 with four (16,384, 2,048 and 256): each count at
// least 3 times the next. The unit level measures the 8 × 4 cells of
// (fan-out, tier) with noise of some 20 customers per cell against 256
// customers in the smallest: a false failure needs a ~10σ draw.
func TestDemoTablesPattern(t *testing.T) {
	out := filepath.Join(t.TempDir(), "demo")
	mustRun(t, "-q", "demo", "--out", out)
	var q demo.Query
	for _, x := range demo.Queries() {
		if x.Tables {
			q = x
		}
	}
	qr := mustRun(t, "query", "--format", "csv", out, q.SQL)
	n := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(qr.stdout), "\n")[1:] {
		f := strings.Split(l, ",")
		v, err := strconv.Atoi(f[1])
		if err != nil {
			t.Fatalf("query output:\n%s", qr.stdout)
		}
		n[f[0]] = v
	}
	if !(n["1"] > 3*n["2"] && n["2"] > 3*n["4"] && n["4"] > 0) {
		t.Fatalf("customers with 1, 2, 4 transactions: %d, %d, %d; want the demo's skew (16,384, 2,048, 256)\n%s", n["1"], n["2"], n["4"], qr.stdout)
	}
}

// TestQuerySandbox tries what a third party with the release could try
// through synth query (issue 27): write a file, read another, attach a
// database and run two statements, install an extension (the network),
// read over HTTP, turn the sandbox off. Each must fail with a message that
// says why, and leave no file behind; SELECTs over the release, and the
// file's own Parquet metadata, must still work. Every refusal case passed
// (exit 0, or another message) on the code before the sandbox (seen).
func TestQuerySandbox(t *testing.T) {
	dir := t.TempDir()
	file := writeQueryParquet(t, dir)
	secret := filepath.Join(dir, "secret.csv")
	if err := os.WriteFile(secret, []byte("name\nsecret-marker-7f3a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	written := filepath.Join(dir, "written.csv")
	attached := filepath.Join(dir, "x.db")
	for _, tc := range []struct {
		name, sql string
		code      int
		msg       string
	}{
		{"COPY writes a file", "COPY (SELECT 1) TO '" + written + "'", ExitUsage, "one read-only statement"},
		{"read_csv reads a file", "SELECT * FROM read_csv('" + secret + "')", ExitUsage, "reads the release file"},
		{"read_csv reads /etc/passwd", "SELECT * FROM read_csv('/etc/passwd')", ExitUsage, "file system operations are disabled"},
		{"ATTACH then CREATE TABLE", "ATTACH '" + attached + "' AS x; CREATE TABLE x.t AS SELECT 1", ExitUsage, "one read-only statement"},
		{"two SELECTs", "SELECT 1; SELECT 2", ExitUsage, "got 2 statements"},
		{"INSTALL httpfs", "INSTALL httpfs", ExitUsage, "one read-only statement"},
		{"read over HTTP", "SELECT * FROM read_parquet('https://example.com/x.parquet')", ExitUsage, "reads the release file"},
		{"sandbox off", "SET enable_external_access = true", ExitUsage, "one read-only statement"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, "query", file, tc.sql)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
				t.Errorf("exit %d, stderr %q; want exit %d mentioning %q", r.code, r.stderr, tc.code, tc.msg)
			}
			if strings.Contains(r.stdout+r.stderr, "secret-marker") {
				t.Errorf("the other file's content came out:\n%s%s", r.stdout, r.stderr)
			}
			for _, p := range []string{written, attached} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s was created", p)
				}
			}
		})
	}
	for _, q := range []string{
		"WITH t AS (SELECT color FROM synthetic) SELECT count(*) AS n FROM t",
		"FROM synthetic",
		"DESCRIBE synthetic",
		"SELECT count(*) AS n FROM parquet_kv_metadata('" + file + "')",
	} {
		if r := run(t, "query", file, q); r.code != ExitOK {
			t.Errorf("%s: exit %d, stderr %q", q, r.code, r.stderr)
		}
	}
	r := mustRun(t, "query", "--format", "csv", dir, "SELECT count(*) AS n FROM synthetic")
	if strings.TrimSpace(r.stdout) != "n\n3" {
		t.Errorf("count over the release = %q", r.stdout)
	}
}

// writeRangeParquet writes a release-like Parquet file of n rows.
func writeRangeParquet(t *testing.T, n int) string {
	t.Helper()
	conn, err := duckdb.NewConnector("", nil)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	path := filepath.Join(t.TempDir(), layout.ParquetName)
	if _, err := db.Exec(fmt.Sprintf(`COPY (SELECT i %% 7 AS a, 'x' || (i %% 3) AS b FROM range(%d) AS r(i)) TO '%s' (FORMAT parquet)`, n, path)); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestQueryLimits: synth query's work is bounded. A 5-way cross join of a
// 1,000-row release (10¹⁵ rows, far beyond any machine in the time given)
// stops at --timeout with a message naming the limit and the flag (it ran
// unbounded before, 3.7 GB in 60 s); a result above --max-rows is
// refused; DuckDB gets the memory limit of SYNTH_DUCKDB_MEMORY_LIMIT (or
// --memory-limit) and a temp-space cap in a private folder removed at the
// end; bad limits are usage errors.
func TestQueryLimits(t *testing.T) {
	file := writeRangeParquet(t, 1000)
	cross := "SELECT count(*) AS n FROM synthetic a, synthetic b, synthetic c, synthetic d, synthetic e"
	r := run(t, "query", file, cross, "--timeout", "2s")
	if r.code != ExitRuntime || !strings.Contains(r.stderr, "stopped at its time limit of 2s") || !strings.Contains(r.stderr, "--timeout") || r.stdout != "" {
		t.Errorf("5-way cross join: exit %d, want 1 and the time limit\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = run(t, "query", file, "SELECT a.a, b.b FROM synthetic a, synthetic b", "--max-rows", "1000")
	if r.code != ExitRuntime || !strings.Contains(r.stderr, "more than 1000 rows") || !strings.Contains(r.stderr, "--max-rows") {
		t.Errorf("a result over --max-rows: exit %d\n%s", r.code, r.stderr)
	}
	mustRun(t, "query", file, "SELECT a.a FROM synthetic a", "--max-rows", "1000")
	// The rows of a 5-way cross join (10¹⁵): DuckDB materializes a result
	// outside its memory limit (5 GB of RSS in 30 s before), so the query
	// runs under a LIMIT of --max-rows + 1 and stops there at once.
	r = run(t, "query", file, "SELECT a.a, b.b, c.a, d.b, e.a FROM synthetic a, synthetic b, synthetic c, synthetic d, synthetic e; -- all of it", "--max-rows", "1000")
	if r.code != ExitRuntime || !strings.Contains(r.stderr, "more than 1000 rows") {
		t.Errorf("rows of a 5-way cross join: exit %d\n%s", r.code, r.stderr)
	}

	settings := "SELECT current_setting('memory_limit') AS m, current_setting('max_temp_directory_size') AS t, current_setting('temp_directory') AS d"
	t.Setenv("SYNTH_DUCKDB_MEMORY_LIMIT", "1GB")
	r = mustRun(t, "query", file, settings, "--format", "csv")
	recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil || len(recs) != 2 {
		t.Fatalf("settings: %q, %v", r.stdout, err)
	}
	if recs[1][0] != "953.6 MiB" || recs[1][1] != "1.0 GiB" || !strings.Contains(recs[1][2], "synth-query-") {
		t.Errorf("settings with SYNTH_DUCKDB_MEMORY_LIMIT=1GB: %q", recs[1])
	}
	if _, err := os.Stat(recs[1][2]); !os.IsNotExist(err) {
		t.Errorf("the temporary folder %s is left behind (%v)", recs[1][2], err)
	}
	r = mustRun(t, "query", file, settings, "--format", "csv", "--memory-limit", "2GB", "--max-temp", "3GB")
	if !strings.Contains(r.stdout, "1.8 GiB,2.7 GiB,") {
		t.Errorf("settings with the flags: %q", r.stdout)
	}
	for _, bad := range [][]string{{"--timeout", "-1s"}, {"--max-rows", "-1"}, {"--max-temp", "lots"}, {"--memory-limit", "1 zillion"}} {
		if r := run(t, append([]string{"query", file, "SELECT 1"}, bad...)...); r.code != ExitUsage || !strings.Contains(r.stderr, bad[0]) {
			t.Errorf("%v: exit %d, want 2\n%s", bad, r.code, r.stderr)
		}
	}
}
