package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvaluateReport releases the tiny instance and writes its report:
// stdout names index.html, summary.json carries the release's privacy
// parameters and a headline, the figures exist; with --format json stdout
// stays one JSON document; the report replaces an earlier one.
func TestEvaluateReport(t *testing.T) {
	config, _ := writeTiny(t, tinyOptions{})
	out := t.TempDir()
	releaseOnce(t, config, out, "--seed", "7")
	synthetic := filepath.Join(out, "synthetic.parquet")
	dir := filepath.Join(t.TempDir(), "report")

	r := mustRun(t, "-q", "evaluate", "--config", config, "--synthetic", synthetic, "--report", dir)
	index := filepath.Join(dir, "index.html")
	if !strings.Contains(r.stdout, "report (INTERNAL, do not publish): "+index+"\n") {
		t.Errorf("stdout does not name %s:\n%s", index, r.stdout)
	}
	if r.stderr != "synth: evaluate reads the private data; its output is INTERNAL and not differentially private\n" {
		t.Errorf("stderr under -q (no progress bars off a terminal):\n%s", r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Label   string `json:"label"`
		Privacy *struct {
			Epsilon   float64 `json:"epsilon"`
			Mechanism string  `json:"mechanism"`
			Privacy   string  `json:"privacy"`
		} `json:"privacy"`
		Headline []struct {
			Kind               string
			Synthetic, Uniform float64
		} `json:"headline"`
		Families []struct{ Figure string } `json:"families"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatalf("summary.json: %v\n%s", err, b)
	}
	if !strings.HasPrefix(sum.Label, "INTERNAL") {
		t.Errorf("label %q", sum.Label)
	}
	if p := sum.Privacy; p == nil || p.Epsilon != 1 || p.Mechanism == "" || p.Privacy != "not private (seeded)" {
		t.Errorf("privacy %+v, want ε = 1, a mechanism, seeded", p)
	}
	if len(sum.Headline) == 0 || sum.Headline[0].Kind != "marginal" {
		t.Errorf("headline %+v", sum.Headline)
	}
	for _, f := range sum.Families {
		if f.Figure == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f.Figure))); err != nil {
			t.Error(err)
		}
	}

	j := mustRun(t, "-q", "evaluate", "--config", config, "--synthetic", synthetic, "--report", dir, "--format", "json")
	var ev map[string]any
	if err := json.Unmarshal([]byte(j.stdout), &ev); err != nil {
		t.Errorf("--format json with --report: stdout is not one JSON document: %v\n%s", err, j.stdout)
	}
}

// TestEvaluateReportRefused: a --report folder holding other files is a
// usage error (exit 2) naming it, raised before any data is read (the
// synthetic file does not even exist), and the folder is untouched.
func TestEvaluateReportRefused(t *testing.T) {
	config, _ := writeTiny(t, tinyOptions{})
	dir := t.TempDir()
	mine := filepath.Join(dir, "thesis.tex")
	if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, "-q", "evaluate", "--config", config, "--synthetic", filepath.Join(dir, "none.parquet"), "--report", dir)
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--report "+dir) || !strings.Contains(r.stderr, "not a synth report") {
		t.Errorf("exit %d, stderr %q; want %d naming --report %s", r.code, r.stderr, ExitUsage, dir)
	}
	if strings.Contains(r.stderr, "none.parquet") {
		t.Errorf("the synthetic file was read before the folder was checked:\n%s", r.stderr)
	}
	if b, err := os.ReadFile(mine); err != nil || string(b) != "mine" {
		t.Errorf("the refused folder changed: %q %v", b, err)
	}
}
