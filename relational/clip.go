package relational

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/bits"
	"strings"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/spec"
)

// ClipQuantileShare is the share of ε the clipped mechanism spends on
// choosing its clip C; the rest pays the Laplace noise at C. Measured on
// TPC-H SF 0.01 and Online Retail (docs/answers.md): a larger share puts C
// nearer the knee of the units' contributions, a smaller one leaves more
// for the noise.
var ClipQuantileShare = 0.3

// ClipStep is the grid h of the clipped mechanism, in row-equivalents: a
// unit's contribution to an answer is measured in whole steps of h·B (B
// the query's public bound on one row's term, 1 for COUNT), 4,096 steps a
// row, so the clipping weights min(1, C/‖v_u‖₁) keep fractions of a row
// and integer noise keeps the sums on the grid.
const ClipStep = 1.0 / 4096

// ClipMechanism names the clipped mechanism in results and reports.
const ClipMechanism = "clipped Laplace"

// clipMutation is a planted bug for the audits (tests only).
type clipMutation int

const (
	clipMutNone      clipMutation = iota
	clipMutTrueClip               // C is the best score's rung, chosen without noise
	clipMutRowNoise               // the noise is scaled to one row, not to C
	clipMutTrueShape              // the shape's clip r is the best score's rung, chosen without noise
	clipMutTotalEps               // the total is noised at the whole ε, not at its share
)

// clipJob is one answer of the clipped mechanism: a query, one of its
// groups, and its public bound B on one join result's term.
type clipJob struct {
	q     *Query
	g     Group
	bound float64
}

// CheckClip reports why the clipped mechanism cannot answer queries under
// units (nil when it can): every query needs a non-negative summand with a
// finite public bound, and join results that each reference exactly one
// unit. Public inputs only.
func CheckClip(s *spec.Spec, queries []*Query, units []string) error {
	if len(units) == 0 {
		return invalid("the clipped mechanism runs under a privacy unit")
	}
	first := ""
	for _, q := range queries {
		_, _, err := clipQuery(s, q, units)
		if err != nil {
			return &QueryError{Query: q.Text, Err: err}
		}
		used, _, _ := unitColumns(s, q, units)
		if first == "" {
			first = used[0]
		} else if used[0] != first {
			return &QueryError{Query: q.Text, Err: invalid("the clipped mechanism clips one unit's contributions to all answers together; this query's results belong to %s, an earlier one's to %s", used[0], first)}
		}
	}
	return nil
}

// clipQuery returns q's public bound on one term and its unit's column.
func clipQuery(s *spec.Spec, q *Query, units []string) (float64, spec.ColumnRef, error) {
	lo, hi := q.SumBound(s)
	bound := math.Max(math.Abs(lo), math.Abs(hi))
	if !(bound > 0) || math.IsInf(bound, 0) || math.IsNaN(bound) {
		return 0, spec.ColumnRef{}, invalid("the summed expression is bounded by %v on the declared domains; need a finite bound > 0", bound)
	}
	if lo < 0 {
		return 0, spec.ColumnRef{}, invalid("the clipped mechanism needs a non-negative summand; the declared domains allow %v", lo)
	}
	used, cols, err := unitColumns(s, q, units)
	if err != nil {
		return 0, spec.ColumnRef{}, err
	}
	if len(used) != 1 {
		return 0, spec.ColumnRef{}, invalid("the clipped mechanism needs join results that each belong to one unit; this query's reference %d (%s)", len(used), strings.Join(used, ", "))
	}
	return bound, cols[0], nil
}

// answerClipped answers every (query, group) of queries with one clipped
// Laplace mechanism under one privacy unit (pure ε-DP, δ unused). Two
// answers or more are measured as a total and a shape ([runShape],
// [shapeResults]); one answer as follows:
//
//  1. Each unit u's contribution to answer k is v_{u,k} = Σ of the query's
//     terms over u's join results, in whole steps of h·B_k (h =
//     [ClipStep], B_k the public bound on one term): ⌊v/(h·B_k)⌋ ≥ 0.
//  2. C is drawn from the public ladder ⌈2^(j/2)⌉ ≤ opt.GS (rows per unit,
//     declared in the spec or --gs) by the exponential mechanism of
//     [dp.ChooseClip] with ε_Q = [ClipQuantileShare]·ε: score −#{units
//     with ‖v_u‖₁·h > C_j} − j/ε_Q, sensitivity 1.
//  3. Each unit's vector is clipped to L1 norm C/h steps:
//     x_{u,k} = ⌊v_{u,k}·(C/h)/‖v_u‖₁⌋ when ‖v_u‖₁ > C/h (exact integer
//     arithmetic), and S_k = Σ_u x_{u,k}.
//  4. Each S_k gets discrete Laplace noise of scale (C/h)/ε_N, ε_N = ε − ε_Q,
//     and the value is round(h·B_k·(S_k + noise)).
//
// # Privacy
//
// Under the unit neighbour relation (delete one unit and every tuple
// referencing it; every query's join results reference exactly one unit,
// checked from the spec) deleting u removes exactly its own vector x_u,
// whose L1 norm is ≤ C/h, and changes no other unit's: the vector S has L1
// sensitivity C/h, and independent discrete Laplace noise of scale
// (C/h)/ε_N on each coordinate is ε_N-DP (the geometric mechanism). C is
// ε_Q-DP; sequential composition gives ε. The rounding to integers is
// post-processing on a public grid.
//
// # Bounds
//
// Q_C(I) = h·B_k·S_k is the clipped query, ≤ Q(I) (every term is ≥ 0 and
// clipping and flooring only lower it). With P[|N| > s] < e^{−s/b} for the
// discrete Laplace of scale b, NoiseBound95 = h·B_k·⌈b·ln 20⌉ + 1/2 bounds
// |Value − Q_C| with probability ≥ 0.95, and LowerBound95 = ⌊Value −
// h·B_k·⌈b·ln 10⌉ − 1/2⌋ is below Q_C, hence Q, with probability ≥ 0.95
// (one tail: P[N > s] < e^{−s/b}/2). Threshold is C·B_k: the most a unit's
// terms may add to the answers together, in the query's units.
func answerClipped(ctx context.Context, db DB, src dp.Source, s *spec.Spec, queries []*Query, opt Options, ledger *dp.Ledger) ([]Result, error) {
	if err := opt.Budget.Validate(); err != nil {
		return nil, fmt.Errorf("relational: %w", err)
	}
	maxRows := opt.GS
	if maxRows == 0 {
		maxRows = DefaultGS
	}
	if !(maxRows >= 1) || maxRows > 1<<30 {
		return nil, invalid("the bound on one unit's rows is %v; want 1 … 2³⁰", maxRows)
	}
	if err := CheckClip(s, queries, opt.Units); err != nil {
		return nil, err
	}
	var jobs []clipJob
	var unitCol []spec.ColumnRef
	for _, q := range queries {
		bound, col, err := clipQuery(s, q, opt.Units)
		if err != nil {
			return nil, &QueryError{Query: q.Text, Err: err}
		}
		unitCol = append(unitCol, col)
		for _, g := range Groups(s, q) {
			jobs = append(jobs, clipJob{q: q, g: g, bound: bound})
		}
	}
	if len(jobs) == 0 {
		return nil, invalid("no query")
	}
	eps := opt.Budget.Epsilon
	epsQ := ClipQuantileShare * eps
	epsN := eps - epsQ
	ladder := dp.ClipLadder(int64(math.Ceil(maxRows)))
	top := float64(ladder[len(ladder)-1])
	if _, err := dp.NewDiscreteLaplace(dp.NoiseScale(top/ClipStep, epsN)); err != nil {
		return nil, invalid("the clipped mechanism's largest noise (clip %v rows at ε = %v) is beyond the exact sampler: declare a smaller bound on one unit's rows or a larger ε (%v)", top, epsN, err)
	}
	unit := strings.Join(opt.Units, ", ")
	rule := fmt.Sprintf("user-level DP (unit %s): sequential composition of the clip's choice and the noisy clipped sums; every part is pure ε-DP", unit)
	root, err := ledger.Split(ClipMechanism, dp.Budget{Epsilon: eps}, rule,
		map[string]any{"answers": len(jobs), "rows_per_unit_bound": maxRows, "step": ClipStep})
	if err != nil {
		return nil, err
	}
	shape := len(jobs) >= 2
	if shape {
		if err := chargeShape(root, len(ladder), len(jobs), top, eps); err != nil {
			return nil, err
		}
	} else {
		if err := root.Charge("clip C (exponential mechanism over a public ladder)", dp.Budget{Epsilon: epsQ},
			fmt.Sprintf("score −#{units whose contributions (in rows, each term over its public bound) exceed C_j} − j/ε_Q over C_j ∈ {⌈2^(j/2)⌉} ≤ %v; "+
				"deleting a unit changes the count by at most 1 and the penalty not at all: sensitivity 1 (dp.ExponentialGrid, exact)", top),
			map[string]any{"candidates": len(ladder), "share": ClipQuantileShare}); err != nil {
			return nil, err
		}
		if err := root.Charge("clipped sums + discrete Laplace", dp.Budget{Epsilon: epsN},
			"each unit's vector over the answers clipped to L1 norm C: deleting a unit removes its clipped vector and changes no other; "+
				"discrete Laplace of scale C/ε_N per answer is ε_N-DP (L1 sensitivity C); C is a DP output, so the two compose", nil); err != nil {
			return nil, err
		}
	}

	// Every unit's contributions, per answer, in steps of h·B_k. Units are
	// keyed by their id's text.
	ids := map[string]int{}
	var vecs [][]clipEntry
	for k, j := range jobs {
		in, err := newInstance(ctx, db, s, j.q, j.g)
		if err != nil {
			return nil, &QueryError{Query: j.q.Text, Err: err}
		}
		qi := 0
		for i, q := range queries {
			if q == j.q {
				qi = i
			}
		}
		err = in.unitSums(ctx, unitCol[qi], func(key string, sum float64) {
			st := math.Floor(sum / (ClipStep * j.bound))
			if !(st > 0) {
				return
			}
			id, ok := ids[key]
			if !ok {
				id = len(vecs)
				ids[key] = id
				vecs = append(vecs, nil)
			}
			vecs[id] = append(vecs[id], clipEntry{k: k, steps: uint64(st)})
		})
		in.close()
		if err != nil {
			return nil, &QueryError{Query: j.q.Text, Err: err}
		}
	}
	if shape {
		out, err := runShape(src, vecs, len(jobs), ladder, eps, opt.clipMutation)
		if err != nil {
			return nil, err
		}
		return shapeResults(out, jobs, unit, eps, root), nil
	}
	clip, noisy, b, err := runClip(src, vecs, len(jobs), ladder, epsQ, epsN, opt.clipMutation)
	if err != nil {
		return nil, err
	}
	two := math.Ceil(b * math.Log(20))
	one := math.Ceil(b * math.Log(10))
	out := make([]Result, len(jobs))
	for k, j := range jobs {
		unitH := ClipStep * j.bound
		raw := int64(math.Round(unitH * float64(noisy[k])))
		r := Result{Query: j.q.Text, Group: groupMap(j.g), Mechanism: ClipMechanism + " (user-level DP, unit " + unit + ")", Epsilon: eps}
		r.SetValue(raw, unitH*one+0.5, true)
		r.NoiseScale, r.NoiseBound95, r.Threshold = ptr(unitH*b), ptr(unitH*two+0.5), ptr(float64(clip)*j.bound)
		out[k] = r
		root.Publish(fmt.Sprintf("answer_%d", k), float64(r.Value))
	}
	root.Publish("clip", float64(clip))
	return out, nil
}

// clipEntry is a unit's contribution to answer k, in steps.
type clipEntry struct {
	k     int
	steps uint64
}

// runClip is the mechanism of answerClipped on the units' vectors (each
// unit's entries over the d answers, in steps): the clip C from ladder by
// [dp.ChooseClip] at epsQ, every vector clipped to L1 norm C/[ClipStep]
// steps, and discrete Laplace noise of scale (C/ClipStep)/epsN added to
// each of the d sums. It returns C, the noisy sums (in steps) and the
// noise scale (in steps).
func runClip(src dp.Source, vecs [][]clipEntry, d int, ladder []int64, epsQ, epsN float64, mut clipMutation) (int64, []int64, float64, error) {
	norms := make([]uint64, len(vecs))
	for u, v := range vecs {
		for _, e := range v {
			norms[u] += e.steps
		}
	}
	ci := dp.ChooseClip(src, ladder, func(c int64) float64 {
		cs := uint64(c) * uint64(1/ClipStep)
		n := 0
		for _, x := range norms {
			if x > cs {
				n++
			}
		}
		return float64(n)
	}, epsQ, mut == clipMutTrueClip)
	clip := ladder[ci]
	cs := uint64(clip) * uint64(1/ClipStep)
	sums := make([]int64, d)
	for u, v := range vecs {
		for _, e := range v {
			x := e.steps
			if norms[u] > cs {
				// ⌊steps·cs/norm⌋ exactly: steps ≤ norm, so the quotient
				// is ≤ cs and fits.
				hi, lo := bits.Mul64(e.steps, cs)
				x, _ = bits.Div64(hi, lo, norms[u])
			}
			sums[e.k] += int64(x)
		}
	}
	sens := float64(cs)
	if mut == clipMutRowNoise {
		sens = 1 / ClipStep // planted bug: one row's steps, not C's
	}
	lap, err := dp.NewDiscreteLaplace(dp.NoiseScale(sens, epsN))
	if err != nil {
		return 0, nil, 0, fmt.Errorf("relational: clipped mechanism noise: %w", err)
	}
	for k := range sums {
		sums[k] += lap.Sample(src)
	}
	return clip, sums, lap.Scale(), nil
}

// unitSums calls f with every unit's id (as text) and the sum of its join
// results' terms ψ (a private aggregate; one row per unit with a result).
func (in *instance) unitSums(ctx context.Context, unitCol spec.ColumnRef, f func(key string, sum float64)) error {
	if err := in.keys.learn(ctx, in.s, []spec.ColumnRef{unitCol}); err != nil {
		return err
	}
	q := "SELECT " + in.keys.Group(unitCol, in.col(unitCol)) + ", CAST(SUM(" + in.psi() + ") AS DOUBLE PRECISION)" + in.fromWhere() + " GROUP BY 1"
	var key sql.NullString
	var sum sql.NullFloat64
	return in.db.Aggregate(ctx, q, nil, func(r *sql.Rows) error {
		if err := r.Scan(&key, &sum); err != nil {
			return err
		}
		if key.Valid && sum.Valid {
			f(key.String, sum.Float64)
		}
		return nil
	})
}
