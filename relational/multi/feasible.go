package multi

import (
	"math"
	"math/big"
	"slices"
	"time"
)

// yScale is the grid of the repaired y: every y_i is a multiple of 2^−30.
// On that grid 1 − y_i is exact in float64, and so is a sum of up to 2^23
// of them (30 + 23 bits), so the tight z of (17) is computed exactly.
const yScale = 1 << 30

// maxUnitsPerGroup bounds |D_g| so that the sums of (17) stay exact (see
// [yScale]); a join result references one unit per unit relation of its
// query, so real queries are far below it.
const maxUnitsPerGroup = 1 << 20

// repairPasses is the number of proportional lowering passes of
// [program.feasible] before it sets the y of a still-violating unit to 0.
const repairPasses = 3

// ProgramReport describes one QCQP of [RunSelfJoin] (one radius).
//
// NOT differentially private: every field is a function of the private
// instance (how the solver behaved on it). It is for the data custodian's
// own diagnostics only and must never be published, logged to a shared
// place, or printed into the answers' output.
type ProgramReport struct {
	// Radius is r, in the queries' units.
	Radius float64
	// Status is Ipopt's ApplicationReturnStatus (0 solved, 1 solved to an
	// acceptable level, others failures).
	Status int
	// Err is the solver's error (nil when it converged). A failed solve
	// still yields an answer: its last iterate (or 0) repaired to a
	// feasible point.
	Err error
	// Violations is the number of units whose quadratic constraint the
	// solver's point (clipped to [0, 1], floored to the 2^−30 grid, z made
	// tight) violated in exact arithmetic; Lowered the number of y_i the
	// repair lowered in all its passes.
	Violations, Lowered int
	// MaxExcess is the largest ‖S_i(z)‖/r − 1 of the solver's point over
	// the units (≤ 0 when it was feasible), from float64 norms.
	MaxExcess float64
	// Loss is Σ_i y_i of the clipped solver point minus Σ_i y_i of the
	// repaired one: how much Ê(I, r) fell by the repair and the grid.
	Loss float64
	// Time is the solver's wall time.
	Time time.Duration
}

// membership is one (join group, coordinate) a unit belongs to.
type membership struct{ g, k int }

// feasible turns a candidate x = (y, z) of the QCQP at radius r (r in grid
// steps; only y = x[:n] is read; x may be short, NaN or out of bounds) into
// a point (y, z) that satisfies every constraint of the program exactly
// (y, z on the 2^−30 grid; Ê = Σ_i y_i and [program.answers] are computed
// from them exactly), and the repair's statistics. It is a deterministic function of
// (instance, r, x) with no error path: whatever the solver returned —
// including nothing — it yields an answer.
//
// Why this keeps the proof of Thm. 5.11 true. Lemma 5.10 bounds
// ‖Q̂(I, r) − Q̂(I′, r)‖ using only, for the points (y, z) on I and
// (y′, z′) on I′ that define Q̂: 0 ≤ z, z′ ≤ 1, the linear constraints
// z_g ≥ Σ_{i∈D_g} y_i − |D_g| + 1 (for (22)), every unit's quadratic
// constraint ‖Σ ψ_g z_g‖ ≤ r (for (23)), and (19)/(20), where F̂ is Σ y − N
// of the very same y (true here by definition). So the points must be
// feasible, exactly — an interior-point solver's "feasible to 10^−9"
// (or "acceptable level") is not enough, and a failed solve gives no point
// at all. The repair:
//
//  1. y_i ← ⌊clip(x_i, 0, 1)·2^30⌋/2^30 (NaN → 0), and z_g the tight value
//     max(0, 1 − Σ_{i∈D_g}(1 − y_i)) of (17), exact on this grid: the
//     linear constraints and 0 ≤ y, z ≤ 1 hold exactly.
//  2. Check every unit's quadratic constraint exactly: with z_g = m_g/2^30
//     and ψ_g whole, Σ_k (Σ_g ψ_g·m_g)² ≤ r²·2^60 in big integers/rationals.
//  3. For each violating unit i in turn, lower y_i by the smallest
//     multiple of 2^−30 that brings its float64 norm below r·(1 − 10^−12)
//     ([program.lowering], a bisection: the norm falls as y_i falls, and
//     reaches 0 at y_i = 0). Lowering y never raises any z (ψ ≥ 0), so no
//     other unit's norm rises. Go to 2.
//  4. After [repairPasses] passes a unit still violating (only possible
//     through float error in the bisection) gets y_i = 0: all its z_g
//     become 0 and its norm 0, so the next check passes and the loop ends.
//
// Only the exact check of step 2 and the monotonicity carry the
// guarantee; the bisection only decides how little Ê is given up.
//
// The repaired point is feasible whatever the solver did; what the proof
// further needs — Lemma 5.8, F̂ of sensitivity 1, used by the SVT and in
// (20) — holds for the optimum, so the guarantee still rests on the point
// being optimal up to the solver's tolerance plus the repair's loss
// ([ProgramReport].Loss, 2^−30 per unit for the grid alone). That caveat is
// the one of [RunSelfJoin]; this function removes the feasibility part.
func (p *program) feasible(x []float64, r float64) (y, z []float64, rep ProgramReport) {
	y = make([]float64, p.n)
	clipped := 0.0
	for i := range y {
		v := 0.0
		if i < len(x) && x[i] > 0 { // NaN and negatives → 0
			v = math.Min(x[i], 1)
		}
		clipped += v
		y[i] = math.Floor(v*yScale) / yScale
	}
	z = make([]float64, len(p.groups))
	for pass := 0; ; pass++ {
		p.tight(y, z)
		bad, norms := p.violations(z, r)
		if pass == 0 {
			rep.Violations = len(bad)
			rep.MaxExcess = math.Inf(-1)
			for _, nrm := range norms {
				rep.MaxExcess = math.Max(rep.MaxExcess, nrm/r-1)
			}
			if len(norms) == 0 {
				rep.MaxExcess = -1
			}
		}
		if len(bad) == 0 {
			break
		}
		rep.Lowered += len(bad)
		for _, u := range bad {
			if pass < repairPasses {
				y[u] -= p.lowering(u, y, r) // multiples of 2^−30 in [0, 1]: exact
			} else {
				y[u] = 0
			}
		}
	}
	rep.Loss = clipped - sumY(y)
	return y, z, rep
}

// sumY is Ê = Σ_i y_i for y on the 2^−30 grid, summed exactly in grid
// steps (each y_i·2^30 ≤ 2^30 is a whole number, so up to 2^33 units fit
// an int64) and rounded once to a float64: the result depends on the
// multiset of y only, whatever the number of units.
func sumY(y []float64) float64 {
	var steps int64
	for _, v := range y {
		steps += int64(v * yScale)
	}
	return float64(steps) / yScale
}

// lowering returns the smallest s on the 2^−30 grid, 0 ≤ s ≤ y_u, such
// that lowering y_u by s brings unit u's float64 norm ‖S_u(z)‖ to at most
// r·(1 − 10^−12) (s = y_u when none does). With w_g = 1 − Σ_{i∈D_g}(1 − y_i)
// the lowered z_g is max(0, w_g − s), non-increasing in s.
func (p *program) lowering(u int, y []float64, r float64) float64 {
	ms := p.members[u]
	w := make([]float64, len(ms))
	for j, m := range ms {
		w[j] = 1
		for _, v := range p.groups[m.g].Units {
			w[j] -= 1 - y[v]
		}
	}
	target := r * r * (1 - 2e-12)
	fits := func(s float64) bool {
		n2, acc := 0.0, 0.0
		for j, m := range ms {
			acc += p.groups[m.g].Psi * math.Max(0, w[j]-s)
			if j+1 == len(ms) || ms[j+1].k != m.k {
				n2 += acc * acc
				acc = 0
			}
		}
		return n2 <= target
	}
	lo, hi := int64(-1), int64(y[u]*yScale) // fits(hi/2^30) or hi = y_u·2^30
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if fits(float64(mid) / yScale) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return float64(hi) / yScale
}

// tight sets z_g = max(0, 1 − Σ_{i∈D_g}(1 − y_i)), (17).
func (p *program) tight(y, z []float64) {
	for g, jg := range p.groups {
		s := 0.0
		for _, u := range jg.Units {
			s += 1 - y[u]
		}
		z[g] = math.Max(0, 1-s)
	}
}

// violations returns the units whose quadratic constraint
// Σ_k (Σ_{g∋i, coord k} ψ_g·z_g)² ≤ r² fails in exact arithmetic (z on the
// 2^−30 grid, ψ whole numbers, r a float64 taken exactly), and every
// unit's float64 norm ‖S_i(z)‖ (in grid steps) for the repair's step.
func (p *program) violations(z []float64, r float64) (bad []int, norms []float64) {
	r2 := new(big.Rat).SetFloat64(r)
	r2.Mul(r2, r2)
	r2.Mul(r2, new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 60)))
	norms = make([]float64, p.n)
	acc, sum, t := new(big.Int), new(big.Int), new(big.Int)
	lhs := new(big.Rat)
	for u, ms := range p.members {
		sum.SetInt64(0)
		acc.SetInt64(0)
		fn, fa := 0.0, 0.0
		for j, m := range ms {
			jg := p.groups[m.g]
			t.SetInt64(int64(z[m.g] * yScale)) // exact: z is on the grid
			acc.Add(acc, t.Mul(t, big.NewInt(int64(jg.Psi))))
			fa += jg.Psi * z[m.g]
			if j+1 == len(ms) || ms[j+1].k != m.k {
				sum.Add(sum, t.Mul(acc, acc))
				acc.SetInt64(0)
				fn += fa * fa
				fa = 0
			}
		}
		norms[u] = math.Sqrt(fn)
		if lhs.SetInt(sum).Cmp(r2) > 0 {
			bad = append(bad, u)
		}
	}
	return bad, norms
}

// answers returns round(Q̂_k) = round(Σ_{g: coord k} ψ_g·z_g) in grid
// steps, computed exactly (z on the 2^−30 grid, ψ whole) and rounded half
// up: the √d rounding term of [RunSelfJoin]'s noise assumes exact rounding.
func (p *program) answers(z []float64) []float64 {
	acc := make([]*big.Int, p.d)
	for k := range acc {
		acc[k] = new(big.Int)
	}
	t := new(big.Int)
	for g, jg := range p.groups {
		t.SetInt64(int64(z[g] * yScale))
		acc[jg.Coord].Add(acc[jg.Coord], t.Mul(t, big.NewInt(int64(jg.Psi))))
	}
	out := make([]float64, p.d)
	half := new(big.Int).Lsh(big.NewInt(1), 29)
	for k, a := range acc {
		a.Add(a, half)
		a.Rsh(a, 30)
		out[k], _ = new(big.Float).SetInt(a).Float64()
	}
	return out
}

// newProgram indexes the join groups by unit (memberships sorted by
// coordinate) for [program.feasible]. A group must not repeat a unit
// ([normaliseGroups]).
func newProgram(groups []JoinGroup, n, d int) *program {
	p := &program{groups: groups, n: n, d: d, members: make([][]membership, n)}
	for g, jg := range groups {
		for _, u := range jg.Units {
			p.members[u] = append(p.members[u], membership{g, jg.Coord})
		}
	}
	for _, ms := range p.members {
		slices.SortStableFunc(ms, func(a, b membership) int { return a.k - b.k })
	}
	return p
}
