package release

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/demo"
	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/release/layout"
	"github.com/synth-dp/synth/release/publish"
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

// openParquet opens a Parquet file for the test; it is closed when the
// test ends.
func openParquet(t testing.TB, path string) *parquet.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	return pf
}

// parquetRows reads every row of a Parquet file as a string, in file
// order, and its synth.privacy metadata.
func parquetRows(t *testing.T, path string) (rows []string, meta string) {
	t.Helper()
	pf := openParquet(t, path)
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
}

// TestShuffle checks the three sampling modes: all rows (a permutation of
// the multiset with uniform positions), without replacement (a subset),
// with replacement (multinomial frequencies).
func TestShuffle(t *testing.T) {
	cells := []int64{3, 10, 11, 40}
	counts := []int64{1, 5, 0, 14}
	total := int64(20)
	rnd := rand.New(rand.NewPCG(1, 1))
	collect := func(rows int64, mode Sampling) []int64 {
		var got []int64
		if err := Shuffle(rnd, cells, counts, rows, mode, func(c int64) error { got = append(got, c); return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	// All rows: the exact multiset; cell 3 (one row) lands uniformly.
	firstPos := make([]int, total)
	const R = 20000
	for range R {
		got := collect(total, SampleAll)
		n := map[int64]int64{}
		for i, c := range got {
			n[c]++
			if c == 3 {
				firstPos[i]++
			}
		}
		if n[3] != 1 || n[10] != 5 || n[40] != 14 || n[11] != 0 || len(got) != int(total) {
			t.Fatalf("SampleAll gave %v", n)
		}
	}
	for i, k := range firstPos {
		if math.Abs(float64(k)-R/float64(total)) > 5*math.Sqrt(R/float64(total)) {
			t.Errorf("the single row sat at position %d %d times of %d, want ≈ %d", i, k, R, R/total)
		}
	}
	// Without replacement: never more of a cell than it holds.
	for range 1000 {
		n := map[int64]int64{}
		for _, c := range collect(6, SampleWithoutReplacement) {
			n[c]++
		}
		if n[3] > 1 || n[10] > 5 {
			t.Fatalf("SampleWithoutReplacement gave %v", n)
		}
	}
	// With replacement: frequencies count/total.
	got := collect(200_000, SampleWithReplacement)
	n := map[int64]float64{}
	for _, c := range got {
		n[c]++
	}
	for i, c := range cells {
		p := float64(counts[i]) / float64(total)
		sd := math.Sqrt(200_000 * p * (1 - p))
		if math.Abs(n[c]-200_000*p) > 5*sd+1e-9 {
			t.Errorf("cell %d drawn %v times, want ≈ %v", c, n[c], 200_000*p)
		}
	}
	// Errors.
	if err := Shuffle(rnd, cells, counts, total+1, SampleWithoutReplacement, func(int64) error { return nil }); err == nil {
		t.Error("more rows than the counts without replacement: no error")
	}
	if err := Shuffle(rnd, nil, nil, 3, SampleWithReplacement, func(int64) error { return nil }); err == nil {
		t.Error("rows from nothing: no error")
	}
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

// BenchmarkShuffledWrite writes 10⁶ shuffled rows of the fixture columns
// through Shuffle and Writer.AddRow.
func BenchmarkShuffledWrite(b *testing.B) {
	names, cols := fixture()
	var cells, counts []int64
	for _, cc := range fixtureCounts {
		cells, counts = append(cells, cc.cell), append(counts, cc.count*1000)
	}
	var total int64
	for _, c := range counts {
		total += c
	}
	rows := int64(1_000_000)
	for b.Loop() {
		w, err := NewWriter(filepath.Join(b.TempDir(), "x.parquet"), names, cols, testMetadata())
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if err := Shuffle(rand.New(rand.NewPCG(1, 2)), cells, counts, rows, SampleWithReplacement, func(c int64) error { return w.AddRow(ctx, c) }); err != nil {
			b.Fatal(err)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReleaseRowsFromSpec: release.rows in the spec sets the number of rows
// written when --rows is not given.
func TestReleaseRowsFromSpec(t *testing.T) {
	s := loadSpec(t, filepath.Join("..", "examples", "tpch", "synth.yaml"))
	s.Release.Rows = 1234
	sum, err := Run(context.Background(), Options{Spec: s, OutDir: filepath.Join(t.TempDir(), "out"), Source: dp.NewSeededSource(3)})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Rows != 1234 {
		t.Fatalf("%d rows written, want release.rows = 1234", sum.Rows)
	}
}

// BenchmarkShuffle draws a shuffled release of the TPC-H example's shape
// (5,250 cells, skewed counts, 6·10⁶ rows at SF 1; SYNTH_BENCH_WRITER_ROWS
// overrides) without writing it: the cost of Shuffle alone, per row.
func BenchmarkShuffle(b *testing.B) {
	n := int64(benchWriterRows(b))
	const k = 5250
	cells, counts := make([]int64, k), make([]int64, k)
	rnd := rand.New(rand.NewPCG(1, 2))
	var total int64
	for i := range cells {
		cells[i] = int64(i)
		counts[i] = int64(rnd.Float64() * rnd.Float64() * float64(2*n/k))
		total += counts[i]
	}
	var sink int64
	for b.Loop() {
		if err := Shuffle(rand.New(rand.NewChaCha8([32]byte{})), cells, counts, total, SampleAll, func(c int64) error { sink += c; return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// recordingRand is a source of Int64N that remembers its draws.
type recordingRand struct {
	r     *rand.Rand
	draws []int64
}

func (c *recordingRand) Int64N(n int64) int64 {
	v := c.r.Int64N(n)
	c.draws = append(c.draws, v)
	return v
}

// TestShuffleMatchesBruteForce: for the same draws r, every row Shuffle
// emits is the cell a linear scan finds (the smallest i whose prefix sum
// of the remaining counts exceeds r), in every mode, on random counts with
// zeros and universes of 1 to 70 cells (powers of two and not, so that the
// padded tree's edges are crossed).
func TestShuffleMatchesBruteForce(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	for trial := range 400 {
		k := 1 + rnd.IntN(70)
		cells, counts := make([]int64, k), make([]int64, k)
		var total int64
		for i := range k {
			cells[i] = int64(3*i + 1)
			if rnd.IntN(4) > 0 {
				counts[i] = rnd.Int64N(6)
			}
			total += counts[i]
		}
		if total == 0 {
			counts[k-1], total = 1, 1
		}
		for _, mode := range []Sampling{SampleAll, SampleWithoutReplacement, SampleWithReplacement} {
			rows := total
			switch mode {
			case SampleWithoutReplacement:
				rows = rnd.Int64N(total + 1)
			case SampleWithReplacement:
				rows = 2*total + 3
			}
			src := &recordingRand{r: rand.New(rand.NewPCG(uint64(trial), 9))}
			var got []int64
			if err := Shuffle(src, cells, counts, rows, mode, func(c int64) error { got = append(got, c); return nil }); err != nil {
				t.Fatal(err)
			}
			left := slices.Clone(counts)
			for i, r := range src.draws {
				j := 0
				for acc := left[0]; acc <= r; acc += left[j] {
					j++
				}
				if got[i] != cells[j] {
					t.Fatalf("trial %d %s: row %d is cell %d, the scan finds %d (counts %v, r %d)", trial, mode, i, got[i], cells[j], left, r)
				}
				if mode != SampleWithReplacement {
					left[j]--
				}
			}
			if int64(len(got)) != rows || len(src.draws) != len(got) {
				t.Fatalf("trial %d %s: %d rows for %d draws, want %d", trial, mode, len(got), len(src.draws), rows)
			}
		}
	}
}
