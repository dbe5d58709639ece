package pmw

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"testing"

	"github.com/synth-dp/synth/dp"
)

// nhatError is the only error a run may return after its charge on a
// valid histogram: it names n̂, a DP output, and nothing else.
var nhatError = regexp.MustCompile(`^pmw: invalid input: n̂ = (\d+) is beyond 2⁵³$`)

// TestEdgeNeighboursSameError sweeps neighbouring histograms at the edges
// of the 2⁵³ bound and of int64 (a total of 2⁵³ − 20,000 up to
// math.MaxInt64 − 20; the neighbour adds Δ̃ = 20 join tuples) through
// both variants with the same seed on both inputs. After the charge only
// n̂ may decide and be printed: every error must name n̂ alone, a total
// beyond 2⁵³ must never succeed, two errors must read the same up to the
// value of n̂, and an error beside a success needs n̂ on either side of
// 2⁵³. The old code printed the true total ("n̂ = 9006331310539608 +
// 2023613415019 is beyond 2⁵³") and, on a neighbour, a different error
// ("histogram total beyond 2⁵³", "histogram total overflows int64").
func TestEdgeNeighboursSameError(t *testing.T) {
	u, err := NewUniverse([]string{"a"}, []int{2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	const big = int64(1) << 53
	totals := []int64{big - 20_000, big - 500, big - 20, big, big + 1, big + 5, math.MaxInt64/2 + 7, math.MaxInt64 - 40}
	variants := map[string]Config{
		"paper":          {Variant: VariantPaper, Rounds: 1},
		"mwem":           {Rounds: 1},
		"mwem (laplace)": {Rounds: 1, Noise: NoiseLaplace},
	}
	type outcome struct {
		nhat int64 // n̂ of a success, or the one the error names
		err  error
	}
	run := func(t *testing.T, cfg Config, total, extra int64, seed uint64) outcome {
		t.Helper()
		hist := []Cell{{0, total - 1000}, {1, 1000 + extra}}
		res, err := Run(context.Background(), dp.NewSeededSource(seed), u, []Family{Marginal([]int{0})}, hist, cfg)
		if err != nil {
			m := nhatError.FindStringSubmatch(err.Error())
			if m == nil {
				t.Fatalf("total %d: error %q names more than n̂", total+extra, err)
			}
			n, perr := strconv.ParseInt(m[1], 10, 64)
			if perr != nil || n <= big {
				t.Fatalf("total %d: error %q: n̂ is not beyond 2⁵³", total+extra, err)
			}
			return outcome{nhat: n, err: err}
		}
		if total+extra > big {
			t.Fatalf("total %d beyond 2⁵³ succeeded (n̂ = %v)", total+extra, res.NHat)
		}
		return outcome{nhat: int64(res.NHat)}
	}
	mask := regexp.MustCompile(`\d+`)
	for name, cfg := range variants {
		cfg.Epsilon, cfg.Delta, cfg.Sensitivity, cfg.Workers = 1, 1e-6, auditSens, 1
		for _, total := range totals {
			for seed := uint64(1); seed <= 4; seed++ {
				t.Run(fmt.Sprintf("%s/%d/seed%d", name, total, seed), func(t *testing.T) {
					d, dPrime := run(t, cfg, total, auditSens, seed), run(t, cfg, total, 0, seed)
					switch {
					case d.err != nil && dPrime.err != nil:
						if a, b := mask.ReplaceAllString(d.err.Error(), "#"), mask.ReplaceAllString(dPrime.err.Error(), "#"); a != b {
							t.Fatalf("neighbours fail differently: %q and %q", d.err, dPrime.err)
						}
					case d.err != nil || dPrime.err != nil:
						lo, hi := min(d.nhat, dPrime.nhat), max(d.nhat, dPrime.nhat)
						if !(lo <= big && hi > big) {
							t.Fatalf("one neighbour failed, the other did not, with n̂ = %d and %d (errors %v, %v)", d.nhat, dPrime.nhat, d.err, dPrime.err)
						}
					}
				})
			}
		}
	}
}

// TestFactoredTotalsAtTheEdge: the factored model saturates each true
// count at a public cap instead of refusing a table whose total passes
// 2⁵³ after the charge (a branch on the data without noise). Neighbouring
// tables on either side of 2⁵³ both run.
func TestFactoredTotalsAtTheEdge(t *testing.T) {
	for _, extra := range []int64{0, 1, 2, 1 << 40} {
		truth := func(_ context.Context, set []int) ([]int64, error) {
			return []int64{1<<53 - 1, extra}, nil
		}
		_, err := RunFactored(t.Context(), dp.NewSeededSource(1), []string{"a"}, []int{2}, []Family{Marginal([]int{0})}, truth,
			Config{Epsilon: 1, Delta: 1e-6, Sensitivity: 1, NoNHat: true, Rounds: 1})
		if err != nil {
			t.Errorf("second count %d: %v", extra, err)
		}
	}
}

// TestNoNHatSaturates: without n̂ (the privacy-unit release) a histogram
// whose total is beyond 2⁵³ is saturated, as the factored model's tables
// are, instead of refused after the charge (issue 39): the run succeeds
// with finite weights.
func TestNoNHatSaturates(t *testing.T) {
	u, err := NewUniverse([]string{"a"}, []int{2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	hist := []Cell{{0, 1 << 53}, {1, 3 << 52}}
	res, err := Run(context.Background(), dp.NewSeededSource(1), u, []Family{Marginal([]int{0})}, hist,
		Config{Epsilon: 1, Delta: 1e-6, Sensitivity: 1, NoNHat: true, Rounds: 2})
	if err != nil {
		t.Fatalf("a total beyond 2⁵³ without n̂: %v", err)
	}
	for _, w := range res.Weights {
		if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
			t.Fatalf("weights %v", res.Weights)
		}
	}
}
