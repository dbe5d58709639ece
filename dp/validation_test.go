package dp

import (
	"errors"
	"math"
	"testing"
)

var (
	nan  = math.NaN()
	pinf = math.Inf(1)
	ninf = math.Inf(-1)
)

func TestParameterValidation(t *testing.T) {
	noq := func(int) (float64, error) { return 0, nil }
	tests := []struct {
		name string
		call func() error
	}{
		{"Tau NaN ε", func() error { _, err := Tau(nan, 1e-6, 1); return err }},
		{"Tau +Inf ε", func() error { _, err := Tau(pinf, 1e-6, 1); return err }},
		{"Tau zero ε", func() error { _, err := Tau(0, 1e-6, 1); return err }},
		{"Tau zero δ", func() error { _, err := Tau(1, 0, 1); return err }},
		{"Tau δ = 1", func() error { _, err := Tau(1, 1, 1); return err }},
		{"Tau NaN δ", func() error { _, err := Tau(1, nan, 1); return err }},
		{"Tau negative Δ", func() error { _, err := Tau(1, 1e-6, -1); return err }},
		{"Tau -Inf Δ", func() error { _, err := Tau(1, 1e-6, ninf); return err }},
		{"Tau overflow", func() error { _, err := Tau(1e-300, 1e-6, 1e300); return err }},
		{"SigmaAnalytic NaN ε", func() error { _, err := SigmaAnalytic(nan, 1e-6, 1); return err }},
		{"SigmaAnalytic negative ε", func() error { _, err := SigmaAnalytic(-1, 1e-6, 1); return err }},
		{"SigmaAnalytic δ = 0", func() error { _, err := SigmaAnalytic(1, 0, 1); return err }},
		{"SigmaAnalytic δ ≥ 1", func() error { _, err := SigmaAnalytic(1, 1.5, 1); return err }},
		{"SigmaAnalytic Inf Δ", func() error { _, err := SigmaAnalytic(1, 1e-6, pinf); return err }},
		{"SigmaClassical ε ≥ 1", func() error { _, err := SigmaClassical(1, 1e-6, 1); return err }},
		{"SigmaClassical zero Δ", func() error { _, err := SigmaClassical(0.5, 1e-6, 0); return err }},
		{"SigmaClassical NaN δ", func() error { _, err := SigmaClassical(0.5, nan, 1); return err }},
		{"PerStepEpsilon zero ε", func() error { _, err := PerStepEpsilon(0, 1e-6, 3); return err }},
		{"PerStepEpsilon k = 0", func() error { _, err := PerStepEpsilon(1, 1e-6, 0); return err }},
		{"PerStepEpsilon δ = 1", func() error { _, err := PerStepEpsilon(1, 1, 3); return err }},
		{"PerStepEpsilon NaN δ", func() error { _, err := PerStepEpsilon(1, nan, 3); return err }},
		{"BasicComposition none", func() error { _, err := BasicComposition(); return err }},
		{"BasicComposition NaN", func() error { _, err := BasicComposition(Budget{nan, 0}); return err }},
		{"ParallelComposition δ = 1", func() error { _, err := ParallelComposition(Budget{1, 1}); return err }},
		{"GroupPrivacy k = 0", func() error { _, err := GroupPrivacy(Budget{1, 0}, 0); return err }},
		{"GroupPrivacy Inf ε", func() error { _, err := GroupPrivacy(Budget{pinf, 0}, 2); return err }},
		{"RhoGaussian zero σ", func() error { _, err := RhoGaussian(1, 0); return err }},
		{"SigmaForRho NaN ρ", func() error { _, err := SigmaForRho(1, nan); return err }},
		{"RhoPure -Inf", func() error { _, err := RhoPure(ninf); return err }},
		{"ComposeRho none", func() error { _, err := ComposeRho(); return err }},
		{"ComposeRho negative", func() error { _, err := ComposeRho(0.1, -0.1); return err }},
		{"RhoToEpsilon zero ρ", func() error { _, err := RhoToEpsilon(0, 1e-6); return err }},
		{"RhoToEpsilon δ = 0", func() error { _, err := RhoToEpsilon(1, 0); return err }},
		{"RhoToEpsilonSimple δ = 1", func() error { _, err := RhoToEpsilonSimple(1, 1); return err }},
		{"RhoForBudget δ = 0", func() error { _, err := RhoForBudget(Budget{1, 0}); return err }},
		{"DiscreteLaplace zero", func() error { _, err := NewDiscreteLaplace(0); return err }},
		{"DiscreteLaplace NaN", func() error { _, err := NewDiscreteLaplace(nan); return err }},
		{"DiscreteLaplace +Inf", func() error { _, err := NewDiscreteLaplace(pinf); return err }},
		{"DiscreteLaplace too small", func() error { _, err := NewDiscreteLaplace(1e-5); return err }},
		{"DiscreteLaplace too large", func() error { _, err := NewDiscreteLaplace(1e13); return err }},
		{"DiscreteGaussian negative", func() error { _, err := NewDiscreteGaussian(-1); return err }},
		{"DiscreteGaussian -Inf", func() error { _, err := NewDiscreteGaussian(ninf); return err }},
		{"DiscreteGaussian too large", func() error { _, err := NewDiscreteGaussian(1e13); return err }},
		{"SVT zero ε", func() error { _, err := AboveThreshold(NewSource(), noq, 3, 0, 0, 1); return err }},
		{"SVT NaN threshold", func() error { _, err := AboveThreshold(NewSource(), noq, 3, nan, 1, 1); return err }},
		{"SVT Inf sensitivity", func() error { _, err := AboveThreshold(NewSource(), noq, 3, 0, 1, pinf); return err }},
		{"SVT negative n", func() error { _, err := AboveThreshold(NewSource(), noq, -1, 0, 1, 1); return err }},
		{"JumpStart zero Δ", func() error { _, err := AboveThresholdJumpStart(NewSource(), noq, 3, 1, 0, 1, 0); return err }},
		{"JumpStart Inf threshold", func() error { _, err := AboveThresholdJumpStart(NewSource(), noq, 3, 1, pinf, 1, 1); return err }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, ErrInvalidParameter) {
				t.Fatalf("err = %v, want ErrInvalidParameter", err)
			}
			if msg := err.Error(); len(msg) < 4 || msg[:4] != "dp: " {
				t.Errorf("error %q lacks the dp: prefix", msg)
			}
		})
	}
}

// Samplers called with invalid parameters panic (programmer error).
func TestSamplerPanics(t *testing.T) {
	src := NewSource()
	for name, f := range map[string]func(){
		"Laplace zero":          func() { Laplace(src, 0) },
		"Laplace NaN":           func() { Laplace(src, nan) },
		"TLap negative τ":       func() { TLap(src, -1, 1) },
		"TLap Inf b":            func() { TLap(src, 1, pinf) },
		"Gaussian zero":         func() { Gaussian(src, 0) },
		"Gaussian Inf":          func() { Gaussian(src, pinf) },
		"Exponential empty":     func() { Exponential(src, nil, 1, 1) },
		"Exponential NaN ε":     func() { Exponential(src, []float64{1}, nan, 1) },
		"DiscreteLaplace NaN":   func() { DiscreteLaplace(src, nan) },
		"DiscreteGaussian zero": func() { DiscreteGaussian(src, 0) },
		"BernoulliExp zero den": func() { BernoulliExp(src, 1, 0) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		})
	}
}

// constSource is a deterministic fake that returns the same word forever.
type constSource uint64

func (c constSource) Uint64() uint64 { return uint64(c) }
func (c constSource) Seeded() bool   { return true }

var _ Source = constSource(0)

func TestDeterministicWithFakeNoise(t *testing.T) {
	// Uniform stays in the open interval at both extreme words.
	if u := Uniform(constSource(0)); !(u > 0 && u < 1) {
		t.Errorf("Uniform(0) = %v", u)
	}
	if u := Uniform(constSource(math.MaxUint64)); !(u > 0 && u < 1) {
		t.Errorf("Uniform(max) = %v", u)
	}
	// Laplace is finite at the extremes and odd-symmetric about the middle.
	for _, w := range []uint64{0, math.MaxUint64} {
		if x := Laplace(constSource(w), 1); math.IsInf(x, 0) || math.IsNaN(x) {
			t.Errorf("Laplace(word %x) = %v", w, x)
		}
	}
	if a, b := Laplace(constSource(0), 1), Laplace(constSource(math.MaxUint64), 1); math.Abs(a+b) > 1e-9 {
		t.Errorf("Laplace not symmetric: %v vs %v", a, b)
	}
	// The extreme uniform makes TLap hit its ends, never beyond.
	tau := 5.0
	for _, w := range []uint64{0, 1, math.MaxUint64 - 1, math.MaxUint64} {
		if x := TLap(constSource(w), tau, 1); x < 0 || x > 2*tau {
			t.Errorf("TLap(word %x) = %v", w, x)
		}
	}
	// Exponential with all-equal Gumbel noise picks the best score.
	if i := Exponential(constSource(12345), []float64{1, 7, 3}, 1, 1); i != 1 {
		t.Errorf("Exponential picked %d", i)
	}
	// SVT with zero noise words: Laplace(0-word) is the same value for
	// threshold and queries, scaled 2:4, so the outcome is computable.
	v := Laplace(constSource(1<<63), 1) // the middle word: ≈ 0 noise
	if math.Abs(v) > 1e-9 {
		t.Fatalf("middle word gives noise %v", v)
	}
	l, err := AboveThreshold(constSource(1<<63), func(l int) (float64, error) { return float64(l), nil }, 10, 4.5, 1, 1)
	if err != nil || l != 5 {
		t.Errorf("noiseless SVT = %d, %v; want 5", l, err)
	}
}

func TestSources(t *testing.T) {
	if NewSource().Seeded() {
		t.Error("crypto source claims to be seeded")
	}
	a, b := NewSeededSource(42), NewSeededSource(42)
	if !a.Seeded() {
		t.Error("seeded source not marked")
	}
	for range 100 {
		if a.Uint64() != b.Uint64() {
			t.Fatal("seeded sources with one seed differ")
		}
	}
	if NewSeededSource(1).Uint64() == NewSeededSource(2).Uint64() {
		t.Error("different seeds, same first word")
	}
	c1, c2 := NewSource(), NewSource()
	if c1.Uint64() == c2.Uint64() {
		t.Error("two crypto sources agree (probability 2⁻⁶⁴)")
	}
}
