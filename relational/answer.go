package relational

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/residual"
	"github.com/synth-dp/synth/spec"
)

// DefaultGS is the default GS_Q of a count under user-level DP: no unit
// contributes more than 2²⁰ ≈ 10⁶ join results (the R2T paper's choice of
// about 10⁶ for its TPC-H counts). For SUM(expr) it is multiplied by the
// public bound on |expr|.
const DefaultGS = 1 << 20

// Options configures [Answer].
type Options struct {
	// Budget is the (ε, δ) of the whole run, split evenly over every query
	// and group by basic composition.
	Budget dp.Budget
	// Units names the primary private relations of user-level DP (R2T);
	// empty selects tuple-level DP (the residual-sensitivity mechanism).
	Units []string
	// GS is GS_Q of a count (public); 0 means [DefaultGS].
	GS float64
	// Noise is the residual-sensitivity mechanism's noise for δ > 0.
	Noise Noise
	// Base is R2T's ratio between thresholds ([R2TConfig.Base]); 0 means
	// 2.
	Base float64
	// Clip answers every query and group together with the clipped
	// Laplace mechanism (see answerClipped) instead of R2T per answer; it
	// needs one unit per query's join results. GS is then the public bound
	// on one unit's rows, the top of the clip's ladder.
	Clip bool

	clipMutation clipMutation // planted bug for the audits (tests only)
}

// Result is one released answer: only DP outputs and public parameters.
//
// # What the bounds cover
//
// Every mechanism of this package and of multi and rangeset answers
// Q_τ(I), the query on the instance truncated (R2T: each unit's
// contribution to at most τ) or clipped (multi-query SJA: each unit's
// contribution vector to ℓ2 norm r̃), plus noise; the residual-sensitivity
// and range mechanisms truncate nothing (Q_τ = Q). Two bounds are
// published, both computed from public parameters and DP outputs only:
//
//   - NoiseBound95 bounds the noise part: |Value − Q_τ(I)| ≤ NoiseBound95
//     with probability ≥ 0.95. It does NOT cover the truncation or
//     clipping bias Q(I) − Q_τ(I) ≥ 0; where there is no truncation it is
//     the whole error.
//   - LowerBound95 covers the bias too, on one side: Q(I) ≥ LowerBound95
//     with probability ≥ 0.95. Every summand of a user-level query is ≥ 0,
//     so truncation and clipping only lower an answer (Q ≥ Q_τ), and a
//     one-sided noise quantile below the value bounds Q_τ, hence Q.
//
// No upper bound that covers the bias is published, because under
// user-level DP none can exist: if a mechanism output U with
// P[Q(I) ≤ U] ≥ 0.95 on every instance, take I′ = I plus one unit with M
// join results, a neighbour of I with Q(I′) = Q(I) + M; then
// P_I[U ≥ Q(I) + M] ≥ e^{−ε}·(0.95 − δ) for every M, which no real-valued
// U satisfies. (A bias bound would need a public bound on one unit's
// contribution, and GS_Q — 2²⁰ by default — gives a useless one; the
// winning τ or r̃ certifies nothing about the units above it.) Under
// tuple-level DP the residual-sensitivity mechanism has no bias, and
// Value ± NoiseBound95 is a 95% interval for Q(I).
//
// Value is clamped at 0 for a query that cannot be negative (COUNT, or SUM
// over an expression whose declared domains give a lower bound ≥ 0): the
// clamp is post-processing of the DP value (no privacy cost) and never
// moves the answer away from Q(I) ≥ 0 or Q_τ(I) ≥ 0, so both bounds still
// hold; LowerBound95 is clamped the same way.
type Result struct {
	// Query is the query's text.
	Query string `json:"query"`
	// Group maps each GROUP BY column (table.column) to the group's value;
	// nil for a query without GROUP BY.
	Group map[string]string `json:"group"`
	// Value is the DP answer, an integer (≥ 0 for a non-negative query).
	Value int64 `json:"value"`
	// Mechanism names the mechanism.
	Mechanism string `json:"mechanism"`
	// NoiseScale is the scale of the noise (nil when it is not public).
	NoiseScale *float64 `json:"noise_scale"`
	// NoiseBound95 bounds |Value − Q_τ(I)| with probability ≥ 0.95: the
	// noise, not the truncation bias (nil when not available; see the
	// type's documentation).
	NoiseBound95 *float64 `json:"noise_bound_95"`
	// LowerBound95 is a lower bound on the true answer Q(I) that holds
	// with probability ≥ 0.95, truncation bias included (nil when not
	// available).
	LowerBound95 *int64 `json:"lower_bound_95"`
	// Threshold is the truncation threshold Q_τ refers to, a DP output:
	// R2T's winning τ (its first rung when the floor 0 won), multi-query
	// SJA's radius r̃ (an ℓ2 norm of one unit's contribution vector); nil
	// for mechanisms that truncate nothing.
	Threshold *float64 `json:"threshold"`
	// ShapeClip is the clipped mechanism's second clip on two answers or
	// more (total and shape): r·B, the most one unit's terms add to the
	// measured shape (Threshold is then the total's clip); nil otherwise.
	ShapeClip *float64 `json:"shape_clip,omitempty"`
	// Epsilon and Delta are the share of the budget spent on this answer.
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// RawValue is the mechanism's own value when [PostProcess] changed
	// Value (nil otherwise): NoiseBound95 bounds |RawValue − Q_τ(I)|, and
	// LowerBound95, computed from it, still bounds Q(I); neither is a
	// statement about the post-processed Value.
	RawValue *int64 `json:"raw_value,omitempty"`
	// PostProcessing says how Value was post-processed ("" when it was
	// not): see [PostProcess].
	PostProcessing string `json:"post_processing,omitempty"`

	// raw is the mechanism's value before the clamp at 0 (set by
	// SetValue; hasRaw tells whether it was).
	raw    int64
	hasRaw bool
}

// SetValue sets r.Value and r.LowerBound95 from a mechanism's raw DP value:
// LowerBound95 = ⌊raw − below⌋, where below is a one-sided 95% bound on
// the noise above Q_τ (P[raw − Q_τ(I) > below] ≤ 0.05); both are clamped
// at 0 when nonNegative (the query's declared domains make Q(I) ≥ 0).
// Post-processing of DP outputs and public values.
func (r *Result) SetValue(raw int64, below float64, nonNegative bool) {
	r.raw, r.hasRaw = raw, true
	lower := int64(math.Floor(float64(raw) - below))
	if nonNegative {
		raw, lower = max(raw, 0), max(lower, 0)
	}
	r.Value, r.LowerBound95 = raw, &lower
}

// NonNegative reports whether q's answer is ≥ 0 on every instance
// allowed by the declared domains: COUNT, or SUM over an expression whose
// public lower bound is ≥ 0.
func (q *Query) NonNegative(s *spec.Spec) bool {
	lo, _ := q.SumBound(s)
	return q.Agg == Count || lo >= 0
}

// Answer answers the queries under DP and charges ledger for each query and
// group before reading any data. With opt.Units it runs R2T (user-level
// DP), otherwise the residual-sensitivity mechanism (tuple-level DP).
//
// Budget: d answers in all (a query with GROUP BY counts one per group of
// the declared domain) each get (ε/d, δ/d); basic composition sums them to
// (ε, δ). Every decision that could depend on data (number of answers,
// mechanism, units, solver) is made from the spec and the queries first.
func Answer(ctx context.Context, db DB, src dp.Source, s *spec.Spec, queries []*Query, opt Options, ledger *dp.Ledger) ([]Result, error) {
	if opt.Clip && len(opt.Units) > 0 {
		return answerClipped(ctx, db, src, s, queries, opt, ledger)
	}
	if err := opt.Budget.Validate(); err != nil {
		return nil, fmt.Errorf("relational: %w", err)
	}
	gs := opt.GS
	if gs == 0 {
		gs = DefaultGS
	}
	if _, err := Rungs(gs); err != nil {
		return nil, err
	}
	k, err := baseExponent(opt.Base)
	if err != nil {
		return nil, err
	}
	type job struct {
		q     *Query
		g     Group
		units []string
		cols  []spec.ColumnRef
		bound float64
	}
	var jobs []job
	for _, q := range queries {
		lo, hi := q.SumBound(s)
		bound := math.Max(math.Abs(lo), math.Abs(hi))
		if !(bound > 0) || math.IsInf(bound, 0) || math.IsNaN(bound) {
			return nil, &QueryError{Query: q.Text, Err: invalid("the summed expression is bounded by %v on the declared domains; need a finite bound > 0", bound)}
		}
		var units []string
		var cols []spec.ColumnRef
		if len(opt.Units) > 0 {
			if lo < 0 {
				return nil, &QueryError{Query: q.Text, Err: invalid("R2T needs a non-negative summand; the declared domains allow %v", lo)}
			}
			var err error
			if units, cols, err = unitColumns(s, q, opt.Units); err != nil {
				return nil, &QueryError{Query: q.Text, Err: err}
			}
			if len(units) >= 3 && lpSolver == nil {
				return nil, &QueryError{Query: q.Text, Err: ErrNeedsCLP}
			}
		}
		for _, g := range Groups(s, q) {
			jobs = append(jobs, job{q: q, g: g, units: units, cols: cols, bound: bound})
		}
	}
	if len(jobs) == 0 {
		return nil, invalid("no query")
	}
	share := dp.Budget{Epsilon: opt.Budget.Epsilon / float64(len(jobs)), Delta: opt.Budget.Delta / float64(len(jobs))}
	if len(opt.Units) > 0 {
		share = dp.Budget{Epsilon: share.Epsilon} // R2T is pure ε-DP
	} else {
		beta, err := (RSConfig{Epsilon: share.Epsilon, Delta: share.Delta}).Beta()
		if err != nil {
			return nil, err
		}
		// The search for RS^β has a public length (residual.SearchLimit:
		// private relations and β); refuse one too long now, not after
		// the budget is spent.
		for _, j := range jobs {
			p := 0
			for _, t := range j.q.Tables {
				if tb := s.Table(t); tb != nil && !tb.Public {
					p++
				}
			}
			if p == 0 {
				continue
			}
			if _, err := residual.SearchLimit(p, beta); err != nil {
				return nil, &QueryError{Query: j.q.Text, Err: fmt.Errorf("%w (%d answers share ε = %v: fewer groups or queries, or a larger ε)", err, len(jobs), opt.Budget.Epsilon)}
			}
		}
	}
	// Charge everything before reading data: a refused charge stops the run
	// with nothing read.
	for i, j := range jobs {
		mech, rule := "residual-sensitivity mechanism", "tuple-level DP; Dong–Yi survey §3.2; basic composition over answers"
		details := map[string]any{"query": j.q.Text, "answer": i}
		if len(j.units) > 0 {
			L := rungsRun(gs*j.bound, Quantum(j.q.Agg, j.bound), k)
			mech, rule = "R2T", "user-level DP (units "+strings.Join(j.units, ", ")+"); Dong et al. SIGMOD 2022; L rungs at ε/L each, basic composition"
			details["rungs"], details["gs"], details["grid"] = L, gs*j.bound, Quantum(j.q.Agg, j.bound)
		}
		if len(j.g) > 0 {
			details["group"] = groupMap(j.g)
		}
		if err := ledger.Charge(mech, share, rule, details); err != nil {
			return nil, err
		}
	}
	out := make([]Result, 0, len(jobs))
	for i, j := range jobs {
		r, err := answerOne(ctx, db, src, s, j.q, j.g, j.units, j.cols, j.bound, gs, share, opt)
		if err != nil {
			return nil, &QueryError{Query: j.q.Text, Err: err}
		}
		r.Group = groupMap(j.g)
		ledger.Publish(fmt.Sprintf("answer_%d", i), float64(r.Value))
		out = append(out, r)
	}
	return out, nil
}

func groupMap(g Group) map[string]string {
	if len(g) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, v := range g {
		m[v.Column.String()] = v.Value
	}
	return m
}

func ptr(f float64) *float64 {
	if math.IsNaN(f) {
		return nil
	}
	return &f
}

func answerOne(ctx context.Context, db DB, src dp.Source, s *spec.Spec, q *Query, g Group, units []string, cols []spec.ColumnRef,
	bound, gs float64, share dp.Budget, opt Options) (Result, error) {
	in, err := newInstance(ctx, db, s, q, g)
	if err != nil {
		return Result{}, err
	}
	defer in.close()
	res := Result{Query: q.Text, Epsilon: share.Epsilon, Delta: share.Delta}
	if len(units) > 0 {
		// R2T runs on the grid g: ψ, τ, GS_Q, the noise and the shifts are
		// whole numbers of grid steps; the answer is brought back to the
		// integers by post-processing (g is public: a power of two from
		// the declared domains).
		g := Quantum(q.Agg, bound)
		cs, counts, err := in.contributions(ctx, cols, g)
		if err != nil {
			return Result{}, err
		}
		tr, err := NewTruncation(cs, counts)
		if err != nil {
			return Result{}, err
		}
		r, err := RaceToTheTop(ctx, src, tr, R2TConfig{Epsilon: share.Epsilon, GS: gs * bound, Base: opt.Base, Quantum: g, Integral: len(units) <= 2})
		if err != nil {
			return Result{}, err
		}
		// R2T's value exceeds Q(I, τ) ≤ Q(I) with probability ≤ β = 0.05
		// (every rung's noise below its shift): the value itself is the
		// one-sided lower bound.
		res.SetValue(r.Value, 0, true)
		res.Mechanism = "R2T (user-level DP, units " + strings.Join(units, ", ") + ")"
		res.NoiseScale, res.NoiseBound95, res.Threshold = ptr(r.Scale), ptr(r.NoiseBound95), ptr(r.BoundTau)
		if r.Tau == 0 {
			res.NoiseScale = nil
		}
		return res, nil
	}
	cfg := RSConfig{Epsilon: share.Epsilon, Delta: share.Delta, Noise: opt.Noise, Bound: bound, Integral: q.Agg == Count}
	beta, err := cfg.Beta()
	if err != nil {
		return Result{}, err
	}
	v, err := in.answer(ctx)
	if err != nil {
		return Result{}, err
	}
	rs, ok, err := in.rs(ctx, beta)
	if err != nil {
		return Result{}, err
	}
	if !ok {
		// Every relation is public: the answer has no neighbours to hide.
		res.SetValue(int64(math.Round(v)), 0, false)
		res.Mechanism = "exact (every table public)"
		zero := 0.0
		res.NoiseScale, res.NoiseBound95 = &zero, &zero
		return res, nil
	}
	r, err := ReleaseRS(src, v, rs, rs, cfg)
	if err != nil {
		return Result{}, err
	}
	res.SetValue(r.Value, r.LowerGap95, q.NonNegative(s))
	res.Mechanism = r.Mechanism
	res.NoiseScale, res.NoiseBound95 = ptr(r.NoiseScale), ptr(r.ErrorBound95)
	return res, nil
}
