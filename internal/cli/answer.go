package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/internal/version"
	"github.com/synth-dp/synth/relational"
	"github.com/synth-dp/synth/relational/multi"
	"github.com/synth-dp/synth/relational/rangeset"
	"github.com/synth-dp/synth/spec"
)

type answerOptions struct {
	config  string
	queries []string
	file    string
	unit    string
	epsilon float64
	delta   float64
	gs      float64
	base    float64
	noise   string
	format  string
	multi   bool
	ranges  bool
	mech    string
	// raw prints the mechanisms' values without relational.PostProcess.
	raw bool
}

func newAnswerCmd(g *globalOptions) *cobra.Command {
	o := &answerOptions{}
	cmd := &cobra.Command{
		Use:   "answer --config SPEC (--query SQL | --queries FILE)",
		Short: "Answer SQL aggregate queries over the private tables under DP (residual sensitivity or R2T)",
		Long: `answer answers SQL aggregate queries directly over the private tables, with
instance-optimal relational mechanisms, instead of releasing a synthetic
table. A query is

  SELECT [g1, …,] COUNT(*) | SUM(expr)
  FROM t1 [alias], t2, …  (or t1 JOIN t2 ON t1.k = t2.k)
  [WHERE join equalities AND selections]
  [GROUP BY g1, …]

over the spec's tables, each at most once: join equalities between columns
of two tables; selections that read one table each (comparisons with
constants or with another column of the same table, BETWEEN, IN, AND, OR,
NOT); SUM over + - * of integer and numeric columns and constants (division
by a constant); GROUP BY categorical, boolean or integer (unbinned) columns,
whose groups come from the declared domain, never from the data. DuckDB
parses the SQL; anything else is a usage error naming the construct.

Privacy:
  tuple-level DP (default): the residual-sensitivity mechanism (Dong and
    Yi; RS^β of the selected sub-instance). With δ > 0, half the budget pads
    RS^β upwards on a log grid (published) and half adds discrete Laplace
    (--noise laplace) or discrete Gaussian noise scaled by it. It needs
    δ > 0 (a pure ε-DP variant would publish rounded Cauchy floats, which
    are not DP at large scales); use --unit for pure ε-DP.
  user-level DP (--unit T or privacy.unit: T): a neighbour deletes one
    unit and every tuple referencing it (through the spec's foreign keys).
    Several answers: multi-query SJA (below). One answer, δ = 0 or
    --mechanism r2t: R2T (Dong et al. SIGMOD 2022) with the LP truncation:
    closed form for one unit, max flow for two, the CLP solver for three
    or more (build with -tags clp); R2T is ε-DP, δ is not used. --gs is
    GS_Q of a count (a SUM multiplies it by the largest |expr| of the
    declared domains); --r2t-base 4 races τ = 4, 16, … (fewer rungs, often
    more accurate).

Choice of mechanism (said in the output, with the reason): without a unit,
the residual-sensitivity mechanism. With a unit, when every query's join
results belong to one unit (of one unit table) and its summand is
non-negative, the answers (GROUP BY groups of all queries together) get
the clipped Laplace mechanism (--mechanism clip): for one answer, part of
ε (30%) chooses a clip C from the public ladder ⌈2^(j/2)⌉ ≤ GS by the
exponential mechanism (near the largest units' contributions) and the
answer gets discrete Laplace noise of scale C/ε_N: pure ε-DP, error about
C/ε. For two answers or more it measures their total with such a clip and
their shape (each answer's share) with a second clip r at a low quantile
of the units' contributions (every unit's contributions to all the answers
clipped together, L1), and answers each as its share times the total:
pure ε-DP, the shape's noise that of r (docs/answers.md measures it
against the unit release and multi-query SJA). Otherwise one answer gets R2T and several get
multi-query SJA when δ > 0, R2T per answer when δ = 0; --mechanism r2t
keeps one R2T run per answer, --mechanism multi (or --multi) asks for
multi-query SJA. --gs (or the spec's privacy.max_unit_rows) is the public
bound on one unit's rows: the top of the clip's ladder and R2T's GS_Q. The budget is the spec's privacy section or
--epsilon/--delta; per-answer mechanisms share it evenly over the d
answers (basic composition). Answers are integers; a COUNT, or a SUM whose
declared domains make it non-negative, is never printed below 0 (the DP
value is clamped: post-processing, no privacy cost, and never farther from
the truth).

Bounds, computed from public parameters and DP outputs only:
  noise_bound_95 (NOISE ±95%): the noise only. With probability ≥ 0.95 the
    value is within it of the answer of the truncated query (R2T: each
    unit's contribution capped at τ; multi-query SJA: each unit's vector
    clipped to ℓ2 norm r̃; both printed as threshold). Without a unit
    nothing is truncated and it bounds the whole error.
  lower_bound_95 (LOWER 95%): the true answer is at least this with
    probability ≥ 0.95, truncation included (truncation only lowers an
    answer). No upper bound covers the truncation under a unit: one unit
    more with any number of rows is a neighbour, so no DP output can.

Many queries at once:
  multi-query SJA (user-level DP): all queries and groups share one
    truncation radius and one Gaussian noise vector (Dong, Sun, Yi, "Better
    than Composition", Alg. 1 with the SVT jump start; the whole (ε, δ),
    δ > 0, is spent once). Queries whose join results reference two or more
    units (e.g. --unit customer,supplier) run the QCQP version (Alg. 2),
    which needs a build with -tags ipopt (apt-get install
    coinor-libipopt-dev); without it auto falls back to R2T.
  --ranges (tuple-level DP): COUNT(*) range queries on one table (WHERE a
    conjunction of comparisons and BETWEEN) get one discrete Laplace
    mechanism with the set's L1 sensitivity min(|Q|, 2·max depth of the
    query boxes) (Inan et al.), spending ε once.

Output: a table (--format text), CSV or JSON
  {"mechanism": {"name", "reason"}, "answers": [{"query", "group", "value",
  "mechanism", "noise_scale", "noise_bound_95", "lower_bound_95",
  "threshold", "epsilon", "delta", "raw_value", "post_processing"}],
  "privacy": {the privacy report}}.

Post-processing (clipped Laplace and multi-query SJA, counts only, no
privacy cost): the counts of one run are shrunk toward the independence
fit of their factors (the query and each GROUP BY column) by the
positive-part James–Stein rule, which keeps an answer's spread when it is
far above the public noise, and each query's groups are made non-negative
with their own total. NOISE ±95% and LOWER 95% then come from the raw
value (raw_value in JSON): LOWER 95% still bounds the true answer; NOISE
±95% bounds the raw value's noise. --raw skips it.

--queries FILE holds queries separated by semicolons; -- starts a comment.
Exit codes: 2 for a bad query (named), flag or spec; 1 for data errors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.config == "" {
				return usageErrorf("--config is required")
			}
			if (len(o.queries) == 0) == (o.file == "") {
				return usageErrorf("give --query SQL (repeatable) or --queries FILE")
			}
			switch o.format {
			case "text", "csv", "json":
			default:
				return usageErrorf("--format %q: want text, csv or json", o.format)
			}
			switch o.mech {
			case mechAuto, mechR2T, mechMulti, mechClip:
			default:
				return usageErrorf("--mechanism %q: want auto, clip, r2t or multi", o.mech)
			}
			if o.multi {
				if o.mech == mechR2T || o.mech == mechClip {
					return usageErrorf("--multi and --mechanism %s exclude each other", o.mech)
				}
				o.mech = mechMulti
			}
			switch relational.Noise(o.noise) {
			case relational.NoiseLaplace, relational.NoiseGaussian:
			default:
				return usageErrorf("--noise %q: want laplace or gaussian", o.noise)
			}
			if !(o.gs >= 1) || math.IsInf(o.gs, 0) {
				return usageErrorf("--gs %v: want a finite number ≥ 1", o.gs)
			}
			if frac, _ := math.Frexp(o.base); !(o.base >= 2) || math.IsInf(o.base, 0) || frac != 0.5 {
				return usageErrorf("--r2t-base %v: want a power of two ≥ 2", o.base)
			}
			epsSet, deltaSet := cmd.Flags().Changed("epsilon"), cmd.Flags().Changed("delta")
			if epsSet && (!(o.epsilon > 0) || math.IsInf(o.epsilon, 0)) {
				return usageErrorf("--epsilon %v: must be a finite number > 0", o.epsilon)
			}
			if deltaSet && (!(o.delta >= 0) || o.delta >= 1) {
				return usageErrorf("--delta %v: must be in [0, 1)", o.delta)
			}
			texts := o.queries
			if o.file != "" {
				b, err := os.ReadFile(o.file)
				if err != nil {
					return usageErrorf("--queries: %v", err)
				}
				texts = splitQueries(string(b))
				if len(texts) == 0 {
					return usageErrorf("--queries %s: no query", o.file)
				}
			}
			s, err := spec.Load(o.config)
			if err != nil {
				return err
			}
			if epsSet {
				s.Privacy.Epsilon = o.epsilon
			}
			if deltaSet {
				s.Privacy.Delta = o.delta
			}
			if !cmd.Flags().Changed("gs") && s.Privacy.MaxUnitRows > 0 {
				o.gs = float64(s.Privacy.MaxUnitRows)
			}
			unit := s.Privacy.Unit
			if cmd.Flags().Changed("unit") {
				unit = o.unit
			}
			var units []string
			for _, u := range strings.Split(unit, ",") {
				if u = strings.TrimSpace(u); u != "" {
					t := s.Table(u)
					if t == nil || t.Public {
						return usageErrorf("--unit %s: not a private table of the spec", u)
					}
					units = append(units, u)
				}
			}
			return runAnswer(cmd, g, s, texts, units, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "the spec file (YAML)")
	f.StringArrayVar(&o.queries, "query", nil, "a query (SQL); repeatable")
	f.StringVar(&o.file, "queries", "", "a file of queries separated by semicolons")
	f.StringVar(&o.unit, "unit", "", "user-level DP: the primary private relation(s), comma-separated (replaces privacy.unit; empty: tuple-level DP)")
	f.Float64Var(&o.epsilon, "epsilon", 0, "privacy budget ε of the run, replacing the spec's privacy.epsilon")
	f.Float64Var(&o.delta, "delta", 0, "privacy budget δ of the run, replacing the spec's privacy.delta")
	f.Float64Var(&o.gs, "gs", relational.DefaultGS, "user-level DP: public bound on one unit's join rows (GS_Q of a count; the clip ladder's top); default privacy.max_unit_rows, else 2^20")
	f.Float64Var(&o.base, "r2t-base", 2, "R2T: ratio between thresholds τ, a power of two (2: τ = 2, 4, 8, … as in the paper's analysis; 4 runs half the rungs)")
	f.StringVar(&o.noise, "noise", string(relational.NoiseLaplace), "residual sensitivity with δ > 0: laplace or gaussian")
	f.StringVar(&o.format, "format", "text", "output format: text, csv or json")
	f.BoolVar(&o.raw, "raw", false, "print the clipped mechanism's and multi-query SJA's values as drawn, without the post-processing of a run's counts (shrinkage toward their independence fit, non-negative groups with their own total)")
	f.StringVar(&o.mech, "mechanism", mechAuto, "user-level DP: auto (clip when every query's results belong to one unit; else multi-query SJA for two or more answers when δ > 0, else R2T), clip, r2t (one R2T run per answer, ε split evenly) or multi")
	f.BoolVar(&o.multi, "multi", false, "the same as --mechanism multi: answer all queries and groups together (Dong–Sun–Yi multi-query SJA; needs δ > 0)")
	f.BoolVar(&o.ranges, "ranges", false, "tuple-level DP: the queries are range counts on one table, answered with their set sensitivity (Inan et al.)")
	return cmd
}

// splitQueries splits a file into statements at semicolons outside quotes,
// dropping -- comments and empty statements.
func splitQueries(src string) []string {
	var out []string
	var cur strings.Builder
	quote := rune(0)
	rs := []rune(src)
	flush := func() {
		if q := strings.TrimSpace(cur.String()); q != "" {
			out = append(out, q)
		}
		cur.Reset()
	}
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '-' && i+1 < len(rs) && rs[i+1] == '-':
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
			cur.WriteRune('\n')
			continue
		case r == ';':
			flush()
			continue
		}
		cur.WriteRune(r)
	}
	flush()
	return out
}

// answerJSON is the --format json document.
type answerJSON struct {
	Mechanism answerPlanJSON      `json:"mechanism"`
	Answers   []relational.Result `json:"answers"`
	Privacy   dp.Report           `json:"privacy"`
}

// answerPlanJSON says which mechanism ran and why.
type answerPlanJSON struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// The values of --mechanism.
const (
	mechAuto  = "auto"
	mechR2T   = "r2t"
	mechMulti = "multi"
	mechClip  = "clip"
)

// The mechanisms answer can run.
type answerKind int

const (
	kindRS answerKind = iota
	kindRanges
	kindR2T
	kindMulti
	kindClip
)

// answerPlan is the mechanism of a run, chosen from public inputs only
// (the spec, the parsed queries, the flags and the build) before any data
// is read.
type answerPlan struct {
	kind   answerKind
	name   string // short name, for the output
	report string // the privacy report's mechanism
	reason string // why this mechanism, for the output
}

// planAnswer chooses the mechanism. Under a privacy unit, d ≥ 2 answers
// (groups of the declared GROUP BY domains, over all queries) default to
// multi-query SJA: one truncation radius and one noise vector at the whole
// (ε, δ) instead of d R2T runs at ε/d each, which the experiments of
// relational/multi/EXPERIMENTS.md measure 4–90 times less accurate on
// TPC-H. One answer keeps R2T (pure ε-DP, instance-optimal for one
// query); so does δ = 0 or a set of queries multi-query SJA cannot take
// (the reason is said).
func planAnswer(s *spec.Spec, qs []*relational.Query, units []string, budget dp.Budget, o *answerOptions) answerPlan {
	d := 0
	for _, q := range qs {
		d += len(relational.Groups(s, q))
	}
	r2t := answerPlan{kind: kindR2T, name: "R2T", report: "synth answer: R2T (Dong et al. SIGMOD 2022; survey §4.2)"}
	mult := answerPlan{kind: kindMulti, name: "multi-query SJA", report: "synth answer: multi-query SJA (Dong, Sun, Yi, Better than Composition)"}
	switch {
	case o.ranges:
		return answerPlan{kind: kindRanges, name: "range-set Laplace",
			report: "synth answer --ranges: Laplace mechanism with the query set's L1 sensitivity (Inan et al.)",
			reason: fmt.Sprintf("--ranges: %d range counts on one table share one Laplace mechanism at the whole ε, scaled to the set's L1 sensitivity (Inan et al.; tuple-level DP)", d)}
	case len(units) == 0:
		return answerPlan{kind: kindRS, name: "residual sensitivity",
			report: "synth answer: residual-sensitivity mechanism (Dong–Yi survey §3.2)",
			reason: fmt.Sprintf("no privacy unit (privacy.unit or --unit): tuple-level DP, the residual-sensitivity mechanism at ε/%d per answer. "+
				"Its noise follows how many join results one tuple reaches (one customer's tuple reaches all their line items) and can exceed the answers; "+
				"a privacy unit protects the whole person and usually needs far less noise", d)}
	}
	unit := strings.Join(units, ", ")
	switch o.mech {
	case mechMulti:
		mult.reason = fmt.Sprintf("--mechanism multi: the %d answers share one truncation radius and one Gaussian noise vector at the whole (ε, δ) (Dong–Sun–Yi; privacy unit %s)", d, unit)
		return mult
	case mechR2T:
		r2t.reason = fmt.Sprintf("--mechanism r2t: one R2T run per answer at ε/%d each (basic composition; privacy unit %s)", d, unit)
		return r2t
	}
	clip := answerPlan{kind: kindClip, name: relational.ClipMechanism,
		report: "synth answer: clipped Laplace (per-unit clip chosen by the exponential mechanism over a public ladder, then discrete Laplace)"}
	if o.mech == mechClip {
		clip.reason = fmt.Sprintf("--mechanism clip: each unit's contributions to the %d answers clipped together to a privately chosen C, then discrete Laplace noise of scale C/ε (privacy unit %s)", d, unit)
		return clip
	}
	clipErr := relational.CheckClip(s, qs, units)
	if clipErr == nil && d >= 2 {
		clip.reason = fmt.Sprintf("%d answers under privacy unit %s: clipped Laplace, total and shape — the answers' total is measured with a clip C near the largest units' contributions "+
			"and their shape (each answer's share) with a clip r at the %.0f%% quantile of the units' contributions (both chosen by exponential mechanisms over the ladder ⌈2^(j/2)⌉ ≤ %s rows per unit), "+
			"each answer being its share of the shape times the total (pure ε-DP). At r nearly every unit weighs the same in the shape, so its noise is that of r, not of C: "+
			"measured better than multi-query SJA's L2 clipping and than one clip for all answers on every workload marginal of docs/answers.md; --mechanism multi or r2t for the others",
			d, unit, 100*relational.ShapeQuantile(budget.Epsilon), strconv.FormatFloat(o.gs, 'f', -1, 64))
		return clip
	}
	if clipErr == nil && d == 1 {
		L, _ := relational.Rungs(o.gs)
		clip.reason = fmt.Sprintf("one answer under privacy unit %s: clipped Laplace — %.0f%% of ε chooses a clip C near the largest units' contributions "+
			"(exponential mechanism over the ladder ⌈2^(j/2)⌉ ≤ %s rows per unit), then discrete Laplace noise of scale C/ε_N (pure ε-DP): error about C/ε. "+
			"R2T's noise at the same threshold carries its ladder's factor L·ln(L/β) ≈ %.0f (L = %d rungs up to GS %s); --mechanism r2t for it",
			unit, 100*relational.ClipQuantileShare, strconv.FormatFloat(o.gs, 'f', -1, 64), float64(L)*math.Log(float64(L)/relational.R2TFailure), L, strconv.FormatFloat(o.gs, 'f', -1, 64))
		return clip
	}
	if d == 1 {
		r2t.reason = fmt.Sprintf("one answer under privacy unit %s: R2T (pure ε-DP, instance-optimal for a single query); the clipped mechanism cannot run: %v", unit, clipErr)
		return r2t
	}
	err := multi.Check(s, qs, multi.Options{Budget: budget, Units: units, GS: o.gs})
	if err != nil {
		r2t.reason = fmt.Sprintf("%d answers under privacy unit %s: R2T per answer at ε/%d each, because multi-query SJA, which would answer them together, cannot run: %v", d, unit, d, err)
		return r2t
	}
	mult.reason = fmt.Sprintf("%d answers under privacy unit %s: multi-query SJA (Dong–Sun–Yi) answers them together with one truncation radius and one noise vector at the whole (ε, δ), "+
		"where R2T would run %d times at ε/%d each (--mechanism r2t for that)", d, unit, d, d)
	return mult
}

func runAnswer(cmd *cobra.Command, g *globalOptions, s *spec.Spec, texts []string, units []string, o *answerOptions) error {
	ctx := cmd.Context()
	budget := dp.Budget{Epsilon: s.Privacy.Epsilon, Delta: s.Privacy.Delta}
	if o.ranges && o.mech != mechAuto {
		return &UsageError{Err: errors.New("--ranges (tuple-level DP) excludes --multi and --mechanism (user-level DP)"), Hint: true}
	}
	if o.ranges && len(units) > 0 {
		return &UsageError{Err: fmt.Errorf("--ranges answers under tuple-level DP: give --unit \"\" (the spec names unit %s)", strings.Join(units, ",")), Hint: true}
	}
	if o.mech != mechAuto && len(units) == 0 {
		flag := "--mechanism " + o.mech
		if o.multi {
			flag = "--multi"
		}
		return &UsageError{Err: fmt.Errorf("%s runs under user-level DP: name the privacy unit (--unit T or privacy.unit)", flag), Hint: true}
	}
	neighbours := "add/remove one tuple of one private relation (tuple-DP)"
	if len(units) > 0 {
		neighbours = "delete one tuple of " + strings.Join(units, " or ") + " and every tuple referencing it (user-DP)"
	}
	g.logger.Info("opening engine", "engine", engine.Redact(g.engine))
	eng, err := engine.Open(ctx, g.engine)
	if err != nil {
		return err
	}
	defer eng.Close()
	// Parse every query before any data is read: a bad query is a usage
	// error and nothing is spent.
	var qs []*relational.Query
	for _, t := range texts {
		q, err := relational.Parse(ctx, eng, s, t)
		if err != nil {
			return answerError(err)
		}
		qs = append(qs, q)
	}
	plan := planAnswer(s, qs, units, budget, o)
	g.logger.Info("mechanism", "name", plan.name, "reason", plan.reason)
	// The lifetime ledger records the run once every query parsed and
	// before any data is read.
	if err := chargeLedger(cmd, g, s, "answer", plan.report, budget); err != nil {
		return err
	}
	// Only the tables and columns the queries read are loaded and checked,
	// Parquet files in place: a few queries read them once or twice.
	tables, cols := relational.Reads(qs)
	// Under a unit the mechanisms also group by each query's unit column
	// (the unit's key, or the foreign key that reaches it): load it too.
	if len(units) > 0 {
		for _, q := range qs {
			if _, ucols, err := relational.UnitColumns(s, q, units); err == nil {
				for _, c := range ucols {
					if !slices.Contains(cols, c) {
						cols = append(cols, c)
					}
				}
			}
		}
	}
	eng.ReadInPlace(true)
	load, err := engine.Project(s, tables, cols)
	if err != nil {
		return err
	}
	for _, t := range load.Tables {
		g.logger.Info("loading table", "table", t.Name, "source", t.Source, "columns", len(t.Columns))
	}
	if err := eng.Load(ctx, load); err != nil {
		return err
	}
	ledger, err := dp.NewLedger(budget)
	if err != nil {
		return &UsageError{Err: err}
	}
	src := g.source()
	res, err := answerWith(ctx, eng, src, s, plan, texts, qs, units, budget, o, ledger)
	if err != nil {
		return answerError(err)
	}
	params := map[string]any{"queries": texts, "answers": len(res), "mechanism_reason": plan.reason}
	if len(units) > 0 {
		params["units"], params["gs"] = units, o.gs
		if plan.kind == kindR2T {
			params["r2t_base"] = o.base
		}
	} else if !o.ranges {
		params["noise"] = o.noise
	}
	report := ledger.Report(dp.ReportMeta{
		Neighbours: neighbours, Mechanism: plan.report, Seeded: src.Seeded(), Parameters: params,
		SoftwareVersion: version.String(), SpecDigest: specDigest(s),
	})
	return writeAnswers(g.stdout, o.format, plan, res, report)
}

// answerWith runs the planned mechanism on a loaded engine (the data are
// read here, after the charge).
func answerWith(ctx context.Context, eng *engine.Engine, src dp.Source, s *spec.Spec, plan answerPlan, texts []string, qs []*relational.Query,
	units []string, budget dp.Budget, o *answerOptions, ledger *dp.Ledger) ([]relational.Result, error) {
	switch plan.kind {
	case kindRanges:
		return answerRanges(ctx, eng, src, s, texts, units, budget, ledger)
	case kindClip, kindMulti:
		var res []relational.Result
		var err error
		if plan.kind == kindClip {
			res, err = relational.Answer(ctx, eng, src, s, qs, relational.Options{Budget: budget, Units: units, GS: o.gs, Clip: true}, ledger)
		} else {
			res, err = multi.Answer(ctx, eng, src, s, qs, multi.Options{Budget: budget, Units: units, GS: o.gs}, ledger)
		}
		if err != nil || o.raw {
			return res, err
		}
		// Post-processing of the DP values only (docs/answers.md). The
		// ledger holds the mechanism's values (answer_k) and, for every
		// answer the post-processing changed, the value printed
		// (answer_k_post_processed): both DP outputs, the second a function
		// of the first.
		res = relational.PostProcess(qs, res)
		for k, r := range res {
			if r.PostProcessing != "" {
				ledger.Publish(fmt.Sprintf("answer_%d_post_processed", k), float64(r.Value))
			}
		}
		return res, nil
	}
	return relational.Answer(ctx, eng, src, s, qs, relational.Options{
		Budget: budget, Units: units, GS: o.gs, Base: o.base, Noise: relational.Noise(o.noise),
	}, ledger)
}

// answerRanges answers range counts on one table with the set sensitivity
// (tuple-level DP; a replaced record moves at most min(|Q|, 2·max depth)
// counts by one).
func answerRanges(ctx context.Context, eng *engine.Engine, src dp.Source, s *spec.Spec, texts, units []string, budget dp.Budget, ledger *dp.Ledger) ([]relational.Result, error) {
	if len(units) > 0 {
		return nil, &UsageError{Err: fmt.Errorf("--ranges answers under tuple-level DP: give --unit \"\" (the spec names unit %s)", strings.Join(units, ",")), Hint: true}
	}
	set, err := rangeset.Parse(ctx, eng, s, texts)
	if err != nil {
		return nil, err
	}
	// synth's neighbours add or remove one tuple (the ledger composes
	// under them), for which the set's L1 sensitivity is its max depth;
	// Inan et al.'s replace-one bound, min(|Q|, 2·depth), would double the
	// noise for nothing.
	return rangeset.Answer(ctx, eng, src, s, set, budget.Epsilon, rangeset.AddRemove, ledger)
}

// answerError makes query and parameter errors usage errors (exit 2).
func answerError(err error) error {
	if errors.Is(err, relational.ErrUnsupported) || errors.Is(err, relational.ErrInvalid) || errors.Is(err, relational.ErrNeedsCLP) ||
		errors.Is(err, multi.ErrInvalid) || errors.Is(err, multi.ErrNeedsIpopt) || errors.Is(err, rangeset.ErrNotBox) {
		return &UsageError{Err: err}
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted; nothing was published: %w", err)
	}
	return err
}

func fmtOpt(f *float64) string {
	if f == nil {
		return "-"
	}
	return strconv.FormatFloat(*f, 'g', 6, 64)
}

func fmtInt(v *int64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatInt(*v, 10)
}

func fmtGroup(g map[string]string) string {
	if g == nil {
		return ""
	}
	keys := make([]string, 0, len(g))
	for k := range g {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + g[k]
	}
	return strings.Join(parts, " ")
}

// answerColumns are the CSV header (the JSON keys of relational.Result).
var answerColumns = []string{"query", "group", "value", "mechanism", "noise_scale", "noise_bound_95", "lower_bound_95", "threshold", "epsilon", "delta"}

// boundsNote explains the two bound columns of the text table.
func boundsNote(plan answerPlan) string {
	if plan.kind == kindRS || plan.kind == kindRanges {
		return "NOISE ±95%: |value − true answer| with probability 95% (nothing is truncated: the noise is the whole error). " +
			"LOWER 95%: the true answer is at least this with probability 95%."
	}
	return "NOISE ±95%: the noise only: |value − answer of the truncated query| with probability 95%. " +
		"The truncation at THRESHOLD (clipped Laplace: each unit's contributions to all answers together capped at C in L1, per answer in its own units; " +
		"R2T: each unit's contribution capped at τ; multi-query SJA: each unit's vector clipped to norm r̃) " +
		"also lowers the value, by an amount no DP output can bound from above. " +
		"LOWER 95%: the true answer is at least this with probability 95%, truncation included."
}

// selfJoinNote says why answers of multi-query SJA with self-joins
// (Dong–Sun–Yi Alg. 2) print no bounds.
const selfJoinNote = "multi-query SJA with self-joins (Alg. 2): no NOISE ±95% or LOWER 95% is given. " +
	"Its Gaussian noise has scale (T̂·r̃/g + √d)/√(2ρ), where T̂ (a noisy bound on the join results one unit reaches) and the radius r̃ " +
	"are kept internal (a bound would publish them), and the truncation to r̃ lowers the value by an amount no DP output bounds."

// selfJoinRows reports whether some answer came from multi-query SJA with
// self-joins (Alg. 2), whose mechanism names it.
func selfJoinRows(res []relational.Result) bool {
	for _, r := range res {
		if strings.Contains(r.Mechanism, "Alg. 2") {
			return true
		}
	}
	return false
}

func writeAnswers(w io.Writer, format string, plan answerPlan, res []relational.Result, report dp.Report) error {
	switch format {
	case "json":
		if res == nil {
			res = []relational.Result{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(answerJSON{Mechanism: answerPlanJSON{Name: plan.name, Reason: plan.reason}, Answers: res, Privacy: report})
	case "csv":
		cw := csv.NewWriter(w)
		_ = cw.Write(answerColumns)
		for _, r := range res {
			_ = cw.Write([]string{r.Query, fmtGroup(r.Group), strconv.FormatInt(r.Value, 10), r.Mechanism, fmtOpt(r.NoiseScale), fmtOpt(r.NoiseBound95),
				fmtInt(r.LowerBound95), fmtOpt(r.Threshold), strconv.FormatFloat(r.Epsilon, 'g', -1, 64), strconv.FormatFloat(r.Delta, 'g', -1, 64)})
		}
		cw.Flush()
		return cw.Error()
	}
	var queries []string
	idx := map[string]int{}
	for _, r := range res {
		if _, ok := idx[r.Query]; !ok {
			idx[r.Query] = len(queries) + 1
			queries = append(queries, r.Query)
		}
	}
	fmt.Fprintf(w, "mechanism: %s — %s\n", plan.name, plan.reason)
	for i, q := range queries {
		fmt.Fprintf(w, "Q%d: %s\n", i+1, q)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUERY\tGROUP\tVALUE\tNOISE SCALE\tNOISE ±95%\tLOWER 95%\tTHRESHOLD\tMECHANISM")
	for _, r := range res {
		fmt.Fprintf(tw, "Q%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", idx[r.Query], fmtGroup(r.Group), r.Value, fmtOpt(r.NoiseScale), fmtOpt(r.NoiseBound95),
			fmtInt(r.LowerBound95), fmtOpt(r.Threshold), r.Mechanism)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, boundsNote(plan))
	for _, r := range res {
		if r.PostProcessing != "" {
			fmt.Fprintln(w, "post-processed (no privacy cost): "+r.PostProcessing+"; NOISE ±95% and LOWER 95% come from the raw values (--format json: raw_value; --raw prints them)")
			break
		}
	}
	if selfJoinRows(res) {
		fmt.Fprintln(w, selfJoinNote)
	}
	_, err := fmt.Fprintf(w, "privacy: (ε = %g, δ = %g)-DP, spent (ε = %g, δ = %g); neighbours: %s; %s\n",
		report.Epsilon, report.Delta, report.Spent.Epsilon, report.Spent.Delta, report.Neighbours, report.Privacy)
	return err
}
