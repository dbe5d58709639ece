// Package cli implements the synth command line on top of the library
// packages. It parses flags, calls the libraries and prints; the libraries
// never import it.
//
// Exit codes are mapped in one place, [ExitCode]: 0 success, 1 runtime or
// data error, 2 usage or spec error (documented in `synth --help`). Data
// goes to stdout, diagnostics and logs to stderr; --quiet keeps only the
// errors.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/joinasone"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/privacyunit"
	"github.com/synth-dp/synth/relational"
	"github.com/synth-dp/synth/release"
	"github.com/synth-dp/synth/residual"
	"github.com/synth-dp/synth/spec"
	"github.com/synth-dp/synth/workload"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitRuntime = 1
	ExitUsage   = 2
)

// UsageError marks a problem with flags or arguments, or an input the
// command refuses before it runs (an output folder that holds a release, a
// query outside the supported class); it maps to exit code 2. Hint asks
// for the "Run 'synth --help' for usage." line, which only helps after a
// mistake in the command line itself.
type UsageError struct {
	Err  error
	Hint bool
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usageErrorf(format string, a ...any) error {
	return &UsageError{Err: fmt.Errorf(format, a...), Hint: true}
}

// globalOptions are the flags every command shares.
type globalOptions struct {
	engine   string
	seed     uint64
	seedSet  bool
	logLevel string
	quiet    bool
	ledger   ledgerFlags

	stdout, stderr io.Writer
	logger         *slog.Logger
}

// Main runs the CLI with args (without the program name) and returns the
// process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root, opts := newRootCmd(stdout, stderr)
	if args == nil {
		// cobra reads os.Args when the args are nil.
		args = []string{}
	}
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	// cobra reports an unknown command with a plain error from Find, before
	// any command runs; repeating the lookup tells it apart so that it is a
	// usage error like an unknown flag.
	if _, _, ferr := root.Find(args); ferr != nil {
		err = &UsageError{Err: err, Hint: true}
	}
	msg := err.Error()
	if b := budgetMessage(err); b != "" {
		msg = b
	}
	fmt.Fprintf(stderr, "synth: %s\n", userMessage(msg))
	code := ExitCode(err)
	if code == ExitUsage {
		var ue *UsageError
		if errors.As(err, &ue) && ue.Hint {
			fmt.Fprintln(stderr, "Run 'synth --help' for usage.")
		}
	}
	_ = opts
	return code
}

// ExitCode maps an error to the process exit code.
func ExitCode(err error) int {
	var ue *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue), errors.Is(err, spec.ErrInvalid), errors.Is(err, release.ErrUnsupported), errors.Is(err, workload.ErrUnsupported), errors.Is(err, pmw.ErrTooLarge),
		errors.Is(err, joinasone.ErrNoPrivateRelation), errors.Is(err, residual.ErrNoPrivate), isLedgerRefusal(err),
		errors.Is(err, dp.ErrUnsamplable), errors.Is(err, privacyunit.ErrOwnership),
		errors.Is(err, relational.ErrPureRS):
		return ExitUsage
	default:
		return ExitRuntime
	}
}

func newRootCmd(stdout, stderr io.Writer) (*cobra.Command, *globalOptions) {
	opts := &globalOptions{stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "synth",
		Short: "Differentially private synthetic data for multi-table databases",
		Long: `synth releases differentially private (DP) synthetic data for multi-table
relational databases. Point it at a spec (YAML) that declares the tables,
their public domains, the join, the released columns, a workload of queries
that must stay accurate, and a privacy budget (ε, δ); it writes one Parquet
file anybody may query offline, plus a privacy report.

Private data is read only through aggregate SQL queries run by an embedded
DuckDB engine. Runs draw noise from crypto/rand; --seed makes a run
reproducible and marks it "not private (seeded)".

Data goes to stdout; logs, warnings and errors go to stderr. --quiet
prints errors only (sensitivity and evaluate still say that their output is
NON-PRIVATE or INTERNAL). A budget with ε > 10 or δ > 1e-3 is accepted with a
warning: this setting gives weak privacy.

Exit codes:
  0  success
  1  runtime or data error (a data file that cannot be read, a value
     outside its declared domain, an engine failure, an interrupt)
  2  usage or spec error (an unknown command or flag, a bad flag value,
     a spec file that is missing, a folder or invalid, a budget whose
     truncation threshold τ overflows, a spec whose every table is public,
     a method the spec's join does not support, a run that the lifetime
     budget ledger refuses)

` + ledgerHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			opts.seedSet = cmd.Flags().Changed("seed")
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(opts.logLevel)); err != nil {
				return usageErrorf("--log-level %q: want debug, info, warn or error", opts.logLevel)
			}
			if opts.quiet {
				lvl = slog.LevelError
			}
			opts.logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
			return checkBudget(cmd, opts)
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &UsageError{Err: err, Hint: true}
	})
	pf := root.PersistentFlags()
	pf.StringVar(&opts.engine, "engine", "duckdb", `SQL engine: "duckdb" (embedded, tables in a temporary file removed on exit, buffers capped by `+engine.MemoryLimitEnv+`, default `+engine.DefaultMemoryLimit+`), "duckdb:PATH" (a database file), "duckdb::memory:" (in memory) or "postgres://USER@HOST:PORT/DB" (a PostgreSQL server; add ?synth_shards=shard_1,… for a postgres_fdw cluster)`)
	pf.Uint64Var(&opts.seed, "seed", 0, "seed the noise for a reproducible run (the output is marked not private)")
	pf.StringVar(&opts.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	pf.BoolVarP(&opts.quiet, "quiet", "q", false, "print errors only")
	opts.ledger.register(root)

	root.AddCommand(newVersionCmd(opts), newInspectCmd(opts), newSensitivityCmd(opts), newReleaseCmd(opts), newEvaluateCmd(opts), newDemoCmd(opts))
	root.AddCommand(newQueryCmd(opts))
	root.AddCommand(newAnswerCmd(opts))
	root.AddCommand(newBudgetCmd(opts))
	return root, opts
}

// checkBudget looks at the run's budget before the command starts: the
// spec's privacy section (--config), replaced by --epsilon and --delta when
// a command has them and they are given. A budget from flags whose τ
// overflows is a usage error (the spec's own is checked by spec.Load). A
// budget that gives weak privacy ([spec.Privacy.Warnings]) is accepted
// with a warning on stderr, silenced by --quiet. A spec that does not load,
// and flag values out of range, are left to the command, which reports
// them.
func checkBudget(cmd *cobra.Command, g *globalOptions) error {
	var p spec.Privacy
	have := false
	if f := cmd.Flags().Lookup("config"); f != nil && f.Value.String() != "" {
		if s, err := spec.Load(f.Value.String()); err == nil {
			p, have = s.Privacy, true
		}
	}
	var flags []string
	for _, name := range []string{"epsilon", "delta"} {
		f := cmd.Flags().Lookup(name)
		if f == nil || !f.Changed {
			continue
		}
		x, err := strconv.ParseFloat(f.Value.String(), 64)
		if err != nil {
			return nil
		}
		if name == "epsilon" {
			p.Epsilon = x
		} else {
			p.Delta = x
		}
		have = true
		flags = append(flags, "--"+name)
	}
	if !have || !(p.Epsilon > 0) || math.IsInf(p.Epsilon, 0) || !(p.Delta >= 0 && p.Delta < 1) {
		return nil
	}
	if len(flags) > 0 {
		if err := spec.CheckOverflow(p.Epsilon, p.Delta); err != nil {
			return usageErrorf("%s: %v", strings.Join(flags, " and "), err)
		}
	}
	for _, w := range p.Warnings() {
		g.logger.Warn(w)
	}
	return nil
}

// noArgs rejects positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%s takes no arguments, got %q", cmd.CommandPath(), strings.Join(args, " "))
	}
	return nil
}

// requireFlag returns a usage error when a required string flag is empty.
func requireFlag(name, value string) error {
	if value == "" {
		return usageErrorf("--%s is required", name)
	}
	return nil
}

// checkFormat validates a --format value.
func checkFormat(format string) error {
	if format != "text" && format != "json" {
		return usageErrorf("--format %q: want text or json", format)
	}
	return nil
}
