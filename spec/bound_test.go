package spec

import (
	"errors"
	"strings"
	"testing"
)

// TestParseContributionBound: release.contribution_bound takes a number
// of rows in [1, 2^20] or auto, only with privacy.unit; anything else is
// refused with the key named.
func TestParseContributionBound(t *testing.T) {
	unit := `privacy: {epsilon: 1, delta: 1e-6, unit: customer}`
	for _, tc := range []struct {
		name, privacy, bound string
		wantAuto             bool
		wantR                float64
		wantErr              string // "" for none
	}{
		{"default", unit, "", false, 1, ""},
		{"number", unit, "16", false, 16, ""},
		{"auto", unit, "auto", true, 0, ""},
		{"auto without unit", baseLines[0], "auto", false, 0, "needs privacy.unit"},
		{"number without unit", baseLines[0], "4", false, 0, "needs privacy.unit"},
		{"below one", unit, "0.5", false, 0, "between 1 and 2^20"},
		{"other word", unit, "automatic", false, 0, "release.contribution_bound"},
		{"a list", unit, "[auto]", false, 0, "release.contribution_bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel := `  columns: [c_mktsegment, o_totalprice, o_orderdate, o_shippriority, o_urgent]`
			if tc.bound != "" {
				rel += "\n  contribution_bound: " + tc.bound
			}
			s, err := Parse([]byte(withLines(map[int]string{1: tc.privacy, 19: rel})), "bound.yaml")
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one that says %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Release.ContributionBoundAuto != tc.wantAuto || (!tc.wantAuto && s.Release.Bound() != tc.wantR) {
				t.Errorf("auto %v, r %v; want %v, %v", s.Release.ContributionBoundAuto, s.Release.Bound(), tc.wantAuto, tc.wantR)
			}
		})
	}
}

// TestParseContributionNorm: release.contribution_norm takes l1 or l2,
// only with privacy.unit; the default is DefaultContributionNorm; anything
// else is refused with the key named.
func TestParseContributionNorm(t *testing.T) {
	unit := `privacy: {epsilon: 1, delta: 1e-6, unit: customer}`
	for _, tc := range []struct {
		name, privacy, norm string
		want                Norm
		wantErr             string // "" for none
	}{
		{"default", unit, "", DefaultContributionNorm, ""},
		{"l1", unit, "l1", NormL1, ""},
		{"l2", unit, "l2", NormL2, ""},
		{"without unit", baseLines[0], "l2", "", "needs privacy.unit"},
		{"other norm", unit, "linf", "", "release.contribution_norm"},
		{"upper case", unit, "L2", "", "release.contribution_norm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel := `  columns: [c_mktsegment, o_totalprice, o_orderdate, o_shippriority, o_urgent]`
			if tc.norm != "" {
				rel += "\n  contribution_norm: " + tc.norm
			}
			s, err := Parse([]byte(withLines(map[int]string{1: tc.privacy, 19: rel})), "norm.yaml")
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one that says %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Release.Norm(); got != tc.want {
				t.Errorf("norm %q, want %q", got, tc.want)
			}
		})
	}
}
