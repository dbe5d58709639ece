package synthfile

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/spec"
)

// tpchColumns is the universe of examples/tpch/synth.yaml: market segment
// (5), order priority (5), return flag (3), quantity (10 bins of 5) and
// order year (7) — 5,250 cells.
func tpchColumns() ([]string, []*spec.Column) {
	return []string{"c_mktsegment", "o_orderpriority", "l_returnflag", "l_quantity", "o_orderdate"}, []*spec.Column{
		{Type: spec.Categorical, Values: []string{"AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"}},
		{Type: spec.Categorical, Values: []string{"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"}},
		{Type: spec.Categorical, Values: []string{"A", "N", "R"}},
		{Type: spec.Integer, Min: 1, Max: 50, Bins: 10},
		{Type: spec.Date, DateMin: day("1992-01-01"), DateMax: day("1998-12-31"), Granularity: spec.Year},
	}
}

// benchWriterRows is the number of rows BenchmarkWriterTPCH writes: SF 1
// has 6,001,215 lineitems; SYNTH_BENCH_WRITER_ROWS overrides the default
// of 2^21 (a third of SF 1, enough for a stable rate).
func benchWriterRows(b *testing.B) int {
	if s := os.Getenv("SYNTH_BENCH_WRITER_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("SYNTH_BENCH_WRITER_ROWS=%q: want a positive integer", s)
		}
		return n
	}
	return 1 << 21
}

// BenchmarkWriterManyBins writes shuffled rows of an integer column of
// 2^20 bins beside a boolean: most rows of a row group bring a bin new to
// the group's dictionary, the case where inserting values one at a time
// was most of the writer's time.
func BenchmarkWriterManyBins(b *testing.B) {
	names := []string{"x", "flag"}
	cols := []*spec.Column{{Type: spec.Integer, Min: 0, Max: 1<<20 - 1}, {Type: spec.Boolean}}
	benchWrite(b, names, cols, func(rnd *rand.Rand, size int64) int64 { return rnd.Int64N(size) })
}

// BenchmarkWriterTPCH writes a release of the TPC-H example's shape the
// way [Run] does: every row by [Writer.AddRow], in the uniformly random
// order [Shuffle] draws, over the 5,250-cell universe with skewed counts.
// The draw is made once, outside the timer; the metric is rows written per
// second, file closed and synced.
func BenchmarkWriterTPCH(b *testing.B) {
	names, cols := tpchColumns()
	// Skewed like a join's histogram: the product of two uniforms favours
	// the low cells.
	benchWrite(b, names, cols, func(rnd *rand.Rand, size int64) int64 {
		return int64(rnd.Float64() * rnd.Float64() * float64(size))
	})
}

// benchWrite writes benchWriterRows rows of the universe over cols, one
// by one by AddRow, their cells drawn (once, outside the timer) by cell;
// the metric is rows written per second, file closed and synced.
func benchWrite(b *testing.B, names []string, cols []*spec.Column, cell func(rnd *rand.Rand, size int64) int64) {
	dec, err := NewDecoder(names, cols)
	if err != nil {
		b.Fatal(err)
	}
	n := benchWriterRows(b)
	rnd := rand.New(rand.NewPCG(1, 2))
	cells := make([]int64, n)
	for i := range cells {
		cells[i] = cell(rnd, dec.Size())
	}
	dir := b.TempDir()
	path := filepath.Join(dir, "bench.parquet")
	meta := map[string]string{layout.MetadataKey: `{"bench": true}`}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		w, err := NewWriter(path, names, cols, meta)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range cells {
			if err := w.AddRow(ctx, c); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
