package tablestest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/score"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/release"
	"github.com/synth-dp/synth/spec"
)

// joinTVD scores a release's join file on the spec's workload marginals.
func joinTVD(t *testing.T, s *spec.Spec, truth *score.Table, path string) float64 {
	t.Helper()
	syn, err := score.Synthetic(context.Background(), s, path, layout.ColumnNames(s))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := score.WorkloadMarginals(s)
	if err != nil {
		t.Fatal(err)
	}
	return score.Score(truth, syn, ms, s.ReleaseSizes()).MeanTVD
}

// TestTablesAccuracyTable prints issue 37's table: the tables release
// (release.output tables), the flat release (release.output join) and the
// by-hand baseline ([Baseline]) of the TPC-H and Retail examples at ε 1
// and 4, 3 seeds each, scored by the independent scorer (package score):
// the workload's join marginals, each table's own 1- and 2-way marginals
// (the worst table's mean), the fan-out TVD (the worst edge) and the
// group queries' mean error. Minutes: only with SYNTH_TABLES_ACCURACY
// (SYNTH_TABLES_ONLY=1 skips the flat release and the baseline).
func TestTablesAccuracyTable(t *testing.T) {
	env := os.Getenv("SYNTH_TABLES_ACCURACY")
	if env == "" {
		t.Skip("set SYNTH_TABLES_ACCURACY=1 (or a list of examples) to print the tables release's accuracy table")
	}
	examples := []string{"tpch", "retail"}
	if env != "1" {
		examples = strings.Split(env, ",")
	}
	ctx := context.Background()
	var out strings.Builder
	out.WriteString("| data | ε | release | join TVD | entity TVD (worst table) | fan-out TVD (worst edge) | group queries (mean error) | rows / true |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, ex := range examples {
		base, _ := load(t, ex)
		truth, err := score.Truth(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		for _, eps := range []float64{1, 4} {
			type acc struct{ join, ent, fan, groups, ratio float64 }
			var res [3]acc
			const seeds = 3
			for seed := uint64(1); seed <= seeds; seed++ {
				for k, how := range []string{"tables", "flat", "baseline"} {
					if how != "tables" && os.Getenv("SYNTH_TABLES_ONLY") != "" {
						continue // SYNTH_TABLES_ONLY: the tables release alone
					}
					s, _ := load(t, ex)
					s.Privacy.Epsilon = eps
					dir := t.TempDir()
					switch how {
					case "baseline":
						if _, err := Baseline(ctx, s, dir, BaselineOptions{Source: dp.NewSeededSource(seed)}); err != nil {
							t.Fatal(err)
						}
					default:
						s.Release.Output = spec.OutputTables
						if how == "flat" {
							s.Release.Output = spec.OutputJoin
						}
						if _, err := release.Run(ctx, release.Options{Spec: s, OutDir: dir, Engine: "duckdb", Source: dp.NewSeededSource(seed)}); err != nil {
							t.Fatal(err)
						}
					}
					a := &res[k]
					jp := dir + "/" + layout.ParquetName
					if _, err := os.Stat(jp); err == nil {
						j := joinTVD(t, s, truth, jp)
						a.join += j / seeds
					}
					if how == "flat" {
						continue
					}
					sc, err := score.EvaluateTables(ctx, s, dir, layout.ColumnNames(s))
					if err != nil {
						t.Fatal(err)
					}
					var ent, fan, rows, trueRows float64
					for _, ts := range sc.Tables {
						ent = max(ent, ts.MeanTVD)
						rows += float64(ts.Rows)
						trueRows += float64(ts.TrueRows)
						t.Logf("%s %s ε=%g seed %d: table %s rows %d (true %d) mean TVD %.4f", ex, how, eps, seed, ts.Table, ts.Rows, ts.TrueRows, ts.MeanTVD)
					}
					for _, f := range sc.FanOuts {
						fan = max(fan, f.TVD)
						t.Logf("%s %s ε=%g seed %d: fan-out %s→%s TVD %.4f (mean %.2f, true %.2f)", ex, how, eps, seed, f.Parent, f.Child, f.TVD, f.Mean, f.TrueMean)
					}
					a.ent += ent / seeds
					a.fan += fan / seeds
					a.groups += sc.Groups.Mean / seeds
					a.ratio += rows / trueRows / seeds
				}
			}
			for k, how := range []string{"tables", "flat", "baseline"} {
				a := res[k]
				if how != "tables" && os.Getenv("SYNTH_TABLES_ONLY") != "" {
					continue
				}
				if how == "flat" {
					fmt.Fprintf(&out, "| %s | %g | %s | %.4f | – | – | – | – |\n", ex, eps, how, a.join)
					continue
				}
				js := "–"
				if a.join > 0 {
					js = fmt.Sprintf("%.4f", a.join)
				}
				fmt.Fprintf(&out, "| %s | %g | %s | %s | %.4f | %.4f | %.3f | %.2f |\n", ex, eps, how, js, a.ent, a.fan, a.groups, a.ratio)
			}
		}
	}
	fmt.Println(out.String())
}
