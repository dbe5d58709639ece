//go:build clp

package clp

import (
	"context"
	"math"
	"testing"
)

// TestSolveSmall solves max x + y s.t. x + 2y ≤ 4, 3x + y ≤ 6, x, y ≥ 0,
// whose optimum is 2.8 at (1.6, 1.2).
func TestSolveSmall(t *testing.T) {
	inf := math.Inf(1)
	v, x, err := Solve(context.Background(), Problem{
		Obj: []float64{1, 1}, ColLo: []float64{0, 0}, ColHi: []float64{inf, inf},
		Start: []int{0, 2, 4}, Index: []int32{0, 1, 0, 1}, Value: []float64{1, 3, 2, 1},
		RowLo: []float64{-inf, -inf}, RowHi: []float64{4, 6}, Maximize: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(v-2.8) > 1e-9 || math.Abs(x[0]-1.6) > 1e-9 || math.Abs(x[1]-1.2) > 1e-9 {
		t.Fatalf("got %v at %v, want 2.8 at (1.6, 1.2)", v, x)
	}
}

// TestSolveInfeasible checks that an infeasible LP is an error.
func TestSolveInfeasible(t *testing.T) {
	_, _, err := Solve(context.Background(), Problem{
		Obj: []float64{1}, ColLo: []float64{2}, ColHi: []float64{3},
		Start: []int{0, 1}, Index: []int32{0}, Value: []float64{1},
		RowLo: []float64{math.Inf(-1)}, RowHi: []float64{1}, Maximize: true,
	})
	if err == nil {
		t.Fatal("no error for an infeasible LP")
	}
}
