package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/synth-dp/synth/internal/progress"
	"github.com/synth-dp/synth/internal/report"
	"github.com/synth-dp/synth/internal/score"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/release"
	"github.com/synth-dp/synth/spec"
	"github.com/synth-dp/synth/workload"
)

type evaluateOptions struct {
	config    string
	synthetic string
	format    string
	report    string
}

func newEvaluateCmd(g *globalOptions) *cobra.Command {
	o := &evaluateOptions{}
	cmd := &cobra.Command{
		Use:   "evaluate --config FILE --synthetic FILE|DIR [--report DIR]",
		Short: "Compare the workload's answers on a synthetic file with the true data (internal)",
		Long: `evaluate answers the spec's workload (every cell of every marginal, every
range) on the true join and on a synthetic Parquet file and prints the
absolute and relative errors (max, median, 90th percentile). The workload's
sums of release.measures columns are scored too ("measure sum(…)" rows):
the true sum over the join against SELECT SUM(…) on the file.

--synthetic names the flat file or the release folder holding it
(DIR/synthetic.parquet). When that folder also holds a tables release
(DIR/tables/<table>.parquet, one file per private table on the privacy
unit's ownership tree), evaluate scores it too and prints three more
sections (docs/relational-eval.md): every 1- and 2-way marginal of each
table's own rows (TVD, beside the uniform distribution's), the
distribution of children per parent on every edge (bins 0, 1, 2–3, 4–7,
…; TVD), and 1,000 seeded group queries (parents with a fan-out in a
range, an attribute in a set and at least k children satisfying a
condition; mean and median error). --format json adds them under
"tables".

--report DIR also writes a utility report to read at a glance: DIR/index.html
(one self-contained page: figures embedded as PNG, no JavaScript, nothing
fetched from the network), the same figures as DIR/fig/*.png, and
DIR/summary.json. It shows a headline score per workload kind (marginal TVD,
range and sum errors) beside the uniform distribution's score, true vs
synthetic bars for every 1-way marginal, a heat map of the difference for
every 2-way marginal, box plots of the errors per workload family, the
numeric sums' errors against their true values, and the release's ε, δ and
mechanism from its privacy report (in the Parquet file's metadata, else
privacy-report.json beside it). DIR is written whole or not at all; an
existing DIR must be empty or hold an earlier report (it is replaced), else
the command stops before reading any data.

INTERNAL: it reads the private data and its output, the report included, is
not differentially private. Do not publish it.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlag("config", o.config); err != nil {
				return err
			}
			if err := requireFlag("synthetic", o.synthetic); err != nil {
				return err
			}
			if err := checkFormat(o.format); err != nil {
				return err
			}
			if o.report != "" {
				// Refuse a folder in the way before any data is read.
				if err := report.Check(o.report); err != nil {
					return &UsageError{Err: fmt.Errorf("--report %s: %w", o.report, err)}
				}
			}
			fmt.Fprintln(g.stderr, "synth: evaluate reads the private data; its output is INTERNAL and not differentially private")
			bars := progress.New(g.stderr, g.quiet)
			defer bars.Done()
			s, err := spec.Load(o.config)
			if err != nil {
				return err
			}
			synthetic, tablesDir := resolveSynthetic(o.synthetic)
			o.synthetic = synthetic
			bars.Update("loading tables", 0, 1)
			_, eng, err := loadData(cmd.Context(), g, s)
			if err != nil {
				return err
			}
			defer eng.Close()
			bars.Update("answering the workload", 0, 1)
			ans, err := workload.Answer(cmd.Context(), s, eng, o.synthetic)
			if err != nil {
				return err
			}
			// The workload's sums of release.measures columns: true sums
			// against the file's SQL sums.
			msums, err := release.MeasureAnswers(cmd.Context(), s, eng, o.synthetic)
			if err != nil {
				return err
			}
			ans.Families = append(ans.Families, msums...)
			bars.Done()
			ev := ans.Evaluation()
			var tables *score.TablesScore
			if tablesDir != "" {
				bars.Update("scoring the tables", 0, 1)
				if tables, err = score.EvaluateTables(cmd.Context(), s, tablesDir, layout.ColumnNames(s)); err != nil {
					return err
				}
				bars.Done()
			}
			var reportPath string
			if o.report != "" {
				if reportPath, err = writeReport(cmd, g, bars, s, ans, tables, o); err != nil {
					return err
				}
			}
			if o.format == "json" {
				out := struct {
					*workload.Evaluation
					Tables *score.TablesScore `json:"tables,omitempty"`
				}{ev, tables}
				if err := writeJSON(g.stdout, out); err != nil {
					return err
				}
				if reportPath != "" {
					g.logger.Info("report written (INTERNAL, do not publish)", "path", reportPath)
				}
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "%s\n", ev.Label)
			fmt.Fprintf(tw, "synthetic:\t%s (%d rows; true join %d rows)\n", ev.Synthetic, ev.SyntheticRows, ev.TrueRows)
			fmt.Fprintf(tw, "family\tqueries\tabs max\tabs median\tabs p90\trel max\trel median\trel p90\n")
			for _, f := range ev.Families {
				fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.3f\t%.3f\t%.3f\n", f.Name, f.Queries,
					f.Absolute.Max, f.Absolute.Median, f.Absolute.P90, f.Relative.Max, f.Relative.Median, f.Relative.P90)
			}
			fmt.Fprintf(tw, "all\t%d\t%.1f\t%.1f\t%.1f\t%.3f\t%.3f\t%.3f\n", ev.Queries,
				ev.Absolute.Max, ev.Absolute.Median, ev.Absolute.P90, ev.Relative.Max, ev.Relative.Median, ev.Relative.P90)
			if tables != nil {
				writeTablesText(tw, tables, ev.SyntheticRows)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if reportPath != "" {
				fmt.Fprintf(g.stdout, "report (INTERNAL, do not publish): %s\n", reportPath)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.config, "config", "", "the spec file (YAML)")
	cmd.Flags().StringVar(&o.synthetic, "synthetic", "", "the synthetic Parquet file, or the release folder holding synthetic.parquet (and tables/)")
	cmd.Flags().StringVar(&o.format, "format", "text", "output format: text or json")
	cmd.Flags().StringVar(&o.report, "report", "", "also write a utility report with figures into this folder (index.html, summary.json, fig/)")
	return cmd
}

// writeReport writes the --report folder and returns its index.html.
func writeReport(cmd *cobra.Command, g *globalOptions, bars *progress.Reporter, s *spec.Spec, ans *workload.Answers, tables *score.TablesScore, o *evaluateOptions) (string, error) {
	priv, privPath, err := report.ReadPrivacy(o.synthetic)
	if err != nil {
		return "", err
	}
	if priv == nil {
		g.logger.Warn("the synthetic file has no privacy report (in its metadata or beside it): the report cannot show its privacy parameters", "looked_for", privPath)
	}
	in := report.Input{Answers: ans, Labels: report.BinLabels(s), Config: o.config, Privacy: priv, PrivacySource: privPath, Tables: tables}
	_, err = report.Write(cmd.Context(), o.report, in, report.Options{
		Progress: func(done, total int) { bars.Update("rendering figures", int64(done), int64(total)) },
	})
	bars.Done()
	if errors.Is(err, report.ErrNotReport) {
		// The folder changed while the figures rendered.
		return "", &UsageError{Err: fmt.Errorf("--report %s: %w", o.report, err)}
	}
	if err != nil {
		return "", err
	}
	return filepath.Join(o.report, report.IndexName), nil
}

// resolveSynthetic returns the flat file of --synthetic (a file, or a
// release folder holding synthetic.parquet) and the release folder when it
// holds a tables release (tables/ beside the flat file), else "".
func resolveSynthetic(path string) (file, tablesDir string) {
	file = path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		file = filepath.Join(path, layout.ParquetName)
	}
	if dir := filepath.Dir(file); score.HasTables(dir) {
		return file, dir
	}
	return file, ""
}

// writeTablesText prints the tables release's sections: table marginals,
// fan-outs, sibling agreement and group queries, one row per table, edge,
// edge and column, and edge.
func writeTablesText(tw *tabwriter.Writer, t *score.TablesScore, flatRows int64) {
	note := ""
	if flatRows != t.JoinRows {
		note = fmt.Sprintf(" — the flat file holds %d rows: it is not the join of the tables", flatRows)
	}
	fmt.Fprintf(tw, "\njoin of the tables: %d rows (true %d)%s\n", t.JoinRows, t.TrueJoinRows, note)
	fmt.Fprintf(tw, "\ntables: every 1- and 2-way marginal of each table's own rows\n")
	fmt.Fprintf(tw, "table\ttrue rows\trows\tmarginals\tmean TVD\tmax TVD\tuniform mean TVD\n")
	for _, s := range t.Tables {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.4f\t%.4f\t%.4f\n", s.Table, s.TrueRows, s.Rows, len(s.Marginals), s.MeanTVD, s.MaxTVD, s.MeanUnifTV)
	}
	fmt.Fprintf(tw, "\nfan-out: children per parent (bins 0, 1, 2–3, 4–7, …), over every parent\n")
	fmt.Fprintf(tw, "edge\ttrue mean\tmean\tTVD\n")
	for _, f := range t.FanOuts {
		fmt.Fprintf(tw, "%s→%s\t%.2f\t%.2f\t%.4f\n", f.Parent, f.Child, f.TrueMean, f.Mean, f.TVD)
	}
	if len(t.Siblings) > 0 {
		fmt.Fprintf(tw, "\nsiblings: share of pairs of one parent's children whose column agrees (bins); random pairs: any two true children\n")
		fmt.Fprintf(tw, "edge\tcolumn\ttrue\tsynthetic\trandom pairs\n")
		for _, sb := range t.Siblings {
			fmt.Fprintf(tw, "%s→%s\t%s\t%.3f\t%.3f\t%.3f\n", sb.Parent, sb.Child, sb.Column, sb.True, sb.Synthetic, sb.TrueRandom)
		}
	}
	if g := t.Groups; g != nil {
		fmt.Fprintf(tw, "\ngroup queries (%d, seed %d; error |true − synthetic·N/N̂| / max(true, N/100); %d with true answer 0)\n", g.Queries, g.Seed, g.ZeroTrue)
		fmt.Fprintf(tw, "edge\tqueries\tmean\tmedian\n")
		for _, e := range g.Edges {
			fmt.Fprintf(tw, "%s→%s\t%d\t%.4f\t%.4f\n", e.Parent, e.Child, e.Queries, e.Mean, e.Median)
		}
		fmt.Fprintf(tw, "all\t%d\t%.4f\t%.4f\n", g.Queries, g.Mean, g.Median)
	}
}
