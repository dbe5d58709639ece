package numerical

import (
	"context"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/audit"
)

// The audits run Alg. 2 on a tiny universe: one cell, the full value
// axis {1, 2, 3, 4} (Δ = 4), one query (the sum over everything). The
// harness (internal/audit) estimates an ε lower bound with confidence
// 1 − 10⁻⁶ from threshold events on a scalar output; a correct mechanism
// must stay at or below its claim, a planted bug must exceed it.

func auditRuns() int {
	if testing.Short() {
		return 6_000
	}
	return 20_000
}

func auditUniverse(t *testing.T) *Universe {
	t.Helper()
	u, err := NewUniverse(Grid{Names: []string{"c"}, Sizes: []int{1}}, Measure{Name: "v", Min: 0, Max: 4}, UniverseOptions{Reduction: ReduceNever})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// runOne runs Alg. 2 and returns one scalar of its output.
func runOne(t *testing.T, u *Universe, cfg Config, out func(*Result) float64) func(dp.Source, []Point) float64 {
	return func(src dp.Source, data []Point) float64 {
		res, err := Run(context.Background(), src, u, []Query{{Name: "sum"}}, data, cfg)
		if err != nil {
			t.Error(err)
			return 0
		}
		return out(res)
	}
}

// TestAuditAlg2 audits the whole of Alg. 2 (n̂, the PMW rounds, α̃, the
// search) at ε = 1, δ = 0 on D = three tuples of value 1 against
// D′ = D plus a tuple of value 4: the largest value moves from 1 to 4, so
// the threshold Δ̄_w moves when α̃ is small. The output is the answer
// w̃(D) (threshold times ℓ).
func TestAuditAlg2(t *testing.T) {
	u := auditUniverse(t)
	d := []Point{{Cell: 0, Units: 1, Count: 3}}
	dPrime := []Point{{Cell: 0, Units: 1, Count: 3}, {Cell: 0, Units: 4, Count: 1}}
	cfg := Config{Epsilon: 1, Rounds: 3, Sweeps: 5}
	m, mp := audit.Neighbours(runOne(t, u, cfg, func(r *Result) float64 { return r.Answers[0] }), d, dPrime)
	res := audit.MustRunScalar(t, m, mp, auditRuns(), 0)
	t.Logf("Alg. 2 at ε = 1: ε lower bound %.3f (%s)", res.EpsilonLowerBound, res.Event)
	if res.EpsilonLowerBound > cfg.Epsilon {
		t.Fatalf("audit: ε lower bound %.3f above the claim %v (event %s, %d vs %d)", res.EpsilonLowerBound, cfg.Epsilon, res.Event, res.CountD, res.CountDPrime)
	}
}

// alphaLens is the neighbouring pair of the α audits: D holds one tuple of
// value 1, D′ is empty, and the PMW output is replaced by the public D̃ of
// mass 4.5 on value 1 (the lens testSynthetic). Then α = |1 − 4.5| → 4 on
// D and |0 − 4.5| → 5 on D′, so without noise the threshold is 1 on D
// (c_{w,0}(D̃) = 4.5 > 4) and 0 on D′ (4.5 ≤ 5): the threshold moves. With
// the lens only α̃ is random, so the claim is the α share: ε_α = 0.5.
func alphaLens(t *testing.T, bug bool) audit.Result {
	u := auditUniverse(t)
	syn := make([]float64, u.Size())
	syn[0] = 4.5
	cfg := Config{Epsilon: 1, AlphaShare: 0.5, InitShare: 0.1, testSynthetic: syn, testAlphaNoNoise: bug}
	m, mp := audit.Neighbours(runOne(t, u, cfg, func(r *Result) float64 { return r.Thresholds[0][0] }),
		[]Point{{Cell: 0, Units: 1, Count: 1}}, nil)
	return audit.MustRunScalar(t, m, mp, auditRuns(), 0)
}

// TestAuditAlpha: the private α (⌈α⌉ plus discrete Laplace of scale
// 1/ε_α) passes the audit at ε_α = 0.5.
func TestAuditAlpha(t *testing.T) {
	res := alphaLens(t, false)
	t.Logf("private α at ε_α = 0.5: ε lower bound %.3f (%s)", res.EpsilonLowerBound, res.Event)
	if res.EpsilonLowerBound > 0.8 {
		t.Fatalf("audit: ε lower bound %.3f above ε_α = 0.5 (event %s)", res.EpsilonLowerBound, res.Event)
	}
}

// TestAuditCatchesAlphaWithoutNoise: the planted bug (α published without
// noise, the measured max error used as is) makes the threshold a
// deterministic function of the data, and the audit must say so.
func TestAuditCatchesAlphaWithoutNoise(t *testing.T) {
	res := alphaLens(t, true)
	t.Logf("α without noise: ε lower bound %.3f (%s, %d vs %d)", res.EpsilonLowerBound, res.Event, res.CountD, res.CountDPrime)
	if res.EpsilonLowerBound <= 2 {
		t.Fatalf("audit missed α without noise: ε lower bound %.3f ≤ 2 (claim 0.5)", res.EpsilonLowerBound)
	}
}

// groupPair is the neighbouring pair of the group-privacy audits: the
// reduced universe of [0, 7] (digits 1, 2, 4: group factor 3), D empty,
// D′ one tuple of value 7, which is three elements of D̂′.
func groupAudit(t *testing.T, bug bool) audit.Result {
	u, err := NewUniverse(Grid{Names: []string{"c"}, Sizes: []int{1}}, Measure{Name: "v", Min: 0, Max: 7}, UniverseOptions{Reduction: ReduceAlways})
	if err != nil {
		t.Fatal(err)
	}
	u.testNoGroup = bug
	cfg := Config{Epsilon: 1, InitShare: 0.8, AlphaShare: 0.05, Rounds: 2, Sweeps: 3}
	m, mp := audit.Neighbours(runOne(t, u, cfg, func(r *Result) float64 { return float64(r.NHat) }),
		nil, []Point{{Cell: 0, Units: 7, Count: 1}})
	return audit.MustRunScalar(t, m, mp, 20_000, 0) // cheap runs: no -short cut
}

// TestAuditGroupFactor audits n̂, a post-processing of the warm start
// whose claim is its share ε_init = 0.8: calibrated to the group factor
// k = 3 it passes; forgetting k (the mutation: noise for one element a
// tuple, a true ε of up to 2.4) is caught.
func TestAuditGroupFactor(t *testing.T) {
	res := groupAudit(t, false)
	t.Logf("reduced universe, k = 3: ε lower bound %.3f (%s)", res.EpsilonLowerBound, res.Event)
	if res.EpsilonLowerBound > 0.8 {
		t.Fatalf("audit: ε lower bound %.3f above the claim 0.8 (event %s)", res.EpsilonLowerBound, res.Event)
	}
	res = groupAudit(t, true)
	t.Logf("group factor forgotten: ε lower bound %.3f (%s)", res.EpsilonLowerBound, res.Event)
	if res.EpsilonLowerBound <= 0.8 {
		t.Fatalf("audit missed the forgotten group factor: ε lower bound %.3f ≤ 0.8", res.EpsilonLowerBound)
	}
}

// deltaTildeAudit is the pair of the Δ̃ audits: a join whose neighbour
// moves Δ̃ = 3 join rows (one private tuple that joins three tuples of
// the other side): D is empty, D′ holds 3 rows of value 4. The statistic
// is n̂, a post-processing of the warm start, whose claim is its share
// ε_init = 0.8; every other audit here runs at Δ̃ = 1, where ignoring Δ̃
// changes nothing.
func deltaTildeAudit(t *testing.T, bug bool) audit.Result {
	u := auditUniverse(t)
	cfg := Config{Epsilon: 1, Sensitivity: 3, InitShare: 0.8, AlphaShare: 0.05, Rounds: 2, Sweeps: 3, testIgnoreDeltaTilde: bug}
	m, mp := audit.Neighbours(runOne(t, u, cfg, func(r *Result) float64 { return float64(r.NHat) }),
		nil, []Point{{Cell: 0, Units: 4, Count: 3}})
	return audit.MustRunScalar(t, m, mp, 20_000, 0) // cheap runs: no -short cut
}

// TestAuditDeltaTildeMutant: at Δ̃ = 3 the warm start calibrated to
// ⌈Δ̃⌉ passes its claim ε_init = 0.8; the mutant that ignores the join's
// Δ̃ (noise for one join row a tuple: a true ε of up to 2.4) is caught.
func TestAuditDeltaTildeMutant(t *testing.T) {
	for _, bug := range []bool{false, true} {
		res := deltaTildeAudit(t, bug)
		t.Logf("Δ̃ = 3, Δ̃ ignored = %v: ε lower bound %.3f (claim 0.8; %s, %d vs %d of %d)",
			bug, res.EpsilonLowerBound, res.Event, res.CountD, res.CountDPrime, res.N)
		if caught := res.EpsilonLowerBound > 0.8; caught != bug {
			t.Fatalf("Δ̃ ignored = %v: ε lower bound %.3f against the claim 0.8 (event %s)", bug, res.EpsilonLowerBound, res.Event)
		}
	}
}
