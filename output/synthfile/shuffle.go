package synthfile

import (
	"fmt"
	"math"
)

// Sampling describes how [Shuffle] draws the rows it writes.
type Sampling string

const (
	// SampleAll writes every row of the counts, in a uniformly random order.
	SampleAll Sampling = "all"
	// SampleWithoutReplacement writes a uniformly random subset of the
	// rows of the counts, of the requested size, in a uniformly random
	// order (the first rows of a random permutation).
	SampleWithoutReplacement Sampling = "without replacement"
	// SampleWithReplacement writes independent draws from the distribution
	// count/total (multinomial sampling), for more rows than the counts
	// hold.
	SampleWithReplacement Sampling = "with replacement (multinomial)"
)

// Shuffle draws rows rows from the multiset of cells given by counts
// (cells[i] with multiplicity counts[i] > 0) with the randomness of rnd and
// hands them to emit one at a time, in random order:
//
//   - [SampleAll] (rows = Σ counts): a uniformly random permutation of the
//     multiset;
//   - [SampleWithoutReplacement] (rows < Σ counts): its first rows rows;
//   - [SampleWithReplacement]: rows independent draws, cell i with
//     probability counts[i]/Σ counts.
//
// Each row picks a uniform position among the remaining rows and finds its
// cell in a Fenwick tree over the counts (O(log K) for K cells), then, but
// with replacement, removes it. Memory is the counts plus the tree, at
// most 2K int64 (padded to a power of two), whatever the number of rows. The rows depend only on the counts and rnd:
// post-processing.
func Shuffle(rnd interface{ Int64N(int64) int64 }, cells, counts []int64, rows int64, mode Sampling, emit func(cell int64) error) error {
	k := len(counts)
	top := 1
	for top*2 <= k {
		top *= 2
	}
	// A 1-based Fenwick tree over the counts, padded to 2·top entries with
	// MaxInt64 so that the search below never checks the bound: a padded
	// node is never ≤ r, so it is never taken.
	tree := make([]int64, max(k+1, 2*top))
	var total int64
	for i, c := range counts {
		if c < 0 {
			return fmt.Errorf("release: cell %d has a negative count %d", cells[i], c)
		}
		total += c
		tree[i+1] += c
		if j := (i + 1) + ((i + 1) & -(i + 1)); j <= k {
			tree[j] += tree[i+1]
		}
	}
	for j := k + 1; j < len(tree); j++ {
		tree[j] = math.MaxInt64
	}
	switch {
	case mode == SampleAll && rows != total:
		return fmt.Errorf("release: shuffle all %d rows, asked for %d", total, rows)
	case mode == SampleWithoutReplacement && rows > total:
		return fmt.Errorf("release: sample %d rows without replacement from %d", rows, total)
	case rows > 0 && total == 0:
		return fmt.Errorf("release: sample %d rows from an empty distribution", rows)
	}
	remaining := total
	for range rows {
		// The smallest i with prefix(i) > r: binary lifting, without
		// branches (a mispredicted branch per level cost most of the
		// time): m is all ones when the node is taken (tree[next] ≤ r).
		// r − tree[next] cannot overflow: 0 ≤ r and tree[next] ≤ MaxInt64.
		r := rnd.Int64N(remaining)
		pos := 0
		for step := top; step > 0; step >>= 1 {
			next := pos + step
			d := r - tree[next]
			m := ^(d >> 63)
			pos += step & int(m)
			r -= tree[next] & m
		}
		// cells[pos] (0-based) is the row's cell.
		if mode != SampleWithReplacement {
			for j := pos + 1; j <= k; j += j & -j {
				tree[j]--
			}
			remaining--
		}
		if err := emit(cells[pos]); err != nil {
			return err
		}
	}
	return nil
}
