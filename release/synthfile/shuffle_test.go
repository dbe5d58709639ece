package synthfile

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
)

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
