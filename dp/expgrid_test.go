package dp

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// expGridPMF returns the exact selection probabilities of ExponentialGrid
// (computed in float64 from the same grid, sensitivity and dyadic rate).
func expGridPMF(scores []float64, eps, sens, errBound float64) []float64 {
	g := ExpGrid(sens, errBound)
	k, ok := GridScores(scores, g)
	p, s := expGridRate(eps, ExpGridSensitivity(sens, g))
	rate := float64(p) / math.Ldexp(1, int(s))
	kmax := int64(math.MinInt64)
	for i := range k {
		if ok[i] {
			kmax = max(kmax, k[i])
		}
	}
	w := make([]float64, len(k))
	z := 0.0
	for i := range k {
		if ok[i] {
			w[i] = math.Exp(-float64(kmax-k[i]) * rate)
			z += w[i]
		}
	}
	for i := range w {
		w[i] /= z
	}
	return w
}

type expGridCase struct {
	scores              []float64
	eps, sens, errBound float64
}

var expGridCases = []expGridCase{
	{[]float64{0, 1, 2, 3, 5}, 1, 1, 0},
	{[]float64{-1e6, -1e6 + 4, -1e6 + 1, -1e6}, 0.5, 2, 1e-9},
	{[]float64{1e9, 1e9, 1e9}, 3, 1, 0},
	{[]float64{0.3, 7.9, 12.25, 0, math.NaN(), 9.5, math.Inf(-1)}, 0.7, 3.5, 0.01},
	{[]float64{10, 11, 12}, 40, 0.001, 0}, // a large rate: the best dominates
}

// TestExponentialGridFrequencies: 200 000 draws per case against the exact
// pmf, chi-square at level falseFailure (1e-6). NaN and −Inf never come
// out, and no index of probability below 10⁻¹³ is drawn — the check of
// the large-exponent path (case 5, where the best index is certain): a
// mutant accepting every candidate whose exponent is ≥ 1000 fails it.
func TestExponentialGridFrequencies(t *testing.T) {
	src := NewSource()
	const n = 200_000
	for _, c := range expGridCases {
		obs := make([]int64, len(c.scores))
		for range n {
			obs[ExponentialGrid(src, c.scores, c.eps, c.sens, c.errBound)]++
		}
		for i, s := range c.scores {
			if (math.IsNaN(s) || math.IsInf(s, -1)) && obs[i] > 0 {
				t.Errorf("%v: ineligible score %v selected %d times", c.scores, s, obs[i])
			}
		}
		pmf := expGridPMF(c.scores, c.eps, c.sens, c.errBound)
		// Some index of probability below 10⁻¹³ is drawn with
		// probability at most n·7·10⁻¹³ = 1.4·10⁻⁷ (union bound); this is
		// the whole check of the degenerate case (one index certain),
		// where the chi-square has a single category.
		for i, p := range pmf {
			if p < 1e-13 && obs[i] > 0 {
				t.Errorf("%v at ε = %v: index %d (probability %.3g) drawn %d times", c.scores, c.eps, i, p, obs[i])
			}
		}
		if slices.Max(pmf) > 1-1e-9 {
			continue // degenerate: checked by the loop above
		}
		chiSquareTest(t, fmt.Sprintf("ExponentialGrid %v", c.scores), obs, pmf, falseFailure)
	}
}

// TestExponentialGridCatchesHalvedNoise: the same chi-square test rejects a
// planted bug, the mechanism run at 2ε (half the noise) against the pmf
// at ε. The check is deterministic in effect: its statistic is far above
// the critical value (the test would fail falsely only if the 2ε draws
// looked like ε draws, probability far below 1e-6).
func TestExponentialGridCatchesHalvedNoise(t *testing.T) {
	src := NewSource()
	const n = 200_000
	c := expGridCases[0]
	obs := make([]int64, len(c.scores))
	for range n {
		obs[ExponentialGrid(src, c.scores, 2*c.eps, c.sens, c.errBound)]++
	}
	ft := &testing.T{}
	chiSquareTest(ft, "halved noise", obs, expGridPMF(c.scores, c.eps, c.sens, c.errBound), falseFailure)
	if !ft.Failed() {
		t.Error("the chi-square test accepted ExponentialGrid at 2ε as the mechanism at ε")
	}
}

// TestExponentialGridPrivacyOracle checks the guarantee on random
// neighbouring score vectors by brute force: every score moves by at most
// sens plus a float error of at most errBound on each side, and the exact
// selection probabilities (the pmf, no sampling) differ by a factor of at
// most e^ε. A version without the +1 of K (K = ⌈sens/γ⌉) is caught.
func TestExponentialGridPrivacyOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	worst := 0.0
	for trial := 0; trial < 20_000; trial++ {
		n := 2 + r.IntN(6)
		eps := math.Ldexp(1+r.Float64(), r.IntN(6)-3)
		sens := math.Ldexp(1, r.IntN(4)) // a power of two: sens/γ is whole, the case the +1 is for
		errBound := sens * 1e-6 * r.Float64()
		s, s2 := make([]float64, n), make([]float64, n)
		for i := range s {
			s[i] = sens * float64(r.IntN(8)) * r.Float64()
			// The neighbour: the exact move of at most sens, plus an
			// error of at most errBound on each computed value.
			move := sens * (2*r.Float64() - 1)
			if r.IntN(3) == 0 {
				move = sens * float64(2*r.IntN(2)-1)
			}
			s2[i] = s[i] + move + errBound*(2*r.Float64()-1)
			s[i] += errBound * (2*r.Float64() - 1)
		}
		p, q := expGridPMF(s, eps, sens, errBound), expGridPMF(s2, eps, sens, errBound)
		for i := range p {
			worst = math.Max(worst, math.Abs(math.Log(p[i]/q[i]))/eps)
		}
	}
	if worst > 1+1e-9 {
		t.Errorf("largest privacy loss %v·ε, want ≤ ε", worst)
	}
	t.Logf("largest privacy loss on the oracle: %.4f·ε", worst)
	// Mutant: K = ⌈sens/γ⌉ without the +1 for the float error. With
	// sens = 1 (γ = 2⁻¹⁰, sens/γ = 1024 whole) and errors of γ/10 on
	// each side, both scores move by 1025 grid steps in opposite
	// directions and the loss exceeds ε = 1.
	g := ExpGrid(1, 0)
	mutant := func(sc []float64) float64 { // P[select 0] with K = 1024
		k, _ := GridScores(sc, g)
		p, s := expGridRate(1, int64(math.Ceil(1/g)))
		rate := float64(p) / math.Ldexp(1, int(s))
		return 1 / (1 + math.Exp(float64(k[1]-k[0])*rate))
	}
	a := []float64{0.9 * g, 1100 + 0.1*g}
	b := []float64{a[0] + 1 + 0.2*g, a[1] - 1 - 0.2*g} // moves of 1 + 2·(γ/10) ≤ 1 + 2·errBound, errBound = γ/8
	if loss := math.Log(mutant(b) / mutant(a)); loss <= 1 {
		t.Errorf("mutant K = ⌈sens/γ⌉: loss %v ≤ ε = 1, the oracle pair does not show the +1 is needed", loss)
	}
	if pa, pb := expGridPMF(a, 1, 1, g/8), expGridPMF(b, 1, 1, g/8); math.Log(pb[0]/pa[0]) > 1 {
		t.Errorf("honest K on the mutant's pair: loss %v > ε = 1", math.Log(pb[0]/pa[0]))
	}
}

// TestExpGridRate: ε′ = 2K·p/2^s is ≤ ε and within 2K/2^s of it (p is
// ε/(2K)·2^s rounded down), with s = 63 unless p would not fit 64 bits.
func TestExpGridRate(t *testing.T) {
	for _, c := range []struct {
		eps float64
		k   int64
	}{{1, 1025}, {1e-9, 1025}, {0.3, 2}, {1e5, 1}, {7.25, 1 << 40}} {
		p, s := expGridRate(c.eps, c.k)
		epsP := 2 * float64(c.k) * float64(p) / math.Ldexp(1, int(s))
		if epsP > c.eps || epsP < c.eps-2*float64(c.k)/math.Ldexp(1, int(s)) || (s < 63 && p < 1<<63) {
			t.Errorf("ε = %v, K = %d: ε′ = %v", c.eps, c.k, epsP)
		}
	}
}

// TestExponentialGridMonotone checks ExponentialGridMonotone's guarantee
// by brute force on the exact pmf (ExponentialGrid's at 2ε): on random
// neighbouring score vectors whose scores all move up by at most sens
// (0 to sens each, some exactly sens), the selection probabilities differ
// by a factor of at most e^ε; and on a pair of 1,000 candidates where the
// first score rises by sens and the others fall by sens (not monotone)
// the loss is nearly 2ε, so the oracle can see a violation. The sampler is ExponentialGrid's, whose
// frequencies TestExponentialGridFrequencies checks; here one case checks
// that it runs at twice the rate (chi-square at level falseFailure).
func TestExponentialGridMonotone(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	worst := 0.0
	for trial := 0; trial < 20_000; trial++ {
		n := 2 + r.IntN(6)
		eps := math.Ldexp(1+r.Float64(), r.IntN(6)-3)
		sens := math.Ldexp(1, r.IntN(4))
		s, s2 := make([]float64, n), make([]float64, n)
		for i := range s {
			s[i] = sens * float64(r.IntN(8)) * r.Float64()
			move := sens * r.Float64()
			if r.IntN(3) == 0 {
				move = sens * float64(r.IntN(2))
			}
			s2[i] = s[i] + move
		}
		p, q := expGridPMF(s, 2*eps, sens, 0), expGridPMF(s2, 2*eps, sens, 0)
		for i := range p {
			worst = math.Max(worst, math.Abs(math.Log(p[i]/q[i]))/eps)
		}
	}
	if worst > 1+1e-9 {
		t.Errorf("largest privacy loss on monotone neighbours %v·ε, want ≤ ε", worst)
	}
	t.Logf("largest privacy loss on monotone neighbours: %.4f·ε", worst)
	a, b := make([]float64, 1000), make([]float64, 1000)
	for i := range b {
		b[i] = -1
	}
	b[0] = 1
	pa, pb := expGridPMF(a, 2, 1, 0), expGridPMF(b, 2, 1, 0)
	if loss := math.Log(pb[0] / pa[0]); loss <= 1.5 {
		t.Errorf("scores moving both ways: loss %v, want about 2ε = 2 (the oracle cannot see a violation)", loss)
	}
	c := expGridCases[0]
	src := NewSource()
	obs := make([]int64, len(c.scores))
	for range 200_000 {
		obs[ExponentialGridMonotone(src, c.scores, c.eps, c.sens)]++
	}
	chiSquareTest(t, "ExponentialGridMonotone", obs, expGridPMF(c.scores, 2*c.eps, c.sens, 0), falseFailure)
}
