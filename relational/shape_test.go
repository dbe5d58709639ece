package relational

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/audit"
)

// TestRunShapeOracle checks runShape's total and shape against oracles on
// random vectors: at ε = 3,000 the noise scales are C/600 and r/1,800
// rows, and each output must lie within 25 scales of Σ_u min(‖v_u‖₁, C)
// and of clipOracle at r (a false failure has probability below
// (d+1)·e^{−25} per case). The clips must be rungs of the ladder and the
// shape's at or below the total's here (the quantile is 1/2 at this ε).
func TestRunShapeOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for c := 0; c < 50; c++ {
		d := 2 + rng.IntN(6)
		vecs := make([][]clipEntry, 1+rng.IntN(30))
		for u := range vecs {
			for k := 0; k < d; k++ {
				if rng.IntN(3) > 0 {
					vecs[u] = append(vecs[u], clipEntry{k: k, steps: uint64(rng.IntN(200)) * uint64(1+rng.IntN(4096))})
				}
			}
		}
		ladder := dp.ClipLadder(int64(1 + rng.IntN(300)))
		const eps = 3000
		o, err := runShape(dp.NewSeededSource(uint64(c)), vecs, d, ladder, eps, clipMutNone)
		if err != nil {
			t.Fatal(err)
		}
		epsT, epsS := shapeSplit(eps, d)
		if want := float64(o.clip) / ClipStep / epsT; math.Abs(o.totalScale-want) > 1e-9*want {
			t.Fatalf("case %d: total's scale %v, want C/ε_T = %v", c, o.totalScale, want)
		}
		if want := float64(o.shapeClip) / ClipStep / epsS; math.Abs(o.shapeScale-want) > 1e-9*want {
			t.Fatalf("case %d: shape's scale %v, want r/ε_S = %v", c, o.shapeScale, want)
		}
		var total int64
		for _, v := range vecs {
			var n int64
			for _, e := range v {
				n += int64(e.steps)
			}
			total += min(n, o.clip*int64(1/ClipStep))
		}
		if math.Abs(float64(o.total-total)) > 25*o.totalScale {
			t.Fatalf("case %d: total %d steps, oracle %d at clip %d", c, o.total, total, o.clip)
		}
		want := clipOracle(vecs, d, o.shapeClip)
		for k := range o.shape {
			if math.Abs(float64(o.shape[k]-want[k])) > 25*o.shapeScale {
				t.Fatalf("case %d: shape %d = %d steps, oracle %d at r = %d", c, k, o.shape[k], want[k], o.shapeClip)
			}
		}
	}
}

// TestShapeValuesInterval checks shapeValues against a brute-force
// simulation: with the noise drawn as runShape draws it on fixed true
// sums, |V_k − R_k| ≤ the returned half-width in at least 95% of 4,000
// draws per answer (the miss count of a 5% event over 4,000 draws exceeds
// 240 with probability below 10⁻⁴), and the values add up to T̂⁺.
func TestShapeValuesInterval(t *testing.T) {
	src := dp.NewSeededSource(7)
	cases := []struct {
		shape  []int64 // true S_k, steps
		total  int64   // true T_C, steps
		bS, bT float64
	}{
		{[]int64{4000, 3000, 2000, 1000, 0}, 40000, 150, 400},
		{[]int64{30, 30}, 500, 20, 30},
		{[]int64{100, 5000, 20, 800, 800, 800, 100, 7}, 90000, 60, 900},
	}
	for ci, c := range cases {
		lapS, _ := dp.NewDiscreteLaplace(c.bS)
		lapT, _ := dp.NewDiscreteLaplace(c.bT)
		var sum float64
		for _, x := range c.shape {
			sum += float64(x)
		}
		misses := make([]int, len(c.shape))
		const n = 4000
		for i := 0; i < n; i++ {
			o := shapeOut{total: c.total + lapT.Sample(src), totalScale: lapT.Scale(), shapeScale: lapS.Scale(), shape: make([]int64, len(c.shape))}
			for k, x := range c.shape {
				o.shape[k] = x + lapS.Sample(src)
			}
			vals, noise, _ := shapeValues(o)
			var vs float64
			for k := range vals {
				vs += vals[k]
				r := float64(c.shape[k]) * float64(c.total) / sum
				if math.Abs(vals[k]-r) > noise[k] {
					misses[k]++
				}
			}
			if want := math.Max(float64(o.total), 0); math.Abs(vs-want) > 1e-6*math.Max(want, 1) {
				t.Fatalf("case %d: values add to %v, want T̂⁺ = %v", ci, vs, want)
			}
		}
		for k, m := range misses {
			if m > 240 {
				t.Errorf("case %d answer %d: the interval missed R_k in %d of %d draws", ci, k, m, n)
			}
		}
	}
}

// shapeAuditAnswers is d of the audits' runs: the units' rows are all in
// answer 0 of 8 (the mechanism runs on two answers or more; d sets the
// split of ε between the total and the shape, [shapeSplit]).
const shapeAuditAnswers = 8

// shapeAuditTotal and shapeAuditShape are the shares of ε of the total's
// and the shape's noise in the audits' runs at ε = 1.
var shapeAuditTotal, shapeAuditShape = shapeSplit(1, shapeAuditAnswers)

// shapeAuditMech runs runShape at ε = 1 on vecs (shapeAuditAnswers
// answers) and returns out's pick of its outputs.
func shapeAuditMech(vecs [][]clipEntry, ladder []int64, mut clipMutation, out func(shapeOut) float64) audit.Mechanism[float64] {
	return func(src dp.Source) float64 {
		o, err := runShape(src, vecs, shapeAuditAnswers, ladder, 1, mut)
		if err != nil {
			panic(err)
		}
		return out(o)
	}
}

// shapeAuditPairs are the neighbouring pairs of the total-and-shape
// mechanism's audits at ε = 1, each with the output it publishes, the ε
// that output claims (its parts' shares) and the planted bug its audit
// must catch:
//
//   - "heavy total": delete one of 200 units of 64 rows, the ladder's top
//     (the clip lands there: a rung lower scores 200 less, against a
//     penalty of κ/ε_C ≈ 13); the total moves by C = 64 rows. Claimed
//     ε_C + ε_T. Noise scaled to one row, and noise at the whole ε instead
//     of ε_T, both show it.
//   - "quantile": one unit of 2 rows and nine of 8 against the nine alone:
//     the shape clip's best score (a = 2: −|18·below − 2·above|) is at r =
//     2 on the first and r = 1 on the second; a clip taken at the true
//     quantile without noise tells them apart. Claimed ε_R.
//   - "tipping total clip": 14 units of 2 rows against 13: the total
//     clip's best score (−above − j·κ/ε_C, κ/ε_C = 13.3) is at C = 2 (−13.3
//     against −14 at C = 1) on the first and at C = 1 (−13) on the second; a
//     clip taken at the true best score tells them apart. Claimed ε_C.
var shapeAuditPairs = []struct {
	name     string
	d, dp    [][]clipEntry
	ladder   []int64
	out      func(shapeOut) float64
	claim    float64
	mutation clipMutation
}{
	{"heavy total, row noise", clipUnits(200, 64), clipUnits(199, 64), dp.ClipLadder(64), func(o shapeOut) float64 { return float64(o.total) }, ShapeTotalClipShare + shapeAuditTotal, clipMutRowNoise},
	{"heavy total, whole ε", clipUnits(200, 64), clipUnits(199, 64), dp.ClipLadder(64), func(o shapeOut) float64 { return float64(o.total) }, ShapeTotalClipShare + shapeAuditTotal, clipMutTotalEps},
	{"quantile", append(clipUnits(1, 2), clipUnits(9, 8)...), clipUnits(9, 8), dp.ClipLadder(128), func(o shapeOut) float64 { return float64(o.shapeClip) }, ShapeClipShare, clipMutTrueShape},
	{"tipping total clip", clipUnits(14, 2), clipUnits(13, 2), dp.ClipLadder(128), func(o shapeOut) float64 { return float64(o.clip) }, ShapeTotalClipShare, clipMutTrueClip},
	{"heavy shape", clipUnits(21, 64), clipUnits(20, 64), dp.ClipLadder(128), func(o shapeOut) float64 { return float64(o.shape[0]) }, ShapeClipShare + shapeAuditShape, clipMutNone},
}

// TestAuditShape audits the total-and-shape mechanism as shipped: each
// output's empirical ε lower bound (confidence 1 − 10⁻⁶) must stay below
// what it claims.
func TestAuditShape(t *testing.T) {
	for _, p := range shapeAuditPairs {
		res := audit.MustRunScalar(t, shapeAuditMech(p.d, p.ladder, clipMutNone, p.out), shapeAuditMech(p.dp, p.ladder, clipMutNone, p.out), auditRuns(), 0)
		t.Logf("%s: ε ≥ %.3f (claim %.2f, event %s)", p.name, res.EpsilonLowerBound, p.claim, res.Event)
		if res.EpsilonLowerBound > p.claim {
			t.Errorf("%s: empirical ε lower bound %v > claimed %v (event %s)", p.name, res.EpsilonLowerBound, p.claim, res.Event)
		}
	}
}

// TestAuditShapeMutant plants each bug into the total-and-shape mechanism
// — noise scaled to one row, the total noised at the whole ε instead of
// its share, the shape's clip taken at the true quantile, the total's clip
// at the true best score — and requires
// its pair's audit to prove the claim false (lower bound above the claim
// at confidence 1 − 10⁻⁶).
func TestAuditShapeMutant(t *testing.T) {
	for _, p := range shapeAuditPairs {
		if p.mutation == clipMutNone {
			continue
		}
		res := audit.MustRunScalar(t, shapeAuditMech(p.d, p.ladder, p.mutation, p.out), shapeAuditMech(p.dp, p.ladder, p.mutation, p.out), 5_000, 0)
		t.Logf("%s mutant: ε ≥ %.3f (claim %.2f, event %s)", p.name, res.EpsilonLowerBound, p.claim, res.Event)
		if !(res.EpsilonLowerBound > p.claim) {
			t.Errorf("%s mutant not caught: ε lower bound %v ≤ claimed %v", p.name, res.EpsilonLowerBound, p.claim)
		}
	}
}
