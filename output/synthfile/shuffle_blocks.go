package synthfile

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/synth-dp/synth/dp"
)

// ShuffleBlockRows is the number of rows of one block of [ShuffleBlocks]:
// a Parquet row group of the writer.
const ShuffleBlockRows = rowGroupRows

// shuffleBlockRows is ShuffleBlockRows but in tests.
var shuffleBlockRows int64 = ShuffleBlockRows

// shuffleWorkers is the number of blocks [ShuffleBlocks] shuffles at once
// (0: GOMAXPROCS, at most [MaxWriterGoroutines]); tests set it. It never
// changes the rows, only how fast they come.
var shuffleWorkers = 0

// ShuffleBlocks draws the same rows as [Shuffle] — the same distribution in
// every mode — block by block, the blocks shuffled in parallel, and hands
// them to emit one at a time on the calling goroutine, in order.
//
// The rows are cut into blocks of [ShuffleBlockRows] (the last one
// shorter). Without replacement ([SampleAll], [SampleWithoutReplacement])
// the cells of each block are drawn first, in block order, from what the
// blocks before it left: a multivariate hypergeometric draw (one
// univariate hypergeometric draw per cell, see [hypergeometric]), which is
// the law of the cells among any fixed positions of a uniformly random
// permutation; then each block's multiset is shuffled uniformly on its own
// goroutine. The concatenation is a uniformly random permutation of the
// multiset (its first rows without replacement). With replacement, each
// block draws its rows independently. Each block has its own ChaCha8
// stream keyed by 256 bits drawn from rnd in block order, so a seeded rnd
// gives the same rows whatever GOMAXPROCS is; an unseeded one (keyed from
// crypto/rand) gives keys from its stream.
//
// One block (or more cells than a block has rows, where the split would
// cost more than it saves) is drawn by [Shuffle] with rnd itself. Memory is
// at most workers+1 blocks of 4-byte cell indices and the counts.
//
// Work is O(rows + blocks·cells) whatever Σ counts (up to 2⁶³ − 1: the
// capped sample of a 9·10¹⁵-row join): each block's cells take one
// hypergeometric draw per cell, of expected work O(1 + standard deviation),
// whose sum over the cells is at most O(√(cells·block)). It returns
// ctx's error, wrapped, when ctx is done: checked before every block and
// every 65,536 rows of a block.
func ShuffleBlocks(ctx context.Context, rnd *rand.Rand, cells, counts []int64, rows int64, mode Sampling, emit func(cell int64) error) error {
	block := shuffleBlockRows
	k := len(counts)
	if rows <= block || int64(k) > block || k > math.MaxInt32 {
		var n int
		return Shuffle(rnd, cells, counts, rows, mode, func(cell int64) error {
			if n++; n&0xffff == 0 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("release: drawing rows: %w", err)
				}
			}
			return emit(cell)
		})
	}
	var total int64
	for i, c := range counts {
		if c < 0 {
			return fmt.Errorf("release: cell %d has a negative count %d", cells[i], c)
		}
		total += c
	}
	switch {
	case mode == SampleAll && rows != total:
		return fmt.Errorf("release: shuffle all %d rows, asked for %d", total, rows)
	case mode == SampleWithoutReplacement && rows > total:
		return fmt.Errorf("release: sample %d rows without replacement from %d", rows, total)
	case total == 0:
		return fmt.Errorf("release: sample %d rows from an empty distribution", rows)
	}
	workers := shuffleWorkers
	if workers <= 0 {
		workers = min(runtime.GOMAXPROCS(0), MaxWriterGoroutines)
	}
	// The pool of the cells still to draw from (without replacement).
	left := append([]int64(nil), counts...)
	leftTotal := total
	type job struct {
		idx    []int32 // the block's cells, as indices into cells
		counts []int64 // their counts in the block
		rows   int64
		key    [32]byte
		out    []uint32
		err    error
		done   chan struct{}
	}
	// On return: stop the workers' blocks, end their loops, wait for them.
	var wg sync.WaitGroup
	defer wg.Wait()
	jobs := make(chan *job)
	defer close(jobs)
	stop := make(chan struct{})
	defer close(stop)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				j.err = shuffleBlock(ctx, j.idx, j.counts, j.rows, mode, j.key, &j.out, stop)
				close(j.done)
			}
		}()
	}
	// Blocks in flight, oldest first: at most workers+1.
	var queue []*job
	var free [][]uint32
	drain := func() error {
		j := queue[0]
		queue = queue[1:]
		<-j.done
		if j.err != nil {
			return j.err
		}
		for _, i := range j.out {
			if err := emit(cells[i]); err != nil {
				return err
			}
		}
		free = append(free, j.out[:0])
		return nil
	}
	for start := int64(0); start < rows; start += block {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("release: drawing rows: %w", err)
		}
		n := min(block, rows-start)
		j := &job{rows: n, done: make(chan struct{})}
		if mode == SampleWithReplacement {
			for i, c := range counts {
				if c > 0 {
					j.idx, j.counts = append(j.idx, int32(i)), append(j.counts, c)
				}
			}
		} else {
			// The block's cells: a multivariate hypergeometric draw of n
			// from the pool, cell by cell.
			dp.DrawWithoutReplacement(rnd, left, leftTotal, n, hyperDirectMax, func(i int, x int64) {
				j.idx, j.counts = append(j.idx, int32(i)), append(j.counts, x)
			})
			leftTotal -= n
		}
		for w := 0; w < 4; w++ {
			v := rnd.Uint64()
			for b := range 8 {
				j.key[8*w+b] = byte(v >> (8 * b))
			}
		}
		if len(free) > 0 {
			j.out, free = free[len(free)-1], free[:len(free)-1]
		}
		if len(queue) > workers {
			if err := drain(); err != nil {
				return err
			}
		}
		queue = append(queue, j)
		jobs <- j // a worker is free or frees itself: none waits on us
	}
	for len(queue) > 0 {
		if err := drain(); err != nil {
			return err
		}
	}
	return nil
}

// shuffleBlock draws one block's rows with its own stream into *out, as
// indices of the block's cells mapped back to idx.
func shuffleBlock(ctx context.Context, idx []int32, counts []int64, rows int64, mode Sampling, key [32]byte, out *[]uint32, stop <-chan struct{}) error {
	r := rand.New(rand.NewChaCha8(key))
	local := make([]int64, len(idx))
	for i := range local {
		local[i] = int64(i)
	}
	sub := SampleAll
	if mode == SampleWithReplacement {
		sub = SampleWithReplacement
	}
	o := (*out)[:0]
	if int64(cap(o)) < rows {
		o = make([]uint32, 0, rows)
	}
	var n int
	err := Shuffle(r, local, counts, rows, sub, func(c int64) error {
		o = append(o, uint32(idx[c]))
		if n++; n&0xffff == 0 {
			select {
			case <-stop:
				return errors.New("release: shuffle stopped")
			case <-ctx.Done():
				return fmt.Errorf("release: drawing rows: %w", ctx.Err())
			default:
			}
		}
		return nil
	})
	*out = o
	return err
}

// hyperDirectMax is [dp.HypergeometricDirect] but in tests, which lower it
// to send small draws through the inversion of [dp.HypergeometricWith].
var hyperDirectMax int64 = dp.HypergeometricDirect
