package spec

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// privacy.ledger resolves against the spec's folder; privacy.lifetime is
// a checked (ε, δ).
func TestPrivacyLedgerAndLifetime(t *testing.T) {
	dir := t.TempDir()
	s, err := Parse([]byte(budgetSpec("privacy: {epsilon: 1, delta: 1e-6, ledger: budget/ledger.jsonl, lifetime: {epsilon: 5, delta: 1e-5}}")), filepath.Join(dir, "s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "budget", "ledger.jsonl"); s.Privacy.Ledger != want {
		t.Fatalf("ledger = %q, want %q", s.Privacy.Ledger, want)
	}
	if l := s.Privacy.Lifetime; l == nil || l.Epsilon != 5 || l.Delta != 1e-5 {
		t.Fatalf("lifetime = %+v", l)
	}
	for _, tc := range []struct{ privacy, msg string }{
		{"privacy: {epsilon: 1, delta: 0, lifetime: {epsilon: 0, delta: 0}}", "privacy.lifetime.epsilon"},
		{"privacy: {epsilon: 1, delta: 0, lifetime: {epsilon: 1, delta: 1}}", "privacy.lifetime.delta"},
		{"privacy: {epsilon: 1, delta: 0, lifetime: {epsilon: 1}}", "privacy.lifetime.delta"},
		{"privacy: {epsilon: 1, delta: 0, lifetime: {epsilon: 1, delta: 0, rho: 1}}", "rho"},
		{"privacy: {epsilon: 1, delta: 0, ledger: ''}", "privacy.ledger"},
		{"privacy: {epsilon: 1, delta: 0, ledger: 's3://b/l.jsonl'}", "privacy.ledger"},
	} {
		_, err := Parse([]byte(budgetSpec(tc.privacy)), filepath.Join(dir, "s.yaml"))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: got %v, want an error naming %s", tc.privacy, err, tc.msg)
		}
	}
}

// privacy.max_unit_rows is a whole number of rows from 1 to 2^30.
func TestPrivacyMaxUnitRows(t *testing.T) {
	dir := t.TempDir()
	s, err := Parse([]byte(budgetSpec("privacy: {epsilon: 1, delta: 0, max_unit_rows: 139}")), filepath.Join(dir, "s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Privacy.MaxUnitRows != 139 {
		t.Fatalf("max_unit_rows = %d, want 139", s.Privacy.MaxUnitRows)
	}
	for _, v := range []string{"0", "2.5", "-3", "2000000000", "lots"} {
		_, err := Parse([]byte(budgetSpec("privacy: {epsilon: 1, delta: 0, max_unit_rows: "+v+"}")), filepath.Join(dir, "s.yaml"))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "privacy.max_unit_rows") {
			t.Errorf("max_unit_rows %s: got %v, want an error naming privacy.max_unit_rows", v, err)
		}
	}
}
