package synthfile

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/synth-dp/synth/dp"
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

// chiSquareCrit99999 returns a critical value of the χ² law with df
// degrees of freedom at the 1−10⁻⁵ level (Wilson–Hilferty): a correct
// sampler fails a test using it once in 10⁵ seeds; the seeds are fixed.
func chiSquareCrit99999(df int) float64 {
	const z = 4.265 // the standard normal's 1−10⁻⁵ quantile
	d := float64(df)
	h := 2 / (9 * d)
	return d * math.Pow(1-h+z*math.Sqrt(h), 3)
}

// chiSquare is Pearson's statistic of observed counts against expected
// probabilities over r draws, bins of expectation under 5 merged into one
// (they are rare in these tests); it returns the statistic and the
// degrees of freedom.
func chiSquare(obs map[string]int, probs map[string]float64, r int) (float64, int) {
	var stat, tailE float64
	tailO, bins := 0, 0
	for k, p := range probs {
		e := p * float64(r)
		if e < 5 {
			tailE += e
			tailO += obs[k]
			continue
		}
		d := float64(obs[k]) - e
		stat += d * d / e
		bins++
	}
	for k := range obs {
		if _, ok := probs[k]; !ok {
			return math.Inf(1), bins // an impossible outcome
		}
	}
	if tailE > 0 {
		d := float64(tailO) - tailE
		stat += d * d / max(tailE, 1e-300)
		bins++
	}
	return stat, bins - 1
}

// permutations returns every distinct arrangement of the multiset
// (cells[i] counts[i] times), as strings.
func permutations(cells, counts []int64) []string {
	left := slices.Clone(counts)
	var total int64
	for _, c := range counts {
		total += c
	}
	var out []string
	cur := make([]byte, 0, total)
	var rec func()
	rec = func() {
		if int64(len(cur)) == total {
			out = append(out, string(cur))
			return
		}
		for i, c := range left {
			if c > 0 {
				left[i]--
				cur = append(cur, byte('a'+cells[i]))
				rec()
				cur = cur[:len(cur)-1]
				left[i]++
			}
		}
	}
	rec()
	return out
}

// TestShuffleBlocksUniform: ShuffleBlocks with blocks of 3 rows on a
// multiset of 7 rows (210 arrangements) gives every arrangement with
// probability 1/210 (all rows) and every prefix of 5 rows with the law of
// a uniform permutation's first 5 (without replacement), by χ² at level
// 1−10⁻⁵ over 42,000 runs, on both hypergeometric paths, with one and
// three workers. The oracle enumerates the arrangements. It fails on a
// split of the blocks that is not hypergeometric (a binomial split: each
// cell's share of a block drawn with replacement) and on blocks not
// shuffled within.
func TestShuffleBlocksUniform(t *testing.T) {
	cells, counts := []int64{0, 1, 2}, []int64{2, 2, 3}
	perms := permutations(cells, counts)
	if len(perms) != 210 {
		t.Fatalf("%d arrangements, want 210", len(perms))
	}
	defer func(b int64, w int, d int64) { shuffleBlockRows, shuffleWorkers, hyperDirectMax = b, w, d }(shuffleBlockRows, shuffleWorkers, hyperDirectMax)
	shuffleBlockRows = 3
	const R = 42_000
	for _, tc := range []struct {
		mode    Sampling
		rows    int
		workers int
		direct  int64
	}{
		{SampleAll, 7, 1, 16}, {SampleAll, 7, 3, 0}, {SampleWithoutReplacement, 5, 2, 16}, {SampleWithoutReplacement, 5, 1, 0},
	} {
		shuffleWorkers, hyperDirectMax = tc.workers, tc.direct
		probs := map[string]float64{}
		for _, p := range perms {
			probs[p[:tc.rows]] += 1 / float64(len(perms))
		}
		obs := map[string]int{}
		rnd := rand.New(rand.NewPCG(uint64(tc.rows), uint64(tc.workers)))
		buf := make([]byte, 0, 7)
		for range R {
			buf = buf[:0]
			if err := ShuffleBlocks(context.Background(), rnd, cells, counts, int64(tc.rows), tc.mode, func(c int64) error { buf = append(buf, byte('a'+c)); return nil }); err != nil {
				t.Fatal(err)
			}
			obs[string(buf)]++
		}
		stat, df := chiSquare(obs, probs, R)
		if crit := chiSquareCrit99999(df); stat > crit {
			t.Errorf("%s, %d rows, %d workers, direct ≤ %d: χ² %.1f > %.1f (%d df)", tc.mode, tc.rows, tc.workers, tc.direct, stat, crit, df)
		}
	}
}

// TestShuffleBlocksLarge: on the TPC-H example's shape (cells with skewed
// counts, several blocks), every mode gives exactly the rows asked for
// and, without replacement, never more of a cell than it holds (all: the
// exact multiset); with replacement, the frequencies count/total within
// 5 standard deviations.
func TestShuffleBlocksLarge(t *testing.T) {
	defer func(b int64) { shuffleBlockRows = b }(shuffleBlockRows)
	shuffleBlockRows = 10_000
	rnd := rand.New(rand.NewPCG(3, 4))
	const k = 300
	cells, counts := make([]int64, k), make([]int64, k)
	var total int64
	for i := range k {
		cells[i] = int64(7 * i)
		counts[i] = int64(rnd.Float64() * rnd.Float64() * 700)
		total += counts[i]
	}
	for _, tc := range []struct {
		mode Sampling
		rows int64
	}{{SampleAll, total}, {SampleWithoutReplacement, total/2 + 17}, {SampleWithReplacement, 3*total + 5}} {
		got := map[int64]int64{}
		var n int64
		if err := ShuffleBlocks(context.Background(), rnd, cells, counts, tc.rows, tc.mode, func(c int64) error { got[c]++; n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if n != tc.rows {
			t.Fatalf("%s: %d rows, want %d", tc.mode, n, tc.rows)
		}
		for i, c := range cells {
			switch tc.mode {
			case SampleAll:
				if got[c] != counts[i] {
					t.Fatalf("all rows: cell %d %d times, want %d", c, got[c], counts[i])
				}
			case SampleWithoutReplacement:
				if got[c] > counts[i] {
					t.Fatalf("without replacement: cell %d %d times, holds %d", c, got[c], counts[i])
				}
			default:
				p := float64(counts[i]) / float64(total)
				sd := math.Sqrt(float64(tc.rows) * p * (1 - p))
				if math.Abs(float64(got[c])-float64(tc.rows)*p) > 5*sd+1e-9 {
					t.Errorf("with replacement: cell %d %d times, want ≈ %.0f", c, got[c], float64(tc.rows)*p)
				}
			}
		}
	}
}

// TestShuffleBlocksDeterministic: a seeded draw gives the same rows with
// 1, 2, 3 or 8 workers (each block has its own stream), and a different
// seed other rows; an error of emit stops the draw and comes back.
func TestShuffleBlocksDeterministic(t *testing.T) {
	defer func(b int64, w int) { shuffleBlockRows, shuffleWorkers = b, w }(shuffleBlockRows, shuffleWorkers)
	shuffleBlockRows = 1000
	cells, counts := []int64{1, 2, 3, 4, 5}, []int64{2500, 10, 1200, 0, 3333}
	draw := func(seed uint64, workers int, mode Sampling, rows int64) []int64 {
		shuffleWorkers = workers
		var out []int64
		if err := ShuffleBlocks(context.Background(), rand.New(rand.NewChaCha8([32]byte{byte(seed)})), cells, counts, rows, mode, func(c int64) error { out = append(out, c); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, mode := range []Sampling{SampleAll, SampleWithoutReplacement, SampleWithReplacement} {
		rows := map[Sampling]int64{SampleAll: 7043, SampleWithoutReplacement: 4001, SampleWithReplacement: 9999}[mode]
		want := draw(1, 1, mode, rows)
		for _, w := range []int{2, 3, 8} {
			if got := draw(1, w, mode, rows); !slices.Equal(got, want) {
				t.Errorf("%s: %d workers drew other rows than one", mode, w)
			}
		}
		if slices.Equal(draw(2, 2, mode, rows), want) {
			t.Errorf("%s: seeds 1 and 2 drew the same rows", mode)
		}
	}
	stop := errors.New("stop")
	n := 0
	shuffleWorkers = 3
	err := ShuffleBlocks(context.Background(), rand.New(rand.NewPCG(1, 1)), cells, counts, 7043, SampleAll, func(int64) error {
		if n++; n == 2500 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 2500 {
		t.Errorf("emit's error: got %v after %d rows, want %v after 2500", err, n, stop)
	}
}

// BenchmarkShuffleBlocks is BenchmarkShuffle through ShuffleBlocks.
func BenchmarkShuffleBlocks(b *testing.B) {
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
		if err := ShuffleBlocks(context.Background(), rand.New(rand.NewChaCha8([32]byte{})), cells, counts, total, SampleAll, func(c int64) error { sink += c; return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// countingSource counts the words drawn from a PCG.
type countingSource struct {
	rand.PCG
	words int64
}

func (s *countingSource) Uint64() uint64 { s.words++; return s.PCG.Uint64() }

// TestShuffleBlocksHugePopulation: a sample without replacement of a few
// blocks from a population of about 2⁶² rows (the capped sample of a join
// of 9·10¹⁵ rows) takes O(rows) work, not O(population): it finishes (the
// hypergeometric draw of a block's cells never ended at such a
// population), with a number of words of randomness bounded by the cells
// and blocks alone — one hypergeometric draw per cell and block, at most
// 16 words each on its direct path, and the 4 words of a block's key; the
// blocks' own shuffles use their keys' streams. Each cell is drawn at most
// as often as it holds rows, and the rows are those asked for.
func TestShuffleBlocksHugePopulation(t *testing.T) {
	defer func(b int64, w int) { shuffleBlockRows, shuffleWorkers = b, w }(shuffleBlockRows, shuffleWorkers)
	shuffleBlockRows, shuffleWorkers = 1000, 2
	for _, k := range []int{81, 999} {
		cells, counts := make([]int64, k), make([]int64, k)
		for i := range k {
			cells[i] = int64(i)
			counts[i] = (1 << 62) / int64(k)
			if i%3 == 0 {
				counts[i] = int64(i) // a few small cells among the huge ones
			}
		}
		const rows = 5500
		src := &countingSource{PCG: *rand.NewPCG(uint64(k), 1)}
		got := make([]int64, k)
		var n int64
		if err := ShuffleBlocks(context.Background(), rand.New(src), cells, counts, rows, SampleWithoutReplacement, func(c int64) error {
			got[c]++
			n++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if n != rows {
			t.Fatalf("%d cells: %d rows, want %d", k, n, rows)
		}
		for i := range got {
			if got[i] > counts[i] {
				t.Fatalf("%d cells: cell %d drawn %d times, holds %d", k, i, got[i], counts[i])
			}
		}
		blocks := int64((rows + 999) / 1000)
		if bound := blocks * (int64(k)*(dp.HypergeometricDirect+2) + 4); src.words > bound {
			t.Errorf("%d cells: %d words of randomness for %d rows, want at most %d", k, src.words, rows, bound)
		}
	}
}

// TestShuffleBlocksCancel: a context cancelled by emit (no timing) stops
// the draw — on the block path before the next block, so fewer than one
// block of rows come after the cancellation, and on the one-block path
// within 65,536 rows — and its error wraps context.Canceled.
func TestShuffleBlocksCancel(t *testing.T) {
	defer func(b int64, w int) { shuffleBlockRows, shuffleWorkers = b, w }(shuffleBlockRows, shuffleWorkers)
	cells, counts := []int64{0, 1, 2}, []int64{1 << 61, 1 << 61, 12345}
	for _, tc := range []struct {
		block, rows, after int64
	}{{1000, 50_000, 1000}, {1 << 20, 500_000, 1 << 16}} {
		shuffleBlockRows, shuffleWorkers = tc.block, 2
		ctx, cancel := context.WithCancel(context.Background())
		var n, at int64
		err := ShuffleBlocks(ctx, rand.New(rand.NewPCG(1, 2)), cells, counts, tc.rows, SampleWithoutReplacement, func(int64) error {
			if n++; n == 1500 {
				cancel()
				at = n
			}
			return nil
		})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("block %d: got %v after %d rows, want context.Canceled", tc.block, err, n)
		}
		if n-at >= tc.after {
			t.Errorf("block %d: %d rows after the cancellation, want fewer than %d", tc.block, n-at, tc.after)
		}
	}
}

// BenchmarkShuffleBlocksCapped draws the capped sample of a huge join:
// benchWriterRows rows (SYNTH_BENCH_WRITER_ROWS; the release's cap is
// 10⁷) without replacement from 81 cells holding 9·10¹⁵ rows in all.
func BenchmarkShuffleBlocksCapped(b *testing.B) {
	n := int64(benchWriterRows(b))
	const k = 81
	cells, counts := make([]int64, k), make([]int64, k)
	for i := range cells {
		cells[i] = int64(i)
		counts[i] = int64(9e15) / k
	}
	var sink int64
	for b.Loop() {
		if err := ShuffleBlocks(context.Background(), rand.New(rand.NewChaCha8([32]byte{})), cells, counts, n, SampleWithoutReplacement, func(c int64) error { sink += c; return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
