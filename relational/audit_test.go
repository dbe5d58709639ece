package relational

import (
	"context"
	"math"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/audit"
)

// auditRuns is the number of runs per instance of the privacy audits.
func auditRuns() int {
	if testing.Short() {
		return 5_000
	}
	return 20_000
}

// rsAuditPair is a tuple-level neighbouring pair on which the local
// sensitivity jumps: the path R1(a) ⋈ R2(a, b) ⋈ R3(b), all private, with
// R1 = 30 copies of a = 0 and R2 = ∅; I has R3 = ∅ (LŜ^0 = 0), I′ adds the
// tuple b = 0 to R3 (LŜ^0 = T_{R1,R3} = 30). Both join counts are 0.
// It returns (q, RS^β, LŜ^0) of both instances by brute force.
func rsAuditPair(t *testing.T, beta float64) (d, dPrime [3]float64) {
	t.Helper()
	mk := func(withR3 bool) [3]float64 {
		r1 := &oracleRel{name: "r1", cols: []string{"a", "x"}, keys: []string{"a"}, pred: func(tup) bool { return true }}
		for i := 0; i < 30; i++ {
			r1.rows = append(r1.rows, tup{"a": 0, "x": 0})
		}
		r2 := &oracleRel{name: "r2", cols: []string{"a", "b", "y"}, keys: []string{"a", "b"}, pred: func(tup) bool { return true }}
		r3 := &oracleRel{name: "r3", cols: []string{"b", "z"}, keys: []string{"b"}, pred: func(tup) bool { return true }}
		if withR3 {
			r3.rows = []tup{{"b": 0, "z": 0}}
		}
		rels := []*oracleRel{r1, r2, r3}
		k := int(math.Ceil(2/-math.Expm1(-beta))) + 2
		rs, _ := bruteRS(rels, beta, k)
		ls, _ := bruteRS(rels, beta, 0)
		return [3]float64{0, rs, ls}
	}
	return mk(false), mk(true)
}

func rsAudit(t *testing.T, cfg RSConfig) audit.Result {
	t.Helper()
	beta, err := cfg.Beta()
	if err != nil {
		t.Fatal(err)
	}
	d, dPrime := rsAuditPair(t, beta)
	mech := func(in [3]float64) audit.Mechanism[float64] {
		return func(src dp.Source) float64 {
			r, err := ReleaseRS(src, in[0], in[1], in[2], cfg)
			if err != nil {
				panic(err)
			}
			return float64(r.Value)
		}
	}
	return audit.MustRunScalar(t, mech(d), mech(dPrime), auditRuns(), cfg.Delta)
}

// TestAuditRS audits the residual-sensitivity mechanism at its claimed
// (ε, δ) on the pair of [rsAuditPair], with discrete Laplace and discrete
// Gaussian noise. The harness's bound holds with
// confidence 1 − 10⁻⁶ per audit, so each fails falsely with probability
// ≤ 10⁻⁶.
func TestAuditRS(t *testing.T) {
	for _, cfg := range []RSConfig{
		{Epsilon: 1, Delta: 1e-3, Noise: NoiseLaplace, Bound: 1, Integral: true},
		{Epsilon: 1, Delta: 1e-3, Noise: NoiseGaussian, Bound: 1, Integral: true},
	} {
		res := rsAudit(t, cfg)
		t.Logf("%+v: %+v", cfg, res)
		if res.EpsilonLowerBound > cfg.Epsilon {
			t.Errorf("%+v: empirical ε lower bound %v > claimed ε = %v (event %s)", cfg, res.EpsilonLowerBound, cfg.Epsilon, res.Event)
		}
	}
}

// TestAuditRSMutantCaught plants the bug "noise scaled by the local bound
// LŜ^0 instead of the smooth maximum RS^β" and checks that the same audit
// rejects it: LŜ^0 jumps from 0 to 30 between the neighbours.
func TestAuditRSMutantCaught(t *testing.T) {
	cfg := RSConfig{Epsilon: 1, Delta: 1e-3, Noise: NoiseLaplace, Bound: 1, Integral: true, noSmooth: true}
	res := rsAudit(t, cfg)
	t.Logf("mutant: %+v", res)
	if res.EpsilonLowerBound <= cfg.Epsilon {
		t.Fatalf("the audit did not catch RS without the smooth maximum: ε lower bound %v ≤ %v", res.EpsilonLowerBound, cfg.Epsilon)
	}
}

// r2tPair is a user-level neighbouring pair for R2T: unit 0 with ψ = 30
// and 100 units with ψ = 8 (Q(I) = 830, so that the answers spread over
// many values), and the instance without unit 0.
func r2tPair() (d, dPrime []Contribution) {
	d = []Contribution{{Units: []int{0}, Psi: 30}}
	for i := 1; i <= 100; i++ {
		d = append(d, Contribution{Units: []int{i}, Psi: 8})
	}
	return d, withoutUnit(d, 0)
}

// TestAuditR2T audits R2T (pure ε-DP) on [r2tPair], with one unit (closed
// form) and with a second unit (max flow). False failure probability
// ≤ 10⁻⁶ per audit.
func TestAuditR2T(t *testing.T) {
	const eps = 2.0
	d, dPrime := r2tPair()
	two := func(cs []Contribution) []Contribution {
		out := make([]Contribution, len(cs))
		for i, c := range cs {
			out[i] = Contribution{Units: []int{c.Units[0], i % 50}, Psi: c.Psi}
		}
		return out
	}
	for _, k := range []int{1, 2} {
		mech := func(cs []Contribution) audit.Mechanism[float64] {
			if k == 2 {
				cs = two(cs)
			}
			counts := []int{101, 50}[:k]
			return func(src dp.Source) float64 {
				tr, err := NewTruncation(cs, counts)
				if err != nil {
					panic(err)
				}
				r, err := RaceToTheTop(context.Background(), src, tr, R2TConfig{Epsilon: eps, GS: 64, Integral: true})
				if err != nil {
					panic(err)
				}
				return float64(r.Value)
			}
		}
		res := audit.MustRunScalar(t, mech(d), mech(dPrime), auditRuns(), 0)
		t.Logf("k=%d: %+v", k, res)
		if res.EpsilonLowerBound > eps {
			t.Errorf("k=%d: empirical ε lower bound %v > claimed ε = %v (event %s)", k, res.EpsilonLowerBound, eps, res.Event)
		}
	}
}

// overshoots runs R2T n times on 200 units of ψ = 5 (Q(I) = 1000, DS = 5)
// and counts the answers above Q(I).
func overshoots(t *testing.T, n int, noShift bool) int {
	t.Helper()
	var cs []Contribution
	for i := 0; i < 200; i++ {
		cs = append(cs, Contribution{Units: []int{i}, Psi: 5})
	}
	src := dp.NewSeededSource(14)
	over := 0
	for i := 0; i < n; i++ {
		tr, _ := NewTruncation(cs, []int{200})
		r, err := RaceToTheTop(context.Background(), src, tr, R2TConfig{Epsilon: 1, GS: 1 << 10, Integral: true, noShift: noShift})
		if err != nil {
			t.Fatal(err)
		}
		if r.Value > 1000 {
			over++
		}
	}
	return over
}

// binomialTail is P[Bin(n, p) ≥ k].
func binomialTail(n, k int, p float64) float64 {
	s := 0.0
	for i := k; i <= n; i++ {
		lg, _ := math.Lgamma(float64(n + 1))
		l1, _ := math.Lgamma(float64(i + 1))
		l2, _ := math.Lgamma(float64(n - i + 1))
		s += math.Exp(lg - l1 - l2 + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p))
	}
	return s
}

// TestR2TUnderestimates checks R2T's utility guarantee: the answer exceeds
// Q(I) with probability ≤ β = 0.05. With 400 runs the test fails when the
// count of overshoots has binomial tail below 10⁻⁶ under p = β, so it
// fails falsely with probability ≤ 10⁻⁶. R2T without the shift (the
// planted bug) overshoots in almost every run and must fail the same check.
func TestR2TUnderestimates(t *testing.T) {
	const n = 400
	check := func(over int) bool { return binomialTail(n, over, R2TFailure) >= 1e-6 }
	if over := overshoots(t, n, false); !check(over) {
		t.Fatalf("R2T overshot Q(I) in %d of %d runs (β = %v)", over, n, R2TFailure)
	}
	if over := overshoots(t, n, true); check(over) {
		t.Fatalf("R2T without the shift overshot only %d of %d times: the check cannot catch it", over, n)
	}
}
