package synthfile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/internal/stattest"
	"github.com/synth-dp/synth/spec"
)

// randomUniverse returns 1 to 5 released columns of random types and
// domains: categorical values of random lengths in random order (so bin
// order is not value order), integers and numbers that may be negative,
// dates of every granularity, booleans.
func randomUniverse(rnd *rand.Rand) ([]string, []*spec.Column) {
	k := 1 + rnd.IntN(5)
	names := make([]string, k)
	cols := make([]*spec.Column, k)
	for j := range k {
		names[j] = fmt.Sprint("col", j)
		var c spec.Column
		switch rnd.IntN(5) {
		case 0:
			c.Type = spec.Categorical
			seen := map[string]bool{}
			for range 1 + rnd.IntN(40) {
				v := make([]byte, 1+rnd.IntN(12))
				for i := range v {
					v[i] = "aAbB-zZ09 ü"[rnd.IntN(11)]
				}
				if !seen[string(v)] {
					seen[string(v)] = true
					c.Values = append(c.Values, string(v))
				}
			}
		case 1:
			c.Type = spec.Boolean
		case 2:
			c.Type, c.Min = spec.Integer, float64(rnd.IntN(2000)-1000)
			c.Max = c.Min + float64(rnd.IntN(300))
			if rnd.IntN(2) == 0 { // no empty bin: at most one per integer
				c.Bins = 1 + rnd.IntN(min(20, int(c.Max-c.Min)+1))
			}
		case 3:
			c.Type, c.Min = spec.Numeric, rnd.Float64()*200-100
			c.Max, c.Bins = c.Min+1+rnd.Float64()*50, 1+rnd.IntN(30)
		default:
			c.Type = spec.Date
			c.DateMin = time.Date(1960+rnd.IntN(80), time.Month(1+rnd.IntN(12)), 1+rnd.IntN(28), 0, 0, 0, 0, time.UTC)
			c.DateMax = c.DateMin.AddDate(0, 0, rnd.IntN(3000))
			c.Granularity = []spec.Granularity{spec.Day, spec.Month, spec.Year}[rnd.IntN(3)]
		}
		cols[j] = &c
	}
	return names, cols
}

// writePlain writes rows (one cell each) the way Writer does — same
// options, row groups of groupRows, WriteRowValues in batches of batch
// rows, Flush then Commit — but with parquet-go's own dictionaries: the
// real values go in, and parquet-go indexes them and finds every page's
// bounds. It is the reference for TestBinColumnSameBytes.
func writePlain(t *testing.T, path string, names []string, cols []*spec.Column, extra []MeasureColumn, metadata map[string]string, batch, groupRows int, rows []int64) {
	t.Helper()
	dec, err := NewDecoder(names, cols)
	if err != nil {
		t.Fatal(err)
	}
	// Through the exported Schema when there are no measures: it must
	// take the real values.
	schema := buildSchema(dec, extra, false)
	if extra == nil {
		if schema, err = Schema(names, cols); err != nil {
			t.Fatal(err)
		}
	}
	opts, err := writerOptions(schema, metadata)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pw := parquet.NewGenericWriter[any](f, opts...)
	vals := make([][]parquet.Value, dec.NumColumns())
	for j := range vals {
		vals[j] = columnValues(dec, j)
	}
	m := dec.NumColumns() + len(extra)
	buf := make([][]parquet.Value, m)
	var bins []int
	for lo := 0; lo < len(rows); lo += groupRows {
		rg := pw.BeginRowGroup()
		group := rows[lo:min(lo+groupRows, len(rows))]
		for b := 0; b < len(group); b += batch {
			for k := range buf {
				buf[k] = buf[k][:0]
			}
			for _, cell := range group[b:min(b+batch, len(group))] {
				bins, _ = dec.Bins(cell, bins)
				for k, bin := range bins {
					buf[k] = append(buf[k], vals[k][bin])
				}
				for e, x := range extra {
					k := len(bins) + e
					buf[k] = append(buf[k], parquet.DoubleValue(x.Value(bins)).Level(0, 0, k))
				}
			}
			for k, cw := range rg.ColumnWriters() {
				if _, err := cw.WriteRowValues(buf[k]); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := rg.Flush(); err != nil {
			t.Fatal(err)
		}
		if _, err := rg.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
}

// sameBytesCase is one release written both ways by checkSameBytes.
type sameBytesCase struct {
	names                     []string
	cols                      []*spec.Column
	extra                     []MeasureColumn
	rows                      []int64 // one cell per row; in increasing order when runs
	runs                      bool    // written by Add (runs of equal cells), else AddRow
	batch, groupRows, workers int
}

// checkSameBytes writes c through the Writer and through writePlain and
// fails unless the files are the same bytes and hold the rows; it returns
// the path of the Writer's file.
func checkSameBytes(t *testing.T, c sameBytesCase) string {
	t.Helper()
	dir := t.TempDir()
	got := filepath.Join(dir, "bins.parquet")
	w, err := newWriterWith(got, c.names, c.cols, c.extra, testMetadata(), c.batch)
	if err != nil {
		t.Fatal(err)
	}
	w.groupRows, w.workers = c.groupRows, c.workers
	ctx := context.Background()
	rows := c.rows
	if c.runs {
		for i := 0; i < len(rows); {
			j := i
			for j < len(rows) && rows[j] == rows[i] {
				j++
			}
			if err := w.Add(ctx, rows[i], int64(j-i)); err != nil {
				t.Fatal(err)
			}
			i = j
		}
	} else {
		for _, cell := range rows {
			if err := w.AddRow(ctx, cell); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "plain.parquet")
	writePlain(t, want, c.names, c.cols, c.extra, testMetadata(), c.batch, c.groupRows, rows)
	a, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		i := 0
		for i < min(len(a), len(b)) && a[i] == b[i] {
			i++
		}
		t.Fatalf("%v, %d rows, runs %v, batch %d, row groups of %d: the files differ from byte %d (%d and %d bytes)",
			c.cols, len(rows), c.runs, c.batch, c.groupRows, i, len(a), len(b))
	}
	// The comparison is not vacuous: the file holds the rows.
	if pf := releasetest.OpenParquet(t, got); pf.NumRows() != int64(len(rows)) {
		t.Fatalf("%d rows in the file, %d written", pf.NumRows(), len(rows))
	}
	return got
}

// dictionaryLen returns the number of entries in the dictionary of the
// first column of the first row group of the Parquet file at path.
func dictionaryLen(t *testing.T, path string) int {
	t.Helper()
	pages := releasetest.OpenParquet(t, path).RowGroups()[0].ColumnChunks()[0].Pages()
	defer pages.Close()
	p, err := pages.ReadPage()
	if err != nil {
		t.Fatal(err)
	}
	defer parquet.Release(p)
	if p.Dictionary() == nil {
		t.Fatal("the first column is not dictionary encoded")
	}
	return p.Dictionary().Len()
}

// TestBinColumnSameBytes: a file the Writer writes through binType (bin
// numbers, precomputed dictionary indexes, bounds by rank) is byte for byte
// the file parquet-go writes from the real values with its own
// dictionaries — same dictionary pages in the same order, same data pages,
// same page index and column statistics — on random universes of every
// column type, with measure columns, rows added one by one in random
// order and in runs, several pages per row group (a page holds 64,225
// dictionary indexes) and several row groups, written by one or two
// goroutines; and on universes the random ones miss: 2^16 and more bins
// (17-bit dictionary indexes), bins an ulp wide, empty and non-UTF-8
// strings, one-bin columns, 0 and 1 rows.
func TestBinColumnSameBytes(t *testing.T) {
	rnd := rand.New(rand.NewPCG(stattest.Seed(t), 7))
	trials := 10
	if testing.Short() {
		trials = 3
	}
	for trial := range trials {
		names, cols := randomUniverse(rnd)
		dec, err := NewDecoder(names, cols)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		c := sameBytesCase{names: names, cols: cols,
			batch: 1000 + rnd.IntN(9000), groupRows: 70_000 + rnd.IntN(80_000),
			// One goroutine reuses a row group's writer (and its
			// dictionaries, reset) from the second row group on.
			workers: 1 + rnd.IntN(2), runs: rnd.IntN(2) == 0}
		if rnd.IntN(2) == 0 {
			c.extra = []MeasureColumn{{Name: "measure", Value: func(b []int) float64 { return float64(b[0]%7) / 4 }}}
		}
		n := rnd.IntN(4 * c.groupRows)
		if c.runs { // Add: counts in increasing cell order
			for cell := int64(0); cell < dec.Size() && len(c.rows) < n; cell++ {
				k := rnd.IntN(3)
				if rnd.IntN(4) == 0 {
					k = rnd.IntN(20_000)
				}
				for range k {
					c.rows = append(c.rows, cell)
				}
			}
		} else {
			c.rows = make([]int64, n)
			for i := range c.rows {
				// Skewed, so that some bins are rare and enter a
				// dictionary late.
				c.rows[i] = int64(rnd.Float64() * rnd.Float64() * float64(dec.Size()))
			}
		}
		checkSameBytes(t, c)
	}

	cat := func(n int) *spec.Column {
		c := &spec.Column{Type: spec.Categorical, Values: []string{""}}
		seen := map[string]bool{"": true}
		for len(c.Values) < n {
			v := make([]byte, rnd.IntN(9))
			for i := range v {
				v[i] = byte(rnd.IntN(256)) // not UTF-8, mostly
			}
			if !seen[string(v)] {
				seen[string(v)] = true
				c.Values = append(c.Values, string(v))
			}
		}
		return c
	}
	// Bins an ulp wide (representatives their lower edges), then wider.
	x := math.Nextafter(1, 2)
	ulps := []float64{x, math.Nextafter(x, 2), math.Nextafter(math.Nextafter(x, 2), 2), 5, 7, 9, 11}
	day := func(y int) time.Time { return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC) }
	// A slice, not a map: the cases draw their rows from rnd in this
	// order, so -seed replays them.
	edges := []struct {
		name string
		cols []*spec.Column
	}{
		{"integer, 100k bins", []*spec.Column{{Type: spec.Integer, Min: -50_000, Max: 49_999}}},
		{"categorical, 70k", []*spec.Column{cat(70_000)}},
		{"date, 73k days", []*spec.Column{{Type: spec.Date, DateMin: day(1900), DateMax: day(2099), Granularity: spec.Day}}},
		{"numeric, 2^17 bins", []*spec.Column{{Type: spec.Numeric, Min: -1e6, Max: 1e6, Bins: 1 << 17}}},
		{"bins an ulp wide", []*spec.Column{{Type: spec.Numeric, BinEdges: ulps, Min: ulps[0], Max: ulps[len(ulps)-1]}, {Type: spec.Boolean}}},
		{"one bin per column", []*spec.Column{{Type: spec.Categorical, Values: []string{"only"}}, {Type: spec.Integer, Min: 5, Max: 5}, {Type: spec.Date, DateMin: day(2000), DateMax: day(2000), Granularity: spec.Day}}},
		{"categorical x integer", []*spec.Column{cat(300), {Type: spec.Integer, Min: 0, Max: 299}}},
	}
	// 150,000 rows in row groups of 2^17: two row groups, the first with
	// about 73,000 of the 100k integers and 83,000 of the 2^17 numeric
	// bins — dictionary indexes above 2^16 (checked below).
	sizes := []int{0, 1, 150_000}
	if testing.Short() {
		sizes = []int{0, 1, 20_000}
	}
	for _, e := range edges {
		name, cols := e.name, e.cols
		names := make([]string, len(cols))
		for j := range cols {
			names[j] = fmt.Sprint("c", j)
		}
		dec, err := NewDecoder(names, cols)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, n := range sizes {
			for _, runs := range []bool{false, true} {
				c := sameBytesCase{names: names, cols: cols, runs: runs, batch: BatchRows, groupRows: 1 << 17, workers: 2}
				for range n {
					c.rows = append(c.rows, rnd.Int64N(dec.Size()))
				}
				if runs {
					slices.Sort(c.rows)
				} else if n > 1 {
					c.extra = []MeasureColumn{{Name: "m", Value: func(b []int) float64 { return float64(b[0]%13) - 6 }}}
				}
				t.Run(fmt.Sprintf("%s/%d rows/runs %v", name, n, runs), func(t *testing.T) {
					path := checkSameBytes(t, c)
					if n == 150_000 && name == "integer, 100k bins" {
						if k := dictionaryLen(t, path); k <= 1<<16 {
							t.Errorf("the first row group's dictionary has %d entries, want more than 2^16", k)
						}
					}
				})
			}
		}
	}
}

// TestBinBufferRejects: the bin column's buffer takes only batches of bin
// numbers below the column's bin count, and keeps the rows before a bad
// one.
func TestBinBufferRejects(t *testing.T) {
	typ := newBinType(parquet.String().Type(), []parquet.Value{parquet.ByteArrayValue([]byte("b")), parquet.ByteArrayValue([]byte("a"))})
	d := typ.NewDictionary(0, 0, typ.NewValues(nil, nil))
	buf := d.Type().NewColumnBuffer(0, 8)
	ok := make(binBatch, 8)
	ok.set(0, 2, 1)
	bad := make(binBatch, 12)
	bad.set(0, 2, 0)
	bad.set(2, 3, 2) // bin 2 of a 2-bin column
	for _, tc := range []struct {
		name    string
		vals    []parquet.Value
		rows    int
		wantErr bool
	}{
		{"batch", []parquet.Value{ok.value(2)}, 2, false},
		{"bin out of range", []parquet.Value{bad.value(3)}, 2, true},
		{"int32 value", []parquet.Value{parquet.Int32Value(0)}, 0, true},
		{"ragged bytes", []parquet.Value{parquet.ByteArrayValue([]byte{0, 0, 0})}, 0, true},
	} {
		buf.Reset()
		n, err := buf.WriteValues(tc.vals)
		if (err != nil) != tc.wantErr || n != tc.rows || buf.Len() != tc.rows {
			t.Errorf("%s: WriteValues = %d, %v; Len %d; want %d rows, error %v", tc.name, n, err, buf.Len(), tc.rows, tc.wantErr)
		}
	}
	// The rows kept before a bad bin hold dictionary indexes, and so do
	// later rows of the bins they brought in.
	buf.Reset()
	if _, err := buf.WriteValues([]parquet.Value{bad.value(3)}); err == nil {
		t.Fatal("a bin out of range was taken")
	}
	again := make(binBatch, 8)
	again.set(0, 1, 0)
	again.set(1, 2, 1)
	if _, err := buf.WriteValues([]parquet.Value{again.value(2)}); err != nil {
		t.Fatal(err)
	}
	for n, i := range buf.(*binBuffer).idx {
		if i < 0 || int(i) >= d.Len() {
			t.Fatalf("row %d holds dictionary index %d of %d entries", n, i, d.Len())
		}
	}
	// Bounds by rank: "a" (bin 1) sorts before "b" (bin 0), which a fresh
	// dictionary gets first.
	d = typ.NewDictionary(0, 0, typ.NewValues(nil, nil))
	buf = d.Type().NewColumnBuffer(0, 8)
	both := make(binBatch, 12)
	both.set(0, 1, 0)
	both.set(1, 3, 1)
	if _, err := buf.WriteValues([]parquet.Value{both.value(3)}); err != nil {
		t.Fatal(err)
	}
	lo, hi, ok2 := buf.Page().Bounds()
	if !ok2 || string(lo.ByteArray()) != "a" || string(hi.ByteArray()) != "b" {
		t.Errorf("Bounds = %q, %q, %v; want a, b, true", lo.ByteArray(), hi.ByteArray(), ok2)
	}
	if got := slices.Collect(func(yield func(string) bool) {
		for i := range int32(d.Len()) {
			if !yield(string(d.Index(i).ByteArray())) {
				return
			}
		}
	}); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("dictionary %q, want the bins in order of first use [b a]", got)
	}
}

// TestWriterRefusesHugeDictionary: a categorical column whose values take
// more than maxDictionaryBytes (1 GiB; lowered here) is refused before a
// file is created.
func TestWriterRefusesHugeDictionary(t *testing.T) {
	defer func(n int) { maxDictionaryBytes = n }(maxDictionaryBytes)
	maxDictionaryBytes = 10
	dir := t.TempDir()
	for _, tc := range []struct {
		values []string
		ok     bool
	}{
		{[]string{"abcde", "fghij"}, true},
		{[]string{"abcde", "fghijk"}, false},
	} {
		path := filepath.Join(dir, "x.parquet")
		w, err := NewWriter(path, []string{"c"}, []*spec.Column{{Type: spec.Categorical, Values: tc.values}}, testMetadata())
		if tc.ok != (err == nil) {
			t.Fatalf("values %q: error %v, want ok %v", tc.values, err, tc.ok)
		}
		if err == nil {
			w.Abort()
		}
		releasetest.AssertOnly(t, dir)
	}
}

// TestBinColumnRefusesPlainFallback: when parquet-go falls back from
// dictionary to PLAIN encoding (here forced by DictionaryMaxBytes, which
// the writer does not set; at 1 GiB of values otherwise), the bin column
// refuses the rows that follow instead of writing dictionary indexes as
// PLAIN values.
func TestBinColumnRefusesPlainFallback(t *testing.T) {
	dec, err := NewDecoder([]string{"c"}, []*spec.Column{{Type: spec.Categorical, Values: []string{"alpha", "beta", "gamma"}}})
	if err != nil {
		t.Fatal(err)
	}
	opts, err := writerOptions(buildSchema(dec, nil, true), testMetadata())
	if err != nil {
		t.Fatal(err)
	}
	pw := parquet.NewGenericWriter[any](io.Discard, append(opts, parquet.DictionaryMaxBytes(4))...)
	cw := pw.BeginRowGroup().ColumnWriters()[0]
	p := make(binBatch, 12)
	p.set(0, 1, 0)
	p.set(1, 2, 1)
	p.set(2, 3, 2)
	var errs []error
	for range 3 {
		_, err := cw.WriteRowValues([]parquet.Value{p.value(3)})
		errs = append(errs, err)
		if err := cw.Flush(); err != nil { // the fallback happens here
			t.Fatal(err)
		}
	}
	if errs[0] != nil || errs[1] == nil || errs[2] == nil {
		t.Errorf("writes before and after the fallback: %v; want ok, then errors", errs)
	}
}

// TestBinDictionarySharedValue: two bins with the same value (which a
// decoder never makes: its representatives lie in disjoint bins) share one
// dictionary entry, and the entries after it keep their own ranks, so the
// page bounds stay right.
func TestBinDictionarySharedValue(t *testing.T) {
	var vals []parquet.Value
	for _, v := range []string{"b", "a", "a", "c", "0"} {
		vals = append(vals, parquet.ByteArrayValue([]byte(v)))
	}
	typ := newBinType(parquet.String().Type(), vals)
	d := typ.NewDictionary(0, 0, typ.NewValues(nil, nil))
	buf := d.Type().NewColumnBuffer(0, 8)
	p := make(binBatch, 4*5)
	for n, b := range []int{1, 2, 3, 4, 0} {
		p.set(n, n+1, b)
	}
	if _, err := buf.WriteValues([]parquet.Value{p.value(5)}); err != nil {
		t.Fatal(err)
	}
	if d.Len() != 4 {
		t.Errorf("%d dictionary entries, want 4 (a, c, 0, b)", d.Len())
	}
	lo, hi, ok := buf.Page().Bounds()
	if !ok || string(lo.ByteArray()) != "0" || string(hi.ByteArray()) != "c" {
		t.Errorf("Bounds = %q, %q, %v; want 0, c, true", lo.ByteArray(), hi.ByteArray(), ok)
	}
}
