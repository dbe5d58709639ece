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
	meta, _ = pf.Lookup(MetadataKey)
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
	assertOnly(t, filepath.Dir(dir), "out")
	assertOnly(t, dir, ReportName, MarkdownName, ParquetName)
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
	for _, f := range []string{ParquetName, ReportName} {
		if err := os.WriteFile(filepath.Join(prev, f), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Run(context.Background(), Options{Spec: s, OutDir: prev, Source: dp.NewSeededSource(1)})
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "budget") {
		t.Errorf("release over a previous release: err = %v; want ErrExists mentioning the budget", err)
	}
	assertOnly(t, prev, ReportName, ParquetName)
	assertOnly(t, filepath.Dir(prev), filepath.Base(prev))
}

// TestStagePublish covers the publish cases: a new folder, an empty
// folder, a previous release (refused, then replaced with overwrite), a
// foreign folder, and a release appearing while the run goes.
func TestStagePublish(t *testing.T) {
	write := func(dir, content string) {
		for _, f := range []string{ParquetName, ReportName} {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	content := func(dir string) string {
		b, _ := os.ReadFile(filepath.Join(dir, ReportName))
		return string(b)
	}
	parent := t.TempDir()
	target := filepath.Join(parent, "nested", "rel")
	st, err := NewStage(target, false)
	if err != nil {
		t.Fatal(err)
	}
	write(st.Dir(), "one")
	if replaced, err := st.Publish(false); err != nil || replaced {
		t.Fatalf("publish new: %v, %v", replaced, err)
	}
	if content(target) != "one" {
		t.Fatal("not published")
	}
	assertOnly(t, filepath.Dir(target), "rel")

	if _, err := NewStage(target, false); !errors.Is(err, ErrExists) {
		t.Errorf("NewStage over a release without overwrite: %v", err)
	}
	st, err = NewStage(target, true)
	if err != nil {
		t.Fatal(err)
	}
	write(st.Dir(), "two")
	if replaced, err := st.Publish(true); err != nil || !replaced {
		t.Fatalf("publish over: %v, %v", replaced, err)
	}
	if content(target) != "two" {
		t.Fatal("not replaced")
	}
	assertOnly(t, filepath.Dir(target), "rel")
	assertOnly(t, target, ReportName, ParquetName)

	// An empty folder is replaced without overwrite.
	empty := filepath.Join(parent, "empty")
	os.Mkdir(empty, 0o755)
	st, err = NewStage(empty, false)
	if err != nil {
		t.Fatal(err)
	}
	write(st.Dir(), "three")
	if _, err := st.Publish(false); err != nil || content(empty) != "three" {
		t.Fatalf("publish into an empty folder: %v", err)
	}

	// A release appearing meanwhile is not replaced without overwrite.
	late := filepath.Join(parent, "late")
	st, err = NewStage(late, false)
	if err != nil {
		t.Fatal(err)
	}
	write(st.Dir(), "mine")
	os.Mkdir(late, 0o755)
	write(late, "theirs")
	if _, err := st.Publish(false); !errors.Is(err, ErrExists) || content(late) != "theirs" {
		t.Errorf("publish over a release that appeared: %v, content %q", err, content(late))
	}

	// A folder with foreign files is never replaced.
	foreign := filepath.Join(parent, "foreign")
	os.Mkdir(foreign, 0o755)
	os.WriteFile(filepath.Join(foreign, "thesis.tex"), nil, 0o644)
	write(foreign, "x")
	if _, err := NewStage(foreign, true); err == nil || !strings.Contains(err.Error(), "thesis.tex") {
		t.Errorf("NewStage over a foreign folder: %v", err)
	}

	// Abort leaves nothing.
	st, err = NewStage(filepath.Join(parent, "aborted"), false)
	if err != nil {
		t.Fatal(err)
	}
	write(st.Dir(), "x")
	st.Abort()
	assertOnly(t, parent, "empty", "foreign", "late", "nested")
}

// TestCleanStaleStages: a staging folder whose lock is free (its run was
// killed) is removed by CleanStale; a live run's (locked) one and foreign
// folders with similar names are not.
func TestCleanStaleStages(t *testing.T) {
	if !locksSupported {
		t.Skip("no flock here")
	}
	parent := t.TempDir()
	target := filepath.Join(parent, "rel")
	live, err := NewStage(target, false)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Abort()
	dead, err := NewStage(target, false)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dead.Dir(), ParquetName), []byte("partial"), 0o644)
	dead.lock.Close() // as if killed: the kernel drops the lock
	// Look-alikes that are not ours: a folder holding other files, a file.
	other := filepath.Join(parent, ".rel.77.tmp")
	os.Mkdir(other, 0o755)
	os.WriteFile(filepath.Join(other, "data.csv"), nil, 0o644)
	os.WriteFile(filepath.Join(parent, ".rel.78.tmp"), nil, 0o644)

	removed, err := CleanStale(target)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != dead.Dir() {
		t.Errorf("removed %q, want only %s", removed, dead.Dir())
	}
	want := []string{".rel.77.tmp", ".rel.78.tmp", filepath.Base(live.Dir())}
	slices.Sort(want)
	assertOnly(t, parent, want...)
	if _, err := live.Publish(false); err != nil {
		t.Fatal(err)
	}
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

// TestStageSymlinkAndBadNames: a symbolic link to a release folder is
// followed (the folder it names is replaced, the link stays); "." and ".."
// are refused.
func TestStageSymlinkAndBadNames(t *testing.T) {
	parent := t.TempDir()
	real := filepath.Join(parent, "real")
	link := filepath.Join(parent, "link")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", link); err != nil {
		t.Fatal(err)
	}
	for i, content := range []string{"one", "two"} {
		st, err := NewStage(link, i > 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{ParquetName, ReportName} {
			if err := os.WriteFile(filepath.Join(st.Dir(), f), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.Publish(i > 0); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(link, ReportName)); err != nil || string(b) != content {
			t.Fatalf("through the link: %q, %v; want %q", b, err, content)
		}
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	assertOnly(t, parent, "link", "real")
	for _, bad := range []string{".", "..", string(filepath.Separator)} {
		if st, err := NewStage(bad, true); err == nil {
			st.Abort()
			t.Errorf("NewStage(%q): no error", bad)
		}
	}
}

// TestStagePublishFallback: where the atomic exchange is not available,
// Publish moves the previous release aside and renames the new one in:
// the result is the new release, nothing left beside it.
func TestStagePublishFallback(t *testing.T) {
	defer func(f func(a, b string) error) { exchange = f }(exchange)
	exchange = func(a, b string) error { return errExchangeUnsupported }
	target := filepath.Join(t.TempDir(), "rel")
	for i, content := range []string{"one", "two", "three"} {
		st, err := NewStage(target, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{ParquetName, ReportName} {
			if err := os.WriteFile(filepath.Join(st.Dir(), f), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if replaced, err := st.Publish(true); err != nil || replaced != (i > 0) {
			t.Fatalf("publish %d: %v, %v", i, replaced, err)
		}
		if b, _ := os.ReadFile(filepath.Join(target, ParquetName)); string(b) != content {
			t.Fatalf("publish %d: %q", i, b)
		}
		assertOnly(t, filepath.Dir(target), "rel")
		assertOnly(t, target, ReportName, ParquetName)
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
