package cli

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/synth-dp/synth/internal/demo"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/release"
	"github.com/synth-dp/synth/spec"
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
		Short: "Release a built-in customers ⋈ transactions instance under user-level DP (no input files, no server)",
		Long: `demo builds a skewed two-table instance — customers and their transactions
(customers ⋈ transactions on customer_id: k²/8^i customers with 2^i
transactions each, as in Example 4.2 of Ghazi et al.) — and releases tier,
channel and amount of the join with ε = 1, δ = 1e-6 and the customer as the
privacy unit (user-level DP: each customer is protected with all their
transactions). It prints where the files are and synth query commands to
try on the released file.`,
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
			// The demo writes the synthetic tables too (docs/relational.md).
			s.Release.Output = spec.OutputTables
			g.logger.Info("demo instance built", "k", o.k, "tables", "customers, transactions")
			sum, err := runRelease(cmd, g, s, "demo", release.Options{OutDir: o.out, Overwrite: true})
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "synth demo: released %d synthetic rows of customers ⋈ transactions (ε = %g, δ = 1e-6, user-level: "+
				"each customer protected with all their transactions; %s)\n"+
				"  data:   %s\n  report: %s\n", sum.Rows, o.eps, sum.Privacy.Privacy, sum.Parquet, sum.Report)
			if md := filepath.Join(sum.Dir, layout.MarkdownName); fileExists(md) {
				fmt.Fprintf(g.stdout, "          %s (the same, for reading)\n", md)
			}
			fmt.Fprint(g.stdout, "\nQuery it with synth query (DuckDB is built into synth; no duckdb CLI needed).\n"+
				"The SQL names the join file as the view \"synthetic\", and each released table by its name:\n")
			self := selfCommand()
			for _, q := range demo.Queries() {
				target := sum.Parquet
				if q.Tables {
					target = sum.Dir
				}
				fmt.Fprintf(g.stdout, "  # %s\n  %s query %s \"%s\"\n", q.Title, self, shellQuote(target), q.SQL)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.out, "out", "out/demo", "output folder")
	cmd.Flags().IntVar(&o.k, "k", 128, "size parameter k of Example 4.2 (k² join values of degree 1)")
	cmd.Flags().Float64Var(&o.eps, "epsilon", 1, "privacy budget ε")
	return cmd
}

// selfCommand is how the user can run this binary again from the current
// folder: the path it was started by when that is a file that stays
// (bin/synth, /usr/local/bin/synth), "go run ./cmd/synth" for a binary that
// go run built in a temporary folder, else "synth".
func selfCommand() string {
	arg0 := os.Args[0]
	if exe, err := os.Executable(); err == nil && strings.Contains(exe, "go-build") {
		return "go run ./cmd/synth"
	}
	if strings.ContainsRune(arg0, os.PathSeparator) {
		if _, err := os.Stat(arg0); err == nil {
			return shellQuote(arg0)
		}
	}
	return "synth"
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./:+@%=,
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:+@%=,", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
