package cli

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/synth-dp/synth/internal/demo"
	"github.com/synth-dp/synth/release"
)

type demoOptions struct {
	out string
	k   int
	eps float64
}

func newDemoCmd(g *globalOptions) *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo [--out DIR]",
		Short: "Release a built-in skewed two-table instance (no input files, no server)",
		Long: `demo builds the skewed two-table instance of Example 4.2 of Ghazi et al.
(accounts ⋈ transactions on branch_id: k²/8^i branches with 2^i accounts and
2^i transactions each), releases tier, channel and amount of the join with
ε = 1, δ = 1e-6, and prints where the files are and how to query them.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !(o.eps > 0) || math.IsInf(o.eps, 0) {
				return usageErrorf("--epsilon %v: want a finite number > 0", o.eps)
			}
			if o.k < 2 || o.k > 4096 {
				return usageErrorf("--k %d: want 2..4096", o.k)
			}
			tmp, err := os.MkdirTemp("", "synth-demo-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			s, err := demo.Write(tmp, o.k, o.eps, 1e-6)
			if err != nil {
				return err
			}
			g.logger.Info("demo instance built", "k", o.k, "tables", "accounts, transactions")
			sum, err := runRelease(cmd.Context(), g, s, release.Options{OutDir: o.out})
			if err != nil {
				return err
			}
			abs, _ := filepath.Abs(sum.Parquet)
			fmt.Fprintf(g.stdout, `synth demo: released %d synthetic rows of accounts ⋈ transactions (ε = %g, δ = 1e-6, %s)
  data:   %s
  report: %s

Query it with DuckDB, for example:
  duckdb -c "SELECT tier, channel, count(*) AS n FROM '%s' GROUP BY ALL ORDER BY n DESC LIMIT 10"
  duckdb -c "SELECT key, value FROM parquet_kv_metadata('%s')"
`, sum.Rows, o.eps, sum.Privacy.Privacy, sum.Parquet, sum.Report, abs, abs)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.out, "out", "out/demo", "output folder")
	cmd.Flags().IntVar(&o.k, "k", 128, "size parameter k of Example 4.2 (k² join values of degree 1)")
	cmd.Flags().Float64Var(&o.eps, "epsilon", 1, "privacy budget ε")
	return cmd
}
