package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/failpoint"
	"github.com/synth-dp/synth/internal/progress"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/output/publish"
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
	overwrite bool
	rows      int64
	epsilon   float64
	delta     float64
	maxOutGiB int64
}

func newReleaseCmd(g *globalOptions) *cobra.Command {
	o := &releaseOptions{}
	cmd := &cobra.Command{
		Use:   "release --config FILE [--out DIR]",
		Short: "Release DP synthetic data: DIR/synthetic.parquet, DIR/privacy-report.json and DIR/privacy-report.md",
		Long: `release runs the whole job: it loads the tables into the engine, checks every
value against its declared domain, computes the join statistics, runs the
spec's release method and writes DIR/synthetic.parquet with the privacy
report in its key-value metadata (synth.privacy) and beside it as
DIR/privacy-report.json and, for people, DIR/privacy-report.md. The
method (synth inspect names it and why):

  privacy-unit  when privacy.unit is set: user-level DP, each unit's rows
                bounded (release.contribution_bound) and measured by PMW
  join-as-one   the tuple-level default without a unit: the join measured
                as one table, noise scaled to its residual sensitivity
  uniformized   opt-in (release.method): degree-uniformized partitions
                (Ghazi et al. Alg. 1 for two tables, Alg. 3 for more)

The whole run is (ε, δ)-DP with the spec's budget, or with --epsilon and
--delta when given (they replace the spec's privacy section, for sweeps).

The release is written into a temporary folder beside DIR and published as
DIR by one atomic rename (an exchange when DIR holds a previous release): a
reader sees the previous release or the new one, whole, never a mix, even if
the run is killed. A DIR that already holds a release is refused unless
--overwrite is given: releasing again spends the privacy budget again.

The rows are the mechanism's synthetic rows in a random order. --rows N
writes exactly N rows drawn from the synthetic distribution (a release whose
estimated size, N × released columns × 8 bytes, exceeds --max-output-gib is
refused before any data is read); without it, a
DP row count above ` + fmt.Sprint(release.DefaultMaxRows) + ` writes a random sample of that many rows
(the report says so). Drawing rows is post-processing: it costs no budget.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlag("config", o.config); err != nil {
				return err
			}
			if err := checkRounds("rounds", o.rounds, "adaptive or the variant's rule"); err != nil {
				return err
			}
			if err := checkRounds("max-rounds", o.maxRounds, "the variant's default"); err != nil {
				return err
			}
			if err := checkMemoryCap(o.memCapMiB); err != nil {
				return err
			}
			if o.rows < 0 {
				return usageErrorf("--rows %d: want ≥ 1 (or 0: the DP row count, at most %d)", o.rows, release.DefaultMaxRows)
			}
			epsSet, deltaSet := cmd.Flags().Changed("epsilon"), cmd.Flags().Changed("delta")
			// The same rules as the spec's privacy section.
			if epsSet && (!(o.epsilon > 0) || math.IsInf(o.epsilon, 0)) {
				return usageErrorf("--epsilon %v: must be a finite number > 0", o.epsilon)
			}
			if deltaSet && (!(o.delta >= 0) || o.delta >= 1) {
				return usageErrorf("--delta %v: must be in [0, 1)", o.delta)
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
			if o.maxOutGiB < 1 {
				return usageErrorf("--max-output-gib %d: want ≥ 1", o.maxOutGiB)
			}
			if err := checkOutputSize(s, o.rows, o.maxOutGiB); err != nil {
				return err
			}
			if err := checkSamplers(s); err != nil {
				return err
			}
			sum, err := runRelease(cmd, g, s, "release", release.Options{
				OutDir: o.out, Rounds: o.rounds, MaxRounds: o.maxRounds, MemoryCap: o.memCapMiB << 20,
				Overwrite: o.overwrite, Rows: o.rows, BudgetOverride: epsSet || deltaSet,
			})
			if errors.Is(err, publish.ErrExists) {
				return &UsageError{Err: err}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "wrote %d synthetic rows to %s\nprivacy report: %s and %s (%s)\n",
				sum.Rows, sum.Parquet, sum.Report, filepath.Join(sum.Dir, layout.MarkdownName), sum.Privacy.Privacy)
			if sum.Headline != "" {
				fmt.Fprintf(g.stdout, "signal: %s\n", sum.Headline)
			}
			if sum.NearZero != "" {
				fmt.Fprintf(g.stdout, "WARNING: THE JOIN MAY BE EMPTY: %s\n", sum.NearZero)
			}
			for _, m := range sum.Measures {
				fmt.Fprintf(g.stdout, "measure %s: column %s, %d cell(s) of its grid; %d cell(s) without synthetic rows lose a DP sum of %.6g\n",
					m.Column, m.OutputColumn, len(m.CellSums), m.CellsWithoutRows, m.LostSum)
				fmt.Fprintf(g.stdout, "measure %s error scale: %s\n", m.Column, m.ErrorScale.Text)
			}
			countSQL, sumSQL := release.ExampleSQL(s, sum.Parquet)
			fmt.Fprintf(g.stdout, "example count (DuckDB): %s\n", countSQL)
			if sumSQL != "" {
				fmt.Fprintf(g.stdout, "example sum (DuckDB):   %s\n", sumSQL)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.config, "config", "", "the spec file (YAML)")
	cmd.Flags().StringVar(&o.out, "out", "", "output folder (default: the spec's output.path)")
	cmd.Flags().IntVar(&o.rounds, "rounds", 0, "PMW rounds T (default: adaptive for the mwem variant; for pmw.variant: paper, chosen from the noisy join size by Ghazi et al. App. A's rule)")
	cmd.Flags().IntVar(&o.maxRounds, "max-rounds", 0, fmt.Sprintf("cap on the automatic number of PMW rounds (default %d for mwem, %d for paper)", pmw.DefaultMWEMMaxRounds, release.DefaultMaxRounds))
	cmd.Flags().BoolVar(&o.overwrite, "overwrite", false, "replace a previous release in the output folder (a rerun spends the privacy budget again)")
	cmd.Flags().Int64Var(&o.rows, "rows", 0, fmt.Sprintf("write exactly N rows sampled from the synthetic distribution (default: the DP row count, at most %d)", release.DefaultMaxRows))
	cmd.Flags().Float64Var(&o.epsilon, "epsilon", 0, "privacy budget ε of the run, replacing the spec's privacy.epsilon")
	cmd.Flags().Float64Var(&o.delta, "delta", 0, "privacy budget δ of the run, replacing the spec's privacy.delta")
	cmd.Flags().Int64Var(&o.maxOutGiB, "max-output-gib", DefaultMaxOutputGiB, "refuse, before reading data, a release whose estimated size (rows × released columns × 8 bytes) exceeds this many GiB")
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

// runRelease runs a release of s for command (release or demo): it checks
// the run's budget against the lifetime ledger, when there is one, before
// the release reads any data, and records it once the release's checks on
// its inputs have passed, before any statistic is read.
func runRelease(cmd *cobra.Command, g *globalOptions, s *spec.Spec, command string, o release.Options) (*release.Summary, error) {
	ctx := cmd.Context()
	b := dp.Budget{Epsilon: s.Privacy.Epsilon, Delta: s.Privacy.Delta}
	mech := "release (method: " + string(s.Release.Method) + ")"
	// A run past the lifetime stops here, before any data is read; the
	// charge itself waits until the release's checks on its inputs (the
	// output folder and its lock, a unit's keys) have passed, so that a
	// run they refuse spends nothing.
	if err := checkLedger(cmd, g, s, command, mech, b); err != nil {
		return nil, err
	}
	o.BeforeCharge = func() error {
		if err := chargeLedger(cmd, g, s, command, mech, b); err != nil {
			return err
		}
		failpoint.HitContext(ctx, failpoint.LedgerCharged)
		return nil
	}
	o.Spec, o.Engine, o.Source, o.Logger = s, g.engine, g.source(), g.logger
	// Progress bars on stderr, only when it is a terminal.
	bars := progress.New(g.stderr, g.quiet)
	defer bars.Done()
	o.Progress = func(p release.Phase, done, total int64) { bars.Update(string(p), done, total) }
	sum, err := release.Run(ctx, o)
	if errors.Is(err, context.Canceled) {
		return nil, fmt.Errorf("interrupted; no output was written: %w", err)
	}
	return sum, err
}
