package relational

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/spec"
)

// loadKeyPair writes a(k, x) with the given keys and b(k) holding 20 each
// of "7", "07" and "007", and loads them. a's keys decide the engine's
// storage of a.k: BIGINT when all are canonical integers, text otherwise.
func loadKeyPair(t *testing.T, aKeys []string) (*engine.Engine, *spec.Spec) {
	t.Helper()
	dir := t.TempDir()
	var a, b strings.Builder
	a.WriteString("k,x\n")
	for _, k := range aKeys {
		fmt.Fprintf(&a, "%s,1\n", k)
	}
	b.WriteString("k\n")
	for _, k := range []string{"7", "07", "007"} {
		for range 20 {
			fmt.Fprintf(&b, "%s\n", k)
		}
	}
	y := "privacy: {epsilon: 1, delta: 1e-6}\ntables:\n" +
		"  - name: a\n    source: a.csv\n    columns:\n      k: {type: key}\n      x: {type: integer, min: 0, max: 1}\n" +
		"  - name: b\n    source: b.csv\n    columns:\n      k: {type: key}\n" +
		"join: [a.k = b.k]\nrelease:\n  columns: [x]\n"
	for name, body := range map[string]string{"a.csv": a.String(), "b.csv": b.String(), "synth.yaml": y} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := spec.Load(filepath.Join(dir, "synth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := engine.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if err := e.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	return e, s
}

// TestKeysCompareAsText: a join on keys counts the pairs whose stored keys
// have the same text, whatever the storage one tuple picks — "7" joins the
// twenty "7"s of b, not "07" or "007" — so one added tuple changes the
// count by at most the residual sensitivity the engine computes. (On the
// raw columns DuckDB cast b's text to BIGINT and joined all sixty: the
// change was 3× RS.) Ordered comparisons on keys are refused.
func TestKeysCompareAsText(t *testing.T) {
	ctx := context.Background()
	const join = "SELECT COUNT(*) FROM a, b WHERE a.k = b.k"
	for _, c := range []struct {
		name  string
		aKeys []string
		want  float64
	}{
		{"a.k stored as BIGINT", []string{"1", "7"}, 20},
		{"a.k stored as text", []string{"1", "7", "zz"}, 20},
		{"a.k = 07 as text", []string{"1", "07", "zz"}, 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, s := loadKeyPair(t, c.aKeys)
			q, err := Parse(ctx, e, s, join)
			if err != nil {
				t.Fatal(err)
			}
			in, err := newInstance(ctx, e, s, q, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer in.close()
			got, err := in.answer(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rs, _, err := in.rs(ctx, 0.1)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("join count %v, want %v (keys compared as text)", got, c.want)
			}
			// Removing a's matching tuple drops the count to 0: the change
			// must be within RS (the engine's own sensitivity bound).
			if got > rs {
				t.Errorf("one tuple changes the count by %v > RS = %v", got, rs)
			}
		})
	}
	e, s := loadKeyPair(t, []string{"10", "11"})
	for _, text := range []string{"SELECT COUNT(*) FROM a WHERE k < '5'", "SELECT COUNT(*) FROM a WHERE k BETWEEN '1' AND '5'"} {
		if _, err := Parse(ctx, e, s, text); err == nil || !strings.Contains(err.Error(), "key column") {
			t.Errorf("%s: got %v, want a refusal naming the key column", text, err)
		}
	}
	q, err := Parse(ctx, e, s, "SELECT COUNT(*) FROM a WHERE k IN ('10', '010')")
	if err != nil {
		t.Fatal(err)
	}
	in, err := newInstance(ctx, e, s, q, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.close()
	if got, err := in.answer(ctx); err != nil || got != 1 {
		t.Errorf("k IN ('10', '010') on BIGINT keys: %v, %v; want 1 (text equality)", got, err)
	}
}
