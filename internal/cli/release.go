package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/release"
	"github.com/synth-dp/synth/spec"
)

type releaseOptions struct {
	config    string
	out       string
	rounds    int
	maxRounds int
	memCapMiB int64
}

func newReleaseCmd(g *globalOptions) *cobra.Command {
	o := &releaseOptions{}
	cmd := &cobra.Command{
		Use:   "release --config FILE [--out DIR]",
		Short: "Release DP synthetic data: DIR/synthetic.parquet and DIR/privacy-report.json",
		Long: `release runs the whole job: it loads the tables into the engine, checks every
value against its declared domain, computes the join statistics, runs the
join-as-one mechanism (Ghazi et al. Alg. 1 for two tables, Alg. 3 for more)
and writes DIR/synthetic.parquet with the privacy report in its key-value
metadata (synth.privacy) and beside it as DIR/privacy-report.json.

The whole run is (ε, δ)-DP with the spec's budget. Files appear atomically:
on an error or an interrupt nothing half-written is left behind.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlag("config", o.config); err != nil {
				return err
			}
			if o.rounds < 0 {
				return usageErrorf("--rounds %d: want ≥ 0", o.rounds)
			}
			if o.maxRounds < 0 {
				return usageErrorf("--max-rounds %d: want ≥ 0 (0: the variant's default)", o.maxRounds)
			}
			if o.memCapMiB < 1 || o.memCapMiB > 1<<40 {
				return usageErrorf("--memory-cap %d: want a number of MiB ≥ 1", o.memCapMiB)
			}
			s, err := spec.Load(o.config)
			if err != nil {
				return err
			}
			sum, err := runRelease(cmd.Context(), g, s, release.Options{OutDir: o.out, Rounds: o.rounds, MaxRounds: o.maxRounds, MemoryCap: o.memCapMiB << 20})
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "wrote %d synthetic rows to %s\nprivacy report: %s (%s)\n",
				sum.Rows, sum.Parquet, sum.Report, sum.Privacy.Privacy)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.config, "config", "", "the spec file (YAML)")
	cmd.Flags().StringVar(&o.out, "out", "", "output folder (default: the spec's output.path)")
	cmd.Flags().IntVar(&o.rounds, "rounds", 0, "PMW rounds T (default: adaptive for the mwem variant; for pmw.variant: paper, chosen from the noisy join size by Ghazi et al. App. A's rule)")
	cmd.Flags().IntVar(&o.maxRounds, "max-rounds", 0, fmt.Sprintf("cap on the automatic number of PMW rounds (default %d for mwem, %d for paper)", pmw.DefaultMWEMMaxRounds, release.DefaultMaxRounds))
	cmd.Flags().Int64Var(&o.memCapMiB, "memory-cap", pmw.DefaultMemoryCap>>20, "largest memory (MiB) PMW may use for the universe; a larger universe is refused")
	return cmd
}

// source returns the noise source the global flags ask for.
func (g *globalOptions) source() dp.Source {
	if g.seedSet {
		g.logger.Warn("--seed given: the output is reproducible and NOT private")
		return dp.NewSeededSource(g.seed)
	}
	return dp.NewSource()
}

func runRelease(ctx context.Context, g *globalOptions, s *spec.Spec, o release.Options) (*release.Summary, error) {
	o.Spec, o.Engine, o.Source, o.Logger = s, g.engine, g.source(), g.logger
	sum, err := release.Run(ctx, o)
	if errors.Is(err, context.Canceled) {
		return nil, fmt.Errorf("interrupted; no output was written: %w", err)
	}
	return sum, err
}
