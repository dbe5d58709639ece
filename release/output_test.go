package release

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/demo"
	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/output/publish"
	"github.com/synth-dp/synth/spec"
)

// demoSpec writes the demo instance (Example 4.2 with k) and returns its
// spec.
func demoSpec(t *testing.T, k int) *spec.Spec {
	t.Helper()
	s, err := demo.Write(t.TempDir(), k, 1, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// parquetRows reads every row of a Parquet file as a string, in file
// order, and its synth.privacy metadata.
func parquetRows(t *testing.T, path string) (rows []string, meta string) {
	t.Helper()
	pf := releasetest.OpenParquet(t, path)
	meta, _ = pf.Lookup(layout.MetadataKey)
	r := parquet.NewReader(pf)
	defer r.Close()
	for {
		row := parquet.Row{}
		row, err := readRow(r, row)
		if err != nil {
			break
		}
		var b strings.Builder
		for _, v := range row {
			fmt.Fprintf(&b, "%v|", v)
		}
		rows = append(rows, b.String())
	}
	if int64(len(rows)) != pf.NumRows() {
		t.Fatalf("read %d rows of %d", len(rows), pf.NumRows())
	}
	return rows, meta
}

func readRow(r *parquet.Reader, row parquet.Row) (parquet.Row, error) {
	rows := []parquet.Row{row}
	n, err := r.ReadRows(rows)
	if n == 1 {
		return rows[0], nil
	}
	if err == nil {
		err = errors.New("no row")
	}
	return nil, err
}

// runs counts the positions where a row differs from the one before it.
func runs(rows []string) int {
	n := 0
	for i := 1; i < len(rows); i++ {
		if rows[i] != rows[i-1] {
			n++
		}
	}
	return n
}

// TestReleaseRowsShuffled: the rows of a release are not grouped by cell
// (a sorted file's head is a biased sample): identical rows are scattered,
// the Parquet metadata equals the sidecar report, and the staging folder
// is gone. Fails on the sorted writer: runs = distinct cells − 1 there.
func TestReleaseRowsShuffled(t *testing.T) {
	s := demoSpec(t, 32)
	dir := filepath.Join(t.TempDir(), "out")
	sum := release(t, s, dir, 1)
	rows, meta := parquetRows(t, sum.Parquet)
	if int64(len(rows)) != sum.Rows || len(rows) < 1000 {
		t.Fatalf("%d rows, summary says %d; want ≥ 1000 for the test", len(rows), sum.Rows)
	}
	distinct := map[string]bool{}
	for _, r := range rows {
		distinct[r] = true
	}
	if got := runs(rows); got < 4*len(distinct) {
		t.Errorf("%d rows over %d distinct values change value %d times: the rows look grouped, not shuffled", len(rows), len(distinct), got)
	}
	rep, err := os.ReadFile(sum.Report)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(rep)) != meta {
		t.Error("the Parquet metadata is not the sidecar report")
	}
	releasetest.AssertOnly(t, filepath.Dir(dir), "out")
	releasetest.AssertOnly(t, dir, layout.ReportName, layout.MarkdownName, layout.ParquetName)
}

// TestReleaseRowsOption: Options.Rows writes exactly that many rows, above
// and below the DP row count, and the report says how they were drawn.
func TestReleaseRowsOption(t *testing.T) {
	s := demoSpec(t, 16)
	for _, n := range []int64{1, 37, 200_000} {
		dir := filepath.Join(t.TempDir(), "out")
		sum, err := Run(context.Background(), Options{Spec: s, OutDir: dir, Source: dp.NewSeededSource(3), Rows: n})
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := parquetRows(t, sum.Parquet)
		if sum.Rows != n || int64(len(rows)) != n {
			t.Errorf("Rows %d: summary %d, file %d rows", n, sum.Rows, len(rows))
		}
		p := sum.Privacy.Parameters
		if p["rows_written"] != n || p["rows_requested"] != n || p["rows_sampling"] == nil {
			t.Errorf("Rows %d: report parameters %v %v %v", n, p["rows_written"], p["rows_requested"], p["rows_sampling"])
		}
	}
}

// TestReleaseRowCap: a DP row count above the cap writes a random sample of
// the cap, says so in the log and the report.
func TestReleaseRowCap(t *testing.T) {
	s := demoSpec(t, 16)
	var logBuf bytes.Buffer
	dir := filepath.Join(t.TempDir(), "out")
	sum, err := Run(context.Background(), Options{Spec: s, OutDir: dir, Source: dp.NewSeededSource(3), MaxRows: 100,
		Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := parquetRows(t, sum.Parquet)
	p := sum.Privacy.Parameters
	if len(rows) != 100 || sum.Rows != 100 || p["rows_capped"] != true || p["rows_cap"] != int64(100) {
		t.Errorf("%d rows (summary %d), rows_capped %v, rows_cap %v; want 100 rows, capped", len(rows), sum.Rows, p["rows_capped"], p["rows_cap"])
	}
	if dpRows, _ := p["rows_dp"].(int64); dpRows <= 100 {
		t.Errorf("rows_dp = %v, want > 100 for the test", p["rows_dp"])
	}
	if !strings.Contains(logBuf.String(), "cap") {
		t.Errorf("the log does not mention the cap:\n%s", logBuf.String())
	}
	if DefaultMaxRows != 10_000_000 {
		t.Errorf("DefaultMaxRows = %d", DefaultMaxRows)
	}
}

// TestReleaseOutputBeforeData: output folder problems stop the run before
// any data is read (the spec's data file is missing, and its error must not
// be the one returned); a previous release is refused without Overwrite.
func TestReleaseOutputBeforeData(t *testing.T) {
	s := demoSpec(t, 8)
	for _, tab := range s.Tables {
		os.Remove(tab.Source)
	}
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{file, filepath.Join(file, "sub")} {
		_, err := Run(context.Background(), Options{Spec: s, OutDir: out, Source: dp.NewSeededSource(1)})
		if err == nil || !strings.Contains(err.Error(), "a-file") {
			t.Errorf("--out %s: err = %v; want an output error naming a-file", out, err)
		}
	}
	// A previous release.
	prev := filepath.Join(t.TempDir(), "prev")
	if err := os.Mkdir(prev, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{layout.ParquetName, layout.ReportName} {
		if err := os.WriteFile(filepath.Join(prev, f), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Run(context.Background(), Options{Spec: s, OutDir: prev, Source: dp.NewSeededSource(1)})
	if !errors.Is(err, publish.ErrExists) || !strings.Contains(err.Error(), "budget") {
		t.Errorf("release over a previous release: err = %v; want publish.ErrExists mentioning the budget", err)
	}
	releasetest.AssertOnly(t, prev, layout.ReportName, layout.ParquetName)
	releasetest.AssertOnly(t, filepath.Dir(prev), filepath.Base(prev))
	// Another run holding the folder: refused as busy, even with
	// Overwrite, before the (missing) data is read.
	held, err := publish.NewStage(prev, true)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), Options{Spec: s, OutDir: prev, Source: dp.NewSeededSource(1), Overwrite: true})
	held.Abort()
	if !errors.Is(err, publish.ErrBusy) {
		t.Errorf("release into a folder another run holds: err = %v; want publish.ErrBusy", err)
	}
	releasetest.AssertOnly(t, prev, layout.ReportName, layout.ParquetName)
	releasetest.AssertOnly(t, filepath.Dir(prev), filepath.Base(prev))
}

// TestReleaseReportParams: the report records the row sampling.
func TestReleaseReportParams(t *testing.T) {
	s := demoSpec(t, 8)
	sum := release(t, s, filepath.Join(t.TempDir(), "o"), 5)
	b, err := json.Marshal(sum.Privacy.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"rows_dp", "rows_written", "rows_sampling", "rows_cap", "rows_capped", "row_order"} {
		if !bytes.Contains(b, []byte(`"`+k+`"`)) {
			t.Errorf("report parameters lack %s: %s", k, b)
		}
	}
}

// TestReleaseRowsFromSpec: release.rows in the spec sets the number of rows
// written when --rows is not given.
func TestReleaseRowsFromSpec(t *testing.T) {
	s := releasetest.LoadSpec(t, filepath.Join("..", "examples", "tpch", "synth.yaml"))
	s.Release.Rows = 1234
	sum, err := Run(context.Background(), Options{Spec: s, OutDir: filepath.Join(t.TempDir(), "out"), Source: dp.NewSeededSource(3)})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Rows != 1234 {
		t.Fatalf("%d rows written, want release.rows = 1234", sum.Rows)
	}
}
