package release

import (
	"context"
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
	"github.com/synth-dp/synth/internal/score"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/spec"
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
			syn, err := score.Synthetic(ctx, &c, sum.Parquet, ColumnNames(&c))
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
		s := loadSpec(t, filepath.Join("..", "examples", "tpch", "orders_lineitem.yaml"))
		s.Privacy.Epsilon = eps
		jao, uni := compareMethods(t, s, 5, "")
		fmt.Fprintf(&out, "| %g | %.0f / %.0f | %.0f / %.0f | %.2f |\n", eps, maxOf(jao), median(jao), maxOf(uni), median(uni), median(jao)/median(uni))
		t.Logf("ε=%g: join-as-one %v, uniformized %v", eps, jao, uni)
	}
	fmt.Println(out.String())
}
