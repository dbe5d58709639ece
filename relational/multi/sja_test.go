package multi

import (
	"context"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/synth-dp/synth/dp"
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

// TestSVTMatchesDP checks that [SVT] is the SVT of package dp: on the same
// seeded source it returns the index of dp.AboveThreshold (k = 0) and of
// dp.AboveThresholdJumpStart (any k), on random non-decreasing sequences.
func TestSVTMatchesDP(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 7))
	for trial := 0; trial < 500; trial++ {
		n := 1 + r.IntN(20)
		f := make([]float64, n+1)
		for l := 1; l <= n; l++ {
			f[l] = f[l-1] + float64(r.IntN(3))
		}
		fn := func(l int) (float64, error) { return f[l] - 10, nil }
		k := r.IntN(n + 1)
		seed := r.Uint64()
		got, err := SVT(dp.NewSeededSource(seed), fn, n, k, -5, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := dp.AboveThresholdJumpStart(dp.NewSeededSource(seed), fn, n, k, -5, 1, 1)
		plain, _ := dp.AboveThreshold(dp.NewSeededSource(seed), fn, n, -5, 1, 1)
		if got != want {
			t.Fatalf("trial %d: SVT %d, dp jump start %d", trial, got, want)
		}
		if k == 0 && got != plain {
			t.Fatalf("trial %d: SVT %d, dp.AboveThreshold %d", trial, got, plain)
		}
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
