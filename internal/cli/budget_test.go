package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp/lifetime"
)

// withLedger adds privacy.ledger and privacy.lifetime to the tiny spec.
func withLedger(t *testing.T, specPath, lifetimeYAML string) {
	t.Helper()
	b, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	y := strings.Replace(string(b), "delta: 1e-6}", "delta: 1e-6, ledger: ledger.jsonl"+lifetimeYAML+"}", 1)
	if err := os.WriteFile(specPath, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readLedger(t *testing.T, path string) []lifetime.Entry {
	t.Helper()
	h, err := lifetime.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return h.Entries
}

// A release past the spec's lifetime budget exits 2 before it reads any
// data: the data is broken by then, and a run that read it would exit 1.
func TestLedgerRefusesRelease(t *testing.T) {
	specPath, dir := writeTiny(t, tinyOptions{})
	withLedger(t, specPath, ", lifetime: {epsilon: 2.5, delta: 1e-5}")
	ledger := filepath.Join(dir, "ledger.jsonl")
	out := filepath.Join(dir, "out")
	// The spec names a ledger that does not exist yet: refused (exit 2,
	// nothing created) until --create-ledger says to start it.
	if r := run(t, "release", "--config", specPath, "--out", out, "--seed", "1"); r.code != ExitUsage || !strings.Contains(r.stderr, "does not exist") {
		t.Fatalf("a missing ledger: exit %d, want 2\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(ledger); !os.IsNotExist(err) {
		t.Fatalf("a refused run created the ledger: %v", err)
	}
	mustRun(t, "release", "--config", specPath, "--out", out, "--seed", "1", "--create-ledger")
	mustRun(t, "release", "--config", specPath, "--out", out, "--overwrite", "--seed", "2")
	if es := readLedger(t, ledger); len(es) != 2 || es[0].Command != "release" || es[0].Epsilon != 1 || es[0].Delta != 1e-6 || !es[0].Seeded ||
		!strings.HasPrefix(es[0].SpecDigest, "sha256:") || es[0].Lifetime == nil || es[0].Lifetime.Epsilon != 2.5 {
		t.Fatalf("ledger entries: %+v", es)
	}
	// A lifetime above the recorded one is refused unless raised
	// explicitly (the raise is then recorded); this one is refused.
	if r := run(t, "release", "--config", specPath, "--out", out, "--overwrite", "--lifetime-epsilon", "5"); r.code != ExitUsage || !strings.Contains(r.stderr, "--raise-lifetime") {
		t.Fatalf("a raised lifetime: exit %d, want 2\n%s", r.code, r.stderr)
	}
	if es := readLedger(t, ledger); len(es) != 2 {
		t.Fatalf("a refused raise was recorded: %d entries", len(es))
	}
	// Break the data: a release that reads it fails with exit 1.
	if err := os.WriteFile(filepath.Join(dir, "b.csv"), []byte("aid,size\n1,XXL\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, "release", "--config", specPath, "--out", out, "--overwrite")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "budget exceeded") || !strings.Contains(r.stderr, "left: (ε = 0.5") {
		t.Fatalf("third release: exit %d, want 2 and the lifetime refusal\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "XXL") {
		t.Fatalf("the refused release read the data:\n%s", r.stderr)
	}
	if es := readLedger(t, ledger); len(es) != 2 {
		t.Fatalf("a refused run was recorded: %d entries", len(es))
	}
	// A smaller run fits, reads the data and is refused by its load, a
	// check on its inputs that comes before the charge (the custodian
	// alone sees the refusal): it spends nothing.
	r = run(t, "release", "--config", specPath, "--out", out, "--overwrite", "--epsilon", "0.5")
	if r.code != ExitRuntime || !strings.Contains(r.stderr, "XXL") {
		t.Fatalf("a run that fits: exit %d, want 1 from the data\n%s", r.code, r.stderr)
	}
	if es := readLedger(t, ledger); len(es) != 2 {
		t.Fatalf("a run refused by its load was charged: %+v", es)
	}
}

// TestRefusalsBeforeTheCharge: a release refused by a check on its inputs
// — a folder that holds a release (no --overwrite), a privacy unit's
// duplicated key — is refused before the lifetime ledger is charged; the
// key's error leaves the private value out, and inspect's custodian
// section shows it.
func TestRefusalsBeforeTheCharge(t *testing.T) {
	specPath, dir := writeTiny(t, tinyOptions{})
	withLedger(t, specPath, "")
	ledger := filepath.Join(dir, "ledger.jsonl")
	out := filepath.Join(dir, "out")
	mustRun(t, "release", "--config", specPath, "--out", out, "--seed", "1", "--create-ledger")
	if r := run(t, "release", "--config", specPath, "--out", out, "--seed", "2"); r.code == ExitOK || !strings.Contains(r.stderr, "overwrite") {
		t.Fatalf("a second release without --overwrite: exit %d\n%s", r.code, r.stderr)
	}
	if es := readLedger(t, ledger); len(es) != 1 {
		t.Fatalf("the refused release was charged: %d entries", len(es))
	}

	// A privacy unit whose key repeats (unit a, id 7777 twice).
	b, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	y := strings.Replace(string(b), "ledger: ledger.jsonl", "ledger: ledger.jsonl, unit: a", 1)
	y = strings.Replace(y, "method: join-as-one", "method: privacy-unit", 1)
	if err := os.WriteFile(specPath, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.csv"), []byte("id,color\n1,red\n7777,blue\n7777,red\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.csv"), []byte("aid,size\n1,S\n7777,M\n1,L\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, "release", "--config", specPath, "--out", filepath.Join(dir, "unit"), "--seed", "3")
	if r.code == ExitOK || !strings.Contains(r.stderr, "not unique") || !strings.Contains(r.stderr, "table a") {
		t.Fatalf("a duplicated unit key: exit %d, want the key refusal\n%s\n%s", r.code, r.stderr, y)
	}
	if strings.Contains(r.stderr, "7777") {
		t.Fatalf("the refusal prints the private key value:\n%s", r.stderr)
	}
	if es := readLedger(t, ledger); len(es) != 1 {
		t.Fatalf("the release refused on its key was charged: %d entries", len(es))
	}
	r = mustRun(t, "inspect", "--config", specPath)
	if !strings.Contains(r.stdout, "NON-PRIVATE unit key:") || !strings.Contains(r.stdout, `value "7777" in 2 rows`) {
		t.Fatalf("inspect does not show the duplicated unit key:\n%s", r.stdout)
	}
}

// answer records its run with --ledger and the lifetime flags, and is
// refused the same way; budget prints the history.
func TestLedgerAnswerAndBudget(t *testing.T) {
	specPath, dir := writeTiny(t, tinyOptions{delta: "0"})
	ledger := filepath.Join(dir, "answers.jsonl")
	q := "SELECT COUNT(*) FROM a JOIN b ON b.aid = a.id"
	args := []string{"--ledger", ledger, "--create-ledger", "--lifetime-epsilon", "1.2", "--lifetime-delta", "0", "answer", "--config", specPath, "--unit", "a", "--mechanism", "r2t", "--query", q, "--epsilon", "0.5"}
	mustRun(t, args...)
	mustRun(t, args...)
	// Broken data: the refusal must come before the data is read.
	if err := os.WriteFile(filepath.Join(dir, "b.csv"), []byte("aid,size\n1,XXL\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, args...)
	if r.code != ExitUsage || !strings.Contains(r.stderr, "budget exceeded") {
		t.Fatalf("third answer: exit %d, want 2\n%s", r.code, r.stderr)
	}
	es := readLedger(t, ledger)
	if len(es) != 2 || es[1].Command != "answer" || !strings.Contains(es[1].Mechanism, "R2T") || es[1].Rho != 0.125 {
		t.Fatalf("ledger entries: %+v", es)
	}

	r = mustRun(t, "budget", "--ledger", ledger)
	for _, want := range []string{"2 run(s)", "answer", "R2T", "0.125", "spent: (ε = 1, δ = 0) by basic composition", "lifetime: (ε = 1.2, δ = 0); left: (ε = 0.2"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("budget output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = mustRun(t, "budget", "--ledger", ledger, "--format", "json")
	var doc struct {
		Entries   []lifetime.Entry     `json:"entries"`
		Spent     lifetime.Composition `json:"spent"`
		Remaining struct{ Epsilon float64 }
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(doc.Entries) != 2 || doc.Spent.Epsilon != 1 || doc.Spent.Rho != 0.25 || doc.Remaining.Epsilon < 0.199 || doc.Remaining.Epsilon > 0.201 {
		t.Fatalf("budget json: %s", r.stdout)
	}
	// A missing ledger is an empty history; no ledger at all a usage error.
	r = mustRun(t, "budget", "--ledger", filepath.Join(dir, "none.jsonl"))
	if !strings.Contains(r.stdout, "0 run(s)") {
		t.Fatalf("empty ledger: %s", r.stdout)
	}
	if r := run(t, "budget"); r.code != ExitUsage {
		t.Fatalf("budget without a ledger: exit %d, want 2", r.code)
	}
	if r := run(t, "--lifetime-epsilon", "1", "answer", "--config", specPath, "--query", q); r.code != ExitUsage || !strings.Contains(r.stderr, "lifetime") {
		t.Fatalf("a lifetime without a ledger: exit %d\n%s", r.code, r.stderr)
	}
}
