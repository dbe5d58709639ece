package multi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/relational/ipopt"
)

// checkFeasible is an independent exact checker of every constraint of the
// QCQP at radius r for the point (y, z): 0 ≤ y, z ≤ 1,
// z_g ≥ Σ_{i∈D_g} y_i − |D_g| + 1, and Σ_k (Σ_{g∋i, coord k} ψ_g z_g)² ≤ r²
// for every unit, all in big.Rat (every float64 converted exactly).
func checkFeasible(groups []JoinGroup, n, d int, r float64, y, z []float64) error {
	rat := func(f float64) *big.Rat { return new(big.Rat).SetFloat64(f) }
	zero, one := new(big.Rat), big.NewRat(1, 1)
	for i, v := range y {
		if math.IsNaN(v) || rat(v).Cmp(zero) < 0 || rat(v).Cmp(one) > 0 {
			return fmt.Errorf("y_%d = %v outside [0, 1]", i, v)
		}
	}
	s := make([][]*big.Rat, n)
	for i := range s {
		s[i] = make([]*big.Rat, d)
		for k := range s[i] {
			s[i][k] = new(big.Rat)
		}
	}
	for g, jg := range groups {
		if math.IsNaN(z[g]) || rat(z[g]).Cmp(zero) < 0 || rat(z[g]).Cmp(one) > 0 {
			return fmt.Errorf("z_%d = %v outside [0, 1]", g, z[g])
		}
		lhs := rat(1 - float64(len(jg.Units)))
		for _, u := range jg.Units {
			lhs.Add(lhs, rat(y[u]))
		}
		if rat(z[g]).Cmp(lhs) < 0 {
			return fmt.Errorf("z_%d = %v < Σy − |D| + 1 = %v", g, z[g], lhs.FloatString(12))
		}
		for _, u := range jg.Units {
			s[u][jg.Coord].Add(s[u][jg.Coord], new(big.Rat).Mul(rat(jg.Psi), rat(z[g])))
		}
	}
	r2 := new(big.Rat).Mul(rat(r), rat(r))
	for i := range s {
		n2 := new(big.Rat)
		for _, v := range s[i] {
			n2.Add(n2, new(big.Rat).Mul(v, v))
		}
		if n2.Cmp(r2) > 0 {
			f, _ := n2.Float64()
			return fmt.Errorf("unit %d: ‖S_i(z)‖² = %v > r² = %v", i, f, r*r)
		}
	}
	return nil
}

// tightOf is z of (17) for y, in float64 (the unrepaired point a solver
// would hand back).
func tightOf(groups []JoinGroup, y []float64) []float64 {
	z := make([]float64, len(groups))
	for g, jg := range groups {
		s := 1 - float64(len(jg.Units))
		for _, u := range jg.Units {
			s += y[u]
		}
		z[g] = math.Max(0, s)
	}
	return z
}

// gridArgmax is [gridE]'s maximiser on 3 units: the feasible grid point
// (float64 check, as gridE) with the largest Σ y.
func gridArgmax(groups []JoinGroup, d int, r float64, m int) []float64 {
	best, arg := -1.0, []float64{0, 0, 0}
	for a := 0; a <= m; a++ {
		for b := 0; b <= m; b++ {
			for c := 0; c <= m; c++ {
				y := []float64{float64(a) / float64(m), float64(b) / float64(m), float64(c) / float64(m)}
				if y[0]+y[1]+y[2] <= best {
					continue
				}
				z := tightOf(groups, y)
				s := make([][]float64, 3)
				for i := range s {
					s[i] = make([]float64, d)
				}
				for g, jg := range groups {
					for _, u := range jg.Units {
						s[u][jg.Coord] += jg.Psi * z[g]
					}
				}
				ok := true
				for i := range s {
					n2 := 0.0
					for _, v := range s[i] {
						n2 += v * v
					}
					ok = ok && n2 <= r*r*(1-1e-9)
				}
				if ok {
					best, arg = y[0]+y[1]+y[2], y
				}
			}
		}
	}
	return arg
}

func randomSelfJoin(r *rand.Rand) []JoinGroup {
	var groups []JoinGroup
	for g := 0; g < 2+r.IntN(4); g++ {
		u := r.Perm(3)[:1+r.IntN(2)]
		groups = append(groups, JoinGroup{Coord: r.IntN(2), Units: u, Psi: float64(1 + r.IntN(6))})
	}
	return groups
}

// fixedSolver is a fake solver that returns x (the y part; z is ignored by
// the repair) with the given error.
func fixedSolver(x []float64, err error) func(context.Context, *ipopt.QCQP, []float64) (ipopt.Solution, error) {
	return func(_ context.Context, q *ipopt.QCQP, _ []float64) (ipopt.Solution, error) {
		out := make([]float64, len(q.C))
		copy(out, x)
		status := 0
		if err != nil {
			status = -1
		}
		return ipopt.Solution{X: out, Status: status}, err
	}
}

// TestFeasibleRepairsPlantedPoints feeds the repair solver answers that
// violate the program by a planted amount and checks, with the exact
// checker, that the point it returns satisfies every constraint, that Ê
// never exceeds the brute-force optimum (up to the grid oracle's 3/m), and
// that a small planted violation costs little. Planted points, on 40
// random self-join instances of 3 units at radii 1, 2, 4, 8:
//
//   - the brute-force optimum with every y raised by 2% (the kind of
//     slack an interior-point method leaves, exaggerated): must lose at
//     most 0.1 of Σ y;
//   - y = 1 everywhere (infeasible by a lot at small radii);
//   - NaN, negative and > 1 entries with a solver error (a failed solve).
//
// The first two are checked to be infeasible before the repair whenever
// the oracle says so (else the test would prove nothing): the old code
// used them as they came.
func TestFeasibleRepairsPlantedPoints(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const m = 40
	planted := 0
	for trial := 0; trial < 40; trial++ {
		groups := randomSelfJoin(rng)
		p := newProgram(groups, 3, 2)
		for _, rad := range []float64{1, 2, 4, 8} {
			opt := gridArgmax(groups, 2, rad, m)
			optE := opt[0] + opt[1] + opt[2]
			up := make([]float64, 3)
			for i, v := range opt {
				up[i] = math.Min(1, v*1.02+0.005)
			}
			cases := []struct {
				name    string
				x       []float64
				err     error
				maxLoss float64
			}{
				{"optimum + 2%", up, nil, 0.1},
				{"all ones", []float64{1, 1, 1}, nil, math.Inf(1)},
				{"failed solve", []float64{math.NaN(), -3, 7}, ipopt.ErrFailed, math.Inf(1)},
			}
			for _, c := range cases {
				if c.err == nil && checkFeasible(groups, 3, 2, rad, c.x, tightOf(groups, c.x)) != nil {
					planted++
				}
				p.solver = fixedSolver(c.x, c.err)
				e, _, rep, err := p.solve(context.Background(), rad)
				if err != nil {
					t.Fatalf("%s: solve returned %v; a solver's failure must not be an error", c.name, err)
				}
				y, z, _ := p.feasible(c.x, rad)
				if err := checkFeasible(groups, 3, 2, rad, y, z); err != nil {
					t.Fatalf("trial %d r=%v %s: repaired point infeasible: %v (groups %+v)", trial, rad, c.name, err, groups)
				}
				if e != sumY(y) {
					t.Fatalf("%s: Ê = %v, Σ y of the repaired point %v", c.name, e, sumY(y))
				}
				if e > optE+3.0/m+1e-9 {
					t.Fatalf("trial %d r=%v %s: Ê = %v above the optimum %v", trial, rad, c.name, e, optE)
				}
				if c.name == "optimum + 2%" && e < optE-c.maxLoss {
					t.Fatalf("trial %d r=%v: repair of a 2%% violation lost %v (Ê %v, optimum %v, report %+v)", trial, rad, optE-e, e, optE, rep)
				}
				if !errors.Is(rep.Err, c.err) || (c.err == nil) != (rep.Err == nil) {
					t.Fatalf("%s: report error %v, want %v", c.name, rep.Err, c.err)
				}
			}
		}
	}
	if planted < 50 {
		t.Fatalf("only %d planted points were infeasible; the test is too weak", planted)
	}
	t.Logf("%d planted infeasible points repaired", planted)
}

// TestPerturbedIpopt wraps Ipopt and raises every y of its answer by 1%
// (plus 10⁻³): on 25 random instances the perturbed point is infeasible
// at some radius, and the repair returns an exactly feasible point whose
// Ê is within 0.1 of the brute-force optimum.
func TestPerturbedIpopt(t *testing.T) {
	if !ipopt.Available {
		t.Skip("needs -tags ipopt")
	}
	rng := rand.New(rand.NewPCG(31, 32))
	const m = 40
	planted := 0
	for trial := 0; trial < 25; trial++ {
		groups := randomSelfJoin(rng)
		p := newProgram(groups, 3, 2)
		for _, rad := range []float64{1, 2, 4, 8} {
			var raw []float64
			p.solver = func(ctx context.Context, q *ipopt.QCQP, x0 []float64) (ipopt.Solution, error) {
				sol, err := ipopt.Solve(ctx, q, x0)
				for i := range 3 {
					sol.X[i] = math.Min(1, sol.X[i]*1.01+1e-3)
				}
				raw = sol.X[:3]
				return sol, err
			}
			e, _, rep, err := p.solve(context.Background(), rad)
			if err != nil {
				t.Fatal(err)
			}
			if checkFeasible(groups, 3, 2, rad, raw, tightOf(groups, raw)) != nil {
				planted++
				if rep.Violations == 0 {
					t.Fatalf("report %+v misses the planted violation", rep)
				}
			}
			y, z, _ := p.feasible(raw, rad)
			if err := checkFeasible(groups, 3, 2, rad, y, z); err != nil {
				t.Fatalf("trial %d r=%v: repaired point infeasible: %v", trial, rad, err)
			}
			want := gridE(groups, 2, rad, m)
			if e < want-0.1 || e > want+3.0/m+1e-6 {
				t.Fatalf("trial %d r=%v: Ê = %v, grid %v (report %+v)", trial, rad, e, want, rep)
			}
		}
	}
	if planted < 10 {
		t.Fatalf("only %d perturbed points were infeasible; the test is too weak", planted)
	}
	t.Logf("%d perturbed Ipopt points repaired", planted)
}

// TestSelfJoinSolverFailureIsNoError runs Alg. 2 with a solver that always
// fails: the run must still answer (from the repaired fallback points,
// y = 0), with the failures only in the non-DP reports — an error after
// the budget is charged would depend on the data.
func TestSelfJoinSolverFailureIsNoError(t *testing.T) {
	var groups []JoinGroup
	for u := 0; u < 20; u += 2 {
		groups = append(groups, JoinGroup{Coord: u % 3, Units: []int{u, u + 1}, Psi: 5})
	}
	res, err := runSelfJoin(context.Background(), dp.NewSeededSource(3), groups, 3, Config{Epsilon: 1, Delta: 1e-6, GS: 64},
		fixedSolver(nil, fmt.Errorf("%w: status -2", ipopt.ErrFailed)))
	if err != nil {
		t.Fatalf("solver failure became an error: %v", err)
	}
	if len(res.Values) != 3 || res.Programs == 0 || len(res.Reports) != res.Programs {
		t.Fatalf("result %+v", res)
	}
	for _, rep := range res.Reports {
		if !errors.Is(rep.Err, ipopt.ErrFailed) {
			t.Fatalf("report %+v does not record the failure", rep)
		}
	}
	// ctx cancellation is the one error (the caller's doing).
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := runSelfJoin(ctx, dp.NewSeededSource(3), groups, 3, Config{Epsilon: 1, Delta: 1e-6, GS: 64}, fixedSolver(nil, nil)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: error %v, want context.Canceled", err)
	}
}

// TestNormaliseGroups: repeated units are merged (D_g is a set), ψ must
// be a whole number of grid steps, and the caller's slice is not changed.
func TestNormaliseGroups(t *testing.T) {
	in := []JoinGroup{{Coord: 0, Units: []int{3, 1, 3}, Psi: 2}}
	out, n, err := normaliseGroups(in, 1)
	if err != nil || n != 4 || fmt.Sprint(out[0].Units) != "[1 3]" || fmt.Sprint(in[0].Units) != "[3 1 3]" {
		t.Fatalf("normalised %+v, n = %d, err %v; input now %+v", out, n, err, in)
	}
	for _, bad := range []JoinGroup{{Coord: 0, Units: []int{0}, Psi: 1.5}, {Coord: 1, Units: []int{0}, Psi: 1}, {Coord: 0, Units: []int{-1}, Psi: 1}, {Coord: 0, Psi: 1}} {
		if _, _, err := normaliseGroups([]JoinGroup{bad}, 1); !errors.Is(err, ErrInvalid) {
			t.Errorf("group %+v: error %v, want ErrInvalid", bad, err)
		}
	}
}
