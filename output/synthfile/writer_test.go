package synthfile

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/parquet-go/parquet-go"

	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/output/publish"
	"github.com/synth-dp/synth/spec"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fixture is a universe over all five released types, with names out of
// alphabetical order so that the column order is tested too. Sizes 3·2·2·4·4
// = 192 cells; cell = (((b0·2 + b1)·2 + b2)·4 + b3)·4 + b4.
func fixture() ([]string, []*spec.Column) {
	names := []string{"region", "active", "qty", "price", "day"}
	cols := []*spec.Column{
		{Name: "r", Type: spec.Categorical, Values: []string{"north", "süd", "it's"}},
		{Name: "a", Type: spec.Boolean},
		{Name: "q", Type: spec.Integer, Min: 1, Max: 10, Bins: 2}, // 3, 8
		{Name: "p", Type: spec.Numeric, Min: 0, Max: 10, Bins: 4}, // 1.25, 3.75, 6.25, 8.75
		{Name: "d", Type: spec.Date, DateMin: day("2023-11-15"), DateMax: day("2024-02-10"), Granularity: spec.Month},
	}
	return names, cols
}

func cellOf(b ...int64) int64 { return (((b[0]*2+b[1])*2+b[2])*4+b[3])*4 + b[4] }

// row is one output row as read back, the date as text.
type row struct {
	Region string
	Active bool
	Qty    int64
	Price  float64
	Day    string
}

type cellCount struct{ cell, count int64 }

// fixtureCounts and fixtureRows are the known input and output of the round
// trip, written out by hand from the decoding rules.
var fixtureCounts = []cellCount{
	{cellOf(0, 0, 0, 0, 0), 2},
	{cellOf(1, 1, 1, 2, 3), 1},
	{cellOf(2, 0, 1, 3, 1), 0},
	{cellOf(2, 1, 0, 1, 2), 3},
	{191, 1},
}

var fixtureRows = []row{
	{"north", false, 3, 1.25, "2023-11-15"},
	{"north", false, 3, 1.25, "2023-11-15"},
	{"süd", true, 8, 6.25, "2024-02-01"},
	{"it's", true, 3, 3.75, "2024-01-01"},
	{"it's", true, 3, 3.75, "2024-01-01"},
	{"it's", true, 3, 3.75, "2024-01-01"},
	{"it's", true, 8, 8.75, "2024-02-01"},
}

const testReport = `{"epsilon": 1, "delta": 1e-6, "mechanism": "join-as-one (Alg. 1)", "note": "ε ≤ 1"}`

func testMetadata() map[string]string {
	return map[string]string{layout.MetadataKey: testReport, "synth.extra": "x=1"}
}

// readRows reads every row of a released file with DuckDB, in file order.
func readRows(t *testing.T, db *sql.DB, path string) []row {
	t.Helper()
	rs, err := db.Query(`SELECT region, active, qty, price, CAST(day AS VARCHAR) FROM read_parquet(` + releasetest.SQLString(path) + `)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.Region, &r.Active, &r.Qty, &r.Price, &r.Day); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// describe returns DuckDB's DESCRIBE of a Parquet file as "name TYPE null"
// lines.
func describe(t *testing.T, db *sql.DB, path string) string {
	t.Helper()
	rs, err := db.Query(`DESCRIBE SELECT * FROM read_parquet(` + releasetest.SQLString(path) + `)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var b strings.Builder
	for rs.Next() {
		var name, typ, null, key, def, extra sql.NullString
		if err := rs.Scan(&name, &typ, &null, &key, &def, &extra); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s\n", name.String, typ.String)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// writeFixture writes fixtureCounts to dir/out.parquet with the given batch
// size.
func writeFixture(t *testing.T, dir string, batch int) string {
	t.Helper()
	names, cols := fixture()
	path := filepath.Join(dir, "out.parquet")
	w, err := newWriter(path, names, cols, testMetadata(), batch)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, cc := range fixtureCounts {
		if err := w.Add(context.Background(), cc.cell, cc.count); err != nil {
			t.Fatal(err)
		}
	}
	if w.Rows() != int64(len(fixtureRows)) {
		t.Errorf("Rows() = %d, want %d", w.Rows(), len(fixtureRows))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	return path
}

func TestWriterRoundTrip(t *testing.T) {
	db := releasetest.OpenDuckDB(t)
	for _, batch := range []int{1, 2, 3, BatchRows} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			dir := t.TempDir()
			path := writeFixture(t, dir, batch)
			releasetest.AssertOnly(t, dir, "out.parquet")
			got := readRows(t, db, path)
			if !reflect.DeepEqual(got, fixtureRows) {
				t.Errorf("rows read back:\n%v\nwant\n%v", got, fixtureRows)
			}
			var n int64
			if err := db.QueryRow(`SELECT count(*) FROM read_parquet(` + releasetest.SQLString(path) + `)`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != int64(len(fixtureRows)) {
				t.Errorf("count(*) = %d, want %d", n, len(fixtureRows))
			}
		})
	}
}

func TestWriterTypesAndSchemaGolden(t *testing.T) {
	db := releasetest.OpenDuckDB(t)
	path := writeFixture(t, t.TempDir(), BatchRows)

	want := "region VARCHAR\nactive BOOLEAN\nqty BIGINT\nprice DOUBLE\nday DATE\n"
	desc := describe(t, db, path)
	if desc != want {
		t.Errorf("DuckDB DESCRIBE:\n%s\nwant\n%s", desc, want)
	}

	pf := releasetest.OpenParquet(t, path)
	if pf.NumRows() != int64(len(fixtureRows)) {
		t.Errorf("parquet-go NumRows = %d, want %d", pf.NumRows(), len(fixtureRows))
	}
	for _, c := range pf.Schema().Fields() {
		if !c.Required() {
			t.Errorf("column %s is not required", c.Name())
		}
	}
	names, cols := fixture()
	s, err := Schema(names, cols)
	if err != nil {
		t.Fatal(err)
	}
	got := "# parquet-go schema of the file\n" + pf.Schema().String() +
		"\n# DuckDB: DESCRIBE SELECT * FROM read_parquet(...)\n" + desc
	if s.String() != pf.Schema().String() {
		t.Errorf("Schema() =\n%s\nfile schema\n%s", s, pf.Schema())
	}
	golden(t, filepath.Join("testdata", "schema.golden"), got)
}

// golden compares got with the golden file, or rewrites it under -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./release/ -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test ./release/ -update rewrites it):\ngot\n%s\nwant\n%s", path, got, want)
	}
}

func TestWriterMetadata(t *testing.T) {
	db := releasetest.OpenDuckDB(t)
	path := writeFixture(t, t.TempDir(), BatchRows)

	// DuckDB.
	rs, err := db.Query(`SELECT key, value FROM parquet_kv_metadata(` + releasetest.SQLString(path) + `) ORDER BY key`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	kv := map[string]string{}
	for rs.Next() {
		var k, v []byte
		if err := rs.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		kv[string(k)] = string(v)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(kv, testMetadata()) {
		t.Errorf("DuckDB key-value metadata = %q, want %q", kv, testMetadata())
	}
	var report map[string]any
	if err := json.Unmarshal([]byte(kv[layout.MetadataKey]), &report); err != nil {
		t.Fatalf("%s read by DuckDB is not JSON: %v", layout.MetadataKey, err)
	}
	if report["note"] != "ε ≤ 1" || report["epsilon"] != 1.0 {
		t.Errorf("report read by DuckDB = %v", report)
	}

	// parquet-go.
	pf := releasetest.OpenParquet(t, path)
	v, ok := pf.Lookup(layout.MetadataKey)
	if !ok || v != testReport {
		t.Errorf("parquet-go Lookup(%q) = %q, %v", layout.MetadataKey, v, ok)
	}
	if !json.Valid([]byte(v)) {
		t.Errorf("%s read by parquet-go is not JSON", layout.MetadataKey)
	}
	if v, ok := pf.Lookup("synth.extra"); !ok || v != "x=1" {
		t.Errorf("parquet-go Lookup(synth.extra) = %q, %v", v, ok)
	}
}

func TestWriterManyBatches(t *testing.T) {
	db := releasetest.OpenDuckDB(t)
	dir := t.TempDir()
	names, cols := fixture()
	path := filepath.Join(dir, "big.parquet")
	w, err := NewWriter(path, names, cols, testMetadata())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	// 2.5 batches in the first cell, a few rows in the last.
	counts := []cellCount{{cellOf(0, 1, 1, 3, 0), 5*BatchRows/2 + 7}, {cellOf(2, 0, 0, 0, 3), 11}}
	for _, cc := range counts {
		if err := w.Add(context.Background(), cc.cell, cc.count); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var n, trues, qtySum int64
	var priceSum float64
	q := `SELECT count(*), count(*) FILTER (WHERE active), sum(qty), sum(price) FROM read_parquet(` + releasetest.SQLString(path) + `)`
	if err := db.QueryRow(q).Scan(&n, &trues, &qtySum, &priceSum); err != nil {
		t.Fatal(err)
	}
	c0, c1 := counts[0].count, counts[1].count
	if n != c0+c1 || trues != c0 || qtySum != 8*c0+3*c1 || priceSum != 8.75*float64(c0)+1.25*float64(c1) {
		t.Errorf("count %d, true %d, sum(qty) %d, sum(price) %g; want %d, %d, %d, %g",
			n, trues, qtySum, priceSum, c0+c1, c0, 8*c0+3*c1, 8.75*float64(c0)+1.25*float64(c1))
	}
}

func TestWriterEmpty(t *testing.T) {
	db := releasetest.OpenDuckDB(t)
	dir := t.TempDir()
	names, cols := fixture()
	path := filepath.Join(dir, "empty.parquet")
	w, err := NewWriter(path, names, cols, testMetadata())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(context.Background(), 5, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := db.QueryRow(`SELECT count(*) FROM read_parquet(` + releasetest.SQLString(path) + `)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 || w.Rows() != 0 {
		t.Errorf("count(*) = %d, Rows() = %d, want 0", n, w.Rows())
	}
	if got := describe(t, db, path); !strings.HasPrefix(got, "region VARCHAR\n") {
		t.Errorf("empty file DESCRIBE = %q", got)
	}
}

func TestNewWriterErrors(t *testing.T) {
	names, cols := fixture()
	tests := []struct {
		name     string
		path     string // relative to a fresh folder
		names    []string
		metadata map[string]string
	}{
		{"no report", "o.parquet", names, map[string]string{"synth.extra": "1"}},
		{"report not JSON", "o.parquet", names, map[string]string{layout.MetadataKey: "{epsilon: 1"}},
		{"empty key", "o.parquet", names, map[string]string{layout.MetadataKey: "{}", "": "x"}},
		{"bad columns", "o.parquet", names[:2], map[string]string{layout.MetadataKey: "{}"}},
		{"missing folder", "no/such/o.parquet", names, map[string]string{layout.MetadataKey: "{}"}},
		{"path is a folder", "sub", names, map[string]string{layout.MetadataKey: "{}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			w, err := NewWriter(filepath.Join(dir, tt.path), tt.names, cols, tt.metadata)
			if err == nil {
				w.Abort()
				t.Fatal("NewWriter succeeded")
			}
			if !strings.HasPrefix(err.Error(), "release: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			releasetest.AssertOnly(t, dir, "sub")
		})
	}
}

func TestWriterAddErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		counts []cellCount
		want   error // nil: any error
	}{
		{"decreasing cell", []cellCount{{5, 1}, {4, 1}}, ErrCellOrder},
		{"repeated cell", []cellCount{{5, 1}, {5, 1}}, ErrCellOrder},
		{"negative cell", []cellCount{{-1, 1}}, ErrCellRange},
		{"cell past the universe", []cellCount{{190, 1}, {192, 1}}, ErrCellRange},
		{"negative count", []cellCount{{3, -1}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			names, cols := fixture()
			w, err := NewWriter(filepath.Join(dir, "o.parquet"), names, cols, testMetadata())
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			var addErr error
			for _, cc := range tt.counts {
				if addErr = w.Add(ctx, cc.cell, cc.count); addErr != nil {
					break
				}
			}
			if addErr == nil || (tt.want != nil && !errors.Is(addErr, tt.want)) {
				t.Fatalf("Add error = %v, want %v", addErr, tt.want)
			}
			// The error is sticky and the temporary file is gone.
			releasetest.AssertOnly(t, dir)
			if err := w.Add(ctx, 191, 1); err != addErr {
				t.Errorf("later Add = %v, want the first error", err)
			}
			if err := w.Close(); err != addErr {
				t.Errorf("Close = %v, want the first error", err)
			}
			releasetest.AssertOnly(t, dir)
		})
	}
}

// countingContext reports context.Canceled from the (after+1)-th call of
// Err on: a deterministic cancellation in the middle of a write.
type countingContext struct {
	context.Context
	calls atomic.Int64
	after int64
}

func (c *countingContext) Err() error {
	if c.calls.Add(1) > c.after {
		return context.Canceled
	}
	return nil
}

func TestWriterCancelMidWrite(t *testing.T) {
	dir := t.TempDir()
	names, cols := fixture()
	const batch = 4
	w, err := newWriter(filepath.Join(dir, "o.parquet"), names, cols, testMetadata(), batch)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	ctx := &countingContext{Context: context.Background(), after: 3}
	if err := w.Add(ctx, 0, 2); err != nil { // call 1
		t.Fatal(err)
	}
	// Call 2 at entry, call 3 after the first batch, call 4 after the
	// second: cancelled there, long before the 1000 rows are written.
	err = w.Add(ctx, 1, 1000)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Add = %v, want context.Canceled", err)
	}
	if w.Rows() > 2+2*batch {
		t.Errorf("Rows() = %d: the writer did not stop at the first batch after cancellation", w.Rows())
	}
	if err := w.Close(); !errors.Is(err, context.Canceled) {
		t.Errorf("Close = %v, want context.Canceled", err)
	}
	releasetest.AssertOnly(t, dir)
}

func TestWriterCancelledContext(t *testing.T) {
	dir := t.TempDir()
	names, cols := fixture()
	w, err := NewWriter(filepath.Join(dir, "o.parquet"), names, cols, testMetadata())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	ctx, cancel := context.WithCancel(context.Background())
	if err := w.Add(ctx, 0, 10); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := w.Add(ctx, 1, 10); !errors.Is(err, context.Canceled) {
		t.Errorf("Add after cancel = %v, want context.Canceled", err)
	}
	if err := w.Close(); !errors.Is(err, context.Canceled) {
		t.Errorf("Close = %v, want context.Canceled", err)
	}
	releasetest.AssertOnly(t, dir)
}

func TestWriterAbort(t *testing.T) {
	dir := t.TempDir()
	names, cols := fixture()
	w, err := newWriter(filepath.Join(dir, "o.parquet"), names, cols, testMetadata(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(context.Background(), 7, 5); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	releasetest.AssertOnly(t, dir)
	w.Abort() // idempotent
	if err := w.Add(context.Background(), 8, 1); !errors.Is(err, ErrWriterDone) {
		t.Errorf("Add after Abort = %v, want ErrWriterDone", err)
	}
	if err := w.Close(); !errors.Is(err, ErrWriterDone) {
		t.Errorf("Close after Abort = %v, want ErrWriterDone", err)
	}
	releasetest.AssertOnly(t, dir)
}

func TestWriterAbortKeepsEarlierOutput(t *testing.T) {
	for _, how := range []string{"abort", "cancel", "abort after finish"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.parquet")
			old := []byte("the previous release")
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Fatal(err)
			}
			names, cols := fixture()
			w, err := newWriter(path, names, cols, testMetadata(), 2)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := w.Add(ctx, 3, 5); err != nil {
				t.Fatal(err)
			}
			// While writing, the old file is intact and the new bytes go to a
			// hidden temporary file in the same folder.
			ents, _ := os.ReadDir(dir)
			if len(ents) != 2 {
				t.Fatalf("folder holds %d entries during the write, want 2", len(ents))
			}
			for _, e := range ents {
				if n := e.Name(); n != "out.parquet" && !(strings.HasPrefix(n, ".out.parquet.") && strings.HasSuffix(n, ".tmp")) {
					t.Errorf("unexpected file %q during the write", n)
				}
			}
			switch how {
			case "abort":
				w.Abort()
			case "cancel":
				cancel()
				if err := w.Add(ctx, 4, 1); !errors.Is(err, context.Canceled) {
					t.Fatalf("Add = %v", err)
				}
			case "abort after finish":
				f, err := w.Finish()
				if err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(f.TempPath()); err != nil {
					t.Fatalf("finished temporary file: %v", err)
				}
				w.Abort()
			}
			if err := w.Close(); err == nil {
				t.Error("Close after a failed write succeeded")
			}
			releasetest.AssertOnly(t, dir, "out.parquet")
			if got, _ := os.ReadFile(path); !bytes.Equal(got, old) {
				t.Errorf("earlier output changed to %q", got)
			}
		})
	}
}

func TestWriterReplacesEarlierOutput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.parquet")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFixture(t, dir, 3)
	releasetest.AssertOnly(t, dir, "out.parquet")
	got := readRows(t, releasetest.OpenDuckDB(t), path)
	if !reflect.DeepEqual(got, fixtureRows) {
		t.Errorf("rows = %v", got)
	}
}

func TestWriterFinishWithGroup(t *testing.T) {
	dir := t.TempDir()
	names, cols := fixture()
	var g publish.Group
	defer g.Abort()
	if _, err := g.Create(filepath.Join(dir, "report.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(filepath.Join(dir, "out.parquet"), names, cols, testMetadata())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, cc := range fixtureCounts {
		if err := w.Add(context.Background(), cc.cell, cc.count); err != nil {
			t.Fatal(err)
		}
	}
	f, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(context.Background(), 191, 1); !errors.Is(err, ErrWriterDone) {
		t.Errorf("Add after Finish = %v, want ErrWriterDone", err)
	}
	if _, err := w.Finish(); !errors.Is(err, ErrWriterDone) {
		t.Errorf("second Finish = %v, want ErrWriterDone", err)
	}
	g.Add(f)
	for _, name := range []string{"out.parquet", "report.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s visible before Commit (%v)", name, err)
		}
	}
	if err := g.Commit(); err != nil {
		t.Fatal(err)
	}
	releasetest.AssertOnly(t, dir, "out.parquet", "report.json")
	if got := readRows(t, releasetest.OpenDuckDB(t), filepath.Join(dir, "out.parquet")); !reflect.DeepEqual(got, fixtureRows) {
		t.Errorf("rows = %v", got)
	}
}

// benchColumns is a universe of 10·2·100·8·30 = 480,000 cells.
func benchColumns() ([]string, []*spec.Column) {
	return []string{"cat", "flag", "n", "x", "d"}, []*spec.Column{
		{Type: spec.Categorical, Values: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}},
		{Type: spec.Boolean},
		{Type: spec.Integer, Min: 0, Max: 99},
		{Type: spec.Numeric, Min: 0, Max: 1, Bins: 8},
		{Type: spec.Date, DateMin: day("2024-01-01"), DateMax: day("2024-01-30"), Granularity: spec.Day},
	}
}

// BenchmarkWriter writes 10^6 rows over 1000 cells (1000 rows each) to a
// Parquet file and reports rows per second.
func BenchmarkWriter(b *testing.B) {
	names, cols := benchColumns()
	const cells, perCell = 1000, 1000
	dir := b.TempDir()
	path := filepath.Join(dir, "bench.parquet")
	meta := map[string]string{layout.MetadataKey: `{"bench": true}`}
	iters := 0
	for b.Loop() {
		iters++
		w, err := NewWriter(path, names, cols, meta)
		if err != nil {
			b.Fatal(err)
		}
		for i := range int64(cells) {
			if err := w.Add(context.Background(), i*480, perCell); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cells*perCell)*float64(iters)/b.Elapsed().Seconds(), "rows/s")
}

// TestWriterRowGroups writes one row more than a row group holds, through
// batches that do not divide the row group, and checks the groups' sizes
// (at most 2^20 rows each, as MaxRowsPerRowGroup did for the row-wise
// writer) and the rows read back.
func TestWriterRowGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 2^20 + 1 rows")
	}
	dir := t.TempDir()
	names, cols := fixture()
	path := filepath.Join(dir, "groups.parquet")
	w, err := newWriter(path, names, cols, testMetadata(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	// Cells 0..9 with 104,857 rows each, then cell 191 with 1 row:
	// 1,048,570 + 7 rows = 2^20 + 1 after the last two cells below.
	var want int64
	for c := range int64(10) {
		if err := w.Add(context.Background(), c, 104_857); err != nil {
			t.Fatal(err)
		}
		want += 104_857
	}
	if err := w.Add(context.Background(), 100, rowGroupRows-want); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(context.Background(), 191, 1); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pf := releasetest.OpenParquet(t, path)
	var sizes []int64
	for _, rg := range pf.RowGroups() {
		sizes = append(sizes, rg.NumRows())
	}
	if !reflect.DeepEqual(sizes, []int64{rowGroupRows, 1}) {
		t.Errorf("row groups of %v rows, want [%d 1]", sizes, rowGroupRows)
	}
	db := releasetest.OpenDuckDB(t)
	var n, last, firstTen int64
	q := `SELECT count(*), count(*) FILTER (WHERE day = DATE '2024-02-01' AND region = 'it''s' AND qty = 8),
		count(*) FILTER (WHERE region = 'north' AND NOT active AND qty = 3) FROM read_parquet(` + releasetest.SQLString(path) + `)`
	if err := db.QueryRow(q).Scan(&n, &last, &firstTen); err != nil {
		t.Fatal(err)
	}
	// Cells 0..9 all have region north, active false and qty 3 (bins
	// (0,0,0,·,·)); cell 100 = (1,1,0,1,0) and cell 191 = (2,1,1,3,3) do
	// not.
	if n != rowGroupRows+1 || last != 1 || firstTen != 10*104_857 {
		t.Errorf("count %d, last-cell rows %d, first cells' rows %d; want %d, 1, %d", n, last, firstTen, rowGroupRows+1, 10*104_857)
	}
}

// TestWriterStatistics: every column chunk carries its min and max (what
// DuckDB prunes row groups with) and every column a page index, although
// the data page headers carry none.
func TestWriterStatistics(t *testing.T) {
	db := releasetest.OpenDuckDB(t)
	path := writeFixture(t, t.TempDir(), 2)
	rs, err := db.Query(`SELECT CAST(path_in_schema AS VARCHAR), CAST(stats_min_value AS VARCHAR), CAST(stats_max_value AS VARCHAR)
		FROM parquet_metadata(` + releasetest.SQLString(path) + `) ORDER BY column_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var got []string
	for rs.Next() {
		var col string
		var lo, hi sql.NullString
		if err := rs.Scan(&col, &lo, &hi); err != nil {
			t.Fatal(err)
		}
		got = append(got, col+" "+lo.String+" "+hi.String)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"region it's süd", "active false true", "qty 3 8", "price 1.25 8.75", "day 2023-11-15 2024-02-01"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("column chunk statistics %q, want %q", got, want)
	}
	pf := releasetest.OpenParquet(t, path)
	for j, cc := range pf.RowGroups()[0].ColumnChunks() {
		ci, err := cc.ColumnIndex()
		if err != nil || ci.NumPages() == 0 {
			t.Errorf("column %d: page index %v, %v", j, ci, err)
		}
	}
}

// TestWriterParallelRowGroups writes shuffled rows (AddRow) and runs (Add)
// through row groups of 1,000 rows encoded by 1, 2 and 5 goroutines: the
// files must be byte for byte the same whatever the number of goroutines
// (row groups committed in order), hold the rows in the order they were
// added, and be cut into row groups of 1,000 rows.
func TestWriterParallelRowGroups(t *testing.T) {
	names, cols := fixture()
	dec, err := NewDecoder(names, cols)
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	shuffled := make([]int64, 10_500)
	for i := range shuffled {
		shuffled[i] = rnd.Int64N(dec.Size())
	}
	runs := []cellCount{{3, 2500}, {7, 1}, {50, 999}, {51, 1001}, {191, 4000}}
	for _, tc := range []struct {
		name  string
		write func(ctx context.Context, w *Writer) error
		cells []int64
	}{
		{"AddRow", func(ctx context.Context, w *Writer) error {
			for _, c := range shuffled {
				if err := w.AddRow(ctx, c); err != nil {
					return err
				}
			}
			return nil
		}, shuffled},
		{"Add", func(ctx context.Context, w *Writer) error {
			for _, r := range runs {
				if err := w.Add(ctx, r.cell, r.count); err != nil {
					return err
				}
			}
			return nil
		}, func() []int64 {
			var out []int64
			for _, r := range runs {
				for range r.count {
					out = append(out, r.cell)
				}
			}
			return out
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var first []byte
			for _, workers := range []int{1, 2, 5} {
				path := filepath.Join(dir, fmt.Sprintf("w%d.parquet", workers))
				w, err := newWriter(path, names, cols, testMetadata(), 64)
				if err != nil {
					t.Fatal(err)
				}
				w.workers, w.groupRows = workers, 1000
				if err := tc.write(context.Background(), w); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if first == nil {
					first = b
				} else if !bytes.Equal(b, first) {
					t.Errorf("%d goroutines: the file differs from the one written by 1", workers)
				}
			}
			path := filepath.Join(dir, "w5.parquet")
			got := readRows(t, releasetest.OpenDuckDB(t), path)
			if len(got) != len(tc.cells) {
				t.Fatalf("%d rows read, %d written", len(got), len(tc.cells))
			}
			for i, c := range tc.cells {
				v, err := dec.Row(c)
				if err != nil {
					t.Fatal(err)
				}
				want := row{v[0].(string), v[1].(bool), v[2].(int64), v[3].(float64), v[4].(time.Time).Format(time.DateOnly)}
				if got[i] != want {
					t.Fatalf("row %d = %+v, want %+v (cell %d)", i, got[i], want, c)
				}
			}
			pf := releasetest.OpenParquet(t, path)
			for i, rg := range pf.RowGroups() {
				if want := min(1000, int64(len(tc.cells)-1000*i)); rg.NumRows() != want {
					t.Errorf("row group %d holds %d rows, want %d", i, rg.NumRows(), want)
				}
			}
			if n := len(pf.RowGroups()); n != (len(tc.cells)+999)/1000 {
				t.Errorf("%d row groups for %d rows", n, len(tc.cells))
			}
		})
	}
}

// TestWriterPageIndexFindsValues: every value of every column is found by
// parquet-go's page-index search (parquet.Search over the column index),
// as a reader that prunes pages by the page index looks for it: no page
// carries bounds that exclude its own values (skipped bounds would read as
// "" .. "").
func TestWriterPageIndexFindsValues(t *testing.T) {
	names, cols := fixture()
	path := filepath.Join(t.TempDir(), "x.parquet")
	w, err := newWriter(path, names, cols, testMetadata(), 64)
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		if err := w.AddRow(context.Background(), rnd.Int64N(192)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pf := releasetest.OpenParquet(t, path)
	for _, rg := range pf.RowGroups() {
		rows := rg.Rows()
		buf := make([]parquet.Row, 5000)
		n, _ := rows.ReadRows(buf)
		rows.Close()
		if n != 5000 {
			t.Fatalf("%d rows read back", n)
		}
		for k, cc := range rg.ColumnChunks() {
			ci, err := cc.ColumnIndex()
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range buf[:n] {
				if p := parquet.Search(ci, r[k], cc.Type()); p >= ci.NumPages() {
					t.Fatalf("column %s: the page index says no page holds %v (page 0 bounds %q..%q)", names[k], r[k], ci.MinValue(0), ci.MaxValue(0))
				}
			}
		}
	}
}

// TestWriterInflightBound: never more row groups are being encoded than the
// writer has goroutines (the bound on its memory), and the goroutines are
// capped at MaxWriterGoroutines.
func TestWriterInflightBound(t *testing.T) {
	names, cols := fixture()
	w, err := newWriter(filepath.Join(t.TempDir(), "x.parquet"), names, cols, testMetadata(), 16)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if w.workers < 1 || w.workers > MaxWriterGoroutines {
		t.Errorf("%d goroutines, want 1 to %d", w.workers, MaxWriterGoroutines)
	}
	w.workers, w.groupRows = 2, 100
	most := 0
	for i := range 3000 {
		if err := w.AddRow(context.Background(), int64(i%192)); err != nil {
			t.Fatal(err)
		}
		most = max(most, len(w.inflight))
	}
	if most != 2 {
		t.Errorf("at most %d row groups in flight, want 2", most)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestWriterEncodeStops: once the writer is aborted, an encoder stops
// after the batch it is in instead of encoding its whole row group.
func TestWriterEncodeStops(t *testing.T) {
	names, cols := fixture()
	w, err := newWriter(filepath.Join(t.TempDir(), "x.parquet"), names, cols, testMetadata(), 8)
	if err != nil {
		t.Fatal(err)
	}
	j := w.newJob()
	for i := range 1000 {
		j.cells = append(j.cells, int64(i%192))
	}
	j.rows = len(j.cells)
	w.stop.Store(true)
	if err := w.encode(j); !errors.Is(err, errStopped) {
		t.Errorf("encode after abort = %v, want errStopped", err)
	}
	w.Abort()
}
