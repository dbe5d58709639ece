package lifetime

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
)

// newLedger creates an empty ledger file (a missing one is refused).
func newLedger(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// threeRuns charges three runs into a fresh ledger and returns its path
// and its lines.
func threeRuns(t *testing.T) (string, []string) {
	t.Helper()
	path := newLedger(t)
	for i := range 3 {
		if _, err := Charge(path, NewEntry("answer", "m", "sha256:x", budget(0.1*float64(i+1), 0), false), nil); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
}

// fieldOf returns a string field of a ledger line.
func fieldOf(t *testing.T, text, name string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatal(err)
	}
	v, ok := m[name].(string)
	if !ok || v == "" {
		t.Fatalf("line %q has no %s", text, name)
	}
	return v
}

// TestChainDetectsDeletedOrReorderedLines: each line's checksum covers the
// previous line's, so deleting a whole line (each keeps a valid checksum
// of its own) or reordering lines is corruption, not a smaller spend.
func TestChainDetectsDeletedOrReorderedLines(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func([]string) []string
		wantN string
	}{
		{"first line deleted", func(l []string) []string { return l[1:] }, "line 1"},
		{"middle line deleted", func(l []string) []string { return []string{l[0], l[2]} }, "line 2"},
		{"lines 1 and 2 swapped", func(l []string) []string { return []string{l[1], l[0], l[2]} }, "line 1"},
		{"lines 2 and 3 swapped", func(l []string) []string { return []string{l[0], l[2] + "\n", strings.TrimSuffix(l[1], "\n")} }, "line 2"},
		// The checksum covers prev: relinking the chain by hand breaks it.
		{"middle line deleted, the next relinked", func(l []string) []string {
			return []string{l[0], strings.Replace(l[2], fieldOf(t, l[2], "prev"), fieldOf(t, l[0], "sha256"), 1)}
		}, "line 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, lines := threeRuns(t)
			if err := os.WriteFile(path, []byte(strings.Join(tc.edit(lines), "")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Read(path)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.wantN) {
				t.Fatalf("got %v, want ErrCorrupt naming %s", err, tc.wantN)
			}
			if _, err := Charge(path, NewEntry("answer", "m", "sha256:x", budget(0.1, 0), false), nil); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("charge: got %v, want ErrCorrupt", err)
			}
		})
	}
	// The untouched ledger reads back whole.
	path, _ := threeRuns(t)
	if h, err := Read(path); err != nil || len(h.Entries) != 3 {
		t.Fatalf("intact ledger: %v entries, err %v", h, err)
	}
}

// TestLifetimeRaiseRefused: a run that passes a lifetime above the one the
// ledger records is refused (nothing written) unless it asks to raise it,
// and the raise is recorded in its entry.
func TestLifetimeRaiseRefused(t *testing.T) {
	path := newLedger(t)
	low, high := budget(1, 1e-6), budget(2, 1e-6)
	if _, err := Charge(path, NewEntry("release", "m", "sha256:x", budget(0.5, 0), false), &low); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	if _, err := Charge(path, NewEntry("release", "m", "sha256:x", budget(0.5, 0), false), &high); !errors.Is(err, ErrLifetimeRaised) {
		t.Fatalf("raised lifetime: got %v, want ErrLifetimeRaised", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("a refused raise wrote to the ledger")
	}
	for _, lt := range []dp.Budget{budget(1, 1e-5), budget(1.0000001, 1e-6)} {
		if _, err := Charge(path, NewEntry("release", "m", "sha256:x", budget(0.1, 0), false), &lt); !errors.Is(err, ErrLifetimeRaised) {
			t.Fatalf("lifetime %v: got %v, want ErrLifetimeRaised", lt, err)
		}
	}
	// A lower lifetime is always allowed (it only tightens).
	lower := budget(0.9, 1e-6)
	if _, err := Charge(path, NewEntry("release", "m", "sha256:x", budget(0.1, 0), false), &lower); err != nil {
		t.Fatal(err)
	}
	h, err := ChargeWith(path, NewEntry("release", "m", "sha256:x", budget(0.5, 0), false), Options{Lifetime: &high, RaiseLifetime: true})
	if err != nil {
		t.Fatal(err)
	}
	last := h.Entries[len(h.Entries)-1]
	if last.RaisedFrom == nil || *last.RaisedFrom != lower || last.Lifetime == nil || *last.Lifetime != high {
		t.Fatalf("the raise is not recorded: raised_from %v, lifetime %v", last.RaisedFrom, last.Lifetime)
	}
	if h2, err := Read(path); err != nil || h2.Entries[len(h2.Entries)-1].RaisedFrom == nil {
		t.Fatalf("read back: %v", err)
	}
}

// TestMissingLedgerRefused: a ledger path that names no file (a typo, or
// a file moved away) is refused and nothing is created, unless the run
// asks to create it.
func TestMissingLedgerRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledgr.jsonl")
	if _, err := Charge(path, NewEntry("release", "m", "sha256:x", budget(0.5, 0), false), nil); !errors.Is(err, ErrMissing) {
		t.Fatalf("missing ledger: got %v, want ErrMissing", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused run created the ledger: %v", err)
	}
	if _, err := ChargeWith(path, NewEntry("release", "m", "sha256:x", budget(0.5, 0), false), Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	if h, err := Read(path); err != nil || len(h.Entries) != 1 {
		t.Fatalf("created ledger: %v, %v", h, err)
	}
}

// TestDryRun: a dry run makes the checks of a charge and writes nothing.
func TestDryRun(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "new.jsonl")
	e := NewEntry("release", "m", "sha256:x", budget(0.6, 0), false)
	if _, err := ChargeWith(missing, e, Options{DryRun: true}); !errors.Is(err, ErrMissing) {
		t.Fatalf("dry run on a missing ledger: %v", err)
	}
	if _, err := ChargeWith(missing, e, Options{DryRun: true, Create: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a dry run created the ledger")
	}
	path := newLedger(t)
	l := budget(1, 0)
	if _, err := Charge(path, e, &l); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	if _, err := ChargeWith(path, e, Options{DryRun: true}); !errors.Is(err, ErrExceeded) {
		t.Fatalf("dry run past the lifetime: %v", err)
	}
	small := NewEntry("release", "m", "sha256:x", budget(0.1, 0), false)
	if h, err := ChargeWith(path, small, Options{DryRun: true}); err != nil || len(h.Entries) != 2 {
		t.Fatalf("dry run that fits: %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("a dry run wrote to the ledger")
	}
}
