package release

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/joinasone"
)

// TestReleaseFoldsPublicLookups: nation and region (public, joined on
// their keys) are folded into customer, so the release runs Alg. 3 on a
// three-relation path and reads the released region name from the folded
// relation; with customer public too, the join folds to two relations and
// Alg. 1 runs. The report names the original and the folded relations.
func TestReleaseFoldsPublicLookups(t *testing.T) {
	for _, tc := range []struct {
		name        string
		customerPub bool
		wantFolded  []string
		wantAlg     joinasone.Algorithm
	}{
		{"nation and region public", false, []string{"customer+nation+region", "orders", "lineitem"}, joinasone.General},
		{"customer public too", true, []string{"orders+customer+nation+region", "lineitem"}, joinasone.TwoTable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join("..", "examples", "tpch", "nation.yaml")
			if tc.customerPub {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				y := strings.Replace(string(b), "  - name: customer\n", "  - name: customer\n    public: true\n", 1)
				y = strings.Replace(y, ", unit: customer", "", 1) // a public table is no unit
				y = strings.ReplaceAll(y, "../../testdata/", filepath.Join(mustAbs(t, "../testdata"))+"/")
				path = filepath.Join(t.TempDir(), "synth.yaml")
				if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s := releasetest.LoadSpec(t, path)
			s.Privacy.Unit = "" // the folding under test is join-as-one's
			sum := release(t, s, t.TempDir(), 3)
			if strings.TrimSuffix(sum.Privacy.Mechanism, " on a factored model") != string(tc.wantAlg) {
				t.Errorf("mechanism %q, want %q", sum.Privacy.Mechanism, tc.wantAlg)
			}
			got, _ := sum.Privacy.Parameters["folded_relations"].([]string)
			if !slices.Equal(got, tc.wantFolded) {
				t.Errorf("folded relations %v, want %v", sum.Privacy.Parameters["folded_relations"], tc.wantFolded)
			}
			if sum.Rows == 0 {
				t.Error("no rows released")
			}
		})
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
