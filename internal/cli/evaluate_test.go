package cli

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvaluateReport releases the tiny instance and writes its report:
// stdout names index.html, summary.json carries the release's privacy
// parameters and a headline, the figures exist; with --format json stdout
// stays one JSON document; the report replaces an earlier one.
func TestEvaluateReport(t *testing.T) {
	config, _ := writeTiny(t, tinyOptions{})
	out := t.TempDir()
	releaseOnce(t, config, out, "--seed", "7")
	synthetic := filepath.Join(out, "synthetic.parquet")
	dir := filepath.Join(t.TempDir(), "report")

	r := mustRun(t, "-q", "evaluate", "--config", config, "--synthetic", synthetic, "--report", dir)
	index := filepath.Join(dir, "index.html")
	if !strings.Contains(r.stdout, "report (INTERNAL, do not publish): "+index+"\n") {
		t.Errorf("stdout does not name %s:\n%s", index, r.stdout)
	}
	if r.stderr != "synth: evaluate reads the private data; its output is INTERNAL and not differentially private\n" {
		t.Errorf("stderr under -q (no progress bars off a terminal):\n%s", r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Label   string `json:"label"`
		Privacy *struct {
			Epsilon   float64 `json:"epsilon"`
			Mechanism string  `json:"mechanism"`
			Privacy   string  `json:"privacy"`
		} `json:"privacy"`
		Headline []struct {
			Kind               string
			Synthetic, Uniform float64
		} `json:"headline"`
		Families []struct{ Figure string } `json:"families"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatalf("summary.json: %v\n%s", err, b)
	}
	if !strings.HasPrefix(sum.Label, "INTERNAL") {
		t.Errorf("label %q", sum.Label)
	}
	if p := sum.Privacy; p == nil || p.Epsilon != 1 || p.Mechanism == "" || p.Privacy != "not private (seeded)" {
		t.Errorf("privacy %+v, want ε = 1, a mechanism, seeded", p)
	}
	if len(sum.Headline) == 0 || sum.Headline[0].Kind != "marginal" {
		t.Errorf("headline %+v", sum.Headline)
	}
	for _, f := range sum.Families {
		if f.Figure == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f.Figure))); err != nil {
			t.Error(err)
		}
	}

	j := mustRun(t, "-q", "evaluate", "--config", config, "--synthetic", synthetic, "--report", dir, "--format", "json")
	var ev map[string]any
	if err := json.Unmarshal([]byte(j.stdout), &ev); err != nil {
		t.Errorf("--format json with --report: stdout is not one JSON document: %v\n%s", err, j.stdout)
	}
}

// TestEvaluateReportRefused: a --report folder holding other files is a
// usage error (exit 2) naming it, raised before any data is read (the
// synthetic file does not even exist), and the folder is untouched.
func TestEvaluateReportRefused(t *testing.T) {
	config, _ := writeTiny(t, tinyOptions{})
	dir := t.TempDir()
	mine := filepath.Join(dir, "thesis.tex")
	if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, "-q", "evaluate", "--config", config, "--synthetic", filepath.Join(dir, "none.parquet"), "--report", dir)
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--report "+dir) || !strings.Contains(r.stderr, "not a synth report") {
		t.Errorf("exit %d, stderr %q; want %d naming --report %s", r.code, r.stderr, ExitUsage, dir)
	}
	if strings.Contains(r.stderr, "none.parquet") {
		t.Errorf("the synthetic file was read before the folder was checked:\n%s", r.stderr)
	}
	if b, err := os.ReadFile(mine); err != nil || string(b) != "mine" {
		t.Errorf("the refused folder changed: %q %v", b, err)
	}
}

// TestEvaluateMeasureSums: evaluate scores the workload's sums of a
// release.measures column (which the workload's own families skip): one
// "measure sum(…)" family per such query whose true value is the sum over
// the data (computed here from the generated rows) and whose synthetic
// value is the file's SQL SUM under the query's conditions (run here with
// DuckDB on the file).
func TestEvaluateMeasureSums(t *testing.T) {
	dir := t.TempDir()
	var data strings.Builder
	data.WriteString("kind,spend\n")
	want := map[string]float64{}
	for i := range 400 {
		k := []string{"x", "y"}[i%2]
		fmt.Fprintf(&data, "%s,%d\n", k, i%50)
		want[k] += float64(i % 50)
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
  numeric: [{sum: spend, where: {kind: [y]}}, {sum: spend}]
`
	for name, text := range map[string]string{"synth.yaml": spec, "t.csv": data.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config, out := filepath.Join(dir, "synth.yaml"), filepath.Join(dir, "out")
	mustRun(t, "-q", "--seed", "3", "release", "--config", config, "--out", out)
	pq := filepath.Join(out, "synthetic.parquet")
	r := mustRun(t, "-q", "evaluate", "--config", config, "--synthetic", pq, "--format", "json")
	var ev struct {
		Families []struct {
			Name     string
			Queries  int
			Absolute struct{ Max float64 }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &ev); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, c := range []struct{ name, where string }{
		{"measure sum(spend) where kind [workload.numeric[0]]", " WHERE kind = 'y'"},
		{"measure sum(spend) [workload.numeric[1]]", ""},
	} {
		var file float64
		if err := db.QueryRow("SELECT SUM(spend) FROM read_parquet('" + pq + "')" + c.where).Scan(&file); err != nil {
			t.Fatal(err)
		}
		truth := want["y"]
		if c.where == "" {
			truth += want["x"]
		}
		found := false
		for _, f := range ev.Families {
			if f.Name != c.name {
				continue
			}
			found = true
			if got, exp := f.Absolute.Max, math.Abs(file-truth); f.Queries != 1 || math.Abs(got-exp) > 1e-6*math.Max(1, exp) {
				t.Errorf("%s: %d queries, |error| %v; want 1 query, |file %v − true %v| = %v", c.name, f.Queries, got, file, truth, exp)
			}
		}
		if !found {
			t.Errorf("no family %q in %+v", c.name, ev.Families)
		}
	}
}
