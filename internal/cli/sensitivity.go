package cli

import (
	"fmt"
	"math"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/synth-dp/synth/residual"
	"github.com/synth-dp/synth/spec"
)

// nonPrivateLabel marks output computed from the data without noise.
const nonPrivateLabel = "NON-PRIVATE: computed from the data without noise; for the data custodian only, do not publish"

type sensitivityOptions struct {
	config string
	beta   float64
	format string
}

func newSensitivityCmd(g *globalOptions) *cobra.Command {
	o := &sensitivityOptions{}
	cmd := &cobra.Command{
		Use:   "sensitivity --config FILE [--beta B]",
		Short: "Print T_E and the residual sensitivity RS^β of the join count (non-private diagnostic)",
		Long: `sensitivity computes, for the spec's join, the maximum boundary query T_E
of every non-empty proper subset E of the relations, the local sensitivity
bound LŜ^0 and the residual sensitivity RS^β = max_k e^{−βk}·LŜ^k
(Ghazi et al. Def. 3.6). The default β is 1/λ = ε/ln(1/δ) from the spec.
Public tables joined on their primary key are folded into their private
neighbour first, as a release does (see inspect).

NON-PRIVATE: the values are computed from the private data without noise.
They are for the data custodian; do not publish them.

Do not use this command to choose release.beta: β is part of the
mechanism and must be fixed without looking at the private data (for
example from the paper's default ε/ln(1/δ), or from public or synthetic
data of the same shape). Picking β because RS^β of the private data came out
small leaks through that choice, outside the privacy budget.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlag("config", o.config); err != nil {
				return err
			}
			if err := checkFormat(o.format); err != nil {
				return err
			}
			if cmd.Flags().Changed("beta") && (!(o.beta > 0) || math.IsInf(o.beta, 0)) {
				return usageErrorf("--beta %v: want a finite number > 0", o.beta)
			}
			fmt.Fprintln(g.stderr, "synth: sensitivity prints NON-PRIVATE values computed from the data; do not publish them")
			s, err := spec.Load(o.config)
			if err != nil {
				return err
			}
			beta := o.beta
			if !cmd.Flags().Changed("beta") {
				if s.Privacy.Delta <= 0 {
					return usageErrorf("the spec's delta is 0: give --beta")
				}
				beta = s.Privacy.Epsilon / math.Log(1/s.Privacy.Delta)
			}
			_, eng, err := loadData(cmd.Context(), g, s)
			if err != nil {
				return err
			}
			defer eng.Close()
			// The folded join, as a release computes it.
			f, err := s.Folding()
			if err != nil {
				return err
			}
			if err := eng.Fold(cmd.Context(), f); err != nil {
				return err
			}
			if err := eng.CheckPrimaryKeys(cmd.Context(), s, f.Original()); err != nil {
				return err
			}
			h := f.Folded()
			sens, err := residual.Compute(cmd.Context(), h, eng, beta)
			if err != nil {
				return err
			}
			if o.format == "json" {
				return writeJSON(g.stdout, struct {
					Label string `json:"label"`
					*residual.Sensitivity
				}{nonPrivateLabel, sens})
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "%s\n", nonPrivateLabel)
			fmt.Fprintf(tw, "beta:\t%g\n", sens.Beta)
			fmt.Fprintf(tw, "local sensitivity LŜ^0:\t%g\n", sens.LocalSensitivity)
			fmt.Fprintf(tw, "residual sensitivity RS^β:\t%g (at k = %d)\n", sens.RS, sens.ArgmaxK)
			keys := make([]string, 0, len(sens.TE))
			for k := range sens.TE {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Fprintf(tw, "T_{%s}:\t%g\n", k, sens.TE[k])
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&o.config, "config", "", "the spec file (YAML)")
	cmd.Flags().Float64Var(&o.beta, "beta", 0, "smoothing parameter β (default ε/ln(1/δ) from the spec)")
	cmd.Flags().StringVar(&o.format, "format", "text", "output format: text or json")
	return cmd
}
