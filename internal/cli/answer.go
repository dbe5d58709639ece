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
  user-level DP (--unit T or privacy.unit: T): R2T (Dong et al. SIGMOD
    2022) with the LP truncation: closed form for one unit, max flow for
    two, the CLP solver for three or more (build with -tags clp). A tuple
    belongs to the unit it references through the spec's foreign keys.
    --gs is GS_Q of a count (a SUM multiplies it by the largest |expr| of
    the declared domains); --r2t-base 4 races τ = 4, 16, … (fewer rungs,
    often more accurate). R2T is ε-DP; δ is not used.

The budget is the spec's privacy section or --epsilon/--delta. A query with
GROUP BY over d groups is answered as d queries; all answers share the
budget evenly (basic composition). Answers are integers. error_bound_95 is
computed from public parameters and DP outputs only: for the residual-
sensitivity mechanism it bounds |answer − true| with probability 0.95; for
R2T it is twice the shift of the winning threshold τ (R2T underestimates
with probability ≥ 0.95; the truncation bias is covered when τ ≥ the
largest contribution of one unit).

Many queries at once:
  --multi (user-level DP): all queries and groups share one truncation
    radius and one Gaussian noise vector (Dong, Sun, Yi, "Better than
    Composition", Alg. 1 with the SVT jump start; the whole (ε, δ), δ > 0,
    is spent once). Queries whose join results reference two or more units
    (e.g. --unit customer,supplier) run the QCQP version (Alg. 2), which
    needs a build with -tags ipopt (apt-get install coinor-libipopt-dev).
  --ranges (tuple-level DP): COUNT(*) range queries on one table (WHERE a
    conjunction of comparisons and BETWEEN) get one discrete Laplace
    mechanism with the set's L1 sensitivity min(|Q|, 2·max depth of the
    query boxes) (Inan et al.), spending ε once.

Output: a table (--format text), CSV or JSON
  {"answers": [{"query", "group", "value", "mechanism", "noise_scale",
  "error_bound_95", "epsilon", "delta"}], "privacy": {the privacy report}}.

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
	f.Float64Var(&o.gs, "gs", relational.DefaultGS, "R2T: public bound GS_Q on one unit's contribution to a count")
	f.Float64Var(&o.base, "r2t-base", 2, "R2T: ratio between thresholds τ, a power of two (2: τ = 2, 4, 8, … as in the paper's analysis; 4 runs half the rungs)")
	f.StringVar(&o.noise, "noise", string(relational.NoiseLaplace), "residual sensitivity with δ > 0: laplace or gaussian")
	f.StringVar(&o.format, "format", "text", "output format: text, csv or json")
	f.BoolVar(&o.multi, "multi", false, "user-level DP: answer all queries and groups together (Dong–Sun–Yi multi-query SJA; needs δ > 0)")
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
	Answers []relational.Result `json:"answers"`
	Privacy dp.Report           `json:"privacy"`
}

func runAnswer(cmd *cobra.Command, g *globalOptions, s *spec.Spec, texts []string, units []string, o *answerOptions) error {
	ctx := cmd.Context()
	budget := dp.Budget{Epsilon: s.Privacy.Epsilon, Delta: s.Privacy.Delta}
	if o.ranges && o.multi {
		return &UsageError{Err: errors.New("--multi and --ranges exclude each other (user-level vs tuple-level DP)"), Hint: true}
	}
	if o.ranges && len(units) > 0 {
		return &UsageError{Err: fmt.Errorf("--ranges answers under tuple-level DP: give --unit \"\" (the spec names unit %s)", strings.Join(units, ",")), Hint: true}
	}
	neighbours, mech := "add/remove one tuple of one private relation (tuple-DP)", "synth answer: residual-sensitivity mechanism (Dong–Yi survey §3.2)"
	if len(units) > 0 {
		neighbours = "delete one tuple of " + strings.Join(units, " or ") + " and every tuple referencing it (user-DP)"
		mech = "synth answer: R2T (Dong et al. SIGMOD 2022; survey §4.2)"
		if o.multi {
			mech = "synth answer --multi: multi-query SJA (Dong, Sun, Yi, Better than Composition)"
		}
	} else if o.ranges {
		mech = "synth answer --ranges: Laplace mechanism with the query set's L1 sensitivity (Inan et al.)"
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
	// The lifetime ledger records the run once every query parsed and
	// before any data is read.
	if err := chargeLedger(cmd, g, s, "answer", mech, budget); err != nil {
		return err
	}
	// Only the tables and columns the queries read are loaded and checked,
	// Parquet files in place: a few queries read them once or twice.
	tables, cols := relational.Reads(qs)
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
	var res []relational.Result
	switch {
	case o.ranges:
		res, err = answerRanges(ctx, eng, src, s, texts, units, budget, ledger)
	case o.multi:
		res, err = multi.Answer(ctx, eng, src, s, qs, multi.Options{Budget: budget, Units: units, GS: o.gs}, ledger)
	default:
		res, err = relational.Answer(ctx, eng, src, s, qs, relational.Options{
			Budget: budget, Units: units, GS: o.gs, Base: o.base, Noise: relational.Noise(o.noise),
		}, ledger)
	}
	if err != nil {
		return answerError(err)
	}
	params := map[string]any{"queries": texts, "answers": len(res)}
	if len(units) > 0 {
		params["units"], params["gs"], params["r2t_base"] = units, o.gs, o.base
	} else if !o.ranges {
		params["noise"] = o.noise
	}
	report := ledger.Report(dp.ReportMeta{
		Neighbours: neighbours, Mechanism: mech, Seeded: src.Seeded(), Parameters: params,
		SoftwareVersion: version.String(), SpecDigest: specDigest(s),
	})
	return writeAnswers(g.stdout, o.format, res, report)
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

func writeAnswers(w io.Writer, format string, res []relational.Result, report dp.Report) error {
	switch format {
	case "json":
		if res == nil {
			res = []relational.Result{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(answerJSON{Answers: res, Privacy: report})
	case "csv":
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"query", "group", "value", "mechanism", "noise_scale", "error_bound_95", "epsilon", "delta"})
		for _, r := range res {
			_ = cw.Write([]string{r.Query, fmtGroup(r.Group), strconv.FormatInt(r.Value, 10), r.Mechanism, fmtOpt(r.NoiseScale), fmtOpt(r.ErrorBound95),
				strconv.FormatFloat(r.Epsilon, 'g', -1, 64), strconv.FormatFloat(r.Delta, 'g', -1, 64)})
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
	for i, q := range queries {
		fmt.Fprintf(w, "Q%d: %s\n", i+1, q)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUERY\tGROUP\tVALUE\tNOISE SCALE\tERROR BOUND 95%\tMECHANISM")
	for _, r := range res {
		fmt.Fprintf(tw, "Q%d\t%s\t%d\t%s\t%s\t%s\n", idx[r.Query], fmtGroup(r.Group), r.Value, fmtOpt(r.NoiseScale), fmtOpt(r.ErrorBound95), r.Mechanism)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "privacy: (ε = %g, δ = %g)-DP, spent (ε = %g, δ = %g); neighbours: %s; %s\n",
		report.Epsilon, report.Delta, report.Spent.Epsilon, report.Spent.Delta, report.Neighbours, report.Privacy)
	return err
}
