package cli

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReleaseSummarySQL releases a one-table spec with a measure and checks
// the summary's lines: the measure's line, and example count and sum
// queries that DuckDB runs as printed on the written file.
func TestReleaseSummarySQL(t *testing.T) {
	dir := t.TempDir()
	var data strings.Builder
	data.WriteString("kind,spend\n")
	for i := range 400 {
		fmt.Fprintf(&data, "%s,%d\n", []string{"x", "y"}[i%2], i%50)
	}
	spec := `privacy: {epsilon: 2, delta: 1e-6}
tables:
  - name: t
    source: t.csv
    columns:
      kind: {type: categorical, values: [x, y]}
      spend: {type: integer, min: 0, max: 60, bins: 6}
release:
  columns: [kind]
  measures: [spend]
workload:
  marginals: [[kind]]
  numeric: [{sum: spend, where: {kind: [y]}}]
`
	for name, text := range map[string]string{"synth.yaml": spec, "t.csv": data.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out")
	r := mustRun(t, "-q", "--seed", "3", "release", "--config", filepath.Join(dir, "synth.yaml"), "--out", out)
	var countSQL, sumSQL string
	for _, line := range strings.Split(r.stdout, "\n") {
		if s, ok := strings.CutPrefix(line, "example count (DuckDB): "); ok {
			countSQL = s
		}
		if s, ok := strings.CutPrefix(line, "example sum (DuckDB):   "); ok {
			sumSQL = s
		}
	}
	if !strings.Contains(r.stdout, "measure t.spend: column spend, 2 cell(s)") {
		t.Errorf("no measure line in:\n%s", r.stdout)
	}
	// The error scale: spend ∈ [0, 60], ε_m = 0.6·2 (the default share),
	// one table (Δ̃ = 1): noise scale 60/1.2 = 50, 95% half-width
	// ln(20)·50 ≈ 150.
	if !strings.Contains(r.stdout, "measure t.spend error scale: a sum of t.spend at ε = 1.2 carries noise of scale 50 (95%: ±150;") {
		t.Errorf("no error-scale line in:\n%s", r.stdout)
	}
	pq := filepath.Join(out, "synthetic.parquet")
	if want := `SELECT SUM("spend") FROM '` + pq + `' WHERE "kind" IN ('y')`; sumSQL != want {
		t.Errorf("sum query %q, want %q", sumSQL, want)
	}
	if want := `SELECT "kind", COUNT(*) AS n FROM '` + pq + `' GROUP BY 1 ORDER BY 1`; countSQL != want {
		t.Errorf("count query %q, want %q", countSQL, want)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var s float64
	if err := db.QueryRow(sumSQL).Scan(&s); err != nil {
		t.Errorf("%s: %v", sumSQL, err)
	}
	rows, err := db.Query(countSQL)
	if err != nil {
		t.Fatalf("%s: %v", countSQL, err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	if n != 2 {
		t.Errorf("%s: %d groups, want 2", countSQL, n)
	}
}
