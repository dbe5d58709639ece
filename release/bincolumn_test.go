package release

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

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
func writePlain(t *testing.T, path string, dec *Decoder, extra []MeasureColumn, metadata map[string]string, batch, groupRows int, rows []int64) {
	t.Helper()
	g := parquet.Group{}
	var order []string
	for j := range dec.NumColumns() {
		n := leafNode(dec.Type(j))
		if dec.Type(j) != spec.Boolean {
			n = parquet.Encoded(n, &parquet.RLEDictionary)
		}
		order = append(order, dec.Name(j))
		g[dec.Name(j)] = parquet.Required(n)
	}
	for _, m := range extra {
		order = append(order, m.Name)
		g[m.Name] = parquet.Required(parquet.Encoded(parquet.Leaf(parquet.DoubleType), &parquet.RLEDictionary))
	}
	opts, err := writerOptions(parquet.NewSchema("synth", newOrderedGroup(g, order)), metadata)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pw := parquet.NewGenericWriter[any](f, opts...)
	vals := columnValues(dec)
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

// TestBinColumnSameBytes: a file the Writer writes through binType (bin
// numbers, precomputed dictionary indexes, bounds by rank) is byte for byte
// the file parquet-go writes from the real values with its own
// dictionaries — same dictionary pages in the same order, same data pages,
// same page index and column statistics — on random universes of every
// column type, with measure columns, rows added one by one in random
// order and in runs, several pages per row group (a page holds 64,225
// dictionary indexes) and several row groups, written by one or two
// goroutines.
func TestBinColumnSameBytes(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 7))
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
		var extra []MeasureColumn
		if rnd.IntN(2) == 0 {
			extra = []MeasureColumn{{Name: "measure", Value: func(b []int) float64 { return float64(b[0]%7) / 4 }}}
		}
		batch := 1000 + rnd.IntN(9000)
		groupRows := 70_000 + rnd.IntN(80_000)
		n := rnd.IntN(4 * groupRows)
		runs := rnd.IntN(2) == 0
		var rows []int64
		if runs { // Add: counts in increasing cell order
			for c := int64(0); c < dec.Size() && len(rows) < n; c++ {
				k := rnd.IntN(3)
				if rnd.IntN(4) == 0 {
					k = rnd.IntN(20_000)
				}
				for range k {
					rows = append(rows, c)
				}
			}
		} else {
			rows = make([]int64, n)
			for i := range rows {
				// Skewed, so that some bins are rare and enter a
				// dictionary late.
				rows[i] = int64(rnd.Float64() * rnd.Float64() * float64(dec.Size()))
			}
		}
		dir := t.TempDir()
		got := filepath.Join(dir, "bins.parquet")
		w, err := newWriterWith(got, names, cols, extra, testMetadata(), batch)
		if err != nil {
			t.Fatal(err)
		}
		// One goroutine reuses a row group's writer (and its
		// dictionaries, reset) from the second row group on.
		w.groupRows, w.workers = groupRows, 1+rnd.IntN(2)
		ctx := context.Background()
		if runs {
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
			for _, c := range rows {
				if err := w.AddRow(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		want := filepath.Join(dir, "plain.parquet")
		writePlain(t, want, dec, extra, testMetadata(), batch, groupRows, rows)
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
			t.Fatalf("trial %d (%v, %d rows, runs %v, batch %d, row groups of %d): the files differ from byte %d (%d and %d bytes)",
				trial, cols, len(rows), runs, batch, groupRows, i, len(a), len(b))
		}
		if len(rows) > 0 && trial == 0 {
			// The comparison is not vacuous: the file holds the rows.
			pf := openParquet(t, got)
			if pf.NumRows() != int64(len(rows)) {
				t.Fatalf("%d rows in the file, %d written", pf.NumRows(), len(rows))
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
		assertOnly(t, dir)
	}
}
