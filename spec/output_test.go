package spec

import (
	"strings"
	"testing"
)

// TestParseOutput: release.output takes tables or join, tables only with a
// privacy unit, and the default is join.
func TestParseOutput(t *testing.T) {
	unit := `privacy: {epsilon: 1.0, delta: 1e-6, unit: customer}`
	for _, tc := range []struct {
		name, privacy, output string
		want                  OutputKind
		err                   string
	}{
		{"default", unit, "", OutputJoin, ""},
		{"tables", unit, "  output: tables", OutputTables, ""},
		{"join", unit, "  output: join", OutputJoin, ""},
		{"tables without a unit", baseLines[0], "  output: tables", "", "tables needs privacy.unit"},
		{"unknown", unit, "  output: database", "", "release.output"},
		{"sibling classes", unit, "  output: tables\n  sibling_classes: true", OutputTables, ""},
		{"sibling classes without tables", unit, "  sibling_classes: true", "", "release.sibling_classes: needs release.output: tables"},
		{"sibling classes not a boolean", unit, "  output: tables\n  sibling_classes: often", "", "release.sibling_classes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := withLines(map[int]string{1: tc.privacy, 18: "release:\n" + tc.output})
			s, err := Parse([]byte(src), "output.yaml")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Release.OutputKind(); got != tc.want {
				t.Fatalf("output %q, want %q", got, tc.want)
			}
		})
	}
}
