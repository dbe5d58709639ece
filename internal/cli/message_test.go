package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const usageHint = "Run 'synth --help' for usage."

// The usage hint follows mistakes in the command line only, not inputs
// the command refuses (an output folder holding a release, a query
// outside the supported class).
func TestUsageHintOnlyAfterUsageErrors(t *testing.T) {
	specPath, _ := writeTiny(t, tinyOptions{})
	out := filepath.Join(t.TempDir(), "out")
	mustRun(t, "release", "--config", specPath, "--out", out, "--seed", "1")
	for _, tc := range []struct {
		name string
		args []string
		hint bool
	}{
		{"release over a release", []string{"release", "--config", specPath, "--out", out}, false},
		{"unsupported query", []string{"answer", "--config", specPath, "--query", "SELECT AVG(size) FROM b"}, false},
		{"unknown flag", []string{"release", "--config", specPath, "--bogus"}, true},
		{"bad flag combination", []string{"answer", "--config", specPath, "--query", "SELECT COUNT(*) FROM a", "--multi", "--ranges"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.args...)
			if r.code != ExitUsage {
				t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
			}
			if got := strings.Contains(r.stderr, usageHint); got != tc.hint {
				t.Fatalf("usage hint printed: %v, want %v\n%s", got, tc.hint, r.stderr)
			}
		})
	}
}

// DuckDB's statement with its caret, its advice on its own settings and
// its CSV option dump are not for synth's users.
func TestUserMessage(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"engine: table customer: Out of Memory Error: could not allocate block of size 32.0 MiB (4.0 KiB/19.0 MiB used)\n\nPossible solutions:\n* Reducing the number of threads (SET threads=X)\n* Disabling insertion-order preservation (SET preserve_insertion_order=false)\n* Increasing the memory limit (SET memory_limit='...GB')\n\nSee also https://duckdb.org/docs/stable/guides/performance/how_to_tune_workloads\n\nLINE 1: SELECT count(*) FROM (SELECT l_orderkey FROM read_csv('/x/lineitem.csv', header...\n                                                     ^",
			"engine: table customer: Out of Memory Error: could not allocate block of size 32.0 MiB (4.0 KiB/19.0 MiB used)"},
		{"query: Binder Error: Referenced column \"x\" not found in FROM clause!\nCandidate bindings: \"a\"\n\nLINE 1: SELECT x FROM synthetic\n               ^",
			"query: Binder Error: Referenced column \"x\" not found in FROM clause!\nCandidate bindings: \"a\""},
		{"cannot read the file: CSV Error on Line: 3\nOriginal Line: 1,short,red\nValue with unterminated quote found.\n\nPossible fixes:\n* Disable the parser's strict mode (strict_mode=false) to allow reading rows\n\n  file = /tmp/l.csv\n  delimiter = , (Set By User)\n  sample_size = 20480",
			"cannot read the file: CSV Error on Line: 3\nOriginal Line: 1,short,red\nValue with unterminated quote found."},
		{"spec: s.yaml:3: privacy.epsilon: must be > 0, got -1", "spec: s.yaml:3: privacy.epsilon: must be > 0, got -1"},
	} {
		if got := userMessage(tc.in); got != tc.want {
			t.Errorf("userMessage(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// The demo's spec is built in memory: its report has no spec digest rather
// than the SHA-256 of empty input.
func TestDemoReportNoEmptyDigest(t *testing.T) {
	out := filepath.Join(t.TempDir(), "demo")
	mustRun(t, "demo", "--out", out, "--k", "3", "--seed", "1")
	b, err := os.ReadFile(filepath.Join(out, "privacy-report.json"))
	if err != nil {
		t.Fatal(err)
	}
	const emptySHA = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if strings.Contains(string(b), emptySHA) || !strings.Contains(string(b), `"spec_digest": ""`) {
		t.Fatalf("demo report digest:\n%s", b)
	}
}
