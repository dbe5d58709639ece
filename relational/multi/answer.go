package multi

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/relational"
	"github.com/synth-dp/synth/relational/ipopt"
	"github.com/synth-dp/synth/spec"
)

// Options configures [Answer].
type Options struct {
	// Budget is the (ε, δ) of the whole run (δ > 0: Alg. 1 adds Gaussian
	// noise), spent once on all d answers together.
	Budget dp.Budget
	// Units names the unit relations of user-level DP (spec privacy.unit).
	Units []string
	// GS is GS_Q of a count (public); 0 means [relational.DefaultGS]. For
	// SUM(expr) it is multiplied by the public bound on |expr|.
	GS float64
	// Failure is β of Alg. 1 (0 means [DefaultFailure]).
	Failure float64
}

// Answer answers the queries together by [Run] (Dong–Sun–Yi Alg. 1 with
// the jump start): the d answers — one per group of each query's declared
// GROUP BY domain ([Coordinates]) — share the whole budget, which is
// charged to ledger once, before any data is read. Every query must
// reference one of the units; when some query's join results reference two
// or more units (an implicit self-join), all the queries run through the
// polynomial version of Alg. 2 ([RunSelfJoin]), which needs the ipopt build
// tag (otherwise an error wrapping [ErrNeedsIpopt], before any data is
// read).
//
// The public parameters: the grid g is the finest of the queries' grids
// ([relational.Quantum]); the radius ladder goes up to
// GS = GS_Q·Σ_q B_q (every join result lands in one group of each query
// and contributes at most B_q to it, so ‖S_i‖ ≤ ‖S_i‖₁ ≤ GS). Each
// [relational.Result] reports the whole run's (ε, δ): the answers are one
// release, not d shares.
func Answer(ctx context.Context, db relational.DB, src dp.Source, s *spec.Spec, queries []*relational.Query, opt Options, ledger *dp.Ledger) ([]relational.Result, error) {
	p, err := check(s, queries, opt)
	if err != nil {
		return nil, err
	}
	if p.selfJoin {
		return answerSelfJoin(ctx, db, src, s, queries, opt, ledger, p.g, p.total)
	}
	unit, g, total := p.unit, p.g, p.total
	coords := Coordinates(s, queries)
	cfg := p.cfg
	texts := make([]string, len(queries))
	for i, q := range queries {
		texts[i] = q.Text
	}
	// Charge before reading data: a refused charge stops the run with
	// nothing read.
	err = ledger.Charge("multi-query SJA (Dong–Sun–Yi Alg. 1)", opt.Budget,
		"user-level DP (unit "+unit+"); SVT ε/10 (Alg. 3 jump start) + discrete Gaussian (9ε/10, δ) via zCDP, basic composition",
		map[string]any{"queries": texts, "d": len(coords), "rungs": Rungs(total), "gs": total, "grid": g})
	if err != nil {
		return nil, err
	}
	entries, d, err := Contributions(ctx, db, s, queries, unit, g)
	if err != nil {
		return nil, err
	}
	res, err := Run(ctx, src, entries, d, cfg)
	if err != nil {
		return nil, err
	}
	out := make([]relational.Result, d)
	for k, c := range coords {
		sigma, bound, radius := res.Sigma, res.NoiseBound95, res.Radius
		out[k] = relational.Result{
			Query: queries[c.Query].Text, Group: groupMap(c.Group),
			Mechanism:  fmt.Sprintf("multi-query SJA (Dong–Sun–Yi Alg. 1, user-level DP, unit %s, d = %d, r̃ = %v)", unit, d, res.Radius),
			NoiseScale: &sigma, NoiseBound95: &bound, Threshold: &radius, Epsilon: opt.Budget.Epsilon, Delta: opt.Budget.Delta,
		}
		// Every summand is ≥ 0 (SumBound checked it): the clamp at 0 is
		// post-processing that never moves a value away from Q or Q_τ.
		out[k].SetValue(res.Values[k], res.LowerGap95, true)
		ledger.Publish(fmt.Sprintf("answer_%d", k), float64(out[k].Value))
	}
	ledger.Publish("radius", res.Radius)
	return out, nil
}

// Check reports, reading no data, whether [Answer] can run the queries
// with opt: the budget (δ > 0), the units, the queries' ownership paths
// and non-negative summands, the solver build for self-joins
// ([ErrNeedsIpopt]) and the public parameters of the run. Its answer
// depends on the spec, the queries, the options and the build only.
func Check(s *spec.Spec, queries []*relational.Query, opt Options) error {
	_, err := check(s, queries, opt)
	return err
}

// plan is what [check] derives from public inputs.
type plan struct {
	g, total float64 // the finest grid and GS = GS_Q·Σ_q B_q
	unit     string  // the one unit of the self-join-free case
	selfJoin bool    // Alg. 2 (QCQP) instead of Alg. 1
	cfg      Config
}

func check(s *spec.Spec, queries []*relational.Query, opt Options) (plan, error) {
	if err := opt.Budget.Validate(); err != nil {
		return plan{}, fmt.Errorf("multi: %w", err)
	}
	if !(opt.Budget.Delta > 0) {
		return plan{}, invalid("δ = 0: multi-query SJA adds Gaussian noise and needs δ > 0")
	}
	if len(queries) == 0 {
		return plan{}, invalid("no query")
	}
	if len(opt.Units) == 0 {
		return plan{}, invalid("multi-query SJA runs under user-level DP: name the unit relation (privacy.unit)")
	}
	gs := opt.GS
	if gs == 0 {
		gs = relational.DefaultGS
	}
	p := plan{g: math.Inf(1)}
	for _, q := range queries {
		b, err := SumBound(s, q)
		if err != nil {
			return plan{}, err
		}
		used, _, err := UnitColumns(s, q, opt.Units)
		if err != nil {
			return plan{}, err
		}
		if len(used) == 0 {
			return plan{}, invalid("query %q references none of the units %v", q.Text, opt.Units)
		}
		if len(used) > 1 {
			if !ipopt.Available {
				return plan{}, fmt.Errorf("query %q references units %v: %w", q.Text, used, ErrNeedsIpopt)
			}
			p.selfJoin = true
		} else if p.unit != "" && used[0] != p.unit {
			p.selfJoin = true // two unit relations: a unit id space shared by both
		}
		p.unit = used[0]
		p.g = math.Min(p.g, relational.Quantum(q.Agg, b))
		p.total += gs * b
	}
	if p.selfJoin && !ipopt.Available {
		return plan{}, ErrNeedsIpopt
	}
	cfg := Config{Epsilon: opt.Budget.Epsilon, Delta: opt.Budget.Delta, Failure: opt.Failure, GS: p.total, Quantum: p.g, JumpStart: !p.selfJoin}
	var err error
	if p.cfg, err = cfg.validate(); err != nil {
		return plan{}, err
	}
	return p, nil
}

// answerSelfJoin is [Answer] for queries whose join results reference two
// or more units: the polynomial version of Alg. 2 ([RunSelfJoin]).
func answerSelfJoin(ctx context.Context, db relational.DB, src dp.Source, s *spec.Spec, queries []*relational.Query, opt Options, ledger *dp.Ledger, g, total float64) ([]relational.Result, error) {
	if !ipopt.Available {
		return nil, ErrNeedsIpopt
	}
	coords := Coordinates(s, queries)
	cfg := Config{Epsilon: opt.Budget.Epsilon, Delta: opt.Budget.Delta, Failure: opt.Failure, GS: total, Quantum: g}
	if _, err := cfg.validate(); err != nil {
		return nil, err
	}
	texts := make([]string, len(queries))
	for i, q := range queries {
		texts[i] = q.Text
	}
	err := ledger.Charge("multi-query SJA with self-joins (Dong–Sun–Yi Alg. 2, polynomial version)", opt.Budget,
		"user-level DP (units "+strings.Join(opt.Units, ", ")+"); SVT ε/5 over the QCQP F̂ (Alg. 3 jump start) + Laplace 2ε/5 on T + discrete Gaussian (2ε/5, δ/(2e^{3ε/5})) via zCDP; Lemma 3.7",
		map[string]any{"queries": texts, "d": len(coords), "rungs": Rungs(total), "gs": total, "grid": g})
	if err != nil {
		return nil, err
	}
	groups, d, err := JoinGroups(ctx, db, s, queries, opt.Units, g)
	if err != nil {
		return nil, err
	}
	res, err := RunSelfJoin(ctx, src, groups, d, cfg)
	if err != nil {
		return nil, err
	}
	out := make([]relational.Result, d)
	for k, c := range coords {
		out[k] = relational.Result{
			Query: queries[c.Query].Text, Group: groupMap(c.Group),
			// Not the number of QCQPs solved: it depends on the jump
			// start's exact guess, not on the SVT's output alone.
			Mechanism: fmt.Sprintf("multi-query SJA with self-joins (Dong–Sun–Yi Alg. 2 + QCQP, user-level DP, units %s, d = %d)",
				strings.Join(opt.Units, ", "), d),
			Epsilon: opt.Budget.Epsilon, Delta: opt.Budget.Delta,
		}
		// Alg. 2's noise scale is not published: value clamped at 0
		// (post-processing), no bounds.
		out[k].Value = max(res.Values[k], 0)
		ledger.Publish(fmt.Sprintf("answer_%d", k), float64(out[k].Value))
	}
	return out, nil
}

func groupMap(g relational.Group) map[string]string {
	if len(g) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, v := range g {
		m[v.Column.String()] = v.Value
	}
	return m
}
