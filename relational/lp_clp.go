//go:build clp

package relational

import (
	"context"
	"math"

	"github.com/synth-dp/synth/relational/clp"
)

// With the clp build tag, R2T solves the LP truncation of three or more
// units with COIN-OR CLP (package clp).
func init() { lpSolver = clpTruncation }

// clpTruncation solves max Σ x_j s.t. 0 ≤ x_j ≤ ub_j and, for every row r,
// Σ_{j: r ∈ cols[j]} x_j ≤ rhs, with CLP's simplex.
func clpTruncation(ctx context.Context, ub []float64, cols [][]int32, nrows int, rhs float64) (float64, error) {
	n := len(ub)
	p := clp.Problem{Obj: make([]float64, n), ColLo: make([]float64, n), ColHi: ub, Start: make([]int, n+1),
		RowLo: make([]float64, nrows), RowHi: make([]float64, nrows), Maximize: true}
	for j, rows := range cols {
		p.Obj[j] = 1
		p.Index = append(p.Index, rows...)
		for range rows {
			p.Value = append(p.Value, 1)
		}
		p.Start[j+1] = len(p.Index)
	}
	for r := range p.RowLo {
		p.RowLo[r], p.RowHi[r] = math.Inf(-1), rhs
	}
	v, _, err := clp.Solve(ctx, p)
	return v, err
}
