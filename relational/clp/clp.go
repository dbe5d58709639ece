//go:build clp

package clp

/*
#cgo pkg-config: clp
#include <stdlib.h>
#include <Clp_C_Interface.h>
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// ErrNotOptimal is wrapped when CLP stops without a proven optimum
// (infeasible, unbounded, or stopped on a limit).
var ErrNotOptimal = errors.New("clp: no proven optimum")

// Problem is the LP
//
//	max (or min) Σ_j Obj[j]·x_j  s.t.  RowLo ≤ A·x ≤ RowHi,  ColLo ≤ x ≤ ColHi,
//
// with A in column-major form: column j's non-zeros are Value[k] in rows
// Index[k] for Start[j] ≤ k < Start[j+1]. ±math.Inf bounds are infinite.
type Problem struct {
	Obj, ColLo, ColHi []float64
	Start             []int
	Index             []int32
	Value             []float64
	RowLo, RowHi      []float64
	Maximize          bool
}

// Solve solves p and returns the optimal objective value and solution.
func Solve(ctx context.Context, p Problem) (float64, []float64, error) {
	n, m := len(p.Obj), len(p.RowLo)
	if len(p.ColLo) != n || len(p.ColHi) != n || len(p.Start) != n+1 || len(p.RowHi) != m ||
		len(p.Index) != len(p.Value) || (n > 0 && p.Start[n] != len(p.Index)) {
		return 0, nil, fmt.Errorf("clp: inconsistent problem dimensions (%d columns, %d rows, %d non-zeros)", n, m, len(p.Index))
	}
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	if n == 0 {
		return 0, nil, nil
	}
	start := make([]C.CoinBigIndex, n+1)
	for i, s := range p.Start {
		start[i] = C.CoinBigIndex(s)
	}
	index := make([]C.int, len(p.Index)+1) // +1: never a zero-length slice
	for i, r := range p.Index {
		if r < 0 || int(r) >= m {
			return 0, nil, fmt.Errorf("clp: row index %d outside [0, %d)", r, m)
		}
		index[i] = C.int(r)
	}
	dbl := func(v []float64) []C.double {
		out := make([]C.double, len(v)+1)
		for i, x := range v {
			switch {
			case math.IsInf(x, 1):
				x = math.MaxFloat64
			case math.IsInf(x, -1):
				x = -math.MaxFloat64
			}
			out[i] = C.double(x)
		}
		return out
	}
	value, colLo, colHi, obj, rowLo, rowHi := dbl(p.Value), dbl(p.ColLo), dbl(p.ColHi), dbl(p.Obj), dbl(p.RowLo), dbl(p.RowHi)
	model := C.Clp_newModel()
	if model == nil {
		return 0, nil, errors.New("clp: cannot create a model")
	}
	defer C.Clp_deleteModel(model)
	C.Clp_setLogLevel(model, 0)
	C.Clp_loadProblem(model, C.int(n), C.int(m), &start[0], &index[0], &value[0], &colLo[0], &colHi[0], &obj[0], &rowLo[0], &rowHi[0])
	if p.Maximize {
		C.Clp_setOptimizationDirection(model, -1)
	}
	C.Clp_initialSolve(model)
	if C.Clp_isProvenOptimal(model) == 0 {
		return 0, nil, fmt.Errorf("%w (status %d)", ErrNotOptimal, int(C.Clp_status(model)))
	}
	x := make([]float64, n)
	sol := unsafe.Slice(C.Clp_primalColumnSolution(model), n)
	for i := range x {
		x[i] = float64(sol[i])
	}
	return float64(C.Clp_objectiveValue(model)), x, nil
}
