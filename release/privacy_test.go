package release

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/demo"
	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/output/publish"
)

// onGrid reports whether v is an integer or a multiple of the public grid
// dp.LogGrid: the only shapes a published DP output may take (DESIGN.md §3,
// invariant 6). A float64 drawn from a continuous sampler is neither,
// except with negligible probability.
func onGrid(v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return false
	}
	return v == math.Trunc(v) || v/dp.LogGrid == math.Trunc(v/dp.LogGrid)
}

// TestPublishedOutputsAreIntegers walks the privacy report (sidecar JSON
// and Parquet metadata) and the structured log of releases of one, two and
// three tables and fails on any DP output that is not an integer or a grid
// point. Several seeds, so that a float sampler cannot pass by luck.
func TestPublishedOutputsAreIntegers(t *testing.T) {
	type job struct {
		name string
		path string // spec path, or "" for the demo
	}
	jobs := []job{{"adult (one table)", filepath.Join("..", "examples", "adult", "synth.yaml")},
		{"demo (two tables, Alg. 1)", ""},
		{"tpch (three tables, Alg. 3)", filepath.Join("..", "examples", "tpch", "synth.yaml")}}
	seeds := []uint64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, j := range jobs {
		t.Run(j.name, func(t *testing.T) {
			spec := func() *Options {
				if j.path != "" {
					return &Options{Spec: releasetest.LoadSpec(t, j.path)}
				}
				sp, err := demo.Write(t.TempDir(), 40, 1, 1e-6)
				if err != nil {
					t.Fatal(err)
				}
				return &Options{Spec: sp}
			}()
			for _, seed := range seeds {
				var logBuf bytes.Buffer
				dir := t.TempDir()
				o := *spec
				o.OutDir, o.Engine, o.Source = dir, "duckdb", dp.NewSeededSource(seed)
				o.Logger = slog.New(slog.NewJSONHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
				sum, err := Run(context.Background(), o)
				if err != nil {
					t.Fatal(err)
				}
				side, err := os.ReadFile(filepath.Join(dir, layout.ReportName))
				if err != nil {
					t.Fatal(err)
				}
				var rep struct {
					Outputs []struct {
						Name  string  `json:"name"`
						Value float64 `json:"value"`
					} `json:"outputs"`
				}
				if err := json.Unmarshal(side, &rep); err != nil {
					t.Fatal(err)
				}
				if len(rep.Outputs) == 0 {
					t.Fatal("the report publishes no outputs")
				}
				for _, out := range rep.Outputs {
					if !onGrid(out.Value) {
						t.Errorf("seed %d: published %s = %v is neither an integer nor a grid point", seed, out.Name, out.Value)
					}
				}
				for _, o := range sum.Privacy.Outputs {
					if !onGrid(o.Value) {
						t.Errorf("seed %d: metadata output %s = %v is neither an integer nor a grid point", seed, o.Name, o.Value)
					}
				}
				if !onGrid(sum.NHat) || !onGrid(sum.DeltaTilde) {
					t.Errorf("seed %d: summary n̂ = %v, Δ̃ = %v", seed, sum.NHat, sum.DeltaTilde)
				}
				// The log: every numeric attribute named like a DP output.
				sc := bufio.NewScanner(&logBuf)
				for sc.Scan() {
					var rec map[string]any
					if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
						t.Fatalf("log line %q: %v", sc.Text(), err)
					}
					for _, k := range []string{"n_hat", "delta_tilde"} {
						if v, ok := rec[k].(float64); ok && !onGrid(v) {
							t.Errorf("seed %d: log %q has %s = %v", seed, rec["msg"], k, v)
						}
					}
				}
			}
		})
	}
}

// TestReleaseCleansStaleTemporaries: a temporary left by a hard-killed
// release (our own naming, older than StaleAge) is removed by the next
// release into the folder; a foreign file is kept.
func TestReleaseCleansStaleTemporaries(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, ".synthetic.parquet.12345.tmp")
	foreign := filepath.Join(dir, "notes.tmp")
	for _, p := range []string{stale, foreign} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-2 * publish.StaleAge)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	sp, err := demo.Write(t.TempDir(), 20, 1, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	// A folder holding a foreign file is refused (a release replaces the
	// whole folder), after the stale temporary was cleaned.
	if _, err := Run(context.Background(), Options{Spec: sp, OutDir: dir, Engine: "duckdb", Source: dp.NewSeededSource(1)}); err == nil || !strings.Contains(err.Error(), "notes.tmp") {
		t.Fatalf("release into a folder holding notes.tmp: err = %v, want a refusal naming it", err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary still there: %v", err)
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Errorf("foreign file removed: %v", err)
	}
}
