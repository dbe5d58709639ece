package tablestest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/score"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/release"
	"github.com/synth-dp/synth/spec"
)

// TestTablesSiblingsTable prints the sibling agreement (score.SiblingScore)
// of the TPC-H and Retail examples' tables releases without and with
// release.sibling_classes, and of the by-hand baseline ([Baseline]),
// seeds 1–3, at the ε of SYNTH_TABLES_SIBLINGS (a list, e.g. "1,4"; "1"
// alone when it is set to 1): per edge and released child column, the
// true share of sibling pairs that agree, random pairs' share, and each
// release's mean over the seeds with its range. Minutes: only with
// SYNTH_TABLES_SIBLINGS.
func TestTablesSiblingsTable(t *testing.T) {
	env := os.Getenv("SYNTH_TABLES_SIBLINGS")
	if env == "" {
		t.Skip("set SYNTH_TABLES_SIBLINGS=1 (or a list of ε) to print the sibling agreement of the tables releases")
	}
	var epss []float64
	for _, f := range strings.Split(env, ",") {
		e, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("SYNTH_TABLES_SIBLINGS=%q: %v", env, err)
		}
		epss = append(epss, e)
	}
	ctx := context.Background()
	var out strings.Builder
	out.WriteString("| data | ε | edge | column | true | random pairs | tables | tables + sibling classes | baseline |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	hows := []string{"tables", "siblings", "baseline"}
	for _, ex := range []string{"tpch", "retail"} {
		for _, eps := range epss {
			const seeds = 3
			var ref []score.SiblingScore
			got := make([][][]float64, len(hows)) // how → score → seeds
			for seed := uint64(1); seed <= seeds; seed++ {
				for k, how := range hows {
					s, _ := load(t, ex)
					s.Privacy.Epsilon = eps
					dir := t.TempDir()
					if how == "baseline" {
						if _, err := Baseline(ctx, s, dir, BaselineOptions{Source: dp.NewSeededSource(seed)}); err != nil {
							t.Fatal(err)
						}
					} else {
						s.Release.Output = spec.OutputTables
						s.Release.SiblingClasses = how == "siblings"
						if _, err := release.Run(ctx, release.Options{Spec: s, OutDir: dir, Engine: "duckdb", Source: dp.NewSeededSource(seed)}); err != nil {
							t.Fatal(err)
						}
					}
					sc, err := score.EvaluateTables(ctx, s, dir, layout.ColumnNames(s))
					if err != nil {
						t.Fatal(err)
					}
					ref = sc.Siblings
					if got[k] == nil {
						got[k] = make([][]float64, len(sc.Siblings))
					}
					for i, sb := range sc.Siblings {
						got[k][i] = append(got[k][i], sb.Synthetic)
						t.Logf("%s ε=%g %s seed %d: %s→%s %s: %.3f (true %.3f)", ex, eps, how, seed, sb.Parent, sb.Child, sb.Column, sb.Synthetic, sb.True)
					}
				}
			}
			for i, sb := range ref {
				fmt.Fprintf(&out, "| %s | %g | %s→%s | %s | %.3f | %.3f |", ex, eps, sb.Parent, sb.Child, sb.Column, sb.True, sb.TrueRandom)
				for k := range hows {
					v := got[k][i]
					lo, hi, m := v[0], v[0], 0.0
					for _, x := range v {
						lo, hi, m = min(lo, x), max(hi, x), m+x/float64(len(v))
					}
					fmt.Fprintf(&out, " %.3f (%.3f–%.3f) |", m, lo, hi)
				}
				out.WriteString("\n")
			}
		}
	}
	fmt.Println(out.String())
}
