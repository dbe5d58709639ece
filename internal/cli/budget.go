package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/dp/lifetime"
	"github.com/synth-dp/synth/spec"
)

// ledgerFlags are the global flags of the lifetime budget ledger.
type ledgerFlags struct {
	path           string
	epsilon, delta float64
	create, raise  bool
}

const ledgerHelp = `Lifetime budget ledger:
  --ledger FILE (or privacy.ledger in the spec, resolved against the spec's
  folder) names a file that records every release and answer run: time,
  spec digest, command, mechanism, the run's whole (ε, δ), and ρ = ε²/2 for
  a pure ε-DP run (δ = 0). The entry is appended (one JSON line with a
  SHA-256 checksum, fsynced, under an exclusive file lock held from the
  check to the write) before any data is read, so a run that fails or is
  killed afterwards still counts. --lifetime-epsilon and --lifetime-delta
  (or privacy.lifetime: {epsilon, delta}) set the budget all recorded runs
  may spend together; without them the lifetime recorded by the latest
  entry that has one applies. A run that would exceed it exits 2 before
  reading data. Runs compose by basic composition (Σε, Σδ) or, when it is
  tighter, by zCDP for the pure ε-DP runs (Σρ converted to ε at the δ the
  other runs leave; Canonne–Kamath–Steinke 2020) plus basic composition
  for the others. 'synth budget' prints the history and what is left.
  Each line's checksum covers the line before it, so a deleted, inserted
  or reordered line is refused as corruption. A ledger file that does not
  exist is refused (a mistyped path would start again at nothing spent)
  unless --create-ledger is given; a lifetime above the one the ledger
  records is refused unless --raise-lifetime is given (the raise is
  recorded in the run's entry).`

func (l *ledgerFlags) register(cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	pf.StringVar(&l.path, "ledger", "", "lifetime budget ledger file: release and answer record their budget there before reading data (replaces privacy.ledger)")
	pf.Float64Var(&l.epsilon, "lifetime-epsilon", 0, "lifetime ε of the ledger: a run that would take the recorded runs past it is refused (replaces privacy.lifetime.epsilon)")
	pf.Float64Var(&l.delta, "lifetime-delta", 0, "lifetime δ of the ledger (replaces privacy.lifetime.delta)")
	pf.BoolVar(&l.create, "create-ledger", false, "create the ledger file when it does not exist (without it a missing ledger is refused: a mistyped path would start again at nothing spent)")
	pf.BoolVar(&l.raise, "raise-lifetime", false, "accept a lifetime budget above the one the ledger records (recorded in the run's entry)")
}

// resolve returns the ledger file and the lifetime budget of a run on spec
// s (nil when the run is not on a spec): the flags over the spec's privacy
// section. The path is "" when neither names a ledger.
func (l *ledgerFlags) resolve(cmd *cobra.Command, s *spec.Spec) (string, *dp.Budget, error) {
	path := l.path
	var life *dp.Budget
	if s != nil {
		if path == "" {
			path = s.Privacy.Ledger
		}
		if sl := s.Privacy.Lifetime; sl != nil {
			life = &dp.Budget{Epsilon: sl.Epsilon, Delta: sl.Delta}
		}
	}
	epsSet, deltaSet := cmd.Flags().Changed("lifetime-epsilon"), cmd.Flags().Changed("lifetime-delta")
	if epsSet || deltaSet {
		if life == nil {
			if !epsSet || !deltaSet {
				return "", nil, usageErrorf("give both --lifetime-epsilon and --lifetime-delta (the spec has no privacy.lifetime)")
			}
			life = &dp.Budget{}
		}
		if epsSet {
			if !(l.epsilon > 0) || l.epsilon > 1e300 {
				return "", nil, usageErrorf("--lifetime-epsilon %v: must be a finite number > 0", l.epsilon)
			}
			life.Epsilon = l.epsilon
		}
		if deltaSet {
			if !(l.delta >= 0) || l.delta >= 1 {
				return "", nil, usageErrorf("--lifetime-delta %v: must be in [0, 1)", l.delta)
			}
			life.Delta = l.delta
		}
	}
	if life != nil && path == "" {
		return "", nil, usageErrorf("a lifetime budget needs a ledger: give --ledger FILE or privacy.ledger")
	}
	return path, life, nil
}

// chargeLedger records a run of command with budget b in the ledger the
// flags or the spec name, refusing it (exit 2) when it would exceed the
// lifetime budget. It must be called before the run reads any data; it
// does nothing when no ledger is named.
func chargeLedger(cmd *cobra.Command, g *globalOptions, s *spec.Spec, command, mechanism string, b dp.Budget) error {
	return ledgerRun(cmd, g, s, command, mechanism, b, false)
}

// checkLedger makes every check of [chargeLedger] and records nothing: a
// command calls it before it reads any data, and charges once its own
// checks on the inputs have passed (release: the output folder and its
// lock, a privacy unit's keys), so that a run refused there spends
// nothing while a run past the lifetime still stops before reading data.
func checkLedger(cmd *cobra.Command, g *globalOptions, s *spec.Spec, command, mechanism string, b dp.Budget) error {
	return ledgerRun(cmd, g, s, command, mechanism, b, true)
}

func ledgerRun(cmd *cobra.Command, g *globalOptions, s *spec.Spec, command, mechanism string, b dp.Budget, dry bool) error {
	path, life, err := g.ledger.resolve(cmd, s)
	if err != nil || path == "" {
		return err
	}
	e := lifetime.NewEntry(command, mechanism, specDigest(s), b, g.seedSet)
	h, err := lifetime.ChargeWith(path, e, lifetime.Options{Lifetime: life, Create: g.ledger.create, RaiseLifetime: g.ledger.raise, DryRun: dry})
	if err != nil || dry {
		return err
	}
	if h.TornBytes > 0 {
		g.logger.Warn("ledger: cut off a torn final line (a run killed while appending its entry; it read no data)", "ledger", path, "bytes", h.TornBytes)
	}
	attrs := []any{"ledger", path, "epsilon", b.Epsilon, "delta", b.Delta, "runs", len(h.Entries)}
	if l := h.Lifetime(); l != nil {
		left := lifetime.Remaining(h.Entries, *l)
		attrs = append(attrs, "lifetime_epsilon_left", left.Epsilon, "lifetime_delta_left", left.Delta)
	}
	g.logger.Info("ledger: run recorded before reading data", attrs...)
	return nil
}

// specDigest is "sha256:<hex>" of the spec file, "" for a spec built in
// memory (the demo's).
func specDigest(s *spec.Spec) string {
	if d := s.Digest(); d != "" {
		return "sha256:" + d
	}
	return ""
}

type budgetOptions struct {
	config string
	format string
}

// budgetJSON is the --format json document of synth budget.
type budgetJSON struct {
	*lifetime.History
	Spent     lifetime.Composition `json:"spent"`
	Lifetime  *dp.Budget           `json:"lifetime,omitempty"`
	Remaining *dp.Budget           `json:"remaining,omitempty"`
}

func newBudgetCmd(g *globalOptions) *cobra.Command {
	o := &budgetOptions{}
	cmd := &cobra.Command{
		Use:   "budget (--ledger FILE | --config SPEC) [--format text|json]",
		Short: "Print the lifetime budget ledger: every recorded run and what is left",
		Long: `budget reads the lifetime budget ledger (--ledger FILE, or the spec's
privacy.ledger with --config) under a shared lock and prints every recorded
run, what they spend together and what is left of the lifetime budget
(--lifetime-epsilon/--lifetime-delta, the spec's privacy.lifetime, or else
the one recorded by the latest entry). It reads no data and spends nothing.

` + ledgerHelp,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(o.format); err != nil {
				return err
			}
			var s *spec.Spec
			if o.config != "" {
				var err error
				if s, err = spec.Load(o.config); err != nil {
					return err
				}
			}
			path, life, err := g.ledger.resolve(cmd, s)
			if err != nil {
				return err
			}
			if path == "" {
				return usageErrorf("give --ledger FILE, or --config SPEC with privacy.ledger")
			}
			h, err := lifetime.Read(path)
			if err != nil {
				return err
			}
			if life == nil {
				life = h.Lifetime()
			}
			doc := budgetJSON{History: h, Spent: lifetime.Compose(h.Entries, life), Lifetime: life}
			if h.Entries == nil {
				h.Entries = []lifetime.Entry{}
			}
			if life != nil {
				r := lifetime.Remaining(h.Entries, *life)
				doc.Remaining = &r
			}
			if o.format == "json" {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(doc)
			}
			return writeBudget(g.stdout, doc)
		},
	}
	cmd.Flags().StringVar(&o.config, "config", "", "the spec file (YAML) whose privacy.ledger to read")
	cmd.Flags().StringVar(&o.format, "format", "text", "output format: text or json")
	return cmd
}

func writeBudget(w io.Writer, doc budgetJSON) error {
	fmt.Fprintf(w, "ledger: %s (%d run(s))\n", doc.Path, len(doc.Entries))
	if doc.TornBytes > 0 {
		fmt.Fprintf(w, "a torn final line of %d bytes is ignored: a run killed while appending its entry, before it read data\n", doc.TornBytes)
	}
	if len(doc.Entries) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TIME\tCOMMAND\tMECHANISM\tEPSILON\tDELTA\tRHO\tSPEC")
		for _, e := range doc.Entries {
			rho := "-"
			if e.Rho > 0 {
				rho = strconv.FormatFloat(e.Rho, 'g', 6, 64)
			}
			mech := e.Mechanism
			if e.Seeded {
				mech += " (seeded)"
			}
			digest := e.SpecDigest
			if len(digest) > len("sha256:")+12 {
				digest = digest[:len("sha256:")+12]
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%g\t%g\t%s\t%s\n", e.Time.Format(time.RFC3339), e.Command, mech, e.Epsilon, e.Delta, rho, digest)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "spent: (ε = %.6g, δ = %.3g) by %s\n", doc.Spent.Epsilon, doc.Spent.Delta, doc.Spent.Rule)
	if doc.Lifetime == nil {
		_, err := fmt.Fprintln(w, "lifetime: none set (runs are recorded, none is refused); set privacy.lifetime or --lifetime-epsilon/--lifetime-delta")
		return err
	}
	_, err := fmt.Fprintf(w, "lifetime: (ε = %g, δ = %g); left: (ε = %.6g, δ = %.3g)\n", doc.Lifetime.Epsilon, doc.Lifetime.Delta, doc.Remaining.Epsilon, doc.Remaining.Delta)
	return err
}

// isLedgerRefusal reports whether err is a refusal of the lifetime budget
// ledger: past the lifetime, a raised lifetime, a missing ledger file.
func isLedgerRefusal(err error) bool {
	return errors.Is(err, lifetime.ErrExceeded) || errors.Is(err, lifetime.ErrLifetimeRaised) || errors.Is(err, lifetime.ErrMissing)
}
