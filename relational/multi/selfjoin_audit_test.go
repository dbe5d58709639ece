package multi

import (
	"context"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/audit"
	"github.com/synth-dp/synth/relational/ipopt"
)

// selfJoinAuditPair is a user-level pair with self-joins: 40 units in 20
// pairs, each pair sharing join results ψ = 3 on both coordinates; I adds
// unit 40, which shares results of ψ = 40 with units 0 and 2 (deleting it
// deletes them).
func selfJoinAuditPair() (d, dPrime []JoinGroup) {
	for u := 0; u < 40; u += 2 {
		dPrime = append(dPrime, JoinGroup{Coord: 0, Units: []int{u, u + 1}, Psi: 3}, JoinGroup{Coord: 1, Units: []int{u, u + 1}, Psi: 3})
	}
	d = append(append([]JoinGroup(nil), dPrime...), JoinGroup{Coord: 0, Units: []int{0, 40}, Psi: 40}, JoinGroup{Coord: 1, Units: []int{2, 40}, Psi: 40})
	return d, dPrime
}

// selfJoinRadiusPair is a self-join pair on which r̃ is large: 100 pairs
// of units share join results of ψ = 300 on both coordinates (each unit's
// norm 300·√2 ≈ 424), so F̂(I, r) ≈ −100·(1 − r/424) stays below the SVT
// threshold T ≈ −30.7 (ε = 4, β = 0.1) for r ≤ 256 and r̃ is 512 (or 256)
// on both instances; I adds unit 200 with one join result of ψ = 400 on
// coordinate 0 (norm 400 < r̃: fully counted). The honest noise,
// T̂·r̃·σ ≈ 2.7·10⁴ grid steps, hides the shift of 400; the mutant whose
// noise is scaled by r = 1 instead of r̃ (σ ≈ 60) shows it.
func selfJoinRadiusPair() (d, dPrime []JoinGroup) {
	for u := 0; u < 200; u += 2 {
		dPrime = append(dPrime, JoinGroup{Coord: 0, Units: []int{u, u + 1}, Psi: 300}, JoinGroup{Coord: 1, Units: []int{u, u + 1}, Psi: 300})
	}
	d = append(append([]JoinGroup(nil), dPrime...), JoinGroup{Coord: 0, Units: []int{200}, Psi: 400})
	return d, dPrime
}

// TestAuditSelfJoinMutant audits Alg. 2 (polynomial) at (ε, δ) = (4, 10⁻⁴)
// through the sum of the answers, 8 000 runs per input (cheap: the runs
// only look the programs up; -short keeps them, the mutant needs them).
// The QCQPs are deterministic: they are solved once per radius by Ipopt
// (and repaired, as RunSelfJoin does) and the audit repeats the randomised
// part ([selfJoinNoise], the code RunSelfJoin runs). Each audit's false
// failure probability is ≤ 10⁻⁶; the audits are seeded.
//
//   - [selfJoinAuditPair], honest: Alg. 2's noise (T̂·r̃·σ with T̂ ≈ 20)
//     dwarfs the pair's difference, so this guards the wiring (an
//     instance change reaching the output without noise), not the
//     constants.
//   - [selfJoinRadiusPair], honest and the planted bug "noise scaled by
//     r = 1 instead of r̃", which must be caught (ε lower bound > 4).
func TestAuditSelfJoinMutant(t *testing.T) {
	if !ipopt.Available {
		t.Skip("needs -tags ipopt")
	}
	const eps = 4.0
	d, dPrime := selfJoinAuditPair()
	res := selfJoinAudit(t, d, dPrime, 64, Config{})
	t.Logf("pair 1 honest: %+v", res)
	if res.EpsilonLowerBound > eps {
		t.Errorf("pair 1: empirical ε lower bound %v > claimed ε = %v (event %s)", res.EpsilonLowerBound, eps, res.Event)
	}
	d, dPrime = selfJoinRadiusPair()
	res = selfJoinAudit(t, d, dPrime, 1024, Config{})
	t.Logf("pair 2 honest: %+v", res)
	if res.EpsilonLowerBound > eps {
		t.Errorf("pair 2: empirical ε lower bound %v > claimed ε = %v (event %s)", res.EpsilonLowerBound, eps, res.Event)
	}
	mut := selfJoinAudit(t, d, dPrime, 1024, Config{noiseRadiusOne: true})
	t.Logf("pair 2 noise scaled by r = 1: %+v", mut)
	if mut.EpsilonLowerBound <= eps {
		t.Errorf("the audit did not catch Alg. 2 with noise scaled by r = 1 instead of r̃: ε lower bound %v ≤ %v", mut.EpsilonLowerBound, eps)
	}
}

// selfJoinAudit audits Alg. 2 at (ε, δ) = (4, 10⁻⁴) on a pair of join
// group lists with d = 2, the ladder up to gs, and the mutation knobs of
// mut.
func selfJoinAudit(t *testing.T, d, dPrime []JoinGroup, gs float64, mut Config) audit.Result {
	t.Helper()
	const delta = 1e-4
	mut.Epsilon, mut.Delta, mut.GS = 4, delta, gs
	cfg, err := mut.validate()
	if err != nil {
		t.Fatal(err)
	}
	mech := func(groups []JoinGroup) audit.Mechanism[float64] {
		// As runSelfJoin, with every rung's program solved once up front
		// (the solves are deterministic; the runs draw only the noise).
		groups, n, ds, err := selfJoinInstance(groups, 2, cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := newProgram(groups, n, 2)
		table := map[int]solved{}
		for l := 1; l <= Rungs(cfg.GS); l++ {
			e, q, _, err := p.solveRung(context.Background(), l, cfg)
			if err != nil {
				t.Fatal(err)
			}
			table[l] = solved{e, q}
		}
		return func(src dp.Source) float64 {
			var res SelfJoinResult
			if err := selfJoinNoise(src, func(l int) (solved, error) { return table[l], nil }, n, 2, ds, cfg, &res); err != nil {
				panic(err)
			}
			return float64(res.Values[0] + res.Values[1])
		}
	}
	res, err := audit.RunScalar(context.Background(), mech(d), mech(dPrime),
		audit.Options{N: 8_000, Delta: delta, Confidence: 1 - 1e-6, Seed: 17})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
