package workload

import (
	"slices"

	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/output/synthfile"
	"github.com/synth-dp/synth/spec"
)

// SumGrid returns the grid of the column m for its workload sums: the
// released columns (positions in release order, increasing) that the
// spec's numeric queries summing m use as conditions; empty when they use
// none. A measure's numerical run keeps its sums accurate over this grid.
// It reads only the spec: its output is public.
func SumGrid(s *spec.Spec, m spec.ColumnRef) []int {
	pos := layout.Positions(s)
	var grid []int
	for _, q := range s.Workload.Numeric {
		if q.Sum != m {
			continue
		}
		for _, c := range q.Where {
			if p := pos[c.Column]; !slices.Contains(grid, p) {
				grid = append(grid, p)
			}
		}
	}
	slices.Sort(grid)
	return grid
}

// SumBox returns a workload sum's box over the grid columns (positions in
// release order, as [SumGrid] returns them): per grid column the bins
// whose representative satisfies the query's condition on it (nil, every
// bin, when it has none), the semantics of the PMW numeric family (see
// [Families]) and of SQL on the synthetic file. ok is false when some
// column accepts no bin (the sum is then 0 whatever the data). Every
// condition of q must be on a grid column.
func SumBox(s *spec.Spec, dec *synthfile.Decoder, grid []int, q spec.NumericQuery) (where [][]int, ok bool) {
	pos := layout.Positions(s)
	where = make([][]int, len(grid))
	for _, c := range q.Where {
		d := slices.Index(grid, pos[c.Column])
		codes := []int{}
		for b := range int(dec.NumBins(grid[d])) {
			if satisfies(dec.Value(grid[d], b), c) {
				codes = append(codes, b)
			}
		}
		if len(codes) == 0 {
			return nil, false
		}
		where[d] = codes
	}
	return where, true
}
