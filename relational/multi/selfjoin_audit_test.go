package multi

import (
	"context"
	"math"
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

// TestAuditSelfJoin audits Alg. 2 (polynomial) at (ε, δ) = (4, 10⁻⁴) on
// [selfJoinAuditPair] through the sum of the answers. The QCQPs are
// deterministic: they are solved once per radius by Ipopt and the audit
// repeats the randomised part ([selfJoinNoise], the code RunSelfJoin runs).
// False failure probability ≤ 10⁻⁶. Alg. 2's noise (T̂·r̃·σ with T̂ ≈ 20)
// dwarfs the pair's difference, so this audit has little power: it guards
// the wiring (an instance change reaching the output without noise), not
// the constants.
func TestAuditSelfJoin(t *testing.T) {
	if !ipopt.Available {
		t.Skip("needs -tags ipopt")
	}
	const eps, delta = 4.0, 1e-4
	cfg, err := Config{Epsilon: eps, Delta: delta, GS: 64}.validate()
	if err != nil {
		t.Fatal(err)
	}
	mech := func(groups []JoinGroup) audit.Mechanism[float64] {
		n, ds := 0, 0.0
		vec := map[int][]float64{}
		for _, g := range groups {
			for _, u := range g.Units {
				n = max(n, u+1)
				if vec[u] == nil {
					vec[u] = make([]float64, 2)
				}
				vec[u][g.Coord] += g.Psi
			}
		}
		for _, v := range vec {
			ds = math.Max(ds, math.Hypot(v[0], v[1]))
		}
		p := newProgram(groups, n, 2)
		table := map[int]solved{}
		for l := 1; l <= Rungs(cfg.GS); l++ {
			e, q, _, err := p.solve(context.Background(), math.Ldexp(1, l-1))
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
	d, dPrime := selfJoinAuditPair()
	res := audit.MustRunScalar(t, mech(d), mech(dPrime), auditRuns(8_000), delta)
	t.Logf("%+v", res)
	if res.EpsilonLowerBound > eps {
		t.Errorf("empirical ε lower bound %v > claimed ε = %v (event %s)", res.EpsilonLowerBound, eps, res.Event)
	}
}
