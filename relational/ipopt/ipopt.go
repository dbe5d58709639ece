//go:build ipopt

package ipopt

/*
#cgo pkg-config: ipopt
#include <stdlib.h>
#include "qcqp.h"
*/
import "C"

import (
	"context"
	"fmt"
	"math"
	"unsafe"
)

// Available reports whether the package was built with Ipopt.
const Available = true

// Solve solves p from the starting point x0 (nil: the midpoint of the
// variable bounds, or 0 where unbounded). It validates the structure,
// copies it to C memory, and runs IpoptSolve (print_level 0, tol
// [Tolerance], adaptive μ). A status other than solved or solved to an
// acceptable level wraps [ErrFailed] and still returns Ipopt's last
// iterate in the Solution (X may be infeasible, or NaN after an
// evaluation error): callers that need an answer whatever happens repair
// it themselves. Errors about the structure of p return an empty
// Solution, also wrapping [ErrFailed]. ctx is checked before the solve
// (Ipopt cannot be interrupted from Go). Safe for concurrent use: every
// call has its own problem.
func Solve(ctx context.Context, p *QCQP, x0 []float64) (Solution, error) {
	if err := ctx.Err(); err != nil {
		return Solution{}, err
	}
	n := len(p.C)
	nlin, nquad := len(p.LinLo), len(p.QuadHi)
	if len(p.XL) != n || len(p.XU) != n || len(p.LinHi) != nlin || len(p.LinPtr) != nlin+1 || len(p.QuadPtr) != nquad+1 ||
		len(p.LinIdx) != len(p.LinVal) || len(p.TermIdx) != len(p.TermVal) || len(p.TermPtr) == 0 {
		return Solution{}, fmt.Errorf("%w: inconsistent QCQP dimensions", ErrFailed)
	}
	for _, v := range append(append([]int32(nil), p.LinIdx...), p.TermIdx...) {
		if v < 0 || int(v) >= n {
			return Solution{}, fmt.Errorf("%w: variable index %d out of [0, %d)", ErrFailed, v, n)
		}
	}
	nJac := len(p.LinIdx) + len(p.TermIdx)
	nHess := 0
	for t := 0; t+1 < len(p.TermPtr); t++ {
		s := int(p.TermPtr[t+1] - p.TermPtr[t])
		nHess += s * (s + 1) / 2
	}
	if nJac > math.MaxInt32 || nHess > math.MaxInt32 {
		return Solution{}, fmt.Errorf("%w: problem too large for Ipopt's 32-bit indices", ErrFailed)
	}
	// C copies of everything Ipopt's callbacks read (cgo forbids keeping Go
	// pointers in C memory).
	var frees []unsafe.Pointer
	defer func() {
		for _, f := range frees {
			C.free(f)
		}
	}()
	dbl := func(s []float64) *C.double {
		m := C.malloc(C.size_t(max(1, len(s)) * 8))
		frees = append(frees, m)
		d := unsafe.Slice((*C.double)(m), max(1, len(s)))
		for i, v := range s {
			d[i] = C.double(v)
		}
		return (*C.double)(m)
	}
	ints := func(s []int32) *C.int {
		m := C.malloc(C.size_t(max(1, len(s)) * 4))
		frees = append(frees, m)
		d := unsafe.Slice((*C.int)(m), max(1, len(s)))
		for i, v := range s {
			d[i] = C.int(v)
		}
		return (*C.int)(m)
	}
	gl := append(append([]float64(nil), p.LinLo...), make([]float64, nquad)...)
	gu := append(append([]float64(nil), p.LinHi...), p.QuadHi...)
	for j := range nquad {
		gl[nlin+j] = -2e19 // −∞ for Ipopt (nlp_lower_bound_inf = −1e19)
	}
	for i := range gl {
		gl[i], gu[i] = clampInf(gl[i]), clampInf(gu[i])
	}
	xl, xu := make([]float64, n), make([]float64, n)
	for v := range n {
		xl[v], xu[v] = clampInf(p.XL[v]), clampInf(p.XU[v])
	}
	cp := (*C.qcqp)(C.malloc(C.size_t(unsafe.Sizeof(C.qcqp{}))))
	frees = append(frees, unsafe.Pointer(cp))
	*cp = C.qcqp{n: C.int(n), nlin: C.int(nlin), nquad: C.int(nquad), c: dbl(p.C),
		lin_ptr: ints(p.LinPtr), lin_idx: ints(p.LinIdx), lin_val: dbl(p.LinVal),
		quad_ptr: ints(p.QuadPtr), term_ptr: ints(p.TermPtr), term_idx: ints(p.TermIdx), term_val: dbl(p.TermVal)}
	start := make([]float64, n)
	for v := range n {
		switch {
		case x0 != nil:
			start[v] = x0[v]
		case !math.IsInf(p.XL[v], 0) && !math.IsInf(p.XU[v], 0):
			start[v] = (p.XL[v] + p.XU[v]) / 2
		}
	}
	x := dbl(start)
	var obj C.double
	status := C.qcqp_solve(cp, dbl(xl), dbl(xu), dbl(gl), dbl(gu), C.int(nJac), C.int(nHess), C.double(Tolerance), x, &obj)
	out := Solution{X: make([]float64, n), Objective: float64(obj), Status: int(status)}
	xs := unsafe.Slice(x, n)
	for v := range n {
		out.X[v] = float64(xs[v])
	}
	if status != 0 && status != 1 {
		return out, fmt.Errorf("%w: Ipopt status %d", ErrFailed, int(status))
	}
	return out, nil
}

func clampInf(v float64) float64 {
	switch {
	case v >= 1e19:
		return 2e19
	case v <= -1e19:
		return -2e19
	}
	return v
}
