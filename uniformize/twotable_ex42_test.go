package uniformize

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/internal/demo"
	"github.com/synth-dp/synth/joinasone"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/spec"
)

// ex42 is Example 4.2 for k loaded into an engine, with the truth of the
// released columns (tier, channel) as a dense histogram.
type ex42 struct {
	eng   *engine.Engine
	s     *spec.Spec
	cfg   TwoTableConfig
	truth []float64
	n     int
}

func loadEx42(t *testing.T, k int) *ex42 {
	t.Helper()
	n := 0
	for i, c := range demo.Degrees(k) {
		n += 2 * c << i
	}
	eps, delta := 1.0, 1/float64(n)/float64(n)
	s, err := demo.Write(t.TempDir(), k, eps, delta)
	if err != nil {
		t.Fatal(err)
	}
	tier, channel := s.Release.Columns[0], s.Release.Columns[1]
	s.Release.Columns = []spec.ColumnRef{tier, channel}
	ctx := context.Background()
	eng, err := engine.Open(ctx, "duckdb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	if err := eng.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	sizes := s.ReleaseSizes()
	u, err := pmw.NewUniverse([]string{"tier", "channel"}, sizes, 0)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	cells, err := eng.Histogram(ctx, h, s.Release.Columns, sizes)
	if err != nil {
		t.Fatal(err)
	}
	truth := make([]float64, u.Len())
	for _, c := range cells {
		truth[c.Index] = float64(c.Count)
	}
	cfg := TwoTableConfig{Config: joinasone.Config{Epsilon: eps, Delta: delta, Columns: s.Release.Columns, Universe: u,
		Families: []pmw.Family{pmw.Marginal([]int{0}), pmw.Marginal([]int{1}), pmw.Marginal([]int{0, 1})}}}
	return &ex42{eng: eng, s: s, cfg: cfg, truth: truth, n: n}
}

// workloadErr is the largest absolute error of a count of the 1- and 2-way
// marginals of the two released columns.
func (e *ex42) workloadErr(syn []float64) float64 {
	sizes := e.cfg.Universe.Sizes()
	worst := 0.0
	var m0t, m0s = make([]float64, sizes[0]), make([]float64, sizes[0])
	var m1t, m1s = make([]float64, sizes[1]), make([]float64, sizes[1])
	for x := range e.truth {
		a, b := x/sizes[1], x%sizes[1]
		worst = math.Max(worst, math.Abs(e.truth[x]-syn[x]))
		m0t[a] += e.truth[x]
		m0s[a] += syn[x]
		m1t[b] += e.truth[x]
		m1s[b] += syn[x]
	}
	for i := range m0t {
		worst = math.Max(worst, math.Abs(m0t[i]-m0s[i]))
	}
	for i := range m1t {
		worst = math.Max(worst, math.Abs(m1t[i]-m1s[i]))
	}
	return worst
}

// run releases once with join-as-one (method "jao"), uniformized ("uni")
// or the public-bound experiment ("pub") and returns the workload error.
func (e *ex42) run(t *testing.T, method string, variant pmw.Variant, seed uint64) float64 {
	t.Helper()
	ctx := context.Background()
	src := dp.NewSeededSource(seed)
	l := mustLedger(t, e.cfg.Epsilon, e.cfg.Delta)
	h, err := e.s.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	cfg := e.cfg
	cfg.Variant = variant
	syn := make([]float64, len(e.truth))
	emit := func(cell, n int64) error { syn[cell] += float64(n); return nil }
	switch method {
	case "jao":
		res, err := joinasone.Run(ctx, src, h, e.eng, cfg.Config, l)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.PMW.Counts(src, emit); err != nil {
			t.Fatal(err)
		}
	default:
		cfg.publicBound = method == "pub"
		res, err := TwoTable(ctx, src, h, TwoTableEngine(e.eng), cfg, l)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Counts(src, emit); err != nil {
			t.Fatal(err)
		}
	}
	return e.workloadErr(syn)
}

func medianOf(x []float64) float64 {
	y := slices.Sorted(slices.Values(x))
	return y[len(y)/2]
}

// TestExample42Methods compares join-as-one, uniformized (Alg. 1 per
// bucket) and the public-bound experiment on Example 4.2, 5 seeded runs
// each, ε = 1, δ = 1/n². Set SYNTH_EX42=1 (SYNTH_EX42_K: list of k,
// default 64,512; SYNTH_EX42_VARIANT: mwem or paper).
func TestExample42Methods(t *testing.T) {
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
	out.WriteString("| k | variant | join-as-one max / median | uniformized max / median | public bound max / median | jao/uni | jao/pub |\n|---|---|---|---|---|---|---|\n")
	for _, k := range ks {
		e := loadEx42(t, k)
		errs := map[string][]float64{}
		for _, m := range []string{"jao", "uni", "pub"} {
			for seed := uint64(1); seed <= 5; seed++ {
				errs[m] = append(errs[m], e.run(t, m, variant, seed))
			}
		}
		fmt.Fprintf(&out, "| %d | %s | %.0f / %.0f | %.0f / %.0f | %.0f / %.0f | %.2f | %.2f |\n", k, variant,
			slices.Max(errs["jao"]), medianOf(errs["jao"]), slices.Max(errs["uni"]), medianOf(errs["uni"]),
			slices.Max(errs["pub"]), medianOf(errs["pub"]), medianOf(errs["jao"])/medianOf(errs["uni"]), medianOf(errs["jao"])/medianOf(errs["pub"]))
		t.Logf("k=%d n=%d: %v", k, e.n, errs)
	}
	fmt.Println(out.String())
}
