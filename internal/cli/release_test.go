package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type reportJSON struct {
	Privacy string `json:"privacy"`
	Seeded  *bool  `json:"seeded"`
}

// releaseOnce runs release into out and returns the parsed summary line's
// row count and the bytes of both files.
func releaseOnce(t *testing.T, config, out string, flags ...string) (rows int64, parquet, report []byte) {
	t.Helper()
	args := append(append([]string{"-q", "release"}, flags...), "--config", config, "--out", out)
	r := mustRun(t, args...)
	pq := filepath.Join(out, "synthetic.parquet")
	rep := filepath.Join(out, "privacy-report.json")
	want := fmt.Sprintf("wrote %%d synthetic rows to %s\n", pq)
	if _, err := fmt.Sscanf(r.stdout, want, &rows); err != nil {
		t.Fatalf("stdout %q does not match %q: %v", r.stdout, want, err)
	}
	if !strings.Contains(r.stdout, rep) {
		t.Errorf("stdout does not name the report %s:\n%s", rep, r.stdout)
	}
	var err error
	if parquet, err = os.ReadFile(pq); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(parquet, []byte("PAR1")) || !bytes.HasSuffix(parquet, []byte("PAR1")) {
		t.Errorf("%s is not a Parquet file", pq)
	}
	if report, err = os.ReadFile(rep); err != nil {
		t.Fatal(err)
	}
	return rows, parquet, report
}

func parseReport(t *testing.T, b []byte) reportJSON {
	t.Helper()
	var r reportJSON
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("privacy-report.json is not JSON: %v\n%s", err, b)
	}
	if r.Seeded == nil {
		t.Fatalf("privacy-report.json has no \"seeded\":\n%s", b)
	}
	return r
}

// TestReleaseEvaluate releases the tiny instance with a seed, checks that a
// seeded run is reproducible byte for byte, and evaluates the result.
func TestReleaseEvaluate(t *testing.T) {
	// The report records its creation time; two runs can straddle a
	// second, so pin it as reproducible builds do.
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	config, _ := writeTiny(t, tinyOptions{})
	out := t.TempDir()

	rows, pq1, rep1 := releaseOnce(t, config, out, "--seed", "7")
	if rep := parseReport(t, rep1); rep.Privacy != "not private (seeded)" || !*rep.Seeded {
		t.Errorf("seeded run: privacy %q, seeded %v; want \"not private (seeded)\", true", rep.Privacy, *rep.Seeded)
	}
	if rows <= 0 {
		t.Errorf("released %d rows, want > 0", rows)
	}

	t.Run("same seed is byte-identical", func(t *testing.T) {
		rows2, pq2, rep2 := releaseOnce(t, config, out, "--seed", "7", "--overwrite")
		if !bytes.Equal(rep1, rep2) {
			t.Errorf("privacy-report.json differs between two runs with --seed 7:\n%s\n---\n%s", rep1, rep2)
		}
		if !bytes.Equal(pq1, pq2) || rows2 != rows {
			t.Errorf("synthetic.parquet differs between two runs with --seed 7 (%d vs %d rows)", rows, rows2)
		}
	})
	t.Run("other seed differs", func(t *testing.T) {
		_, _, rep8 := releaseOnce(t, config, t.TempDir(), "--seed", "8")
		if bytes.Equal(rep1, rep8) {
			t.Errorf("--seed 7 and --seed 8 wrote the same report")
		}
	})
	t.Run("unseeded is not marked seeded", func(t *testing.T) {
		_, _, rep := releaseOnce(t, config, t.TempDir())
		if r := parseReport(t, rep); *r.Seeded || strings.Contains(r.Privacy, "not private") {
			t.Errorf("unseeded run: privacy %q, seeded %v", r.Privacy, *r.Seeded)
		}
	})

	// Evaluate the file of the seed-7 run (rewritten identically above).
	synthetic := filepath.Join(out, "synthetic.parquet")
	t.Run("evaluate json", func(t *testing.T) {
		r := mustRun(t, "-q", "evaluate", "--config", config, "--synthetic", synthetic, "--format", "json")
		if !strings.Contains(r.stderr, "INTERNAL") {
			t.Errorf("stderr does not say INTERNAL:\n%s", r.stderr)
		}
		var ev struct {
			Label         string `json:"label"`
			TrueRows      int64  `json:"true_join_rows"`
			SyntheticRows int64  `json:"synthetic_rows"`
			Queries       int    `json:"queries"`
			Families      []struct {
				Name    string `json:"name"`
				Queries int    `json:"queries"`
			} `json:"families"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &ev); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
		}
		if !strings.HasPrefix(ev.Label, "INTERNAL") {
			t.Errorf("label = %q, want it to start with INTERNAL", ev.Label)
		}
		if ev.TrueRows != tinyJoinRows {
			t.Errorf("true_join_rows = %d, want %d", ev.TrueRows, tinyJoinRows)
		}
		if ev.SyntheticRows != rows {
			t.Errorf("synthetic_rows = %d, release wrote %d", ev.SyntheticRows, rows)
		}
		if len(ev.Families) == 0 {
			t.Fatalf("no families:\n%s", r.stdout)
		}
		sum := 0
		for _, f := range ev.Families {
			if f.Name == "" || f.Queries <= 0 {
				t.Errorf("family %+v: want a name and queries > 0", f)
			}
			sum += f.Queries
		}
		if sum != ev.Queries {
			t.Errorf("families hold %d queries, total says %d", sum, ev.Queries)
		}

		text := mustRun(t, "-q", "evaluate", "--config", config, "--synthetic", synthetic)
		if !strings.HasPrefix(text.stdout, ev.Label+"\n") {
			t.Errorf("text output does not start with the label %q:\n%s", ev.Label, text.stdout)
		}
		for _, f := range ev.Families {
			if !strings.Contains(text.stdout, "\n"+f.Name+" ") {
				t.Errorf("text output has no row for family %s:\n%s", f.Name, text.stdout)
			}
		}
	})
	t.Run("evaluate missing synthetic file", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "none.parquet")
		r := run(t, "-q", "evaluate", "--config", config, "--synthetic", missing)
		if r.code != ExitRuntime || !strings.Contains(r.stderr, "none.parquet") {
			t.Errorf("exit %d, stderr %q; want %d naming none.parquet", r.code, r.stderr, ExitRuntime)
		}
	})
}

func TestDemo(t *testing.T) {
	out := filepath.Join(t.TempDir(), "demo")
	r := mustRun(t, "-q", "demo", "--out", out, "--k", "16", "--seed", "1")
	pq := filepath.Join(out, "synthetic.parquet")
	for _, want := range []string{pq, "duckdb", "not private (seeded)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout does not mention %q:\n%s", want, r.stdout)
		}
	}
	if _, err := os.Stat(pq); err != nil {
		t.Error(err)
	}
	rep, err := os.ReadFile(filepath.Join(out, "privacy-report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if p := parseReport(t, rep); !*p.Seeded {
		t.Errorf("demo --seed 1 report is not seeded:\n%s", rep)
	}
}
