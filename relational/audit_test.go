package relational

import (
	"context"
	"errors"
	"fmt"
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

// rsShiftPair is a tuple-level neighbouring pair on which the true answers
// differ by the whole local sensitivity: R1(a) ⋈ R2(a), both private, with
// R1 = 30 copies of a = 0; I has R2 = {a = 0} (Q = 30), I′ has R2 = ∅
// (Q = 0). Adding R2's tuple moves Q by 30 = LŜ^0 on both, and RS^β = 30
// (LŜ^k = 30 + k and e^{−βk}·(30 + k) is largest at k = 0 for β ≥ 1/30),
// so the shift |Q(I) − Q(I′)| equals RS^β: a mechanism whose noise is
// calibrated to less than R̂S shows it. It returns (q, RS^β, LŜ^0) of both
// instances by brute force.
func rsShiftPair(t *testing.T, beta float64) (d, dPrime [3]float64) {
	t.Helper()
	mk := func(withR2 bool) [3]float64 {
		r1 := &oracleRel{name: "r1", cols: []string{"a", "x"}, keys: []string{"a"}, pred: func(tup) bool { return true }}
		for i := 0; i < 30; i++ {
			r1.rows = append(r1.rows, tup{"a": 0, "x": 0})
		}
		r2 := &oracleRel{name: "r2", cols: []string{"a", "y"}, keys: []string{"a"}, pred: func(tup) bool { return true }}
		if withR2 {
			r2.rows = []tup{{"a": 0, "y": 0}}
		}
		rels := []*oracleRel{r1, r2}
		k := int(math.Ceil(2/-math.Expm1(-beta))) + 2
		rs, _ := bruteRS(rels, beta, k)
		ls, _ := bruteRS(rels, beta, 0)
		return [3]float64{bruteTE(rels, 1<<len(rels)-1), rs, ls}
	}
	return mk(true), mk(false)
}

// rsAudit audits [ReleaseRS] with cfg at its claimed (cfg.Epsilon,
// cfg.Delta) on the pair made by pair, n runs per instance (confidence
// 1 − 10⁻⁶).
func rsAudit(t *testing.T, cfg RSConfig, pair func(*testing.T, float64) ([3]float64, [3]float64), n int) audit.Result {
	t.Helper()
	beta, err := cfg.Beta()
	if err != nil {
		t.Fatal(err)
	}
	d, dPrime := pair(t, beta)
	mech := func(in [3]float64) audit.Mechanism[float64] {
		// ReleaseRS(src, in[0], in[1], in[2], cfg) is
		// newRSRelease(…).run(src): the set-up is done once per input, and
		// each run draws exactly what ReleaseRS draws
		// (TestRSReleaseMatchesReleaseRS).
		rel, err := newRSRelease(in[0], in[1], in[2], cfg)
		if err != nil {
			t.Fatal(err)
		}
		return func(src dp.Source) float64 {
			r, err := rel.run(src)
			if err != nil {
				panic(err)
			}
			return float64(r.Value)
		}
	}
	return audit.MustRunScalar(t, mech(d), mech(dPrime), n, cfg.Delta)
}

// TestAuditRS audits the residual-sensitivity mechanism at its claimed
// (ε, δ), with discrete Laplace and discrete Gaussian noise, on
// [rsShiftPair] (unequal answers: the noise must hide a shift of RS^β) and
// on [rsAuditPair] (equal answers, LŜ^0 jumping from 0 to 30: the noise
// scale must not tell the neighbours apart). The harness's bound holds
// with confidence 1 − 10⁻⁶ per audit, so each fails falsely with
// probability ≤ 10⁻⁶.
func TestAuditRS(t *testing.T) {
	pairs := []struct {
		name string
		pair func(*testing.T, float64) ([3]float64, [3]float64)
	}{{"shift", rsShiftPair}, {"jump", rsAuditPair}}
	for _, p := range pairs {
		for _, cfg := range []RSConfig{
			{Epsilon: 1, Delta: 1e-3, Noise: NoiseLaplace, Bound: 1, Integral: true},
			{Epsilon: 1, Delta: 1e-3, Noise: NoiseGaussian, Bound: 1, Integral: true},
		} {
			res := rsAudit(t, cfg, p.pair, auditRuns())
			t.Logf("%s %+v: %+v", p.name, cfg, res)
			if res.EpsilonLowerBound > cfg.Epsilon {
				t.Errorf("%s %+v: empirical ε lower bound %v > claimed ε = %v (event %s)", p.name, cfg, res.EpsilonLowerBound, cfg.Epsilon, res.Event)
			}
		}
	}
}

// TestAuditRSMutant plants each bug of the mutation table (issue 27) into
// the residual-sensitivity mechanism and checks that the audit of
// [TestAuditRS] rejects it at the claimed (ε, δ) = (1, 10⁻³): its ε lower
// bound, which holds with confidence 1 − 10⁻⁶, must exceed 1. 20 000 runs
// per instance, also with -short (each audit takes about a second).
//
//   - R̂S/8: noise calibrated to R̂S/8, on [rsShiftPair]: the shift of
//     RS^β = 30 against a Laplace scale of about 2·e·30/8 gives a loss of
//     about 1.5 on the tails (the knob acts on Δ, before the noise is
//     chosen; with Gaussian noise 20 000 runs reach only ≈ 0.8 at
//     δ = 10⁻³, so the Laplace audit is the one that catches it);
//   - R̂S dropped (Δ = B: one tuple's noise), on [rsShiftPair];
//   - LŜ^0 in place of RS^β, on [rsAuditPair], where LŜ^0 jumps.
func TestAuditRSMutant(t *testing.T) {
	const n = 20_000
	base := RSConfig{Epsilon: 1, Delta: 1e-3, Bound: 1, Integral: true}
	mutants := []struct {
		name string
		pair func(*testing.T, float64) ([3]float64, [3]float64)
		knob func(*RSConfig)
	}{
		{"R̂S/8, Laplace", rsShiftPair, func(c *RSConfig) { c.rsDivisor = 8 }},
		{"R̂S dropped, Laplace", rsShiftPair, func(c *RSConfig) { c.noRS = true }},
		{"R̂S dropped, Gaussian", rsShiftPair, func(c *RSConfig) { c.noRS, c.Noise = true, NoiseGaussian }},
		{"LŜ^0 for RS^β, Laplace", rsAuditPair, func(c *RSConfig) { c.noSmooth = true }},
	}
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			cfg := base
			m.knob(&cfg)
			res := rsAudit(t, cfg, m.pair, n)
			t.Logf("mutant %s: ε lower bound %.3f vs claim %v (%+v)", m.name, res.EpsilonLowerBound, cfg.Epsilon, res)
			if res.EpsilonLowerBound <= cfg.Epsilon {
				t.Errorf("mutant %q not caught: ε lower bound %v ≤ claim %v", m.name, res.EpsilonLowerBound, cfg.Epsilon)
			}
		})
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

// r2tLadderPair is a user-level neighbouring pair on which every rung of
// R2T is tight: n + 1 units of ψ = GS = 4 (the ladder τ = 2, 4: L = 2
// rungs) and, in I′, n of them. Q(I, τ) − Q(I′, τ) = τ on every rung, and
// with n = 4 (n = 6 for three units, whose LP value is rounded: Δ = τ + 1
// and larger shifts) both instances put each rung's Q(·, τ) − shift near
// 0, so
// the event {output = 0} = {every rung ≤ 0} multiplies the rungs' ratios:
// e^{ε/L} each for the honest race (ε in all), e^{ε} each for the whole ε
// on every rung and e^{2ε/L} each for the rung noise halved (2ε in all,
// P ≈ 0.27 on I′ against 0.037 on I; with three units e^{1.47ε} in all,
// P ≈ 0.12 against 0.027). With k units every contribution
// references unit i in each of the k unit relations, so Q(I, τ) is the
// same closed form whatever the method (flow, LP).
func r2tLadderPair(k int) (d, dPrime []Contribution, counts []int) {
	n := 4
	if k >= 3 {
		n = 6
	}
	for i := 0; i <= n; i++ {
		units := make([]int, k)
		for j := range units {
			units[j] = i
		}
		d = append(d, Contribution{Units: units, Psi: 4})
	}
	counts = make([]int, k)
	for j := range counts {
		counts[j] = n + 1
	}
	return d, withoutUnit(d, n), counts
}

// r2tAudit audits R2T with cfg (ε, GS and mutation knobs) on the pair,
// whose contributions have len(counts) units, n runs per instance. It
// skips the test when three or more units need the clp build tag.
func r2tAudit(t *testing.T, d, dPrime []Contribution, counts []int, cfg R2TConfig, n int) audit.Result {
	t.Helper()
	if _, err := NewTruncation(d, counts); errors.Is(err, ErrNeedsCLP) {
		t.Skipf("%d units need -tags clp", len(counts))
	}
	cfg.Integral = len(counts) <= 2
	mech := func(cs []Contribution) audit.Mechanism[float64] {
		tr := solvedLadder(t, cs, counts, cfg)
		return func(src dp.Source) float64 {
			r, err := RaceToTheTop(context.Background(), src, tr, cfg)
			if err != nil {
				panic(err)
			}
			return float64(r.Value)
		}
	}
	return audit.MustRunScalar(t, mech(d), mech(dPrime), n, 0)
}

// ladderTruncation is a [Truncation] whose values Q(I, τ) were solved
// beforehand: read only, so the audit's concurrent runs share it.
type ladderTruncation map[float64]float64

func (l ladderTruncation) At(_ context.Context, tau float64) (float64, error) {
	v, ok := l[tau]
	if !ok {
		return 0, fmt.Errorf("τ = %v is not on the solved ladder", tau)
	}
	return v, nil
}

// solvedLadder solves Q(I, τ) of the instance cs at every τ (in grid
// steps) of the ladder [RaceToTheTop] walks with cfg, in increasing τ on
// one truncation from [NewTruncation], as every run of R2T on a fresh
// truncation does. Q(I, τ) is a deterministic function of the instance
// and τ, so the runs of an audit that share the result draw and output
// exactly what they would with a truncation of their own; only the max
// flows and LPs are not solved again 2·N times.
func solvedLadder(t *testing.T, cs []Contribution, counts []int, cfg R2TConfig) ladderTruncation {
	t.Helper()
	g := cfg.Quantum
	if g == 0 {
		g = 1
	}
	k, err := baseExponent(cfg.Base)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTruncation(cs, counts)
	if err != nil {
		t.Fatal(err)
	}
	out := ladderTruncation{}
	first, L := ladderStart(g, k), rungsRun(cfg.GS, g, k)
	for j := first; j < first+L; j++ {
		tau := math.Ldexp(1, k*j) / g
		if out[tau], err = tr.At(context.Background(), tau); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestAuditR2T audits R2T (pure ε-DP) at its claimed ε on [r2tPair] (ε = 2,
// GS = 64, one unit and two) and on [r2tLadderPair] (ε = 1, GS = 4; one,
// two and — with -tags clp — three units). False failure probability
// ≤ 10⁻⁶ per audit.
func TestAuditR2T(t *testing.T) {
	d, dPrime := r2tPair()
	two := func(cs []Contribution) []Contribution {
		out := make([]Contribution, len(cs))
		for i, c := range cs {
			out[i] = Contribution{Units: []int{c.Units[0], i % 50}, Psi: c.Psi}
		}
		return out
	}
	type tc struct {
		name      string
		d, dPrime []Contribution
		counts    []int
		cfg       R2TConfig
	}
	cases := []tc{
		{"spread, 1 unit", d, dPrime, []int{101}, R2TConfig{Epsilon: 2, GS: 64}},
		{"spread, 2 units", two(d), two(dPrime), []int{101, 50}, R2TConfig{Epsilon: 2, GS: 64}},
	}
	for k := 1; k <= 3; k++ {
		ld, lp, counts := r2tLadderPair(k)
		cases = append(cases, tc{fmt.Sprintf("ladder, %d units", k), ld, lp, counts, R2TConfig{Epsilon: 1, GS: 4}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := r2tAudit(t, c.d, c.dPrime, c.counts, c.cfg, auditRuns())
			t.Logf("%s: %+v", c.name, res)
			if res.EpsilonLowerBound > c.cfg.Epsilon {
				t.Errorf("%s: empirical ε lower bound %v > claimed ε = %v (event %s)", c.name, res.EpsilonLowerBound, c.cfg.Epsilon, res.Event)
			}
		})
	}
}

// TestAuditR2TMutant plants each R2T bug of the mutation table (issue 27)
// and checks that the audit on [r2tLadderPair] at the claimed ε = 1
// rejects it (ε lower bound, confidence 1 − 10⁻⁶, above 1), with one and
// two units and, with -tags clp, three: the whole ε on every rung (L·ε in
// all), and every rung's noise scale halved. 20 000 runs per instance
// (50 000 with three units, where the margin is smaller), also with
// -short.
func TestAuditR2TMutant(t *testing.T) {
	mutants := []struct {
		name string
		cfg  R2TConfig
	}{
		{"whole ε on every rung", R2TConfig{wholeEpsilon: true}},
		{"rung noise halved", R2TConfig{noiseFactor: 0.5}},
	}
	for k := 1; k <= 3; k++ {
		for _, m := range mutants {
			t.Run(fmt.Sprintf("%s, %d units", m.name, k), func(t *testing.T) {
				d, dPrime, counts := r2tLadderPair(k)
				cfg := m.cfg
				cfg.Epsilon, cfg.GS = 1, 4
				n := 20_000
				if k >= 3 {
					n = 50_000
				}
				res := r2tAudit(t, d, dPrime, counts, cfg, n)
				t.Logf("mutant %s, %d units: ε lower bound %.3f vs claim %v (%+v)", m.name, k, res.EpsilonLowerBound, cfg.Epsilon, res)
				if res.EpsilonLowerBound <= cfg.Epsilon {
					t.Errorf("mutant %q with %d units not caught: ε lower bound %v ≤ claim %v", m.name, k, res.EpsilonLowerBound, cfg.Epsilon)
				}
			})
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
