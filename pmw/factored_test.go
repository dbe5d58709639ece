package pmw

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/audit"
	"github.com/synth-dp/synth/internal/stattest"
	"gonum.org/v1/gonum/stat/distuv"
)

// TestFactoredSamplingMatchesModel: rows drawn by FactoredResult.Counts
// reproduce the model's clique marginals. Systematic rounding keeps each
// clique cell within one row per splitting step of its expectation, so
// the test first checks |count − n·μ| ≤ depth+1 for the root clique, then
// applies a χ² goodness-of-fit test on every clique at false-failure rate
// 10⁻⁴ per clique (the rounding makes counts less dispersed than
// multinomial, so the χ² test is conservative).
func TestFactoredSamplingMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(stattest.Seed(t), 5))
	for inst := range 30 {
		g, _ := randomModel(t, r, 5, 4, 1)
		sizes, d := g.sizes, len(g.sizes)
		const n = 20000
		res := &FactoredResult{Rows: n, model: g}
		full := make([]float64, cellsOf(sizes, seqInts(d)))
		var total int64
		if err := res.Counts(dp.NewSeededSource(uint64(inst)), func(cell, c int64) error {
			full[cell] += float64(c)
			total += c
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if total != n {
			t.Fatalf("instance %d: %d rows, want %d", inst, total, n)
		}
		for ci, cols := range g.cliques {
			got := denseMarginal(sizes, full, cols)
			want := g.belief[ci]
			var chi2 float64
			dof := -1
			for k := range want {
				e := n * want[k]
				if e < 1e-9 {
					if got[k] > 0 {
						t.Fatalf("instance %d clique %v: %v rows in a cell of probability %v", inst, cols, got[k], want[k])
					}
					continue
				}
				chi2 += (got[k] - e) * (got[k] - e) / e
				dof++
			}
			if dof < 1 {
				continue
			}
			if limit := (distuv.ChiSquared{K: float64(dof)}).Quantile(1 - 1e-4); chi2 > limit {
				t.Fatalf("instance %d clique %v: χ² = %.1f > %.1f (%d dof)", inst, cols, chi2, limit, dof)
			}
		}
	}
}

// The factored audit: two columns A, B of two values each, workload the
// marginal (A, B), so the candidates are {A}, {B} and {A, B} (weights 1, 1,
// 2). D′ has 1,000 ± factAuditDep rows in the four cells (a weak
// dependence: the round-1 choice between {A, B} and a 1-way set is close,
// so a selection that is too sharp shows), and D adds Δ̃ = 20 rows in cell
// (0, 0) (a tuple that reaches 20 join rows, with Δ̃ = 20 declared). The
// output is the set measured in round 1 and the model's share of cell
// (0, 0).
const (
	factAuditEps    = 2.0
	factAuditDelta  = 1e-4
	factAuditDelta2 = 20
	factAuditDep    = 38
)

type factOut struct {
	first string
	share float64
}

func factAuditMech(t testing.TB, knob func(*Config), heavy bool) audit.Mechanism[factOut] {
	base := [4]int64{1000 + factAuditDep, 1000 - factAuditDep, 1000 - factAuditDep, 1000 + factAuditDep}
	if heavy {
		base[0] += factAuditDelta2
	}
	truth := func(_ context.Context, set []int) ([]int64, error) {
		switch len(set) {
		case 2:
			return base[:], nil
		case 1:
			if set[0] == 0 {
				return []int64{base[0] + base[1], base[2] + base[3]}, nil
			}
			return []int64{base[0] + base[2], base[1] + base[3]}, nil
		}
		return nil, fmt.Errorf("set %v", set)
	}
	cfg := Config{Epsilon: factAuditEps, Delta: factAuditDelta, Sensitivity: factAuditDelta2, NoNHat: true, Rounds: 1}
	if knob != nil {
		knob(&cfg)
	}
	return func(src dp.Source) factOut {
		res, err := RunFactored(context.Background(), src, []string{"a", "b"}, []int{2, 2}, []Family{Marginal([]int{0, 1})}, truth, cfg)
		if err != nil {
			panic(err)
		}
		mu, err := res.model.marginal([]int{0, 1})
		if err != nil {
			mu, _ = res.model.marginal([]int{0})
			mu = []float64{mu[0] / 2}
		}
		first := ""
		for _, s := range res.Selections {
			if s.Round == 1 {
				first = s.Marginal
			}
		}
		return factOut{first: first, share: mu[0]}
	}
}

func factAuditEvents() []audit.Event[factOut] {
	var ev []audit.Event[factOut]
	for _, m := range []string{"marginal(a)", "marginal(b)", "marginal(a,b)"} {
		ev = append(ev, audit.Event[factOut]{Name: "round 1 measures " + m, In: func(o factOut) bool { return o.first == m }})
	}
	for _, th := range []float64{0.257, 0.259, 0.26, 0.261, 0.262, 0.263, 0.265, 0.27} {
		ev = append(ev,
			audit.Event[factOut]{Name: fmt.Sprintf("share(0,0) ≤ %g", th), In: func(o factOut) bool { return o.share <= th }},
			audit.Event[factOut]{Name: fmt.Sprintf("share(0,0) > %g", th), In: func(o factOut) bool { return o.share > th }})
	}
	return ev
}

func runFactAudit(t *testing.T, knob func(*Config), n int) audit.Result {
	t.Helper()
	res, err := audit.Run(context.Background(), factAuditMech(t, knob, true), factAuditMech(t, knob, false), factAuditEvents(),
		audit.Options{N: n, Delta: factAuditDelta, Confidence: 1 - 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestAuditFactored audits the factored run at its claimed (ε, δ); the
// bound holds with confidence 1 − 10⁻⁶.
//
// Under SYNTH_SLOW_AUDITS only since issue 39: its bound was 0.000 (no
// power); the audits of factored_audit_test.go look at the selection, the
// rounds and the MeasureTruth rescale with claims from the documented
// split, by default.
func TestAuditFactored(t *testing.T) {
	if !slowAudits() {
		t.Skip("6,000 runs a side with no power by default: SYNTH_SLOW_AUDITS=1 runs it")
	}
	t.Parallel()
	res := runFactAudit(t, nil, 6000)
	t.Logf("honest: ε ≥ %.3f (event %q, %d vs %d of %d)", res.EpsilonLowerBound, res.Event, res.CountD, res.CountDPrime, res.N)
	if res.EpsilonLowerBound > factAuditEps {
		t.Fatalf("empirical ε lower bound %v > claimed %v (event %s)", res.EpsilonLowerBound, factAuditEps, res.Event)
	}
}

// TestAuditFactoredMutantCaught: the measurements' noise calibrated to one
// row instead of Δ̃ is caught by the audit (the selection's sensitivity
// taken as one row is TestAuditFactoredSelection's).
//
// The wrong σ runs 3,000 times a side in the default run (6,000 with
// SYNTH_SLOW_AUDITS): at 6,000 it gave the bound 4.86 against the claim 2
// (counts 2,554 / 0); with the counts at 3,000 moved five standard
// deviations against the audit (and 5 more runs on the rare side), the
// bound at confidence 1 − 1e-6 is still 3.49.
func TestAuditFactoredMutantCaught(t *testing.T) {
	t.Parallel()
	slow := os.Getenv("SYNTH_SLOW_AUDITS") != ""
	for _, tc := range []struct {
		name  string
		knob  func(*Config)
		n     int
		quick int // runs a side in the default run; 0: skipped there
	}{
		// The selection score taken as one row (testSelSens1) is caught by
		// TestAuditFactoredSelection's tied pair (4.46 against 2.57 under
		// SYNTH_SLOW_AUDITS). This audit's pair lost its power on it when
		// the fit began to keep a noisy marginal over its shrinkage when
		// the risk estimate says so (issue 40): 1.78 against the claim 2
		// at 20,000 runs a side.
		// Default 0 since issue 39: its honest audit (TestAuditFactored)
		// runs under SYNTH_SLOW_AUDITS only; TestAuditFactoredRounds sees
		// the rounds' noise by default.
		{"measurement on the wrong σ", func(c *Config) { c.testNoiseSens1 = true }, 6000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.n
			if !slow {
				if tc.quick == 0 {
					t.Skip("20,000 runs a side (about 30 s): set SYNTH_SLOW_AUDITS=1 (.ci/run does)")
				}
				n = tc.quick
			}
			res := runFactAudit(t, tc.knob, n)
			t.Logf("%s: ε ≥ %.3f (claim %v; event %q, %d vs %d)", tc.name, res.EpsilonLowerBound, factAuditEps, res.Event, res.CountD, res.CountDPrime)
			if res.EpsilonLowerBound <= factAuditEps || math.IsNaN(res.EpsilonLowerBound) {
				t.Fatalf("mutant %q not caught: ε lower bound %v ≤ claim %v", tc.name, res.EpsilonLowerBound, factAuditEps)
			}
		})
	}
}
