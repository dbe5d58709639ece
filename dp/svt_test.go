package dp

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

// svtExact returns P[AboveThreshold stops at ℓ] for ℓ = 1..len(f) and, last,
// P[no stop], by numerical integration over the noisy threshold:
// P[ℓ] = ∫ p_T̃(t)·Π_{i<ℓ} F_V(t − f_i)·(1 − F_V(t − f_ℓ)) dt, with
// T̃ ~ T + Lap(2/ε) and F_V the CDF of Lap(4/ε). The trapezoid rule on
// 10⁶ panels over T ± 40·(2/ε), split at the kinks, errs by under 1e-7 per
// probability, far below the chi-square test's resolution (1/√n ≈ 3e-3).
func svtExact(f []float64, T, eps float64) []float64 {
	bT, bV := 2/eps, 4/eps
	cdfV := laplaceCDF(bV)
	out := make([]float64, len(f)+1)
	integrand := func(t float64, out []float64, w float64) {
		p := math.Exp(-math.Abs(t-T)/bT) / (2 * bT) * w
		below := 1.0
		for i, fi := range f {
			c := cdfV(t - fi)
			out[i] += p * below * (1 - c)
			below *= c
		}
		out[len(f)] += p * below
	}
	lo, hi := T-40*bT, T+40*bT
	const panels = 1_000_000
	h := (hi - lo) / panels
	for k := 0; k <= panels; k++ {
		w := h
		if k == 0 || k == panels {
			w = h / 2
		}
		integrand(lo+float64(k)*h, out, w)
	}
	return out
}

func TestAboveThresholdDistribution(t *testing.T) {
	f := []float64{0, 1, 2, 3, 4, 5, 6, 7}
	const T, eps, n = 4.0, 1.0, 100_000
	probs := svtExact(f, T, eps)
	sum := 0.0
	for _, p := range probs {
		sum += p
	}
	if math.Abs(sum-1) > 1e-6 {
		t.Fatalf("exact SVT probabilities sum to %v", sum)
	}
	query := func(l int) (float64, error) { return f[l-1], nil }
	for _, jump := range []int{-1, 0, 3, 5, 8, 20} {
		src := NewSource()
		obs := make([]int64, len(f)+1)
		for range n {
			var l int
			var err error
			if jump < 0 {
				l, err = AboveThreshold(src, query, len(f), T, eps, 1)
			} else {
				l, err = AboveThresholdJumpStart(src, query, len(f), jump, T, eps, 1)
			}
			if err != nil {
				t.Fatal(err)
			}
			if l == 0 {
				l = len(f) + 1
			}
			obs[l-1]++
		}
		chiSquareTest(t, fmt.Sprintf("SVT stopping index (jump start k=%d; -1 = plain)", jump), obs, probs, falseFailure)
	}
}

// With the same seed, jump start returns exactly what plain SVT returns on
// monotone queries, while evaluating fewer of them.
func TestJumpStartMatchesSVT(t *testing.T) {
	f := make([]float64, 40)
	for i := range f {
		f[i] = float64(i * i / 10)
	}
	plainCalls, jumpCalls := 0, 0
	for seed := uint64(1); seed <= 2000; seed++ {
		for _, k := range []int{0, 1, 10, 17, 40, 99} {
			q := func(calls *int) func(int) (float64, error) {
				return func(l int) (float64, error) { *calls++; return f[l-1], nil }
			}
			a, err := AboveThreshold(NewSeededSource(seed), q(&plainCalls), len(f), 60, 0.5, 1)
			if err != nil {
				t.Fatal(err)
			}
			b, err := AboveThresholdJumpStart(NewSeededSource(seed), q(&jumpCalls), len(f), k, 60, 0.5, 1)
			if err != nil {
				t.Fatal(err)
			}
			if a != b {
				t.Fatalf("seed %d, k %d: SVT %d, jump start %d", seed, k, a, b)
			}
		}
	}
	if jumpCalls >= plainCalls {
		t.Errorf("jump start evaluated %d queries, plain SVT %d", jumpCalls, plainCalls)
	}
	t.Logf("queries evaluated: plain %d, jump start %d", plainCalls, jumpCalls)
}

func TestSVTQueryError(t *testing.T) {
	boom := errors.New("boom")
	q := func(int) (float64, error) { return 0, boom }
	if _, err := AboveThreshold(NewSource(), q, 3, 0, 1, 1); !errors.Is(err, boom) {
		t.Errorf("AboveThreshold: err = %v", err)
	}
	if _, err := AboveThresholdJumpStart(NewSource(), q, 3, 2, 0, 1, 1); !errors.Is(err, boom) {
		t.Errorf("AboveThresholdJumpStart: err = %v", err)
	}
	// A threshold far above every query: no index.
	l, err := AboveThreshold(NewSource(), func(int) (float64, error) { return 0, nil }, 5, 1e9, 1, 1)
	if err != nil || l != 0 {
		t.Errorf("got (%d, %v), want (0, nil)", l, err)
	}
}
