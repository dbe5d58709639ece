// Package ipopt is a thin cgo wrapper of the C interface of Ipopt (COIN-OR
// Interior Point OPTimizer, Wächter and Biegler 2006) for one problem class:
// the convex QCQPs of Dong–Sun–Yi §5.3 ([QCQP]) — a linear objective,
// linear constraints with bounds, and constraints bounding a sum of squares
// of linear forms.
//
// The solver is compiled in with the build tag ipopt (Debian package
// coinor-libipopt-dev, found with pkg-config). Without the tag [Available]
// is false and [Solve] returns [ErrUnavailable].
//
// # Numerical caveat
//
// Ipopt is an interior-point method: its solution is optimal and feasible
// to the tolerance [Tolerance] (relative), not exactly, and a status of 1
// ("solved to acceptable level") is looser still. Callers that derive a
// sensitivity bound from the solution must check its feasibility
// themselves (relational/multi does, in exact arithmetic, and repairs it)
// and must not let a failed solve change their control flow in a
// data-dependent way: [Solve] returns the last iterate with its error.
package ipopt

import "errors"

// ErrUnavailable is returned by [Solve] in builds without the ipopt tag.
var ErrUnavailable = errors.New("ipopt: built without the ipopt tag (apt-get install coinor-libipopt-dev; go build -tags ipopt)")

// ErrFailed is wrapped by errors for a solve that did not converge.
var ErrFailed = errors.New("ipopt: solve failed")

// Tolerance is Ipopt's convergence tolerance (option tol) used by [Solve].
const Tolerance = 1e-9

// QCQP is
//
//	minimize   Σ_v C[v]·x_v
//	subject to XL[v] ≤ x_v ≤ XU[v]
//	           LinLo[i] ≤ Σ_{e ∈ Lin row i} val_e·x_{idx_e} ≤ LinHi[i]
//	           Σ_{t ∈ Quad constraint j} (Σ_{e ∈ term t} val_e·x_{idx_e})² ≤ QuadHi[j]
//
// in compressed sparse rows: linear row i holds entries LinPtr[i] ..
// LinPtr[i+1]−1 of LinIdx, LinVal; quadratic constraint j holds terms
// QuadPtr[j] .. QuadPtr[j+1]−1, and term t holds entries TermPtr[t] ..
// TermPtr[t+1]−1 of TermIdx, TermVal. The terms of one quadratic
// constraint must have disjoint supports, and a term must not repeat a
// variable. Every constraint is convex (a sum of squares bounded above),
// so a local optimum is global.
type QCQP struct {
	C, XL, XU            []float64
	LinPtr               []int32
	LinIdx               []int32
	LinVal, LinLo, LinHi []float64
	QuadPtr, TermPtr     []int32
	TermIdx              []int32
	TermVal, QuadHi      []float64
}

// Solution is the result of [Solve].
type Solution struct {
	// X is the optimal point.
	X []float64
	// Objective is Σ C[v]·X[v].
	Objective float64
	// Status is Ipopt's ApplicationReturnStatus (0: solved, 1: solved to
	// acceptable level; other values come with an error wrapping
	// [ErrFailed]).
	Status int
}
