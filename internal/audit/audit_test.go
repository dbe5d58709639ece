package audit

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/synth-dp/synth/dp"
)

// laplaceCount is the Laplace mechanism on a count with scale b.
func laplaceCount(b float64) func(dp.Source, float64) float64 {
	return func(src dp.Source, count float64) float64 { return count + dp.Laplace(src, b) }
}

// TestAuditPassesLaplace audits the Laplace mechanism with the right scale
// 1/ε on the neighbouring counts 0 and 1. The bound is valid with
// confidence 1 − 1e-6, so the test fails falsely with probability ≤ 1e-6.
func TestAuditPassesLaplace(t *testing.T) {
	const eps = 1.0
	d, dPrime := Neighbours(laplaceCount(1/eps), 0, 1)
	res, err := RunScalar(context.Background(), d, dPrime, Options{N: 200_000, Confidence: 1 - 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.EpsilonLowerBound > eps {
		t.Fatalf("empirical ε lower bound %v > claimed ε = %v on a correct Laplace mechanism", res.EpsilonLowerBound, eps)
	}
	// The harness must also see most of the true ε: threshold events past 1
	// have ratio exactly e^ε. Failing this is a power failure, not chance:
	// with N = 200 000 the bound is ≈ 0.9, and falls below 0.7 with
	// probability far under 1e-9.
	if res.EpsilonLowerBound < 0.7 {
		t.Fatalf("empirical ε lower bound %v: the audit lost its power", res.EpsilonLowerBound)
	}
}

// TestAuditCatchesUnderNoisedLaplace audits a Laplace mechanism whose
// scale was computed for 2ε while it claims ε: its true ε is 2, and the
// harness must report a lower bound above the claimed ε = 1. At N = 200 000
// the best threshold events (t ≥ 1) have P ≈ 0.068 vs 0.5 and the bound
// is ≈ 1.9; it falls to 1 only if a Clopper–Pearson interval at level
// 1e-6/128 fails, so the false-failure rate is below 1e-6.
func TestAuditCatchesUnderNoisedLaplace(t *testing.T) {
	const eps = 1.0
	d, dPrime := Neighbours(laplaceCount(1/(2*eps)), 0, 1)
	res, err := RunScalar(context.Background(), d, dPrime, Options{N: 200_000, Confidence: 1 - 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if !(res.EpsilonLowerBound > eps) {
		t.Fatalf("empirical ε lower bound %v ≤ claimed ε = %v: the under-noised mechanism was not caught", res.EpsilonLowerBound, eps)
	}
	if res.EpsilonLowerBound > 2 {
		t.Fatalf("empirical ε lower bound %v > true ε = 2", res.EpsilonLowerBound)
	}
}

// randomizedResponse reports the bit truthfully with probability
// e^ε/(1+e^ε): exactly ε-DP, and the events {1} and {0} attain the ratio
// e^ε.
func randomizedResponse(eps float64) func(dp.Source, bool) bool {
	p := math.Exp(eps) / (1 + math.Exp(eps))
	return func(src dp.Source, bit bool) bool {
		if dp.Uniform(src) < p {
			return bit
		}
		return !bit
	}
}

func TestRunEventFamily(t *testing.T) {
	const eps = 1.0
	d, dPrime := Neighbours(randomizedResponse(eps), false, true)
	events := []Event[bool]{
		{Name: "yes", In: func(b bool) bool { return b }},
		{Name: "no", In: func(b bool) bool { return !b }},
	}
	res, err := Run(context.Background(), d, dPrime, events, Options{N: 200_000, Confidence: 1 - 1e-6, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	// Seeded, so deterministic; the bounds also hold for any seed with
	// probability ≥ 1 − 1e-6 (upper) and the power margin (lower) is many
	// standard errors wide.
	if res.EpsilonLowerBound > eps || res.EpsilonLowerBound < 0.9 {
		t.Fatalf("bound %v, want in [0.9, %v]", res.EpsilonLowerBound, eps)
	}
	if res.Intervals != 4 || res.Events != 2 || res.N != 200_000 {
		t.Fatalf("bookkeeping %+v", res)
	}
	if res.CountD+res.CountDPrime == 0 || res.PLower <= res.PUpper {
		t.Fatalf("counts or bounds inconsistent: %+v", res)
	}
	// Same seed, same result.
	again, err := Run(context.Background(), d, dPrime, events, Options{N: 200_000, Confidence: 1 - 1e-6, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if again != res {
		t.Fatalf("seeded audits differ: %+v vs %+v", again, res)
	}
}

// An identical mechanism on both inputs gives no evidence: bound 0.
func TestRunNoEvidence(t *testing.T) {
	d, dPrime := Neighbours(laplaceCount(1), 0, 0)
	res, err := RunScalar(context.Background(), d, dPrime, Options{N: 20_000, Confidence: 1 - 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	// Fails falsely with probability ≤ 1e-6 (one minus the confidence).
	if res.EpsilonLowerBound != 0 || res.Event != "" {
		t.Fatalf("identical inputs gave %+v", res)
	}
}

func TestClopperPearson(t *testing.T) {
	const alpha = 0.05
	// k = 0: the upper bound is 1 − (α/2)^(1/n) in closed form.
	lo, hi := ClopperPearson(0, 100, alpha)
	if lo != 0 || math.Abs(hi-(1-math.Pow(alpha/2, 1.0/100))) > 1e-9 {
		t.Fatalf("k=0: [%v, %v]", lo, hi)
	}
	// k = n: the lower bound is (α/2)^(1/n).
	lo, hi = ClopperPearson(100, 100, alpha)
	if hi != 1 || math.Abs(lo-math.Pow(alpha/2, 1.0/100)) > 1e-9 {
		t.Fatalf("k=n: [%v, %v]", lo, hi)
	}
	// Mirror symmetry and a textbook value: 5 of 10 gives [0.187, 0.813].
	lo, hi = ClopperPearson(5, 10, alpha)
	if math.Abs(lo-0.18709) > 1e-4 || math.Abs(hi-0.81291) > 1e-4 {
		t.Fatalf("5/10: [%v, %v]", lo, hi)
	}
	l2, h2 := ClopperPearson(3, 17, 1e-6)
	l3, h3 := ClopperPearson(14, 17, 1e-6)
	if math.Abs(l2-(1-h3)) > 1e-9 || math.Abs(h2-(1-l3)) > 1e-9 {
		t.Fatalf("not mirror-symmetric: [%v, %v] vs [%v, %v]", l2, h2, l3, h3)
	}
	// Large n at a tiny level stays ordered around the estimate.
	lo, hi = ClopperPearson(13_500, 200_000, 1e-9)
	if !(lo < 0.0675 && 0.0675 < hi && hi-lo < 0.01) {
		t.Fatalf("large n: [%v, %v]", lo, hi)
	}
}

func TestOptionsValidation(t *testing.T) {
	d, dPrime := Neighbours(laplaceCount(1), 0, 1)
	events := []Event[float64]{{Name: "x > 0", In: func(x float64) bool { return x > 0 }}}
	tests := []struct {
		name string
		opt  Options
	}{
		{"negative N", Options{N: -1}},
		{"NaN delta", Options{Delta: math.NaN()}},
		{"negative delta", Options{Delta: -0.1}},
		{"delta one", Options{Delta: 1}},
		{"confidence one", Options{Confidence: 1}},
		{"negative confidence", Options{Confidence: -0.5}},
		{"NaN confidence", Options{Confidence: math.NaN()}},
		{"negative workers", Options{Workers: -2}},
		{"negative thresholds", Options{Thresholds: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Run(context.Background(), d, dPrime, events, tc.opt); !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("Run: err = %v, want ErrInvalidOptions", err)
			}
			if _, err := RunScalar(context.Background(), d, dPrime, tc.opt); !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("RunScalar: err = %v, want ErrInvalidOptions", err)
			}
		})
	}
	if _, err := Run(context.Background(), d, dPrime, nil, Options{}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("no events: err = %v", err)
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, dPrime := Neighbours(laplaceCount(1), 0, 1)
	if _, err := RunScalar(ctx, d, dPrime, Options{N: 1_000_000}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestRunScalarNaN(t *testing.T) {
	nan := func(dp.Source) float64 { return math.NaN() }
	if _, err := RunScalar(context.Background(), nan, nan, Options{N: 2000}); err == nil {
		t.Fatal("NaN outputs accepted")
	}
}

// TestVacuousAudit checks that an audit whose statistic does not vary on
// both inputs — the "mwem weighted family" case of issue 27, 0.5 in every
// run, and of issue 39, 0.5 in all runs but one of 2,000 — is refused with ErrVacuous instead of passing with a bound of 0,
// in RunScalar and in Run, while an audit with one degenerate event among
// informative ones runs and counts it.
func TestVacuousAudit(t *testing.T) {
	ctx := context.Background()
	opt := Options{N: 2000, Seed: 3}
	constant := func(dp.Source) float64 { return 0.5 }
	noisy := func(c float64) Mechanism[float64] {
		return func(src dp.Source) float64 { return c + dp.Laplace(src, 1) }
	}
	// rarely(k, n) is 0.5 except in about k runs of n, where it is a
	// fresh uniform draw.
	rarely := func(k, n uint64) Mechanism[float64] {
		return func(src dp.Source) float64 {
			if src.Uint64()%n < k {
				return dp.Uniform(src)
			}
			return 0.5
		}
	}
	never := Event[float64]{Name: "x > 1e9", In: func(x float64) bool { return x > 1e9 }}
	always := Event[float64]{Name: "x > -1e9", In: func(x float64) bool { return x > -1e9 }}
	positive := Event[float64]{Name: "x > 0", In: func(x float64) bool { return x > 0 }}
	for _, tc := range []struct {
		name           string
		run            func() (Result, error)
		vacuous        bool
		wantDegenerate int
	}{
		{"scalar, constant on both", func() (Result, error) { return RunScalar(ctx, constant, constant, opt) }, true, 0},
		{"scalar, constant on one", func() (Result, error) { return RunScalar(ctx, constant, noisy(0), opt) }, false, 0},
		// Issue 39: constant but for a few runs in 2,000 on each input
		// (the events then occur in a few runs, or all but a few, on both
		// inputs: neither all nor none, yet no evidence).
		{"scalar, constant but for a few runs", func() (Result, error) {
			return RunScalar(ctx, rarely(8, 2000), rarely(8, 2000), opt)
		}, true, 0},
		{"scalar, constant but for a tenth of the runs", func() (Result, error) {
			return RunScalar(ctx, rarely(200, 2000), rarely(200, 2000), opt)
		}, false, 0},
		{"events, all trivial", func() (Result, error) {
			return Run(ctx, noisy(0), noisy(1), []Event[float64]{never, always}, opt)
		}, true, 0},
		{"events, one trivial", func() (Result, error) {
			return Run(ctx, noisy(0), noisy(1), []Event[float64]{never, positive}, opt)
		}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.run()
			if got := errors.Is(err, ErrVacuous); got != tc.vacuous {
				t.Fatalf("err = %v, want ErrVacuous: %v", err, tc.vacuous)
			}
			if !tc.vacuous && err != nil {
				t.Fatal(err)
			}
			if !tc.vacuous && res.Degenerate != tc.wantDegenerate {
				t.Errorf("Degenerate = %d, want %d", res.Degenerate, tc.wantDegenerate)
			}
		})
	}
}
