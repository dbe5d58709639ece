package dp

import (
	"errors"
	"math"
	"testing"
)

func TestTau(t *testing.T) {
	tau, err := Tau(1, 1e-6, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * math.Log(1+(math.E-1)/1e-6); math.Abs(tau-want) > 1e-12*want {
		t.Errorf("Tau = %v, want %v", tau, want)
	}
}

// TLap^τ_{Δ/ε} added to values v and v+Δ is (ε, δ)-DP: the hockey-stick
// divergence ∫ max(0, p − e^ε·q), computed by the midpoint rule, is ≤ δ in
// both directions (and not far below: the bound is nearly tight).
func TestTLapIsDP(t *testing.T) {
	for _, p := range []struct{ eps, delta, sens float64 }{{1, 1e-3, 1}, {0.3, 1e-2, 2}, {2, 1e-4, 0.5}} {
		tau, _ := Tau(p.eps, p.delta, p.sens)
		b := p.sens / p.eps
		z := 2 * b * -math.Expm1(-tau/b)
		dens := func(x, v float64) float64 {
			if x < v || x > v+2*tau {
				return 0
			}
			return math.Exp(-math.Abs(x-v-tau)/b) / z
		}
		for _, dir := range []float64{1, -1} {
			const steps = 2_000_000
			lo, hi := math.Min(0, dir*p.sens), math.Max(2*tau, 2*tau+dir*p.sens)
			h := (hi - lo) / steps
			hs := 0.0
			for k := 0; k < steps; k++ {
				x := lo + (float64(k)+0.5)*h
				hs += math.Max(0, dens(x, 0)-math.Exp(p.eps)*dens(x, dir*p.sens)) * h
			}
			if hs > p.delta*(1+1e-3) || hs < p.delta/2 {
				t.Errorf("ε=%v δ=%v Δ=%v dir %v: hockey-stick divergence %v", p.eps, p.delta, p.sens, dir, hs)
			}
		}
	}
}

func TestAdvancedComposition(t *testing.T) {
	// Formula check.
	if got, want := AdvancedEpsilon(0.01, 100, 1e-6), math.Sqrt(200*math.Log(1e6))*0.01+100*0.01*math.Expm1(0.01); math.Abs(got-want) > 1e-15 {
		t.Errorf("AdvancedEpsilon = %v, want %v", got, want)
	}
	for _, p := range []struct {
		eps, delta float64
		k          int
	}{{1, 1e-6, 1}, {1, 1e-6, 10}, {1, 1e-6, 1000}, {0.5, 1e-9, 20000}, {8, 1e-3, 50}, {1, 0, 100}} {
		e0, err := PerStepEpsilon(p.eps, p.delta, p.k)
		if err != nil {
			t.Fatal(err)
		}
		basic := p.eps / float64(p.k)
		if e0 < basic*(1-1e-12) {
			t.Errorf("%+v: ε₀ = %v below basic %v", p, e0, basic)
		}
		if e0 > basic*(1+1e-12) {
			if p.delta == 0 {
				t.Errorf("%+v: δ = 0 must give basic composition", p)
			}
			if a := AdvancedEpsilon(e0, p.k, p.delta); a > p.eps*(1+1e-9) {
				t.Errorf("%+v: ε₀ = %v composes to %v > ε", p, e0, a)
			}
			// Maximal: a bit more overshoots.
			if a := AdvancedEpsilon(e0*(1+1e-6), p.k, p.delta); a <= p.eps {
				t.Errorf("%+v: ε₀ = %v is not the largest", p, e0)
			}
		}
	}
	// Advanced beats basic for many steps.
	if e0, _ := PerStepEpsilon(1, 1e-6, 1000); e0 < 3*(1.0/1000) {
		t.Errorf("advanced composition not used: ε₀ = %v", e0)
	}
}

func TestBasicParallelGroup(t *testing.T) {
	b, err := BasicComposition(Budget{0.5, 1e-6}, Budget{0.25, 0}, Budget{0.25, 2e-6})
	if err != nil || math.Abs(b.Epsilon-1) > 1e-15 || math.Abs(b.Delta-3e-6) > 1e-20 {
		t.Errorf("basic = %+v, %v", b, err)
	}
	b, err = ParallelComposition(Budget{0.5, 1e-6}, Budget{0.25, 0}, Budget{0.3, 2e-6})
	if err != nil || b != (Budget{0.5, 2e-6}) {
		t.Errorf("parallel = %+v, %v", b, err)
	}
	g, err := GroupPrivacy(Budget{0.1, 1e-7}, 5)
	if err != nil || math.Abs(g.Epsilon-0.5) > 1e-15 || math.Abs(g.Delta-5*math.Exp(0.4)*1e-7) > 1e-20 {
		t.Errorf("group = %+v, %v", g, err)
	}
	if g, _ := GroupPrivacy(Budget{0.1, 0}, 3); g.Delta != 0 {
		t.Errorf("pure group privacy gained δ: %+v", g)
	}
	if _, err := GroupPrivacy(Budget{1, 1e-3}, 20); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("δ ≥ 1 accepted: %v", err)
	}
}

// gaussianDelta matches an independent numerical integral of the
// hockey-stick divergence between N(0, σ²) and N(1, σ²).
func TestGaussianDeltaMatchesIntegral(t *testing.T) {
	for _, p := range []struct{ eps, sigma float64 }{{1, 1}, {0.5, 3}, {2, 0.7}, {0.1, 10}} {
		pd := func(x, m float64) float64 {
			return math.Exp(-(x-m)*(x-m)/(2*p.sigma*p.sigma)) / (p.sigma * math.Sqrt(2*math.Pi))
		}
		lo, hi := -40*p.sigma, 40*p.sigma
		const steps = 1_000_000
		h := (hi - lo) / steps
		hs := 0.0
		for k := 0; k < steps; k++ {
			x := lo + (float64(k)+0.5)*h
			hs += math.Max(0, pd(x, 0)-math.Exp(p.eps)*pd(x, 1)) * h
		}
		if got := gaussianDelta(p.eps, p.sigma); math.Abs(got-hs) > 1e-8+1e-6*hs {
			t.Errorf("ε=%v σ=%v: formula δ = %v, integral %v", p.eps, p.sigma, got, hs)
		}
	}
}

func TestSigmaAnalytic(t *testing.T) {
	for _, p := range []struct{ eps, delta, sens float64 }{
		{1, 1e-5, 1}, {0.1, 1e-6, 3}, {5, 1e-10, 1}, {0.01, 0.1, 0.2}, {30, 1e-12, 1},
	} {
		s, err := SigmaAnalytic(p.eps, p.delta, p.sens)
		if err != nil {
			t.Fatal(err)
		}
		if d := gaussianDelta(p.eps, s/p.sens); d > p.delta {
			t.Errorf("%+v: σ = %v gives δ = %v > target", p, s, d)
		}
		if d := gaussianDelta(p.eps, s*(1-1e-6)/p.sens); d <= p.delta {
			t.Errorf("%+v: σ = %v is not the smallest", p, s)
		}
		if p.eps < 1 {
			c, err := SigmaClassical(p.eps, p.delta, p.sens)
			if err != nil {
				t.Fatal(err)
			}
			if s > c {
				t.Errorf("%+v: analytic σ %v > classical %v", p, s, c)
			}
		}
	}
	// Balle–Wang's example (their Fig. 1): ε = 1, δ = 1e-5 needs σ ≈ 3.73
	// against the classical formula's 4.84 (not valid at ε = 1).
	if s, _ := SigmaAnalytic(1, 1e-5, 1); math.Abs(s-3.73) > 0.01 {
		t.Errorf("SigmaAnalytic(1, 1e-5, 1) = %v, want ≈ 3.73", s)
	}
}

func TestZCDP(t *testing.T) {
	rho, err := RhoGaussian(2, 4)
	if err != nil || rho != 4.0/32 {
		t.Fatalf("RhoGaussian = %v, %v", rho, err)
	}
	if s, _ := SigmaForRho(2, rho); math.Abs(s-4) > 1e-12 {
		t.Errorf("SigmaForRho = %v, want 4", s)
	}
	if r, _ := RhoPure(0.5); r != 0.125 {
		t.Errorf("RhoPure = %v", r)
	}
	if r, _ := ComposeRho(0.1, 0.2, 0.3); math.Abs(r-0.6) > 1e-15 {
		t.Errorf("ComposeRho = %v", r)
	}
	for _, p := range []struct{ rho, delta float64 }{{0.01, 1e-6}, {0.125, 1e-5}, {1, 1e-9}, {5, 1e-3}} {
		simple, _ := RhoToEpsilonSimple(p.rho, p.delta)
		if want := p.rho + 2*math.Sqrt(p.rho*math.Log(1/p.delta)); simple != want {
			t.Errorf("simple = %v, want %v", simple, want)
		}
		cks, err := RhoToEpsilon(p.rho, p.delta)
		if err != nil {
			t.Fatal(err)
		}
		if cks > simple || cks >= simple*0.999 {
			t.Errorf("%+v: CKS ε %v not tighter than simple %v", p, cks, simple)
		}
		// The Gaussian with ρ = 1/(2σ²) is ρ-zCDP, so its exact ε at δ
		// (Balle–Wang) is a lower bound on any valid conversion.
		sigma := 1 / math.Sqrt(2*p.rho)
		lo, hi := 0.0, simple
		for range 200 {
			mid := (lo + hi) / 2
			if gaussianDelta(mid, sigma) > p.delta {
				lo = mid
			} else {
				hi = mid
			}
		}
		if cks < hi {
			t.Errorf("%+v: CKS ε %v below the Gaussian's exact ε %v: conversion unsound", p, cks, hi)
		}
	}
	b := Budget{Epsilon: 1, Delta: 1e-6}
	r, err := RhoForBudget(b)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := RhoToEpsilon(r, b.Delta); e > b.Epsilon {
		t.Errorf("RhoForBudget %v converts to %v > ε", r, e)
	}
	if e, _ := RhoToEpsilon(r*(1+1e-6), b.Delta); e <= b.Epsilon {
		t.Errorf("RhoForBudget %v is not the largest", r)
	}
}

// TestRhoForBudgetMemo: the memoised value is the computed one, on first
// and later calls.
func TestRhoForBudgetMemo(t *testing.T) {
	for _, b := range []Budget{{Epsilon: 0.37, Delta: 1e-7}, {Epsilon: 2, Delta: 1e-3}, {Epsilon: 0.37, Delta: 1e-6}} {
		want, err := rhoForBudget(b)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			got, err := RhoForBudget(b)
			if err != nil || got != want {
				t.Fatalf("RhoForBudget(%v) = %v, %v; want %v", b, got, err, want)
			}
		}
	}
}
