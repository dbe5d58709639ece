package cli

import (
	"database/sql"
	"encoding/csv"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/synth-dp/synth/internal/score"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/spec"
)

// nullableSpec is a one-table spec whose released columns are nullable
// but one (plain); its data, written by writeNullable, holds NULLs.
const nullableSpec = `privacy: {epsilon: 4, delta: 1e-6}
tables:
  - name: p
    source: p.csv
    primary_key: id
    columns:
      id: {type: key}
      color: {type: categorical, values: [red, blue, green], nullable: true}
      age: {type: integer, min: 0, max: 9, bins: 5, nullable: true}
      score: {type: numeric, min: 0, max: 1, bins: 4, nullable: true}
      day: {type: date, min: 2024-01-01, max: 2024-12-31, granularity: month, nullable: true}
      flag: {type: boolean, nullable: true}
      plain: {type: categorical, values: [x, y]}
release:
  columns: [color, age, score, day, flag, plain]
workload:
  marginals: [[color, plain], [age, flag]]
  numeric: [{sum: age, where: {color: [red]}}]
`

// nullShares are the shares of NULL drawn in each nullable column of
// writeNullable's data.
var nullShares = map[string]float64{"color": 0.3, "age": 0.2, "score": 0.1, "day": 0.25, "flag": 0.4}

// writeNullable writes nullableSpec and n rows of data with NULLs (empty
// fields) into a new folder and returns the spec's path and the true
// number of NULLs per column.
func writeNullable(t *testing.T, n int) (string, map[string]int) {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(36, 3))
	var b strings.Builder
	b.WriteString("id,color,age,score,day,flag,plain\n")
	nulls := map[string]int{}
	field := func(col, v string) string {
		if rng.Float64() < nullShares[col] {
			nulls[col]++
			return ""
		}
		return v
	}
	for i := range n {
		fmt.Fprintf(&b, "%d,%s,%s,%s,%s,%s,%s\n", i+1,
			field("color", []string{"red", "blue", "green"}[rng.IntN(3)]),
			field("age", strconv.Itoa(rng.IntN(10))),
			field("score", strconv.FormatFloat(rng.Float64(), 'f', 3, 64)),
			field("day", fmt.Sprintf("2024-%02d-%02d", 1+rng.IntN(12), 1+rng.IntN(28))),
			field("flag", strconv.FormatBool(rng.IntN(2) == 0)),
			[]string{"x", "y"}[rng.IntN(2)])
	}
	for name, data := range map[string]string{"synth.yaml": nullableSpec, "p.csv": b.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "synth.yaml"), nulls
}

// TestNullableRoundTrip releases a table with NULLs in nullable columns of
// every type and follows the NULLs through: inspect counts the NULL cells
// in the domain, the synthetic Parquet file holds NULL (read by DuckDB as
// null, in optional columns; the plain column stays required and never
// null), the NULL shares are near the truth's, synth query counts them,
// evaluate's scorer bins them into their own cell, and the privacy report
// names them.
func TestNullableRoundTrip(t *testing.T) {
	const n = 4000
	config, trueNulls := writeNullable(t, n)
	r := mustRun(t, "-q", "inspect", "--config", config)
	for _, want := range []string{"color (categorical, 4 cells: 3 values and NULL)", "age (integer, 6 cells: 5 values and NULL)", "plain (categorical, 2 cells)", "universe (" + strconv.Itoa(4*6*5*13*3*2) + " cells)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("inspect does not say %q:\n%s", want, r.stdout)
		}
	}
	out := filepath.Join(t.TempDir(), "out")
	mustRun(t, "-q", "release", "--config", config, "--out", out, "--seed", "1")
	file := filepath.Join(out, layout.ParquetName)

	// An independent reader: DuckDB on the file.
	conn, err := duckdb.NewConnector("", nil)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	var rows int
	if err := db.QueryRow("SELECT count(*) FROM read_parquet(?)", file).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	schema := map[string]bool{} // column → nullable in the Parquet schema
	rs, err := db.Query("SELECT name, repetition_type FROM parquet_schema(?) WHERE num_children IS NULL", file)
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var name, rep string
		if err := rs.Scan(&name, &rep); err != nil {
			t.Fatal(err)
		}
		schema[name] = rep == "OPTIONAL"
	}
	rs.Close()
	synNulls := map[string]int{}
	for _, col := range []string{"color", "age", "score", "day", "flag", "plain"} {
		if want := col != "plain"; schema[col] != want {
			t.Errorf("column %s optional %v in the Parquet schema, want %v (schema %v)", col, schema[col], want, schema)
		}
		var k int
		if err := db.QueryRow(fmt.Sprintf(`SELECT count(*) FILTER (WHERE "%s" IS NULL) FROM read_parquet(?)`, col), file).Scan(&k); err != nil {
			t.Fatal(err)
		}
		synNulls[col] = k
		if col == "plain" {
			if k != 0 {
				t.Errorf("the plain column holds %d NULLs", k)
			}
			continue
		}
		// The 1-way marginals are measured at ε = 4 on 4000 rows: the
		// shares come out within a few points; 0.08 is a wide margin
		// (the run is seeded, so this is no statistical claim).
		got, want := float64(k)/float64(rows), float64(trueNulls[col])/n
		t.Logf("%s: NULL share %.3f in %d synthetic rows, %.3f true", col, got, rows, want)
		if math.Abs(got-want) > 0.08 {
			t.Errorf("%s: NULL share %.3f, true %.3f", col, got, want)
		}
	}

	// synth query counts the NULL cells as DuckDB does.
	r = mustRun(t, "query", out, `SELECT count(*) FILTER (WHERE color IS NULL) AS c, count(*) FILTER (WHERE day IS NULL) AS d FROM synthetic`, "--format", "csv")
	recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil || len(recs) != 2 || recs[1][0] != strconv.Itoa(synNulls["color"]) || recs[1][1] != strconv.Itoa(synNulls["day"]) {
		t.Errorf("synth query: %q (%v), want %d and %d NULLs", recs, err, synNulls["color"], synNulls["day"])
	}
	r = mustRun(t, "query", out, `SELECT color, count(*) AS n FROM synthetic GROUP BY color ORDER BY color NULLS LAST`, "--format", "csv")
	if recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll(); err != nil || len(recs) != 5 || recs[4][0] != "" || recs[4][1] != strconv.Itoa(synNulls["color"]) {
		t.Errorf("synth query by color: %q (%v), want the NULL group last with %d rows", recs, err, synNulls["color"])
	}

	// evaluate's scorer: NULL is its own cell, in the truth and in the file.
	s, err := spec.Load(config)
	if err != nil {
		t.Fatal(err)
	}
	truth, err := score.Truth(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	syn, err := score.Synthetic(t.Context(), s, file, []string{"color", "age", "score", "day", "flag", "plain"})
	if err != nil {
		t.Fatal(err)
	}
	if len(truth.Rows) != n || len(syn.Rows) != rows {
		t.Fatalf("scorer read %d true and %d synthetic rows, want %d and %d", len(truth.Rows), len(syn.Rows), n, rows)
	}
	for j, c := range s.ReleaseColumns() {
		count := func(tb *score.Table) int {
			k := 0
			for _, r := range tb.Rows {
				if r[j] == c.NullCell() {
					k++
				}
			}
			return k
		}
		if c.NullCell() < 0 {
			continue
		}
		if got := count(truth); got != trueNulls[c.Name] {
			t.Errorf("%s: the scorer's truth has %d NULL cells, the data %d", c.Name, got, trueNulls[c.Name])
		}
		if got := count(syn); got != synNulls[c.Name] {
			t.Errorf("%s: the scorer's synthetic table has %d NULL cells, the file %d", c.Name, got, synNulls[c.Name])
		}
	}
	r = mustRun(t, "-q", "evaluate", "--config", config, "--synthetic", file, "--format", "json")
	if !strings.Contains(r.stdout, "marginal(color,plain)") {
		t.Errorf("evaluate output lacks the marginal (color, plain):\n%s", r.stdout)
	}

	// The report names NULL in the domains.
	md, err := os.ReadFile(filepath.Join(out, "privacy-report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "red, blue, green, and NULL (nullable)") {
		t.Errorf("privacy-report.md does not name NULL in color's domain:\n%s", md)
	}
}

// TestNullableKeyRefused: a nullable key is a spec error (exit 2) naming
// the line and the column, before any data is read.
func TestNullableKeyRefused(t *testing.T) {
	config, _ := writeNullable(t, 10)
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(b), "id: {type: key}", "id: {type: key, nullable: true}", 1)
	if err := os.WriteFile(config, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"inspect", "release"} {
		r := run(t, "-q", cmd, "--config", config, "--out", filepath.Join(t.TempDir(), "out"))
		if cmd == "inspect" {
			r = run(t, "-q", cmd, "--config", config)
		}
		if r.code != ExitUsage || !strings.Contains(r.stderr, "synth.yaml:7: tables[0].columns.id.nullable: a key column cannot be nullable") {
			t.Errorf("%s: exit %d, stderr %q; want %d naming line 7", cmd, r.code, r.stderr, ExitUsage)
		}
	}
}
