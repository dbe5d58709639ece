package release

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/internal/score"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/spec"
)

// scoredRelease runs a release of the example name at ε (the example's δ)
// and scores its workload marginals against the true join with the
// independent scorer of internal/score. opts may adjust the options.
func scoredRelease(t testing.TB, name string, eps float64, src dp.Source, opts func(*Options)) (score.Result, *Summary) {
	t.Helper()
	s := exampleSpec(t, name)
	s.Privacy.Epsilon = eps
	o := Options{Spec: s, OutDir: t.TempDir(), Engine: "duckdb", Source: src}
	if opts != nil {
		opts(&o)
	}
	sum, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return scoreFile(t, s, sum.Parquet, layout.ColumnNames(s)), sum
}

// tupleLevel, appended to an example's name, releases it at tuple level:
// without its privacy.unit, by join-as-one.
const tupleLevel = "@join-as-one"

// exampleSpec loads examples/NAME/synth.yaml (see tupleLevel).
func exampleSpec(t testing.TB, name string) *spec.Spec {
	t.Helper()
	base, tuple := strings.CutSuffix(name, tupleLevel)
	file := filepath.Join("..", "examples", base, "synth.yaml")
	if strings.Contains(base, "/") { // "adult/wide": examples/adult/wide.yaml
		file = filepath.Join("..", "examples", base+".yaml")
	}
	s := releasetest.LoadSpec(t, file)
	if tuple {
		s.Privacy.Unit, s.Release.Method = "", spec.JoinAsOne
	}
	return s
}

// TestTPCHUnitTVD: the TPC-H example (customer ⋈ orders ⋈ lineitem, unit
// customer) released at ε = 1, δ = 1e-6 has a mean TVD of its workload
// marginals of at most 0.035 (the uniform distribution's is 0.071 and the
// tuple-level join-as-one release sits there), averaged over 3 runs with
// fresh noise, scored by the independent scorer. Measured over 30 runs:
// single runs in [0.016, 0.030] (mean 0.024), 3-run means in [0.021,
// 0.027] with a standard deviation of 0.0019, so the bound is some five
// standard deviations above the mean and a false failure is not a
// practical concern.
func TestTPCHUnitTVD(t *testing.T) {
	if testing.Short() {
		t.Skip("three TPC-H releases; skipped under -short")
	}
	var mean float64
	for range 3 {
		r, sum := scoredRelease(t, "tpch", 1, dp.NewSource(), nil)
		t.Logf("TVD %.4f (uniform %.4f), %d rows for %d", r.MeanTVD, r.MeanUniformTVD, sum.Rows, r.TrueRows)
		mean += r.MeanTVD / 3
	}
	if mean > 0.035 {
		t.Fatalf("TPC-H with unit customer at ε = 1: mean TVD %.4f over 3 runs, want ≤ 0.035", mean)
	}
}

// truthCache holds the true tables by spec source, so that the table of
// many runs reads each data set once.
var truthCache = map[string]*score.Table{}

func scoreFile(t testing.TB, s *spec.Spec, path string, names []string) score.Result {
	t.Helper()
	ctx := context.Background()
	key := s.Digest()
	truth, ok := truthCache[key]
	if !ok {
		var err error
		if truth, err = score.Truth(ctx, s); err != nil {
			t.Fatal(err)
		}
		truthCache[key] = truth
	}
	syn, err := score.Synthetic(ctx, s, path, names)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := score.WorkloadMarginals(s)
	if err != nil {
		t.Fatal(err)
	}
	return score.Score(truth, syn, ms, s.ReleaseSizes())
}

// TestAccuracyTable prints the accuracy table of the closing notes: mean
// TVD of the workload marginals over 3 seeds for each example and ε, beside
// the uniform distribution's and, when SYNTH_PEER_DIR names a folder of
// peer outputs ({name}_eps{ε}_seed{s}.csv with the released columns' names),
// the peer's. It takes minutes, so it runs only when SYNTH_ACCURACY_TABLE
// is set (make accuracy).
func TestAccuracyTable(t *testing.T) {
	if os.Getenv("SYNTH_ACCURACY_TABLE") == "" {
		t.Skip("set SYNTH_ACCURACY_TABLE=1 to print the accuracy table (make accuracy)")
	}
	names := []string{"adult", "bank", "tpch", "tpch" + tupleLevel, "retail", "retail" + tupleLevel}
	if v := os.Getenv("SYNTH_ACCURACY_DATA"); v != "" {
		names = strings.Split(v, ",")
	}
	peer := os.Getenv("SYNTH_PEER_DIR")
	var out strings.Builder
	out.WriteString("| data | ε | synth TVD (mean of 3 seeds) | rows / true | uniform TVD | peer TVD |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, name := range names {
		for _, eps := range []float64{0.5, 1, 4} {
			var tvd, uni, ratio, ptvd float64
			np := 0
			for seed := uint64(1); seed <= 3; seed++ {
				r, _ := scoredRelease(t, name, eps, dp.NewSeededSource(seed), nil)
				tvd += r.MeanTVD / 3
				uni = r.MeanUniformTVD
				ratio += float64(r.Rows) / float64(r.TrueRows) / 3
				if peer != "" {
					p := filepath.Join(peer, fmt.Sprintf("%s_eps%g_seed%d.csv", name, eps, seed))
					if _, err := os.Stat(p); err == nil {
						s := exampleSpec(t, name)
						var cols []string
						for _, c := range s.Release.Columns {
							cols = append(cols, c.Column)
						}
						ptvd += scoreFile(t, s, p, cols).MeanTVD
						np++
					}
				}
			}
			ps := "–"
			if np > 0 {
				ps = fmt.Sprintf("%.3f", ptvd/float64(np))
			}
			fmt.Fprintf(&out, "| %s | %g | %.4f | %.2f | %.3f | %s |\n", name, eps, tvd, ratio, uni, ps)
			t.Logf("%s ε=%g: TVD %.3f (uniform %.3f, peer %s)", name, eps, tvd, uni, ps)
		}
	}
	fmt.Println(out.String())
}

// TestAdultTVD: a release of the Adult example at ε = 1 (δ = 1e-6), scored
// by the independent scorer, has a mean TVD of at most 0.01 over the
// workload's marginals and at most 0.06 over every 1- and 2-way marginal
// of its eight released columns (36 tables, most of them outside the
// workload; uniform: 0.556). Fresh crypto noise. Since pmw.model auto
// picks the factored model (cb25e0a), whose factors are the measured sets
// only, the pairs outside the workload come out less close: over 13 runs
// the all-pairs mean lay in [0.0484, 0.0502] and the workload mean in
// [0.0013, 0.0017]. Pinned to the dense model the same release measures
// 0.040 and 0.0024 (3 runs), the figure this test's old bound of 0.05 was
// set against; on the factored model that bound failed about one run in
// ten. Both bounds are now some 20 standard deviations away.
func TestAdultTVD(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole Adult release; skipped under -short")
	}
	s := releasetest.LoadSpec(t, filepath.Join("..", "examples", "adult", "synth.yaml"))
	r, sum := scoredRelease(t, "adult", 1, dp.NewSource(), nil)
	pairs := score.Score(truthCache[s.Digest()], mustSynthetic(t, s, sum.Parquet), score.AllOneTwoWay(len(s.Release.Columns)), s.ReleaseSizes())
	t.Logf("Adult ε = 1: workload mean TVD %.4f (uniform %.3f); all 1- and 2-way %.4f (uniform %.3f); %d rows for %d",
		r.MeanTVD, r.MeanUniformTVD, pairs.MeanTVD, pairs.MeanUniformTVD, r.Rows, r.TrueRows)
	if r.MeanTVD > 0.01 || pairs.MeanTVD > 0.06 {
		t.Fatalf("mean TVD: workload %.4f (want ≤ 0.01), all 1- and 2-way %.4f (want ≤ 0.06)", r.MeanTVD, pairs.MeanTVD)
	}
}

func mustSynthetic(t testing.TB, s *spec.Spec, path string) *score.Table {
	t.Helper()
	syn, err := score.Synthetic(context.Background(), s, path, layout.ColumnNames(s))
	if err != nil {
		t.Fatal(err)
	}
	return syn
}

// TestAdultAtAIM: releases of the Adult examples at ε = 1 (δ = 1e-6),
// scored by the independent scorer, match AIM's figures on the same
// domains, workload and scorer (issue 26: private-pgm's AIM on this
// machine, 3 runs): a mean TVD of the workload marginals over 3 runs with
// fresh noise of at most 0.0024 on the 8-column example and 0.0039 on the
// 12-column one. Measured over 15 single runs each (factored model, the
// auto choice): 8 columns mean 0.00167, sd 0.00014, max 0.0019; 12
// columns mean 0.00307, sd 0.00017, max 0.0033. A 3-run mean has an sd
// near 0.0001, so each bound is some 7–9 standard deviations away and a
// false failure is not a practical concern.
func TestAdultAtAIM(t *testing.T) {
	if testing.Short() {
		t.Skip("six Adult releases; skipped under -short")
	}
	for _, tc := range []struct {
		name string
		aim  float64
	}{{"adult", 0.0024}, {"adult/wide", 0.0039}} {
		var mean float64
		for range 3 {
			r, _ := scoredRelease(t, tc.name, 1, dp.NewSource(), nil)
			mean += r.MeanTVD / 3
		}
		t.Logf("%s at ε = 1: mean TVD %.5f over 3 runs (AIM %.4f)", tc.name, mean, tc.aim)
		if mean > tc.aim {
			t.Errorf("%s at ε = 1: mean TVD %.5f over 3 runs, want ≤ AIM's %.4f", tc.name, mean, tc.aim)
		}
	}
}
