package spec

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// budgetSpec is a valid two-table spec with the given privacy line.
func budgetSpec(privacy string) string {
	return privacy + `
tables:
  - {name: a, source: a.csv, columns: {k: {type: key}, v: {type: boolean}}}
  - {name: b, source: b.csv, columns: {k: {type: key}, w: {type: categorical, values: [x, y]}}}
join: ["a.k = b.k"]
release: {columns: [v, w]}
`
}

// TestPrivacyTauOverflow: budgets whose τ overflows float64 at the shares
// a release spends are spec errors naming the value exactly; δ = 5e-324
// is never printed or treated as 0.
func TestPrivacyTauOverflow(t *testing.T) {
	for _, tc := range []struct {
		privacy string
		key     string
		msg     string // "" = accepted
	}{
		{"privacy: {epsilon: 1, delta: 5e-324}", "privacy.delta", "δ = 5e-324 with ε = 1"},
		{"privacy: {epsilon: 1, delta: 1e-320}", "privacy.delta", "δ = 1e-320 with ε = 1"},
		{"privacy: {epsilon: 1000, delta: 1e-6}", "privacy.epsilon", "1000 is too large"},
		{"privacy: {epsilon: 800, delta: 0}", "privacy.epsilon", "800 is too large"},
		{"privacy: {epsilon: 600, delta: 1e-40}", "privacy.delta", "δ = 1e-40 with ε = 600"},
		{"privacy: {epsilon: 1, delta: 1e-280}", "", ""},
		{"privacy: {epsilon: 640, delta: 1e-3}", "", ""},
		{"privacy: {epsilon: 1e-9, delta: 1e-9}", "", ""},
		// ε below 2^-40: no sampler draws a scale of 1/ε (issue 36: 5e-324
		// exited 1 at run time with a sampler's range).
		{"privacy: {epsilon: 5e-324, delta: 1e-6}", "privacy.epsilon", "5e-324 is too small"},
		{"privacy: {epsilon: 1e-13, delta: 0}", "privacy.epsilon", "use ε ≥ 2^-40"},
		{"privacy: {epsilon: 9.094947017729282e-13, delta: 1e-6}", "", ""},
		{"privacy: {epsilon: 1, delta: 0}", "", ""},
	} {
		_, err := Parse([]byte(budgetSpec(tc.privacy)), "b.yaml")
		if tc.msg == "" {
			if err != nil {
				t.Errorf("%s: refused: %v", tc.privacy, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Key != tc.key || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: got %v, want a spec error at %s mentioning %q", tc.privacy, err, tc.key, tc.msg)
		}
		if strings.Contains(err.Error(), "δ = 0") || strings.Contains(err.Error(), "delta = 0") {
			t.Errorf("%s: message treats δ as 0: %v", tc.privacy, err)
		}
	}
}

func TestPrivacyWarnings(t *testing.T) {
	for _, tc := range []struct {
		p    Privacy
		want []string
	}{
		{Privacy{Epsilon: 1, Delta: 1e-6}, nil},
		{Privacy{Epsilon: 10, Delta: 1e-3}, nil},
		{Privacy{Epsilon: 10.5, Delta: 1e-6}, []string{"ε = 10.5 > 10: this setting gives weak privacy"}},
		{Privacy{Epsilon: 1, Delta: 0.01}, []string{"δ = 0.01 > 0.001: this setting gives weak privacy"}},
		{Privacy{Epsilon: 20, Delta: 0.5}, []string{"ε = 20", "δ = 0.5"}},
	} {
		got := tc.p.Warnings()
		if len(got) != len(tc.want) {
			t.Errorf("%+v: warnings %q, want %d", tc.p, got, len(tc.want))
			continue
		}
		for i := range got {
			if !strings.Contains(got[i], tc.want[i]) {
				t.Errorf("%+v: warning %q, want %q", tc.p, got[i], tc.want[i])
			}
		}
	}
}

// TestAllPublicRefused: a spec whose every table is public is a spec error.
func TestAllPublicRefused(t *testing.T) {
	src := strings.ReplaceAll(budgetSpec("privacy: {epsilon: 1, delta: 1e-6}"), "columns: {k:", "public: true, columns: {k:")
	_, err := Parse([]byte(src), "pub.yaml")
	var e *Error
	if !errors.As(err, &e) || e.Key != "tables" || !strings.Contains(err.Error(), "every table is public") {
		t.Fatalf("got %v, want a spec error at tables", err)
	}
	one := strings.Replace(budgetSpec("privacy: {epsilon: 1, delta: 1e-6}"), "columns: {k:", "public: true, columns: {k:", 1)
	if _, err := Parse([]byte(one), "one.yaml"); err != nil {
		t.Errorf("one public table refused: %v", err)
	}
}

// TestLoadUnreadable: a missing spec file and a folder are spec errors.
func TestLoadUnreadable(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(dir)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "is a folder") || !strings.Contains(err.Error(), dir) {
		t.Errorf("Load(folder): %v", err)
	}
	missing := filepath.Join(dir, "nope.yaml")
	_, err = Load(missing)
	if !errors.Is(err, ErrInvalid) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("Load(missing): %v", err)
	}
	if strings.Count(err.Error(), missing) != 1 {
		t.Errorf("Load(missing) repeats the path: %v", err)
	}
}

func TestWorkloadOneWay(t *testing.T) {
	base := budgetSpec("privacy: {epsilon: 1, delta: 1e-6}")
	s, err := Parse([]byte(base+"workload: {marginals: [[v]]}\n"), "w.yaml")
	if err != nil || s.Workload.NoOneWay {
		t.Fatalf("default: %v, NoOneWay %v", err, s != nil && s.Workload.NoOneWay)
	}
	s, err = Parse([]byte(base+"workload: {marginals: [[v]], one_way: false}\n"), "w.yaml")
	if err != nil || !s.Workload.NoOneWay {
		t.Fatalf("one_way false: %v", err)
	}
	s, err = Parse([]byte(base+"workload: {marginals: [[v]], one_way: true}\n"), "w.yaml")
	if err != nil || s.Workload.NoOneWay {
		t.Fatalf("one_way true: %v", err)
	}
	for _, bad := range []string{"workload: {one_way: false}\n", "workload: {marginals: [[v]], one_way: no}\n"} {
		var e *Error
		if _, err := Parse([]byte(base+bad), "w.yaml"); !errors.As(err, &e) || e.Key != "workload.one_way" {
			t.Errorf("%q: got %v, want an error at workload.one_way", bad, err)
		}
	}
	if !(Workload{}).Empty() || (Workload{Marginals: [][]ColumnRef{{}}}).Empty() {
		t.Error("Empty")
	}
}

func TestCheckOverflow(t *testing.T) {
	for _, tc := range []struct {
		eps, delta float64
		msg        string
	}{
		{1, 1e-6, ""},
		{1, 0, ""},
		{650, 0, ""},
		{1, 5e-324, "δ = 5e-324 with ε = 1"},
		{700, 0, "ε = 700 is too large"},
		{5e-324, 1e-6, "ε = 5e-324 is too small"},
		{600, 1e-40, "δ = 1e-40 with ε = 600"},
	} {
		err := CheckOverflow(tc.eps, tc.delta)
		if (err == nil) != (tc.msg == "") || err != nil && !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("CheckOverflow(%v, %v) = %v, want %q", tc.eps, tc.delta, err, tc.msg)
		}
	}
}
