//go:build ipopt

package ipopt

import (
	"context"
	"errors"
	"math"
	"testing"
)

// TestDisk solves max x + y s.t. x² + y² ≤ 1, 0 ≤ x, y ≤ 1 (optimum √2 at
// x = y = 1/√2) and max x + y s.t. x + y ≤ 0.5 (a linear row).
func TestDisk(t *testing.T) {
	p := &QCQP{C: []float64{-1, -1}, XL: []float64{0, 0}, XU: []float64{1, 1},
		LinPtr: []int32{0}, QuadPtr: []int32{0, 2}, TermPtr: []int32{0, 1, 2},
		TermIdx: []int32{0, 1}, TermVal: []float64{1, 1}, QuadHi: []float64{1}}
	sol, err := Solve(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(sol.Objective+math.Sqrt2) > 1e-7 || math.Abs(sol.X[0]-1/math.Sqrt2) > 1e-6 {
		t.Fatalf("solution %+v, want x = y = 1/√2", sol)
	}
	p.LinPtr, p.LinIdx, p.LinVal, p.LinLo, p.LinHi = []int32{0, 2}, []int32{0, 1}, []float64{1, 1}, []float64{-1e20}, []float64{0.5}
	sol, err = Solve(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(sol.Objective+0.5) > 1e-7 {
		t.Fatalf("with x + y ≤ 0.5: objective %v, want −0.5", sol.Objective)
	}
}

// TestFailureReturnsIterate: an infeasible program (0 ≤ x ≤ 1, x ≥ 2)
// fails with ErrFailed and still hands back Ipopt's last iterate, which
// callers repair instead of turning the failure into an error.
func TestFailureReturnsIterate(t *testing.T) {
	p := &QCQP{C: []float64{-1}, XL: []float64{0}, XU: []float64{1},
		LinPtr: []int32{0, 1}, LinIdx: []int32{0}, LinVal: []float64{1}, LinLo: []float64{2}, LinHi: []float64{1e20},
		QuadPtr: []int32{0}, TermPtr: []int32{0}}
	sol, err := Solve(context.Background(), p, nil)
	if !errors.Is(err, ErrFailed) {
		t.Fatalf("error %v, want ErrFailed", err)
	}
	if len(sol.X) != 1 || sol.Status == 0 || sol.Status == 1 {
		t.Fatalf("solution %+v, want the last iterate and a failure status", sol)
	}
}
