package pmw

import (
	"math"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/stattest"
)

// TestPaperMeasurementExact checks the paper variant's measurement
// (engine.measure) on a workload with a weighted family (real-valued true
// answers, so the grid is set by the float error bound as well as by Δ̃):
// every noisy answer is γ times an integer, γ a power of two, and
// m/γ − round(q(J)/γ) follows Lap_ℤ(K/ε₀) with K = ⌈Δ̃/γ⌉ + 1 — 200 000
// draws against the exact pmf, values beyond ±L folded into the end bins,
// chi-square at level 10⁻⁶ with categories merged until each expects ≥ 5
// draws ([stattest.ChiSquare]; asymptotic, a false failure has probability
// about 10⁻⁶ — without the merging one draw at |x| ≥ 17, expecting < 0.008,
// failed about 1.5% of runs). The same test rejects a planted bug: the noise at half its
// scale.
func TestPaperMeasurementExact(t *testing.T) {
	u, err := NewUniverse([]string{"a", "b"}, []int{4, 3}, 0)
	if err != nil {
		t.Fatal(err)
	}
	fams := []Family{Marginal([]int{0}), Weighted([]int{0}, []int{1}, []float64{0.3, -0.7, 1})}
	hist := []Cell{{Index: 0, Count: 30}, {Index: 4, Count: 17}, {Index: 11, Count: 5}}
	build := func() *engine {
		// ε chosen so that the measurement noise is a few grid steps wide
		// (a chi-square over a handful of bins).
		cfg := Config{Variant: VariantPaper, Epsilon: 4000, Delta: 1e-6, Sensitivity: 2, Rounds: 1, testExactN: true}
		e, err := newEngine(dp.NewSource(), u, fams, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.init(hist); err != nil {
			t.Fatal(err)
		}
		return e
	}
	honest := build()
	g := honest.measGrid
	if frac, _ := math.Frexp(g); frac != 0.5 || g > 2.0/1024 {
		t.Fatalf("grid %v: want a power of two ≤ Δ̃/1024", g)
	}
	k := dp.ExpGridSensitivity(2, g)
	scale := dp.NoiseScale(float64(k), honest.eps0)
	if honest.measNoise.Scale() != scale {
		t.Fatalf("noise scale %v, want K/ε₀ rounded up = %v", honest.measNoise.Scale(), scale)
	}
	t.Logf("grid γ = %v, K = %d, ε₀ = %v, scale %v steps", g, k, honest.eps0, scale)
	const L = 30
	r := math.Exp(-1 / scale)
	pmf := make([]float64, 2*L+1)
	for i := range pmf {
		if i == 0 || i == 2*L {
			pmf[i] = math.Pow(r, L) / (1 + r)
		} else {
			pmf[i] = (1 - r) / (1 + r) * math.Pow(r, math.Abs(float64(i-L)))
		}
	}
	// The weighted answer of the first query (a = 0) is real: 0.3·30.
	truth := honest.truth[honest.famOff[1]]
	if truth != 0.3*30 {
		t.Fatalf("weighted truth %v, want 9", truth)
	}
	center := math.Round(truth / g)
	run := func(e *engine) []int64 {
		obs := make([]int64, 2*L+1)
		for range 200_000 {
			m := e.measure(truth)
			steps := m / g
			if steps != math.Trunc(steps) {
				t.Fatalf("measurement %v is not on the grid %v", m, g)
			}
			x := int64(steps - center)
			obs[min(max(x, -L), L)+L]++
		}
		return obs
	}
	if r, err := stattest.ChiSquare(run(honest), pmf, 1e-6); err != nil || r.Reject() {
		t.Errorf("measurement noise: %v (err %v)", r, err)
	}
	mutant := build()
	if mutant.measNoise, err = dp.NewDiscreteLaplace(scale / 2); err != nil {
		t.Fatal(err)
	}
	if r, err := stattest.ChiSquare(run(mutant), pmf, 1e-6); err != nil || !r.Reject() {
		t.Errorf("the test did not reject the measurement calibrated to sensitivity 1: %v (err %v)", r, err)
	}
}

// TestMeasGridIndependentOfUniverse: the paper variant's measurement grid
// and selection error bound are set by the largest per-query term count of
// the weighted and linear families, not by |X|: with n̂ = 6·10⁷ and Δ̃ = 1
// the grid is Δ̃/1024 = 2⁻¹⁰ on universes of 12 to 12·2²¹ cells (a weighted
// family with 3 terms a query, a linear one with 2). The old bound
// (|X| + 1)·u·n̂ made it 2 at 12·2²¹ cells (2048 times coarser).
func TestMeasGridIndependentOfUniverse(t *testing.T) {
	for _, c := range []int{1, 1 << 10, 1 << 21} {
		u, err := NewUniverse([]string{"a", "b", "c"}, []int{4, 3, c}, 1<<50)
		if err != nil {
			t.Fatal(err)
		}
		fams := []Family{
			Marginal([]int{0}),
			Weighted([]int{0}, []int{1}, []float64{0.3, -0.7, 1}),
			Linear([]LinearQuery{{Name: "two", Terms: []Term{{Cell: 0, Value: 0.5}, {Cell: 5, Value: -1}}}}),
		}
		cfg := Config{Variant: VariantPaper, Epsilon: 1, Delta: 1e-6, Sensitivity: 1, Rounds: 1, testExactN: true}
		e, err := newEngine(dp.NewSource(), u, fams, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if m := maxTerms(e.fams); m != 3 {
			t.Errorf("|X| = %d: largest term count %d, want 3", u.size, m)
		}
		e.nhat = 6e7
		if err := e.initNoise(); err != nil {
			t.Fatal(err)
		}
		if want := 4 * unitRoundoff * e.nhat; e.truthErr != want {
			t.Errorf("|X| = %d: truthErr %v, want (3 + 1)·u·n̂ = %v", u.size, e.truthErr, want)
		}
		if e.measGrid != 0x1p-10 {
			t.Errorf("|X| = %d: measurement grid %v, want Δ̃/1024 = 2⁻¹⁰", u.size, e.measGrid)
		}
		if g := dp.ExpGrid(1, e.scoreErr); g != 0x1p-10 {
			t.Errorf("|X| = %d: selection grid %v, want 2⁻¹⁰", u.size, g)
		}
	}
}
