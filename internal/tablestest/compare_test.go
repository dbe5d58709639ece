package tablestest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/score"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/release"
	"github.com/synth-dp/synth/spec"
)

// TestCompare (SYNTH_TABLES_COMPARE=1): issue 37's must-show table. For
// TPC-H and Retail (examples/*/synth.yaml), ε 1 and 4, δ the spec's, seeds
// 1–3, it runs the flat release (release.output join), the tables release
// (release.output tables) and the by-hand baseline ([Baseline]) and
// scores them with the independent scorer: the
// workload's join marginals (mean TVD, score.Score), each table's own
// marginals (worst max TVD over the tables), the fan-out TVD (worst edge)
// and the group queries' mean error. A release that writes no tables/
// gets its join score alone. It prints one markdown row
// per (example, ε, method), means over the seeds, and writes the table to
// $SYNTH_TABLES_COMPARE_OUT when set. SYNTH_TABLES_COMPARE=tpch (or retail)
// runs one example; SYNTH_TABLES_BASELINE_EPS=1 one ε. It asserts nothing
// but that every folder is read without an error: it measures.
func TestCompare(t *testing.T) {
	env := os.Getenv("SYNTH_TABLES_COMPARE")
	if env == "" {
		t.Skip("set SYNTH_TABLES_COMPARE=1 to compare the tables release with the by-hand baseline (many minutes)")
	}
	ctx := context.Background()
	examples, epsilons := []string{"tpch", "retail"}, []float64{1, 4}
	if env != "1" {
		examples = strings.Split(env, ",")
	}
	if e := os.Getenv("SYNTH_TABLES_BASELINE_EPS"); e != "" {
		x, err := strconv.ParseFloat(e, 64)
		if err != nil {
			t.Fatal(err)
		}
		epsilons = []float64{x}
	}
	const seeds = 3
	var out strings.Builder
	out.WriteString("| data | ε | method | join marginals mean TVD | table marginals max TVD | fan-out TVD (worst edge) | group queries mean (median) | seeds |\n")
	out.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, ex := range examples {
		for _, eps := range epsilons {
			type acc struct {
				join, table, fan, gmean, gmed float64
				tables                        int
			}
			var flat, rel, base acc
			for seed := uint64(1); seed <= seeds; seed++ {
				s, _ := load(t, ex)
				s.Privacy.Epsilon = eps
				truth, err := score.Truth(ctx, s)
				if err != nil {
					t.Fatal(err)
				}
				ms, err := score.WorkloadMarginals(s)
				if err != nil {
					t.Fatal(err)
				}
				names := layout.ColumnNames(s)
				add := func(a *acc, dir string) {
					t.Helper()
					syn, err := score.Synthetic(ctx, s, filepath.Join(dir, layout.ParquetName), names)
					if err != nil {
						t.Fatal(err)
					}
					a.join += score.Score(truth, syn, ms, s.ReleaseSizes()).MeanTVD / seeds
					if !score.HasTables(dir) {
						return
					}
					sc, err := score.EvaluateTables(ctx, s, dir, names)
					if err != nil {
						t.Fatal(err)
					}
					a.tables++
					var tmax, fmax float64
					for _, ts := range sc.Tables {
						tmax = max(tmax, ts.MaxTVD)
					}
					for _, f := range sc.FanOuts {
						fmax = max(fmax, f.TVD)
					}
					a.table += tmax / seeds
					a.fan += fmax / seeds
					a.gmean += sc.Groups.Mean / seeds
					a.gmed += sc.Groups.Median / seeds
				}
				for _, m := range []struct {
					kind spec.OutputKind
					a    *acc
				}{{spec.OutputJoin, &flat}, {spec.OutputTables, &rel}} {
					s.Release.Output = m.kind
					dir := filepath.Join(t.TempDir(), "release")
					if _, err := release.Run(ctx, release.Options{Spec: s, OutDir: dir, Source: dp.NewSeededSource(seed), Overwrite: true}); err != nil {
						t.Fatal(err)
					}
					add(m.a, dir)
				}
				s.Release.Output = ""
				bdir := t.TempDir()
				if _, err := Baseline(ctx, s, bdir, BaselineOptions{Source: dp.NewSeededSource(seed)}); err != nil {
					t.Fatal(err)
				}
				add(&base, bdir)
			}
			row := func(method string, a acc) {
				if a.tables == 0 {
					fmt.Fprintf(&out, "| %s | %g | %s | %.4f | – | – | – | %d |\n", ex, eps, method, a.join, seeds)
					return
				}
				fmt.Fprintf(&out, "| %s | %g | %s | %.4f | %.4f | %.4f | %.4f (%.4f) | %d |\n", ex, eps, method, a.join, a.table, a.fan, a.gmean, a.gmed, seeds)
			}
			row("flat release", flat)
			row("tables release", rel)
			row("by-hand baseline", base)
			if rel.tables > 0 && rel.gmean > 0 {
				fmt.Fprintf(&out, "| %s | %g | baseline / tables release (group queries) | | | | %.2f× | |\n", ex, eps, base.gmean/rel.gmean)
			}
		}
	}
	t.Log("\n" + out.String())
	if p := os.Getenv("SYNTH_TABLES_COMPARE_OUT"); p != "" {
		if err := os.WriteFile(p, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
