package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/synth-dp/synth/release"
)

type evaluateOptions struct {
	config    string
	synthetic string
	format    string
}

func newEvaluateCmd(g *globalOptions) *cobra.Command {
	o := &evaluateOptions{}
	cmd := &cobra.Command{
		Use:   "evaluate --config FILE --synthetic FILE",
		Short: "Compare the workload's answers on a synthetic file with the true data (internal)",
		Long: `evaluate answers the spec's workload (every cell of every marginal, every
range) on the true join and on a synthetic Parquet file and prints the
absolute and relative errors (max, median, 90th percentile).

INTERNAL: it reads the private data and its output is not differentially
private. Do not publish it.`,
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
			fmt.Fprintln(g.stderr, "synth: evaluate reads the private data; its output is INTERNAL and not differentially private")
			s, _, eng, err := loadAll(cmd.Context(), g, o.config)
			if err != nil {
				return err
			}
			defer eng.Close()
			ev, err := release.Evaluate(cmd.Context(), s, eng, o.synthetic)
			if err != nil {
				return err
			}
			if o.format == "json" {
				return writeJSON(g.stdout, ev)
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
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&o.config, "config", "", "the spec file (YAML)")
	cmd.Flags().StringVar(&o.synthetic, "synthetic", "", "the synthetic Parquet file")
	cmd.Flags().StringVar(&o.format, "format", "text", "output format: text or json")
	return cmd
}
