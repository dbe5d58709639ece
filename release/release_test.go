package release

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/demo"
	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/residual"
	"github.com/synth-dp/synth/spec"
)

func release(t testing.TB, s *spec.Spec, dir string, seed uint64) *Summary {
	t.Helper()
	sum, err := Run(context.Background(), Options{Spec: s, OutDir: dir, Engine: "duckdb", Source: dp.NewSeededSource(seed), Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// output returns a published DP output of the report by name.
func output(t testing.TB, r dp.Report, name string) float64 {
	t.Helper()
	for _, o := range r.Outputs {
		if o.Name == name {
			return o.Value
		}
	}
	t.Fatalf("report has no output %q: %+v", name, r.Outputs)
	return 0
}

var duckTypes = map[spec.ColumnType]string{
	spec.Categorical: "VARCHAR", spec.Boolean: "BOOLEAN", spec.Integer: "BIGINT",
	spec.Numeric: "DOUBLE", spec.Date: "DATE",
}

// TestReleaseExamples releases both examples with --seed 7 and reads the
// file back with DuckDB: the released columns with their declared types,
// round(n̂) rows, and the synth.privacy metadata equal to the sidecar
// report.
func TestReleaseExamples(t *testing.T) {
	for _, name := range []string{"tpch", "adult"} {
		t.Run(name, func(t *testing.T) {
			s := releasetest.LoadSpec(t, filepath.Join("..", "examples", name, "synth.yaml"))
			dir := t.TempDir()
			sum := release(t, s, dir, 7)
			db := releasetest.OpenDuckDB(t)
			path := filepath.Join(dir, layout.ParquetName)

			rows, err := db.Query("DESCRIBE SELECT * FROM read_parquet(?)", path)
			if err != nil {
				t.Fatal(err)
			}
			var gotCols, gotTypes []string
			for rows.Next() {
				var col, typ string
				var null, key, def, extra sql.NullString
				if err := rows.Scan(&col, &typ, &null, &key, &def, &extra); err != nil {
					t.Fatal(err)
				}
				gotCols = append(gotCols, col)
				gotTypes = append(gotTypes, typ)
			}
			rows.Close()
			names := layout.ColumnNames(s)
			if strings.Join(gotCols, ",") != strings.Join(names, ",") {
				t.Fatalf("columns %v, want %v", gotCols, names)
			}
			for i, c := range s.ReleaseColumns() {
				if gotTypes[i] != duckTypes[c.Type] {
					t.Errorf("column %s: DuckDB type %s, want %s for %s", names[i], gotTypes[i], duckTypes[c.Type], c.Type)
				}
			}

			var n int64
			if err := db.QueryRow("SELECT count(*) FROM read_parquet(?)", path).Scan(&n); err != nil {
				t.Fatal(err)
			}
			// The file holds the DP row count the report publishes (mwem's
			// unbiased estimate), beside the padded n̂ ≥ it.
			pubRows := output(t, sum.Privacy, "pmw_rows")
			if n != sum.Rows || float64(n) != pubRows {
				t.Fatalf("%d rows in the file, summary says %d, the report's pmw_rows = %v", n, sum.Rows, pubRows)
			}
			// A privacy-unit release has no n̂: its row count is a clipped DP
			// count (privacyunit).
			// The factored model draws no n̂ either: its rows are the
			// 1-way marginals' unbiased estimate.
			if sum.Privacy.Parameters["release_method"] != "privacy-unit" && sum.Privacy.Parameters["pmw_model"] != "factored" {
				if nHat := output(t, sum.Privacy, "n_hat"); nHat < pubRows*0.9 {
					t.Errorf("n̂ = %v far below the row estimate %v", nHat, pubRows)
				}
			}

			var meta string
			if err := db.QueryRow("SELECT decode(value) FROM parquet_kv_metadata(?) WHERE decode(key) = ?", path, layout.MetadataKey).Scan(&meta); err != nil {
				t.Fatal(err)
			}
			side, err := os.ReadFile(filepath.Join(dir, layout.ReportName))
			if err != nil {
				t.Fatal(err)
			}
			var fromMeta, fromSide map[string]any
			if err := json.Unmarshal([]byte(meta), &fromMeta); err != nil {
				t.Fatalf("metadata is not JSON: %v", err)
			}
			if err := json.Unmarshal(side, &fromSide); err != nil {
				t.Fatalf("sidecar is not JSON: %v", err)
			}
			a, _ := json.Marshal(fromMeta)
			b, _ := json.Marshal(fromSide)
			if string(a) != string(b) {
				t.Fatalf("metadata and sidecar differ:\n%s\n%s", a, b)
			}
			if fromMeta["privacy"] != dp.PrivacySeeded || fromMeta["seeded"] != true {
				t.Errorf("a seeded run is marked %v / seeded=%v", fromMeta["privacy"], fromMeta["seeded"])
			}
			if fromMeta["epsilon"] != s.Privacy.Epsilon || fromMeta["delta"] != s.Privacy.Delta {
				t.Errorf("report budget (%v, %v), spec (%v, %v)", fromMeta["epsilon"], fromMeta["delta"], s.Privacy.Epsilon, s.Privacy.Delta)
			}
			if fromMeta["spec_digest"] != s.Digest() || fromMeta["spec_digest"] == "" {
				t.Errorf("spec digest %v, want %v", fromMeta["spec_digest"], s.Digest())
			}
		})
	}
}

// numbers collects every number in a decoded JSON value.
func numbers(v any, out *[]float64) {
	switch x := v.(type) {
	case float64:
		*out = append(*out, x)
	case map[string]any:
		for _, e := range x {
			numbers(e, out)
		}
	case []any:
		for _, e := range x {
			numbers(e, out)
		}
	}
}

// trueStatistics computes the non-private statistics a release must never
// publish: the join size, every maximum degree, every T_E and RS^β, LŜ^0.
func trueStatistics(t *testing.T, s *spec.Spec) map[string]float64 {
	t.Helper()
	ctx := context.Background()
	h, err := s.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	eng := releasetest.LoadedEngine(t, s)
	secrets := map[string]float64{}
	n, err := eng.JoinSize(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	secrets["join size"] = float64(n)
	for i := 0; i < h.Len(); i++ {
		for _, a := range h.AttrsOf(1 << uint(i)) {
			d, err := eng.MaxDegree(ctx, h, i, []string{a})
			if err != nil {
				t.Fatal(err)
			}
			secrets["max degree of "+a+" in "+h.Relation(i).Name] = float64(d)
		}
	}
	beta := s.Privacy.Epsilon / math.Log(1/s.Privacy.Delta)
	sens, err := residual.Compute(ctx, h, eng, beta)
	if err != nil {
		t.Fatal(err)
	}
	secrets["RS"] = sens.RS
	secrets["LS^0"] = sens.LocalSensitivity
	for k, v := range sens.TE {
		secrets["T_"+k] = v
	}
	return secrets
}

// TestNoTrueStatisticLeaks releases TPC-H (Alg. 3) and the demo instance
// (Alg. 1), seeded, and checks that no true statistic — join size, maximum
// degrees, T_E, RS^β, LŜ^0 — appears as a number in the report or the
// Parquet metadata. Values below 20 are skipped: small integers such as T
// or a bin count would match by coincidence, and a true statistic that
// small carries little; every larger one must be absent.
func TestNoTrueStatisticLeaks(t *testing.T) {
	demoDir := t.TempDir()
	demoSpec, err := demo.Write(demoDir, 64, 1, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*spec.Spec{
		"tpch": releasetest.LoadSpec(t, "../examples/tpch/synth.yaml"),
		"demo": demoSpec,
	} {
		t.Run(name, func(t *testing.T) {
			secrets := trueStatistics(t, s)
			dir := t.TempDir()
			release(t, s, dir, 7)
			side, err := os.ReadFile(filepath.Join(dir, layout.ReportName))
			if err != nil {
				t.Fatal(err)
			}
			var meta string
			if err := releasetest.OpenDuckDB(t).QueryRow("SELECT decode(value) FROM parquet_kv_metadata(?) WHERE decode(key) = ?",
				filepath.Join(dir, layout.ParquetName), layout.MetadataKey).Scan(&meta); err != nil {
				t.Fatal(err)
			}
			checked := 0
			for _, doc := range []string{string(side), meta} {
				var v any
				if err := json.Unmarshal([]byte(doc), &v); err != nil {
					t.Fatal(err)
				}
				var nums []float64
				numbers(v, &nums)
				for what, secret := range secrets {
					if secret < 20 {
						continue
					}
					checked++
					for _, x := range nums {
						if x == secret {
							t.Errorf("the report publishes %v, the true %s", x, what)
						}
					}
				}
			}
			if checked == 0 {
				t.Fatalf("no true statistic ≥ 20 to check: the test would pass vacuously (secrets %v)", secrets)
			}
			t.Logf("checked %d true statistics: %v", checked/2, secrets)
		})
	}
}

// TestReleaseCancelMidWrite cancels a release after half the rows of an
// earlier release were written: the call returns context.Canceled, an earlier release in the same
// folder survives byte for byte, no temporary file stays, and a rerun
// succeeds.
func TestReleaseCancelMidWrite(t *testing.T) {
	s := releasetest.LoadSpec(t, "../examples/tpch/synth.yaml")
	dir := t.TempDir()
	first := release(t, s, dir, 1)
	before := map[string][]byte{}
	for _, f := range []string{layout.ParquetName, layout.ReportName, layout.MarkdownName} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		before[f] = b
	}
	for _, target := range []string{dir, t.TempDir()} {
		ctx, cancel := context.WithCancel(context.Background())
		var sawRows int64
		testHookAdd = func(rows int64) {
			if rows > first.Rows/2 && sawRows == 0 {
				sawRows = rows
				cancel()
			}
		}
		_, err := Run(ctx, Options{Spec: s, OutDir: target, Source: dp.NewSeededSource(2), Overwrite: true})
		testHookAdd = nil
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if sawRows == 0 {
			t.Fatal("the release finished before it could be cancelled mid-write")
		}
		entries, err := os.ReadDir(target)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if _, old := before[e.Name()]; !old || target != dir {
				t.Errorf("after a cancelled release %s holds %s", target, e.Name())
			}
		}
	}
	for f, b := range before {
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || string(got) != string(b) {
			t.Errorf("the earlier release's %s changed (err %v)", f, err)
		}
	}
	sum := release(t, s, dir, 3)
	if sum.Rows == 0 {
		t.Fatal("rerun wrote no rows")
	}
}
