package multi

import (
	"context"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/relational/ipopt"
)

// TestPsiClampedNotRefused: a contribution is a sum over the data, and one
// tuple more can push it past 2⁵³ grid steps. On neighbouring inputs that
// straddle the bound, both Alg. 1 and Alg. 2 must answer (the refusal came
// after the budget charge, so its occurrence leaked whether the sum crossed
// 2⁵³); the clamped contribution is exactly 2⁵³. The old code answered the
// first input of each pair and refused the second.
func TestPsiClampedNotRefused(t *testing.T) {
	cfg := Config{Epsilon: 1, Delta: 1e-6, Failure: 0.1, GS: 1 << 10, Quantum: 1}
	for _, psi := range []float64{maxPsi, maxPsi + 2, 1e300} {
		entries := []Entry{{Unit: 0, Coord: 0, Psi: psi}, {Unit: 1, Coord: 0, Psi: 3}, {Unit: 0, Coord: 0, Psi: 5}}
		if _, err := Run(context.Background(), dp.NewSeededSource(1), entries, 1, cfg); err != nil {
			t.Errorf("Alg. 1 with ψ = %v: %v, want an answer", psi, err)
		}
		vs, err := unitVectors(entries, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := vs[0][0].psi; got != maxPsi {
			t.Errorf("Alg. 1 with ψ = %v: unit 0's contribution %v, want 2⁵³ (clamped)", psi, got)
		}
		fake := func(ctx context.Context, q *ipopt.QCQP, x0 []float64) (ipopt.Solution, error) {
			return ipopt.Solution{X: make([]float64, len(q.C))}, nil
		}
		g := []JoinGroup{{Coord: 0, Units: []int{0, 1}, Psi: psi}, {Coord: 0, Units: []int{1, 2}, Psi: 3}}
		if _, err := runSelfJoin(context.Background(), dp.NewSeededSource(1), g, 1, cfg, fake); err != nil {
			t.Errorf("Alg. 2 with ψ = %v: %v, want an answer", psi, err)
		}
	}
	// Below 0 or not whole cannot pass the public domain checks and stays
	// an error.
	for _, psi := range []float64{-1, 0.5} {
		if _, err := unitVectors([]Entry{{Unit: 0, Coord: 0, Psi: psi}}, 1); err == nil {
			t.Errorf("ψ = %v accepted", psi)
		}
	}
}
