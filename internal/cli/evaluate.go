package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/synth-dp/synth/internal/progress"
	"github.com/synth-dp/synth/internal/report"
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
		Use:   "evaluate --config FILE --synthetic FILE [--report DIR]",
		Short: "Compare the workload's answers on a synthetic file with the true data (internal)",
		Long: `evaluate answers the spec's workload (every cell of every marginal, every
range) on the true join and on a synthetic Parquet file and prints the
absolute and relative errors (max, median, 90th percentile). The workload's
sums of release.measures columns are scored too ("measure sum(…)" rows):
the true sum over the join against SELECT SUM(…) on the file.

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
			var reportPath string
			if o.report != "" {
				if reportPath, err = writeReport(cmd, g, bars, s, ans, o); err != nil {
					return err
				}
			}
			if o.format == "json" {
				if err := writeJSON(g.stdout, ev); err != nil {
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
	cmd.Flags().StringVar(&o.synthetic, "synthetic", "", "the synthetic Parquet file")
	cmd.Flags().StringVar(&o.format, "format", "text", "output format: text or json")
	cmd.Flags().StringVar(&o.report, "report", "", "also write a utility report with figures into this folder (index.html, summary.json, fig/)")
	return cmd
}

// writeReport writes the --report folder and returns its index.html.
func writeReport(cmd *cobra.Command, g *globalOptions, bars *progress.Reporter, s *spec.Spec, ans *workload.Answers, o *evaluateOptions) (string, error) {
	priv, privPath, err := report.ReadPrivacy(o.synthetic)
	if err != nil {
		return "", err
	}
	if priv == nil {
		g.logger.Warn("the synthetic file has no privacy report (in its metadata or beside it): the report cannot show its privacy parameters", "looked_for", privPath)
	}
	in := report.Input{Answers: ans, Labels: report.BinLabels(s), Config: o.config, Privacy: priv, PrivacySource: privPath}
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
