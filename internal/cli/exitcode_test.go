package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/joinasone"
	"github.com/synth-dp/synth/privacyunit"
	"github.com/synth-dp/synth/relational"
	"github.com/synth-dp/synth/release"
	"github.com/synth-dp/synth/residual"
	"github.com/synth-dp/synth/spec"
	"github.com/synth-dp/synth/workload"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, ExitOK},
		{"usage", usageErrorf("--k 1: want 2..4096"), ExitUsage},
		{"wrapped usage", fmt.Errorf("outer: %w", &UsageError{Err: errors.New("x")}), ExitUsage},
		{"spec", &spec.Error{File: "s.yaml", Err: errors.New("bad")}, ExitUsage},
		{"wrapped spec", fmt.Errorf("load: %w", spec.ErrInvalid), ExitUsage},
		{"unsupported", fmt.Errorf("%w: uniformized", release.ErrUnsupported), ExitUsage},
		{"unsupported workload query", fmt.Errorf("%w: sum of t.c, which is not released", workload.ErrUnsupported), ExitUsage},
		{"no private relation", fmt.Errorf("release: %w", joinasone.ErrNoPrivateRelation), ExitUsage},
		{"no private relation (residual)", fmt.Errorf("sensitivity: %w", residual.ErrNoPrivate), ExitUsage},
		{"missing spec file", fmt.Errorf("x: %w", &spec.Error{File: "s.yaml", Err: fs.ErrNotExist}), ExitUsage},
		{"pure residual sensitivity", fmt.Errorf("answer: %w", relational.ErrPureRS), ExitUsage},
		{"ownership", fmt.Errorf("release: %w: table x references no unit", privacyunit.ErrOwnership), ExitUsage},
		{"unsamplable scale", fmt.Errorf("noise: %w", &dp.ScaleError{What: "b", Scale: math.Inf(1)}), ExitUsage},
		{"canceled", fmt.Errorf("interrupted: %w", context.Canceled), ExitRuntime},
		{"plain", errors.New("disk full"), ExitRuntime},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExitCode(tt.err); got != tt.want {
				t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

// TestExitCodes runs the CLI on bad input and checks the exit code, that
// stderr names the problem and that nothing is written to stdout.
func TestExitCodes(t *testing.T) {
	const hint = "Run 'synth --help' for usage."
	good, _ := writeTiny(t, tinyOptions{})
	badEps, _ := writeTiny(t, tinyOptions{epsilon: "-1"})
	deltaZero, _ := writeTiny(t, tinyOptions{delta: "0"})
	uniformized, _ := writeTiny(t, tinyOptions{method: "uniformized"})
	missing, missingDir := writeTiny(t, tinyOptions{bSource: "missing.csv", noB: true})
	badData, badDir := writeTiny(t, tinyOptions{bSource: "bad.csv", bData: "aid,size\n1,S\n2,XL\n3,M\n"})
	badDataErr := []string{filepath.Join(badDir, "bad.csv"), "row 2", "column size", `"XL"`}
	noSpec := filepath.Join(t.TempDir(), "nope.yaml")
	specDir := t.TempDir()
	tinyDelta, _ := writeTiny(t, tinyOptions{delta: "5e-324"})
	tinyEps, _ := writeTiny(t, tinyOptions{epsilon: "5e-324"})
	hugeEps, _ := writeTiny(t, tinyOptions{epsilon: "1000"})
	tauDelta, _ := writeTiny(t, tinyOptions{epsilon: "600", delta: "1e-40"})
	allPublic := writeAllPublic(t)
	out := t.TempDir()

	tests := []struct {
		name       string
		args       []string
		want       int
		wantStderr []string // substrings of stderr
	}{
		{"version", []string{"version"}, ExitOK, nil},
		{"shell completion", []string{"__complete", "insp"}, ExitOK, nil},
		{"unknown command", []string{"frob"}, ExitUsage, []string{`unknown command "frob"`, hint}},
		{"unknown command after global flag", []string{"--seed", "7", "frob"}, ExitUsage, []string{`unknown command "frob"`, hint}},
		{"unknown flag", []string{"inspect", "--bogus"}, ExitUsage, []string{"unknown flag: --bogus", hint}},
		{"unknown global flag", []string{"--bogus", "version"}, ExitUsage, []string{"unknown flag: --bogus", hint}},
		{"bad flag value", []string{"demo", "--k", "many"}, ExitUsage, []string{"--k", hint}},
		{"bad log level", []string{"--log-level", "loud", "version"}, ExitUsage, []string{`--log-level "loud"`, hint}},
		{"positional arg version", []string{"version", "extra"}, ExitUsage, []string{"takes no arguments", "extra", hint}},
		{"positional arg inspect", []string{"inspect", good}, ExitUsage, []string{"takes no arguments", hint}},
		{"positional arg release", []string{"release", "--config", good, "now"}, ExitUsage, []string{"takes no arguments", hint}},

		{"inspect missing config", []string{"inspect"}, ExitUsage, []string{"--config is required", hint}},
		{"sensitivity missing config", []string{"sensitivity"}, ExitUsage, []string{"--config is required", hint}},
		{"release missing config", []string{"release", "--out", out}, ExitUsage, []string{"--config is required", hint}},
		{"evaluate missing config", []string{"evaluate", "--synthetic", "x.parquet"}, ExitUsage, []string{"--config is required", hint}},
		{"evaluate missing synthetic", []string{"evaluate", "--config", good}, ExitUsage, []string{"--synthetic is required", hint}},

		{"inspect bad format", []string{"inspect", "--config", good, "--format", "xml"}, ExitUsage, []string{`--format "xml"`, hint}},
		{"sensitivity bad format", []string{"sensitivity", "--config", good, "--format", "yaml"}, ExitUsage, []string{`--format "yaml"`, hint}},
		{"evaluate bad format", []string{"evaluate", "--config", good, "--synthetic", "x.parquet", "--format", "JSON"}, ExitUsage, []string{`--format "JSON"`, hint}},

		{"sensitivity beta zero", []string{"sensitivity", "--config", good, "--beta", "0"}, ExitUsage, []string{"--beta 0", hint}},
		{"sensitivity beta negative", []string{"sensitivity", "--config", good, "--beta", "-1"}, ExitUsage, []string{"--beta -1", hint}},
		{"sensitivity beta NaN", []string{"sensitivity", "--config", good, "--beta", "NaN"}, ExitUsage, []string{"--beta NaN", hint}},
		{"sensitivity beta Inf", []string{"sensitivity", "--config", good, "--beta", "+Inf"}, ExitUsage, []string{"--beta +Inf", hint}},
		{"demo epsilon zero", []string{"demo", "--out", out, "--epsilon", "0"}, ExitUsage, []string{"--epsilon 0", hint}},
		{"demo epsilon negative", []string{"demo", "--out", out, "--epsilon", "-1"}, ExitUsage, []string{"--epsilon -1", hint}},
		{"demo epsilon NaN", []string{"demo", "--out", out, "--epsilon", "NaN"}, ExitUsage, []string{"--epsilon NaN", hint}},
		{"demo epsilon Inf", []string{"demo", "--out", out, "--epsilon", "Inf"}, ExitUsage, []string{"--epsilon +Inf", hint}},
		{"demo k too small", []string{"demo", "--out", out, "--k", "1"}, ExitUsage, []string{"--k 1", hint}},
		{"demo k too large", []string{"demo", "--out", out, "--k", "4097"}, ExitUsage, []string{"--k 4097", hint}},
		{"release zero memory cap", []string{"release", "--config", good, "--out", out, "--memory-cap", "0"}, ExitUsage, []string{"--memory-cap 0", hint}},
		{"release universe over the memory cap", []string{"release", "--config", "../../examples/adult/measures.yaml", "--out", out, "--memory-cap", "16"}, ExitUsage, []string{"age", "coarser"}},
		{"release memory cap below the factored model", []string{"release", "--config", good, "--out", out, "--memory-cap", "1"}, ExitUsage, []string{"--memory-cap 1", "16", hint}},
		{"release memory cap above the machine", []string{"release", "--config", good, "--out", out, "--memory-cap", "1099511627776"}, ExitUsage, []string{"--memory-cap 1099511627776", "this machine's memory", hint}},
		{"inspect memory cap below the factored model", []string{"inspect", "--config", good, "--memory-cap", "15"}, ExitUsage, []string{"--memory-cap 15", hint}},
		{"release a billion rounds", []string{"release", "--config", good, "--out", out, "--rounds", "1000000000"}, ExitUsage, []string{"--rounds 1000000000", "0 … 10000", hint}},
		{"release a billion max rounds", []string{"release", "--config", good, "--out", out, "--max-rounds", "1000000000"}, ExitUsage, []string{"--max-rounds 1000000000", hint}},
		{"release negative max rounds", []string{"release", "--config", good, "--out", out, "--max-rounds", "-1"}, ExitUsage, []string{"--max-rounds -1", hint}},
		{"sensitivity default beta with delta 0", []string{"sensitivity", "--config", deltaZero}, ExitUsage, []string{"give --beta", hint}},
		{"release negative rounds", []string{"release", "--config", good, "--out", out, "--rounds", "-1"}, ExitUsage, []string{"--rounds -1", hint}},

		{"inspect spec error", []string{"inspect", "--config", badEps}, ExitUsage, []string{badEps, "privacy.epsilon"}},
		{"release spec error", []string{"release", "--config", badEps, "--out", out}, ExitUsage, []string{badEps, "privacy.epsilon"}},
		{"sensitivity spec error", []string{"sensitivity", "--config", badEps}, ExitUsage, []string{badEps, "privacy.epsilon"}},
		{"release uniformized", []string{"release", "--config", uniformized, "--out", t.TempDir()}, ExitOK, []string{"method=uniformized"}},

		{"inspect missing spec file", []string{"inspect", "--config", noSpec}, ExitUsage, []string{noSpec, "cannot read the spec"}},
		{"release missing spec file", []string{"release", "--config", noSpec, "--out", out}, ExitUsage, []string{noSpec}},
		{"sensitivity missing spec file", []string{"sensitivity", "--config", noSpec}, ExitUsage, []string{noSpec}},
		{"inspect config is a folder", []string{"inspect", "--config", specDir}, ExitUsage, []string{specDir, "is a folder"}},
		{"release config is a folder", []string{"release", "--config", specDir, "--out", out}, ExitUsage, []string{specDir, "is a folder"}},
		{"inspect delta 5e-324", []string{"inspect", "--config", tinyDelta}, ExitUsage, []string{tinyDelta, "privacy.delta", "δ = 5e-324", "overflow"}},
		{"release delta 5e-324", []string{"release", "--config", tinyDelta, "--out", out}, ExitUsage, []string{"privacy.delta", "δ = 5e-324"}},
		{"release epsilon 5e-324", []string{"release", "--config", tinyEps, "--out", out}, ExitUsage, []string{"privacy.epsilon", "5e-324 is too small", "ε ≥ 2^-40"}},
		{"answer --epsilon 5e-324", []string{"answer", "--config", good, "--query", "SELECT COUNT(*) FROM a", "--epsilon", "5e-324"}, ExitUsage, []string{"--epsilon", "too small", hint}},
		{"release epsilon 1000", []string{"release", "--config", hugeEps, "--out", out}, ExitUsage, []string{"privacy.epsilon", "1000 is too large"}},
		{"release tau overflow", []string{"release", "--config", tauDelta, "--out", out}, ExitUsage, []string{"privacy.delta", "δ = 1e-40 with ε = 600"}},
		{"inspect every table public", []string{"inspect", "--config", allPublic}, ExitUsage, []string{allPublic, "every table is public"}},
		{"release --delta 5e-324", []string{"release", "--config", good, "--out", out, "--delta", "5e-324"}, ExitUsage, []string{"--delta", "δ = 5e-324", "overflow", hint}},
		{"release --epsilon 1000", []string{"release", "--config", good, "--out", out, "--epsilon", "1000"}, ExitUsage, []string{"--epsilon", "ε = 1000 is too large", hint}},
		{"demo --epsilon 1000", []string{"demo", "--out", out, "--epsilon", "1000"}, ExitUsage, []string{"--epsilon", "too large", hint}},
		{"release every table public", []string{"release", "--config", allPublic, "--out", out}, ExitUsage, []string{"every table is public"}},
		{"sensitivity every table public", []string{"sensitivity", "--config", allPublic}, ExitUsage, []string{"every table is public"}},
		{"inspect missing data file", []string{"inspect", "--config", missing}, ExitRuntime, []string{filepath.Join(missingDir, "missing.csv")}},
		{"release missing data file", []string{"release", "--config", missing, "--out", out}, ExitRuntime, []string{filepath.Join(missingDir, "missing.csv")}},
		{"inspect bad value", []string{"inspect", "--config", badData}, ExitRuntime, badDataErr},
		{"sensitivity bad value", []string{"sensitivity", "--config", badData}, ExitRuntime, badDataErr},
		{"release bad value", []string{"release", "--config", badData, "--out", out}, ExitRuntime, badDataErr},
		{"evaluate bad value", []string{"evaluate", "--config", badData, "--synthetic", "x.parquet"}, ExitRuntime, badDataErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.args...)
			if r.code != tt.want {
				t.Errorf("synth %s: exit %d, want %d\nstderr:\n%s", strings.Join(tt.args, " "), r.code, tt.want, r.stderr)
			}
			for _, s := range tt.wantStderr {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr does not mention %q:\n%s", s, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "delta = 0") || strings.Contains(r.stderr, "δ = 0,") {
				t.Errorf("stderr prints δ as 0:\n%s", r.stderr)
			}
			if tt.want != ExitOK && r.stdout != "" {
				t.Errorf("stdout = %q, want empty on failure", r.stdout)
			}
			if tt.want == ExitUsage && !slices.Contains(tt.wantStderr, hint) && strings.Contains(r.stderr, hint) {
				t.Errorf("stderr has the usage hint for a spec error:\n%s", r.stderr)
			}
		})
	}
}

// TestVersion checks the version line.
func TestVersion(t *testing.T) {
	r := mustRun(t, "version")
	if !strings.HasPrefix(r.stdout, "synth ") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("synth version printed %q, want one line starting with \"synth \"", r.stdout)
	}
}

// TestReleaseNoOutputOnError checks that a failed release leaves its
// output folder empty.
func TestReleaseNoOutputOnError(t *testing.T) {
	badData, _ := writeTiny(t, tinyOptions{bSource: "bad.csv", bData: "aid,size\n1,XL\n"})
	out := filepath.Join(t.TempDir(), "out")
	if r := run(t, "-q", "release", "--config", badData, "--out", out); r.code != ExitRuntime {
		t.Fatalf("exit %d, want %d\n%s", r.code, ExitRuntime, r.stderr)
	}
	entries, _ := readDirNames(out)
	if len(entries) != 0 {
		t.Errorf("failed release left %v in %s", entries, out)
	}
}

func readDirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, err
}

// writeAllPublic writes the tiny spec with both tables public.
func writeAllPublic(t *testing.T) string {
	t.Helper()
	config, _ := writeTiny(t, tinyOptions{})
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "    source: ", "    public: true\n    source: ")
	if err := os.WriteFile(config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return config
}

// TestWeakPrivacyWarning: a budget with ε > 10 or δ > 1e-3 runs, with a
// warning on stderr that --quiet silences; a strong budget gets none.
func TestWeakPrivacyWarning(t *testing.T) {
	const weak = "this setting gives weak privacy"
	for _, tc := range []struct {
		eps, delta string
		warnings   int
	}{
		{"1", "1e-6", 0},
		{"10", "1e-3", 0},
		{"20", "1e-6", 1},
		{"1", "0.01", 1},
		{"11", "0.5", 2},
	} {
		config, _ := writeTiny(t, tinyOptions{epsilon: tc.eps, delta: tc.delta})
		for _, name := range []string{"inspect", "release"} {
			cmd := func() []string {
				if name == "release" {
					return []string{"release", "--config", config, "--out", t.TempDir()}
				}
				return []string{"inspect", "--config", config}
			}
			r := mustRun(t, cmd()...)
			if got := strings.Count(r.stderr, weak); got != tc.warnings {
				t.Errorf("synth %s with ε = %s, δ = %s: %d warnings, want %d\n%s", name, tc.eps, tc.delta, got, tc.warnings, r.stderr)
			}
			q := mustRun(t, append([]string{"-q"}, cmd()...)...)
			if q.stderr != "" {
				t.Errorf("synth -q %s: stderr %q, want empty", name, q.stderr)
			}
		}
	}
	over, _ := writeTiny(t, tinyOptions{epsilon: "20"})
	if r := mustRun(t, "release", "--config", over, "--out", t.TempDir(), "--epsilon", "1"); strings.Contains(r.stderr, weak) {
		t.Errorf("release --epsilon 1 over a spec with ε = 20 warns:\n%s", r.stderr)
	}
	if r := mustRun(t, "release", "--config", good(t), "--out", t.TempDir(), "--delta", "0.01"); !strings.Contains(r.stderr, "δ = 0.01 > 0.001: "+weak) {
		t.Errorf("release --delta 0.01 does not warn:\n%s", r.stderr)
	}
	r := mustRun(t, "demo", "--out", t.TempDir(), "--epsilon", "12", "--k", "2")
	if !strings.Contains(r.stderr, "ε = 12 > 10: "+weak) {
		t.Errorf("demo --epsilon 12: stderr\n%s", r.stderr)
	}
}

func good(t *testing.T) string {
	config, _ := writeTiny(t, tinyOptions{})
	return config
}

// TestQuietErrorsOnly: --quiet leaves only errors on stderr, and the
// notice that labels sensitivity's output NON-PRIVATE.
func TestQuietErrorsOnly(t *testing.T) {
	good, _ := writeTiny(t, tinyOptions{})
	for _, args := range [][]string{
		{"-q", "inspect", "--config", good},
		{"--quiet", "release", "--config", good, "--out", t.TempDir()},
	} {
		r := mustRun(t, args...)
		if r.stderr != "" {
			t.Errorf("synth %s: stderr %q, want empty", strings.Join(args, " "), r.stderr)
		}
	}
	if r := mustRun(t, "-q", "sensitivity", "--config", good); strings.TrimSpace(r.stderr) != "synth: sensitivity prints NON-PRIVATE values computed from the data; do not publish them" {
		t.Errorf("synth -q sensitivity: stderr %q, want the NON-PRIVATE notice only", r.stderr)
	}
	bad := run(t, "-q", "inspect", "--config", filepath.Join(t.TempDir(), "nope.yaml"))
	if bad.code != ExitUsage || !strings.Contains(bad.stderr, "synth: spec:") {
		t.Errorf("-q hides errors: exit %d, stderr %q", bad.code, bad.stderr)
	}
}
