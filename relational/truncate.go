package relational

import (
	"context"
	"fmt"
	"math"
)

// Contribution is a set of join results that reference the same units: one
// unit id per unit (dense ids from 0, per unit) and their total ψ ≥ 0.
// Merging join results with the same units leaves the truncation LP's
// value unchanged: their variables have the same constraints.
type Contribution struct {
	// Units holds one id per unit.
	Units []int
	// Psi is the total contribution ψ of the join results.
	Psi float64
}

// Truncation evaluates the LP truncation of R2T (Dong et al. SIGMOD 2022,
// §5; survey §4.2) on an increasing ladder of thresholds:
//
//	Q(I, τ) = max Σ_j u_j  s.t.  0 ≤ u_j ≤ ψ_j,  Σ_{j ∋ i} u_j ≤ τ for every unit i.
//
// Q(I, τ) ≤ Q(I) = Σ ψ_j; deleting one unit (and its join results) changes
// Q(I, τ) by at most τ; and Q(I, τ) = Q(I) once τ ≥ DS_Q(I), the largest
// total contribution of one unit.
type Truncation interface {
	// At returns Q(I, τ). Calls must come with non-decreasing τ.
	At(ctx context.Context, tau float64) (float64, error)
}

// NewTruncation picks the exact method by the number k of units: a closed
// form for k = 1, a max flow for k = 2, the LP solver for k ≥ 3 (CLP, when
// built with the clp tag; otherwise an error wrapping [ErrNeedsCLP]).
// counts are the numbers of distinct ids per unit.
func NewTruncation(cs []Contribution, counts []int) (Truncation, error) {
	for _, c := range cs {
		if !(c.Psi >= 0) || math.IsInf(c.Psi, 0) {
			return nil, invalid("contribution ψ = %v (R2T needs finite ψ ≥ 0)", c.Psi)
		}
		if len(c.Units) != len(counts) {
			return nil, invalid("contribution with %d units, want %d", len(c.Units), len(counts))
		}
	}
	switch len(counts) {
	case 0:
		return nil, invalid("R2T needs at least one unit")
	case 1:
		return newClosedForm(cs, counts[0]), nil
	case 2:
		return newFlow(cs, counts[0], counts[1]), nil
	}
	if lpSolver == nil {
		return nil, ErrNeedsCLP
	}
	return &lpTruncation{cs: cs, counts: counts}, nil
}

// closedForm is Q(I, τ) = Σ_i min(τ, S_i) with S_i = Σ_{j∋i} ψ_j: with one
// unit the constraints are disjoint.
type closedForm struct{ s []float64 }

func newClosedForm(cs []Contribution, n int) *closedForm {
	s := make([]float64, n)
	for _, c := range cs {
		s[c.Units[0]] += c.Psi
	}
	return &closedForm{s: s}
}

func (c *closedForm) At(_ context.Context, tau float64) (float64, error) {
	sum := 0.0
	for _, v := range c.s {
		sum += math.Min(tau, v)
	}
	return sum, nil
}

// lpSolver solves max Σ x_j s.t. 0 ≤ x_j ≤ ub_j, Σ_{j ∈ rows[r]} x_j ≤ rhs
// for every row r, given per column j its rows cols[j]. It is set by the
// clp build tag.
var lpSolver func(ctx context.Context, ub []float64, cols [][]int32, nrows int, rhs float64) (float64, error)

// lpTruncation solves the LP for every τ.
type lpTruncation struct {
	cs     []Contribution
	counts []int
	ub     []float64
	cols   [][]int32
	nrows  int
}

func (l *lpTruncation) At(ctx context.Context, tau float64) (float64, error) {
	if l.cols == nil {
		off := make([]int, len(l.counts))
		for i := 1; i < len(off); i++ {
			off[i] = off[i-1] + l.counts[i-1]
		}
		l.nrows = off[len(off)-1] + l.counts[len(off)-1]
		l.ub = make([]float64, len(l.cs))
		l.cols = make([][]int32, len(l.cs))
		for j, c := range l.cs {
			l.ub[j] = c.Psi
			rows := make([]int32, len(c.Units))
			for i, u := range c.Units {
				rows[i] = int32(off[i] + u)
			}
			l.cols[j] = rows
		}
	}
	v, err := lpSolver(ctx, l.ub, l.cols, l.nrows, tau)
	if err != nil {
		return 0, fmt.Errorf("relational: R2T LP at τ = %v: %w", tau, err)
	}
	return v, nil
}
