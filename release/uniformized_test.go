package release

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/demo"
	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/internal/score"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/spec"
	"github.com/synth-dp/synth/uniformize"
)

// workloadError is the largest absolute error of a marginal count of the
// workload (every cell of every workload marginal), synthetic vs true.
func workloadError(truth, syn *score.Table, marginals [][]int, sizes []int) float64 {
	worst := 0.0
	for _, m := range marginals {
		p := truth.Marginal(m, sizes)
		q := syn.Marginal(m, sizes)
		for i := range p {
			worst = math.Max(worst, math.Abs(p[i]*float64(len(truth.Rows))-q[i]*float64(len(syn.Rows))))
		}
	}
	return worst
}

// compareMethods releases s with join-as-one and with uniformized, runs
// times each with seeds 1..runs, and returns each run's workload error.
func compareMethods(t *testing.T, s *spec.Spec, runs int, variant pmw.Variant) (jao, uni []float64) {
	t.Helper()
	ctx := context.Background()
	truth, err := score.Truth(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := score.WorkloadMarginals(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []spec.Method{spec.JoinAsOne, spec.Uniformized} {
		c := *s
		c.Release.Method = m
		c.PMW.Variant = string(variant)
		for seed := 1; seed <= runs; seed++ {
			sum, err := Run(ctx, Options{Spec: &c, OutDir: t.TempDir(), Engine: "duckdb", Source: dp.NewSeededSource(uint64(seed))})
			if err != nil {
				t.Fatal(err)
			}
			syn, err := score.Synthetic(ctx, &c, sum.Parquet, layout.ColumnNames(&c))
			if err != nil {
				t.Fatal(err)
			}
			e := workloadError(truth, syn, ms, c.ReleaseSizes())
			if m == spec.JoinAsOne {
				jao = append(jao, e)
			} else {
				uni = append(uni, e)
			}
		}
	}
	return jao, uni
}

// ex42Spec writes Example 4.2 for k and returns its spec: ε = 1,
// δ = 1/n² (n the input size), releasing tier and channel with their 1-
// and 2-way marginals as the workload.
func ex42Spec(t *testing.T, k int) (*spec.Spec, int) {
	t.Helper()
	n := 0
	for i, c := range demo.Degrees(k) {
		n += 2 * c << i
	}
	s, err := demo.Write(t.TempDir(), k, 1, 1/float64(n)/float64(n))
	if err != nil {
		t.Fatal(err)
	}
	tier, channel := s.Release.Columns[0], s.Release.Columns[1]
	s.Release.Columns = []spec.ColumnRef{tier, channel}
	s.Workload.Marginals = [][]spec.ColumnRef{{tier}, {channel}, {tier, channel}}
	s.Output.Path = filepath.Join(t.TempDir(), "out")
	return s, n
}

func median(x []float64) float64 {
	y := slices.Sorted(slices.Values(x))
	return y[len(y)/2]
}

func maxOf(x []float64) float64 { return slices.Max(x) }

// TestExample42Table prints the Example 4.2 experiment: the workload error
// (largest absolute error of a marginal count) of join-as-one and
// uniformized, 5 seeded runs each, for k in SYNTH_EX42_K (default 64,512),
// for the PMW variant SYNTH_EX42_VARIANT (default mwem). Set SYNTH_EX42=1.
func TestExample42Table(t *testing.T) {
	if os.Getenv("SYNTH_EX42") == "" {
		t.Skip("set SYNTH_EX42=1 to run the Example 4.2 experiment")
	}
	ks := []int{64, 512}
	if v := os.Getenv("SYNTH_EX42_K"); v != "" {
		ks = nil
		for _, f := range strings.Split(v, ",") {
			k, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			ks = append(ks, k)
		}
	}
	variant := pmw.Variant(os.Getenv("SYNTH_EX42_VARIANT"))
	var out strings.Builder
	out.WriteString("| k | n | join size | variant | join-as-one max / median | uniformized max / median | ratio of medians (jao/uni) |\n|---|---|---|---|---|---|---|\n")
	for _, k := range ks {
		s, n := ex42Spec(t, k)
		jao, uni := compareMethods(t, s, 5, variant)
		join := 0
		for i, c := range demo.Degrees(k) {
			join += c << (2 * i)
		}
		fmt.Fprintf(&out, "| %d | %d | %d | %s | %.0f / %.0f | %.0f / %.0f | %.2f |\n", k, n, join, cmpVariant(variant),
			maxOf(jao), median(jao), maxOf(uni), median(uni), median(jao)/median(uni))
		t.Logf("k=%d: join-as-one %v, uniformized %v", k, jao, uni)
	}
	fmt.Println(out.String())
}

func cmpVariant(v pmw.Variant) string {
	if v == "" {
		return string(pmw.VariantMWEM)
	}
	return string(v)
}

// TestTPCHOrdersLineitemTable prints the workload error of join-as-one and
// uniformized on examples/tpch/orders_lineitem.yaml at ε = 1 and 4, 5
// seeded runs each. Set SYNTH_TPCH_OL=1.
func TestTPCHOrdersLineitemTable(t *testing.T) {
	if os.Getenv("SYNTH_TPCH_OL") == "" {
		t.Skip("set SYNTH_TPCH_OL=1 to run the TPC-H orders ⋈ lineitem comparison")
	}
	var out strings.Builder
	out.WriteString("| ε | join-as-one max / median | uniformized max / median | ratio of medians (jao/uni) |\n|---|---|---|---|\n")
	for _, eps := range []float64{1, 4} {
		s := releasetest.LoadSpec(t, filepath.Join("..", "examples", "tpch", "orders_lineitem.yaml"))
		s.Privacy.Epsilon = eps
		jao, uni := compareMethods(t, s, 5, "")
		fmt.Fprintf(&out, "| %g | %.0f / %.0f | %.0f / %.0f | %.2f |\n", eps, maxOf(jao), median(jao), maxOf(uni), median(uni), median(jao)/median(uni))
		t.Logf("ε=%g: join-as-one %v, uniformized %v", eps, jao, uni)
	}
	fmt.Println(out.String())
}

// TestUniformizedRelease: release.method uniformized runs the partition on
// the two-relation TPC-H join; the report names the method and why, lists
// every bucket that ran with its budget and DP outputs, its spends add up
// to the budget, and the file holds the sum of the buckets' rows. On three
// relations an explicit uniformized is refused as not supported, before
// any data is read.
func TestUniformizedRelease(t *testing.T) {
	s := releasetest.LoadSpec(t, filepath.Join("..", "examples", "tpch", "orders_lineitem.yaml"))
	if s.Release.Method != spec.Auto {
		t.Fatalf("method %q", s.Release.Method)
	}
	s.Release.Method = spec.Uniformized
	sum, err := Run(context.Background(), Options{Spec: s, OutDir: t.TempDir(), Engine: "duckdb", Source: dp.NewSeededSource(3)})
	if err != nil {
		t.Fatal(err)
	}
	rep := sum.Privacy
	if rep.Parameters["release_method"] != "uniformized" || !strings.Contains(rep.Parameters["release_method_reason"].(string), "set by release.method") {
		t.Errorf("method %v (%v)", rep.Parameters["release_method"], rep.Parameters["release_method_reason"])
	}
	if rep.Spent != (dp.Budget{Epsilon: 1, Delta: 1e-6}) {
		t.Errorf("spent %v, want the whole budget", rep.Spent)
	}
	parts, ok := rep.Parameters["uniformized_partitions"].([]uniformize.BucketRun)
	if !ok || len(parts) == 0 {
		t.Fatalf("partitions %#v", rep.Parameters["uniformized_partitions"])
	}
	var rows int64
	for _, p := range parts {
		rows += p.Rows
		if p.Epsilon != 0.5 || p.Delta != 0.5e-6 || p.DeltaTilde < 1 || p.NHat < 0 {
			t.Errorf("bucket %+v", p)
		}
	}
	if rows != sum.Rows {
		t.Errorf("file has %d rows, buckets %d", sum.Rows, rows)
	}
	// The sub-instances' ledger is one parallel split of (ε/2, δ/2).
	var found bool
	var walk func([]dp.Spend)
	walk = func(ss []dp.Spend) {
		for _, sp := range ss {
			if len(sp.Instances) == len(parts) && sp.Epsilon == 0.5 && strings.Contains(sp.Rule, "parallel composition") {
				found = true
			}
			walk(sp.Parts)
			for _, in := range sp.Instances {
				walk(in)
			}
		}
	}
	walk(rep.Spends)
	if !found {
		t.Errorf("no parallel split over %d buckets in %+v", len(parts), rep.Spends)
	}

	three := releasetest.LoadSpec(t, filepath.Join("..", "examples", "tpch", "synth.yaml"))
	three.Privacy.Unit, three.Release.Method = "", spec.Uniformized // tuple level: the example declares a unit
	_, err = Run(context.Background(), Options{Spec: three, OutDir: t.TempDir(), Engine: "duckdb", Source: dp.NewSeededSource(3)})
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("uniformized on three relations: %v, want ErrUnsupported", err)
	}
}
