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
	if err := opt.Budget.Validate(); err != nil {
		return nil, fmt.Errorf("multi: %w", err)
	}
	if !(opt.Budget.Delta > 0) {
		return nil, invalid("δ = 0: multi-query SJA adds Gaussian noise and needs δ > 0")
	}
	if len(queries) == 0 {
		return nil, invalid("no query")
	}
	if len(opt.Units) == 0 {
		return nil, invalid("multi-query SJA runs under user-level DP: name the unit relation (privacy.unit)")
	}
	gs := opt.GS
	if gs == 0 {
		gs = relational.DefaultGS
	}
	g := math.Inf(1)
	total := 0.0
	unit := ""
	selfJoin := false
	for _, q := range queries {
		b, err := SumBound(s, q)
		if err != nil {
			return nil, err
		}
		used, _, err := UnitColumns(s, q, opt.Units)
		if err != nil {
			return nil, err
		}
		if len(used) > 1 {
			if !ipopt.Available {
				return nil, fmt.Errorf("query %q references units %v: %w", q.Text, used, ErrNeedsIpopt)
			}
			selfJoin = true
		} else if unit != "" && used[0] != unit {
			selfJoin = true // two unit relations: a unit id space shared by both
		}
		unit = used[0]
		g = math.Min(g, relational.Quantum(q.Agg, b))
		total += gs * b
	}
	if selfJoin {
		return answerSelfJoin(ctx, db, src, s, queries, opt, ledger, g, total)
	}
	coords := Coordinates(s, queries)
	cfg := Config{Epsilon: opt.Budget.Epsilon, Delta: opt.Budget.Delta, Failure: opt.Failure, GS: total, Quantum: g, JumpStart: true}
	if _, err := cfg.validate(); err != nil {
		return nil, err
	}
	texts := make([]string, len(queries))
	for i, q := range queries {
		texts[i] = q.Text
	}
	// Charge before reading data: a refused charge stops the run with
	// nothing read.
	err := ledger.Charge("multi-query SJA (Dong–Sun–Yi Alg. 1)", opt.Budget,
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
		sigma, bound := res.Sigma, res.ErrorBound95
		out[k] = relational.Result{
			Query: queries[c.Query].Text, Group: groupMap(c.Group), Value: res.Values[k],
			Mechanism:  fmt.Sprintf("multi-query SJA (Dong–Sun–Yi Alg. 1, user-level DP, unit %s, d = %d, r̃ = %v)", unit, d, res.Radius),
			NoiseScale: &sigma, ErrorBound95: &bound, Epsilon: opt.Budget.Epsilon, Delta: opt.Budget.Delta,
		}
		ledger.Publish(fmt.Sprintf("answer_%d", k), float64(res.Values[k]))
	}
	ledger.Publish("radius", res.Radius)
	return out, nil
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
			Query: queries[c.Query].Text, Group: groupMap(c.Group), Value: res.Values[k],
			// Not the number of QCQPs solved: it depends on the jump
			// start's exact guess, not on the SVT's output alone.
			Mechanism: fmt.Sprintf("multi-query SJA with self-joins (Dong–Sun–Yi Alg. 2 + QCQP, user-level DP, units %s, d = %d)",
				strings.Join(opt.Units, ", "), d),
			Epsilon: opt.Budget.Epsilon, Delta: opt.Budget.Delta,
		}
		ledger.Publish(fmt.Sprintf("answer_%d", k), float64(res.Values[k]))
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
