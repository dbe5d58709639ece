package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInspectRefusesLikeRelease (issue 28, item 3): a spec a release
// refuses before reading data, inspect refuses too — same exit code, the
// release's reason (naming release.measures) — and before reading data.
// Before, inspect printed such a spec as fine and exited 0.
func TestInspectRefusesLikeRelease(t *testing.T) {
	// A measure with the tables output (privacy unit): refused by the
	// method's check.
	unitMeasure := tpchVariant(t, tpchSpec, func(s string) string {
		s = strings.Replace(s, "      o_orderdate: {type: date", "      o_totalprice: {type: numeric, min: 0, max: 600000, bins: 10}\n      o_orderdate: {type: date", 1)
		return strings.Replace(s, "  columns: [c_mktsegment, o_orderpriority, l_returnflag, l_quantity, o_orderdate]\n",
			"  columns: [c_mktsegment, o_orderpriority, l_returnflag, l_quantity, o_orderdate]\n  measures: [o_totalprice]\n  output: tables\n", 1)
	}, nil)
	// A measure whose grid (the columns its sums condition on: 300 × 300
	// cells) exceeds release.MaxMeasureCells: refused by the measures'
	// plan, which only the charge stage runs.
	dir := t.TempDir()
	var data strings.Builder
	data.WriteString("a,b,spend\n")
	for i := range 50 {
		fmt.Fprintf(&data, "%d,%d,%d\n", i*7%300, i*11%300, i)
	}
	grid := filepath.Join(dir, "synth.yaml")
	for name, text := range map[string]string{"t.csv": data.String(), "synth.yaml": `privacy: {epsilon: 1, delta: 1e-6}
tables:
  - name: t
    source: t.csv
    columns:
      a: {type: integer, min: 0, max: 299, bins: 300}
      b: {type: integer, min: 0, max: 299, bins: 300}
      spend: {type: integer, min: 0, max: 100, bins: 4}
release:
  columns: [a, b]
  measures: [spend]
workload:
  marginals: [[a], [b]]
  numeric: [{sum: spend, where: {a: [0, 10], b: [0, 10]}}]
`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ name, config, want string }{
		{"measure with the tables output", unitMeasure, "release.measures with release.output tables"},
		{"measure grid too large", grid, "release.measures: t.spend: its grid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel := run(t, "release", "--config", tc.config, "--out", filepath.Join(t.TempDir(), "out"))
			if rel.code != ExitUsage || !strings.Contains(rel.stderr, tc.want) {
				t.Fatalf("release: exit %d, want %d with %q:\n%s", rel.code, ExitUsage, tc.want, rel.stderr)
			}
			ins := run(t, "inspect", "--config", tc.config)
			if ins.code != rel.code {
				t.Errorf("inspect exit %d, release exit %d\nstdout:\n%s", ins.code, rel.code, ins.stdout)
			}
			if !strings.Contains(ins.stderr, tc.want) || !strings.Contains(ins.stderr, "would be refused") {
				t.Errorf("inspect does not give the release's reason %q:\n%s", tc.want, ins.stderr)
			}
			if strings.Contains(ins.stderr, "loading table") {
				t.Errorf("inspect read the data before refusing:\n%s", ins.stderr)
			}
		})
	}
}
