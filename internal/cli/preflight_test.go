package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tpchNoUnit writes the TPC-H example spec without its privacy unit (a
// join-as-one release of three relations) whose sources do not exist: a
// run that reads data fails with exit 1, a refusal before it exits 2.
func tpchNoUnit(t *testing.T, keepUnit bool) string {
	t.Helper()
	b, err := os.ReadFile(tpchSpec)
	if err != nil {
		t.Fatal(err)
	}
	y := strings.ReplaceAll(string(b), "../../testdata/tpch/", "missing/")
	if !keepUnit {
		y = strings.Replace(y, ", unit: customer}", "}", 1)
	}
	p := filepath.Join(t.TempDir(), "tpch.yaml")
	if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Budgets whose noise the samplers cannot draw, and releases too large to
// write, exit 2 before any data is read (the data files do not exist).
func TestPreflightRefusesBeforeReading(t *testing.T) {
	twoTables, _ := writeTiny(t, tinyOptions{bSource: "missing.csv", noB: true})
	joinAsOne, unit := tpchNoUnit(t, false), tpchNoUnit(t, true)
	out := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"two tables ε = 1e-12", []string{"release", "--config", twoTables, "--out", out, "--epsilon", "1e-12"}, ExitUsage, "noisy join size"},
		{"three relations ε = 1e-9", []string{"release", "--config", joinAsOne, "--out", out, "--epsilon", "1e-9"}, ExitUsage, "search over k too large"},
		{"privacy unit ε = 1e-9", []string{"release", "--config", unit, "--out", out, "--epsilon", "1e-9"}, ExitUsage, "discrete laplace scale"},
		// In user terms first (issue 36: only the sampler's range was given).
		{"privacy unit ε = 1e-9 explained", []string{"release", "--config", unit, "--out", out, "--epsilon", "1e-9"}, ExitUsage, "the privacy budget ε is too small for this release: the noise it needs on a single count is about ±"},
		{"three relations ε = 1e-3 reads", []string{"release", "--config", joinAsOne, "--out", out, "--epsilon", "1e-3"}, ExitRuntime, "missing"},
		{"rows 1e12", []string{"release", "--config", twoTables, "--out", out, "--rows", "1000000000000"}, ExitUsage, "would write about 14.6 TiB"},
		{"rows 1e12 with a raised cap reads", []string{"release", "--config", twoTables, "--out", out, "--rows", "1000000000000", "--max-output-gib", "100000"}, ExitRuntime, "missing.csv"},
		{"rows 1e9 within the default cap reads", []string{"release", "--config", twoTables, "--out", out, "--rows", "1000000000"}, ExitRuntime, "missing.csv"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, want %d and %q\n%s", r.code, tc.code, tc.want, r.stderr)
			}
			if tc.code == ExitUsage && strings.Contains(r.stderr, "loading table") {
				t.Fatalf("refused after loading data:\n%s", r.stderr)
			}
		})
	}
}
