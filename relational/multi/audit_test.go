package multi

import (
	"context"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/audit"
)

// auditRuns is the number of runs per instance of the privacy audits.
func auditRuns(full int) int {
	if testing.Short() {
		return full / 10
	}
	return full
}

// svtPair is a user-level neighbouring pair on which Count(I, r) − N sits
// at the SVT threshold for many radii: I has 22 units with ‖S_i‖ = 4000
// and 30 with ‖S_i‖ = 1, I′ adds one more unit with ‖S_i‖ = 4000. With
// ε = 10 (ε/10 = 1 for the SVT) and β = 0.1 the threshold is
// T = −6·ln 40 ≈ −22.1, so f(ℓ) = −22 on I and −23 on I′ for every radius
// 2^(ℓ−1) < 4000 (12 radii).
func svtPair() (d, dPrime []Entry) {
	for u := 0; u < 22; u++ {
		d = append(d, Entry{Unit: u, Coord: u % 2, Psi: 4000})
	}
	for u := 22; u < 52; u++ {
		d = append(d, Entry{Unit: u, Coord: 0, Psi: 1})
	}
	dPrime = append(append([]Entry(nil), d...), Entry{Unit: 52, Coord: 1, Psi: 4000})
	return d, dPrime
}

func radiusAudit(t *testing.T, noThresholdNoise bool) audit.Result {
	t.Helper()
	d, dPrime := svtPair()
	// Step 1 of [Run] as Run calls it: the SVT over the sorted norms of the
	// pair (ε = 10, so ε/10 = 1), with the jump start.
	mech := func(es []Entry) audit.Mechanism[float64] {
		cfg, err := Config{Epsilon: 10, Delta: 1e-6, GS: 1 << 16, JumpStart: true}.validate()
		if err != nil {
			t.Fatal(err)
		}
		vecs, err := unitVectors(es, 2)
		if err != nil {
			t.Fatal(err)
		}
		f, n, k, threshold := radiusQueries(context.Background(), vecs, cfg)
		// The samplers are built once per input; each run draws exactly
		// what svt(src, f, n, k, threshold, cfg.Epsilon/10, countGrid,
		// nil, noThresholdNoise) draws.
		noise, err := newSVTNoise(threshold, cfg.Epsilon/10, countGrid)
		if err != nil {
			t.Fatal(err)
		}
		return func(src dp.Source) float64 {
			l, err := noise.run(src, f, n, k, nil, noThresholdNoise)
			if err != nil {
				panic(err)
			}
			return float64(l)
		}
	}
	// 500 thresholds reach the tail events {ĩ > m} of probability ~0.1%
	// where the flawed SVT's privacy loss (e^{1/4} per radius below the
	// threshold) has piled up.
	res, err := audit.RunScalar(context.Background(), mech(d), mech(dPrime),
		audit.Options{N: 200_000, Confidence: 1 - 1e-6, Thresholds: 500, Seed: 15})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestAuditRadiusMutant audits step 1 of Alg. 1 — the released radius r̃ — at its
// claimed ε/10 = 1 (pure DP) on [svtPair], and checks that the same audit
// catches the planted bug "SVT threshold without noise", whose loss grows
// with the number of radii below the threshold. Each audit's bound holds
// with confidence 1 − 10⁻⁶, so the first check fails falsely with
// probability ≤ 10⁻⁶; the audit is seeded (deterministic).
func TestAuditRadiusMutant(t *testing.T) {
	res := radiusAudit(t, false)
	t.Logf("SVT: %+v", res)
	if res.EpsilonLowerBound > 1 {
		t.Errorf("empirical ε lower bound %v > claimed ε/10 = 1 (event %s)", res.EpsilonLowerBound, res.Event)
	}
	mut := radiusAudit(t, true)
	t.Logf("SVT without threshold noise: %+v", mut)
	if mut.EpsilonLowerBound <= 1 {
		t.Errorf("the audit did not catch the SVT without threshold noise: ε lower bound %v ≤ 1", mut.EpsilonLowerBound)
	}
}

// tightPair is the neighbouring pair on which Alg. 1's Gaussian step is
// tight: I′ is empty and I has one unit with S = (4, 0). On both, every
// Count(I, r) − N ≥ −1 lies far above the SVT threshold
// T = −(60/ε)·ln 40 ≈ −111 (ε = 2), so the SVT stops at ℓ = 1, r̃ = 1,
// except with probability ≈ e^{−5} from its noise; the unit is clipped to
// (1, 0), a vector of norm exactly r̃ on one coordinate, and coordinate 0
// is N_ℤ(0, σ²) on I′ and 1 + N_ℤ(0, σ²) on I with σ ≈ 2.08 grid steps —
// the worst case the proof allows. Mutants that double the sensitivity
// (σ halved, clipping at 2r̃) or do not clip shift it further.
func tightPair() (d, dPrime []Entry) {
	return []Entry{{Unit: 0, Coord: 0, Psi: 4}}, nil
}

// gridPair is [tightPair] on the grid g = 1/4 (a SUM's grid): I has one
// unit with S = (16, 0) grid steps = (4, 0) in the query's units, I′ is
// empty. The SVT, which compares norms in the query's units, stops at
// r̃ = 1 as on tightPair; the unit is clipped to (4, 0) grid steps, norm
// exactly r̃/g, and the honest σ = (r̃/g)/√(2ρ) ≈ 8.3 grid steps makes the
// pair as tight as tightPair. Noise computed from r̃ in the query's units
// (σ ≈ 2.1 grid steps, too small by 1/g = 4) shows the shift.
func gridPair() (d, dPrime []Entry) {
	return []Entry{{Unit: 0, Coord: 0, Psi: 16}}, nil
}

// answerPair is a neighbouring pair where the radius matters: 150 units
// with S_i = (3, 4) (norm 5) — more than |T| ≈ 111 at ε = 2, so the SVT
// passes the radii below 5 and stops near r̃ = 8 — and one unit with
// S_i = (600, 800) (norm 1000) in I, which I′ lacks: clipped to about
// (4, 6), it moves the sum by about half a noise σ.
func answerPair() (d, dPrime []Entry) {
	for u := 0; u < 150; u++ {
		dPrime = append(dPrime, Entry{Unit: u, Coord: 0, Psi: 3}, Entry{Unit: u, Coord: 1, Psi: 4})
	}
	d = append(append([]Entry(nil), dPrime...), Entry{Unit: 150, Coord: 0, Psi: 600}, Entry{Unit: 150, Coord: 1, Psi: 800})
	return d, dPrime
}

// TestAuditAnswerMutants audits Alg. 1 end to end ([Run] with the jump
// start) at its claimed (ε, δ) = (2, 10⁻⁴). On [tightPair] (coordinate 0, N runs
// per input; N = 200 000, or 20 000 with -short) the honest mechanism
// must stay at or below ε = 2 and each planted bug must be caught — its
// ε lower bound above 2:
//
//   - σ halved (the same as the sensitivity doubled);
//   - clipping at 2r̃ instead of r̃;
//   - no clipping.
//
// On [answerPair] (through the sum of the two coordinates, the direction
// the clipped unit moves it) the honest mechanism must stay below ε and
// "no clipping" must be caught. On [gridPair] (grid g = 1/4, coordinate
// 0, 20 000 runs, also with -short) the honest mechanism must stay at or
// below ε and σ computed in the query's units instead of grid steps must
// be caught. Each audit holds with confidence 1 − 10⁻⁶
// and is seeded, so the run is deterministic; a false failure of an honest
// check has probability ≤ 10⁻⁶. With -short the mutants are still run but
// only reported (20 000 runs cannot resolve ε above 2 at δ = 10⁻⁴).
func TestAuditAnswerMutants(t *testing.T) {
	const eps = 2.0
	type mutant struct {
		name string
		cfg  Config
	}
	honest := Config{}
	cases := []struct {
		pair    func() ([]Entry, []Entry)
		view    func([]int64) float64
		n       int
		g       float64
		mutants []mutant
	}{
		{tightPair, func(v []int64) float64 { return float64(v[0]) }, 200_000, 1, []mutant{
			{"σ halved", Config{noiseFactor: 0.5}},
			{"clip at 2r̃", Config{clipFactor: 2}},
			{"no clipping", Config{noClip: true}},
		}},
		{answerPair, func(v []int64) float64 { return float64(v[0] + v[1]) }, 20_000, 1, []mutant{
			{"no clipping", Config{noClip: true}},
		}},
		{gridPair, func(v []int64) float64 { return float64(v[0]) }, 20_000, 0.25, []mutant{
			{"σ in query units", Config{sigmaQueryUnits: true}},
		}},
	}
	for i, c := range cases {
		d, dPrime := c.pair()
		n := c.n
		if testing.Short() && n > 20_000 {
			n /= 10
		}
		honest.Quantum = c.g
		res := answerAudit(t, d, dPrime, c.view, honest, n)
		t.Logf("pair %d honest: %+v", i, res)
		if res.EpsilonLowerBound > eps {
			t.Errorf("pair %d: empirical ε lower bound %v > claimed ε = %v (event %s)", i, res.EpsilonLowerBound, eps, res.Event)
		}
		for _, m := range c.mutants {
			m.cfg.Quantum = c.g
			mut := answerAudit(t, d, dPrime, c.view, m.cfg, n)
			t.Logf("pair %d mutant %s: ε lower bound %.3f vs claim %v (%+v)", i, m.name, mut.EpsilonLowerBound, eps, mut)
			if mut.EpsilonLowerBound <= eps && (!testing.Short() || n == c.n) {
				t.Errorf("pair %d: the audit did not catch %q: ε lower bound %v ≤ %v", i, m.name, mut.EpsilonLowerBound, eps)
			}
		}
	}
}

// answerAudit audits [Run] at (ε, δ) = (2, 10⁻⁴) on the pair, with the
// mutation knobs of mut, through view, n runs per input.
func answerAudit(t *testing.T, d, dPrime []Entry, view func([]int64) float64, mut Config, n int) audit.Result {
	t.Helper()
	const eps, delta = 2.0, 1e-4
	mech := func(es []Entry) audit.Mechanism[float64] {
		cfg := mut
		cfg.Epsilon, cfg.Delta, cfg.GS, cfg.JumpStart = eps, delta, 1<<12, true
		// Run(ctx, src, es, 2, cfg) is newRunner(…).run(src): the
		// instance's preparation is done once per input, and each run
		// draws exactly what Run draws (TestRunnerMatchesRun).
		r, err := newRunner(context.Background(), es, 2, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return func(src dp.Source) float64 {
			r, err := r.run(src)
			if err != nil {
				panic(err)
			}
			return view(r.Values)
		}
	}
	res, err := audit.RunScalar(context.Background(), mech(d), mech(dPrime),
		audit.Options{N: n, Delta: delta, Confidence: 1 - 1e-6, Seed: 16, Thresholds: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
