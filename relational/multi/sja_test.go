package multi

import (
	"context"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/stattest"
)

// randomEntries draws n units with contributions to d coordinates, heavy
// tailed so that some units are clipped.
func randomEntries(r *rand.Rand, n, d int) []Entry {
	var out []Entry
	for u := 0; u < n; u++ {
		scale := math.Pow(2, float64(r.IntN(12)))
		for k := 0; k < d; k++ {
			if r.IntN(3) == 0 {
				out = append(out, Entry{Unit: u, Coord: k, Psi: math.Floor(r.Float64() * scale)})
			}
		}
	}
	return out
}

// bruteClip is the oracle of the clipped sum: x_k is the largest integer x
// with x·‖S‖ ≤ S_k·r, decided exactly as x²·Σ S_j² ≤ S_k²·r² in integers.
func bruteClip(entries []Entry, d int, r int64) []int64 {
	vec := map[int][]int64{}
	for _, e := range entries {
		if vec[e.Unit] == nil {
			vec[e.Unit] = make([]int64, d)
		}
		vec[e.Unit][e.Coord] += int64(e.Psi)
	}
	sum := make([]int64, d)
	R := big.NewInt(r)
	R2 := new(big.Int).Mul(R, R)
	for _, s := range vec {
		n2 := new(big.Int)
		for _, v := range s {
			n2.Add(n2, new(big.Int).Mul(big.NewInt(v), big.NewInt(v)))
		}
		for k, v := range s {
			if n2.Cmp(R2) <= 0 {
				sum[k] += v
				continue
			}
			rhs := new(big.Int).Mul(new(big.Int).Mul(big.NewInt(v), big.NewInt(v)), R2)
			lo, hi := int64(0), v // largest x in [0, v] with x²·n2 ≤ rhs
			for lo < hi {
				m := (lo + hi + 1) / 2
				lhs := new(big.Int).Mul(new(big.Int).Mul(big.NewInt(m), big.NewInt(m)), n2)
				if lhs.Cmp(rhs) <= 0 {
					lo = m
				} else {
					hi = m - 1
				}
			}
			sum[k] += lo
		}
	}
	return sum
}

// TestClippedSumBruteForce compares the clipped sum with the exact oracle
// on 300 random instances and radii, and checks ‖x_i‖ ≤ r for every unit.
func TestClippedSumBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		d := 1 + r.IntN(6)
		entries := randomEntries(r, 1+r.IntN(20), d)
		vecs, err := unitVectors(entries, d)
		if err != nil {
			t.Fatal(err)
		}
		rad := int64(1) << r.IntN(12)
		got := clippedSum(vecs, float64(rad), d)
		want := bruteClip(entries, d, rad)
		for k := range want {
			if got[k] != want[k] {
				t.Fatalf("trial %d (d=%d, r=%d): clipped sum %v, brute force %v", trial, d, rad, got, want)
			}
		}
	}
}

// TestRadiusBruteForce checks the radius Alg. 1 picks when the SVT noise is
// negligible (ε = 10¹², so T ≈ −2·10⁻¹⁰, the SVT noise is below 10⁻⁹ and σ ≈ 10⁻³ grid steps with
// overwhelming probability): the smallest power of two r ≥ 1 with no unit
// above r, i.e. DS_Q(I) rounded up, found by brute force; with no clipping
// and σ at the sampler's floor the answers equal the true sums.
func TestRadiusBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	src := dp.NewSeededSource(5)
	for trial := 0; trial < 100; trial++ {
		d := 1 + r.IntN(5)
		entries := randomEntries(r, 1+r.IntN(15), d)
		ds := 0.0
		vec := map[int][]float64{}
		truth := make([]int64, d)
		for _, e := range entries {
			if vec[e.Unit] == nil {
				vec[e.Unit] = make([]float64, d)
			}
			vec[e.Unit][e.Coord] += e.Psi
			truth[e.Coord] += int64(e.Psi)
		}
		for _, v := range vec {
			s := 0.0
			for _, x := range v {
				s += x * x
			}
			ds = math.Max(ds, math.Sqrt(s))
		}
		want := 1.0
		for want < ds {
			want *= 2
		}
		for _, jump := range []bool{false, true} {
			res, err := Run(context.Background(), src, entries, d, Config{Epsilon: 1e12, Delta: 1e-6, GS: 1 << 20, JumpStart: jump})
			if err != nil {
				t.Fatal(err)
			}
			if res.Radius != want {
				t.Fatalf("trial %d: radius %v, brute force %v (DS = %v)", trial, res.Radius, want, ds)
			}
			for k := range truth {
				if res.Values[k] != truth[k] {
					t.Fatalf("trial %d: values %v, truth %v", trial, res.Values, truth)
				}
			}
		}
	}
}

// aboveThresholdRef is plain AboveThreshold on the grid, written the
// simplest way: T̃ = ⌈scale·T⌉ + ρ, then for ℓ = 1, 2, … draw v_ℓ and stop
// at the first ⌊scale·f(ℓ)⌋ + v_ℓ ≥ T̃. It draws in the order [svt] does.
func aboveThresholdRef(src dp.Source, f func(int) float64, n int, threshold, eps float64, g svtGrid) int {
	lapT, _ := dp.NewDiscreteLaplace(dp.NoiseScale(2*float64(g.sens), eps)) // scales rounded up, as in svt
	lapV, _ := dp.NewDiscreteLaplace(dp.NoiseScale(4*float64(g.sens), eps))
	tt := int64(math.Ceil(g.scale*threshold)) + lapT.Sample(src)
	for l := 1; l <= n; l++ {
		v := lapV.Sample(src)
		if int64(math.Floor(g.scale*f(l)))+v >= tt {
			return l
		}
	}
	return 0
}

// TestSVTMatchesReference checks that [SVT] (real grid) and Alg. 1's SVT
// (count grid), with the jump start from any k, return on the same seeded
// source the index of plain AboveThreshold written naively, on random
// non-decreasing sequences: the jump start changes which f(ℓ) are
// computed, never the output.
func TestSVTMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 7))
	for trial := 0; trial < 2000; trial++ {
		n := 1 + r.IntN(20)
		f := make([]float64, n+1)
		for l := 1; l <= n; l++ {
			f[l] = f[l-1] + float64(r.IntN(3))
			if trial%2 == 1 {
				f[l] += r.Float64() // real-valued for the real grid
			}
		}
		g := countGrid
		if trial%2 == 1 {
			g = realGrid
		}
		fn := func(l int) (float64, error) { return f[l] - 10, nil }
		k := r.IntN(n + 1)
		seed := r.Uint64()
		var got int
		var err error
		if g == realGrid {
			got, err = SVT(dp.NewSeededSource(seed), fn, n, k, -5.5, 1, nil)
		} else {
			got, err = svt(dp.NewSeededSource(seed), fn, n, k, -5.5, 1, g, nil, false)
		}
		if err != nil {
			t.Fatal(err)
		}
		want := aboveThresholdRef(dp.NewSeededSource(seed), func(l int) float64 { return f[l] - 10 }, n, -5.5, 1, g)
		if got != want {
			t.Fatalf("trial %d (grid %+v, k = %d): SVT %d, reference %d", trial, g, k, got, want)
		}
	}
}

// svtPMF is the exact output distribution of plain AboveThreshold on the
// grid g over the fixed values F (grid steps) and threshold t (grid
// steps): a sum over the threshold noise ρ of the discrete Laplace pmf.
func svtPMF(F []int64, t int64, eps float64, g svtGrid) []float64 {
	bT, bV := 2*float64(g.sens)/eps, 4*float64(g.sens)/eps
	pmf := func(b float64, x int64) float64 {
		r := math.Exp(-1 / b)
		return (1 - r) / (1 + r) * math.Pow(r, math.Abs(float64(x)))
	}
	geq := func(b float64, x int64) float64 { // P[v ≥ x]
		r := math.Exp(-1 / b)
		if x <= 0 {
			return 1 - math.Pow(r, float64(-x+1))/(1+r)
		}
		return math.Pow(r, float64(x)) / (1 + r)
	}
	out := make([]float64, len(F)+1)
	lim := int64(60*bT) + 60
	for rho := -lim; rho <= lim; rho++ {
		pr := pmf(bT, rho)
		below := 1.0
		for l, fl := range F {
			p := geq(bV, t+rho-fl)
			out[l+1] += pr * below * p
			below *= 1 - p
		}
		out[0] += pr * below
	}
	return out
}

// TestSVTDistribution: 200 000 runs of the SVT on three fixed queries
// (F = −4, 2, 2 grid steps of 1/4 against T = 0, scale 4 with K = 4 steps,
// ε = 1) against the exact output pmf, chi-square at level 10⁻⁶ (the
// asymptotic 1 − 10⁻⁶ quantile; the test fails falsely with probability
// about 10⁻⁶). The same test rejects the planted bug "K halved" (the
// noise at half its scale).
func TestSVTDistribution(t *testing.T) {
	t.Parallel()
	honest, halved := svtGrid{scale: 4, sens: 4}, svtGrid{scale: 4, sens: 2}
	vals := []float64{-1, 0.5, 0.5}
	F := []int64{-4, 2, 2}
	fn := func(l int) (float64, error) { return vals[l-1], nil }
	want := svtPMF(F, 0, 1, honest)
	run := func(g svtGrid) []int64 {
		src := dp.NewSource()
		obs := make([]int64, len(F)+1)
		// svt(src, fn, len(F), 2, 0, 1, g, nil, false) with its samplers
		// built once: the same draws.
		noise, err := newSVTNoise(0, 1, g)
		if err != nil {
			t.Fatal(err)
		}
		for range 200_000 {
			l, err := noise.run(src, fn, len(F), 2, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			obs[l]++
		}
		return obs
	}
	obs := run(honest)
	if r, err := stattest.ChiSquare(obs, want, 1e-6); err != nil || r.Reject() {
		t.Errorf("SVT output counts %v, exact pmf %v: %v (err %v)", obs, want, r, err)
	}
	bad := run(halved)
	if r, err := stattest.ChiSquare(bad, want, 1e-6); err != nil || !r.Reject() {
		t.Errorf("the test did not reject the SVT with K halved: counts %v, %v (err %v)", bad, r, err)
	}
}

// TestJumpStartSkips shows the jump start at work: 200 units with
// ‖S_i‖ ≈ 2¹⁴ (DS ≈ 2¹⁴, 21 radii). The plain SVT computes Count(I, 2^ℓ)
// for every ℓ up to the stopping point (15 or more); the jump start from
// k = 16 computes a few near k and skips the rest, with the same radius on
// the same seed.
func TestJumpStartSkips(t *testing.T) {
	var entries []Entry
	for u := 0; u < 200; u++ {
		entries = append(entries, Entry{Unit: u, Coord: u % 3, Psi: float64(16000 + u)})
	}
	for seed := uint64(1); seed <= 20; seed++ {
		cfg := Config{Epsilon: 4, Delta: 1e-7, GS: 1 << 20}
		plain, err := Run(context.Background(), dp.NewSeededSource(seed), entries, 3, cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg.JumpStart = true
		jump, err := Run(context.Background(), dp.NewSeededSource(seed), entries, 3, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if plain.Radius != jump.Radius {
			t.Fatalf("seed %d: radius %v plain, %v with jump start", seed, plain.Radius, jump.Radius)
		}
		if len(plain.Trace.Evaluated) < 15 || len(jump.Trace.Evaluated) > 6 || jump.Trace.Skipped < 10 {
			t.Fatalf("seed %d: plain SVT evaluated %v, jump start evaluated %v and skipped %d", seed,
				plain.Trace.Evaluated, jump.Trace.Evaluated, jump.Trace.Skipped)
		}
		if seed == 1 {
			t.Logf("plain SVT computed Count at ℓ = %v; jump start at ℓ = %v (skipped %d); r̃ = %v",
				plain.Trace.Evaluated, jump.Trace.Evaluated, jump.Trace.Skipped, jump.Radius)
		}
	}
}

// TestRunInvalid rejects bad parameters and entries.
func TestRunInvalid(t *testing.T) {
	ok := []Entry{{Unit: 0, Coord: 0, Psi: 1}}
	for _, tc := range []struct {
		name    string
		entries []Entry
		d       int
		cfg     Config
	}{
		{"zero ε", ok, 1, Config{Epsilon: 0, Delta: 1e-6, GS: 8}},
		{"NaN ε", ok, 1, Config{Epsilon: math.NaN(), Delta: 1e-6, GS: 8}},
		{"Inf ε", ok, 1, Config{Epsilon: math.Inf(1), Delta: 1e-6, GS: 8}},
		{"zero δ", ok, 1, Config{Epsilon: 1, GS: 8}},
		{"δ = 1", ok, 1, Config{Epsilon: 1, Delta: 1, GS: 8}},
		{"GS < 1", ok, 1, Config{Epsilon: 1, Delta: 1e-6, GS: 0.5}},
		{"grid 3", ok, 1, Config{Epsilon: 1, Delta: 1e-6, GS: 8, Quantum: 3}},
		{"β = 1", ok, 1, Config{Epsilon: 1, Delta: 1e-6, GS: 8, Failure: 1}},
		{"d = 0", ok, 0, Config{Epsilon: 1, Delta: 1e-6, GS: 8}},
		{"coordinate out of range", []Entry{{Coord: 2, Psi: 1}}, 2, Config{Epsilon: 1, Delta: 1e-6, GS: 8}},
		{"negative ψ", []Entry{{Psi: -1}}, 1, Config{Epsilon: 1, Delta: 1e-6, GS: 8}},
		{"fractional ψ", []Entry{{Psi: 0.5}}, 1, Config{Epsilon: 1, Delta: 1e-6, GS: 8}},
	} {
		_, err := Run(context.Background(), dp.NewSeededSource(1), tc.entries, tc.d, tc.cfg)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error %v, want ErrInvalid", tc.name, err)
		}
	}
}

// TestNoiseCalibration checks the noise of the answers: with r̃ forced to
// the top radius (no units, GS = 2⁴ so r̃ = 1 … the SVT stops at ℓ = 1
// with high probability; we read r̃ from the result), the sample variance
// of Values over 4000 coordinates must be within 5 standard errors of σ²
// (σ = Result.Sigma): false failure probability below 10⁻⁵ (normal
// approximation of the sample variance, kurtosis 3).
func TestNoiseCalibration(t *testing.T) {
	const d = 4000
	res, err := Run(context.Background(), dp.NewSeededSource(9), nil, d, Config{Epsilon: 1, Delta: 1e-6, GS: 16})
	if err != nil {
		t.Fatal(err)
	}
	v := 0.0
	for _, x := range res.Values {
		v += float64(x) * float64(x)
	}
	v /= d
	s2 := res.Sigma * res.Sigma
	se := s2 * math.Sqrt(2.0/d)
	if math.Abs(v-s2) > 5*se+1.0/12 {
		t.Fatalf("sample variance %v, σ² = %v (σ = %v, r̃ = %v)", v, s2, res.Sigma, res.Radius)
	}
	rho, _ := dp.RhoForBudget(dp.Budget{Epsilon: 0.9, Delta: 1e-6})
	if want := res.Radius / math.Sqrt(2*rho); math.Abs(res.Sigma-want) > 1e-9*want {
		t.Fatalf("σ = %v, want r̃/√(2ρ) = %v", res.Sigma, want)
	}
}

// TestRealGridMargin checks the "+1" of realGrid's K = 1025 by brute
// force: for neighbours whose exact f differ by at most 1 (sensitivity 1)
// and whose computed errors differ by at most 2⁻¹⁰, the grid values
// ⌊1024·f⌋ move by at most K steps — the integer sensitivity the SVT's
// noise (b_T = 2K/ε, b_V = 4K/ε, [svt]) is calibrated to. One planted pair
// moves by exactly 1025, so K = 1024 fails.
func TestRealGridMargin(t *testing.T) {
	if realGrid.scale != 1024 || realGrid.sens != 1025 {
		t.Errorf("realGrid = %+v, want scale 1024 and K = 1025", realGrid)
	}
	r := rand.New(rand.NewPCG(7, 8))
	type pair struct{ a, b float64 }
	pairs := []pair{{0.5 / 1024, 0.5/1024 + 1 + 0.9/1024}} // ⌊⌋ = 0 and 1025
	for range 100_000 {
		f := 1000 * (2*r.Float64() - 1)
		move := 2*r.Float64() - 1
		if r.IntN(3) == 0 {
			move = float64(2*r.IntN(2) - 1)
		}
		e1, e2 := 0x1p-11*(2*r.Float64()-1), 0x1p-11*(2*r.Float64()-1)
		pairs = append(pairs, pair{f + e1, f + move + e2})
	}
	worst := int64(0)
	for _, p := range pairs {
		d := realGrid.at(p.a) - realGrid.at(p.b)
		worst = max(worst, d, -d)
	}
	if worst > realGrid.sens {
		t.Errorf("grid values moved by %d steps > K = %d", worst, realGrid.sens)
	}
	if worst <= 1024 {
		t.Errorf("largest move %d ≤ 1024: the pairs do not show the +1 is needed", worst)
	}
}
