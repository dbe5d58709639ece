package relational

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/synth-dp/synth/dp"
)

// Shares of ε of the clipped mechanism on two answers or more (the total
// and the shape, [runShape]) spent on its two clips; the total's and the
// shape's noise share the rest, 80%, by [shapeSplit]. Measured by
// simulating the mechanism on the units' contributions of the workload
// marginals of TPC-H SF 0.01 and Online Retail at ε 1 and 4, 400 draws
// each (docs/answers.md): against (0.1, 0.15, 0.1) with κ = 1 the medians
// were within ±5% and the 99th percentile of the total's error fell from
// 0.30–0.52 to 0.08–0.09 on TPC-H's 2-way marginals at ε = 1 (from 1.06 to
// 0.30 on Retail's months).
var (
	// ShapeTotalClipShare chooses the total's clip C (high: the largest
	// units' contributions).
	ShapeTotalClipShare = 0.15
	// ShapeClipShare chooses the shape's clip r (a low quantile of the
	// units' contributions).
	ShapeClipShare = 0.05
)

// ShapeMeanToClip is ρ of [shapeSplit]: the mean unit's contribution over
// the total's clip C that the split between the total's and the shape's
// noise assumes. The true ratio is private (TPC-H SF 0.01's customers: 60
// rows against C = 128–182, 0.33–0.47; Online Retail's: 90 against 363–
// 1,449, 0.06–0.25); 1/3 is a public constant between them. Measured on
// the 34 workload marginals of both (docs/answers.md, 40 seeds): ρ = 0.05,
// 0.1, 0.2, 1/3 and 0.5 against the fixed split of 20% and 60% before.
const ShapeMeanToClip = 1.0 / 3

// shapeSplit returns ε_T and ε_S, the ε of the total's and of the shape's
// noise for d answers: the 80% of ε the clips leave, split so as to
// minimize the relative variance of an answer of average share 1/d. The
// total's noise adds 2(C/(ε_T·T))² to it (T the answers' total, C its
// clip); the shape's adds about 2(d/(ε_S·N))² (N units, each weighing
// about r in the shape, an answer holding 1/d of them). Over ε_T + ε_S
// fixed, a/ε_T² + b/ε_S² is least at ε_S/ε_T = (b/a)^{1/3} = (ρ·d)^{2/3},
// ρ = T/(N·C) the mean unit's contribution over C — private, so fixed at
// [ShapeMeanToClip]. A function of ε and d only: public. Many answers
// need the shape (d = 90: 72% of ε against 7.5% for the total); few the
// total (d = 2: 35% against 45%).
func shapeSplit(eps float64, d int) (epsT, epsS float64) {
	rest := (1 - ShapeTotalClipShare - ShapeClipShare) * eps
	k := math.Pow(ShapeMeanToClip*float64(d), 2.0/3)
	epsS = rest * k / (1 + k)
	return rest - epsS, epsS
}

// ShapeTotalClipPenalty is κ of the total's clip step penalty λ = κ/ε_C
// (dp.ClipScores): above the largest unit every rung's weight falls by
// e^{−κ/2}, so at κ = 1 (the one answer's clip) the rungs that clip nobody
// outweigh the right one 1.5 to 1 and the total's noise C/ε_T followed
// them; at κ = 2 they weigh 0.6 of it (the unit release's measures use the
// same κ).
const ShapeTotalClipPenalty = 2.0

// shapeQuantile returns a of the quantile a/20 of the units'
// contributions the shape's clip r aims at: round(2ε) clamped to 1 … 10,
// q = ε/10 between 1/20 and 1/2 — the rule of the unit release's own
// contribution bound (privacyunit.boundQuantile, which measured it on the
// same two data sets: a low r leaves the shape's noise small relative to
// the weight of the many units under it; at large ε the bias of
// down-weighting heavy units dominates and r near the median pays).
// Public: a function of ε only.

func shapeQuantile(eps float64) int64 {
	return int64(min(10, max(1, math.Round(2*eps))))
}

// ShapeQuantile is the quantile of the units' contributions the shape's
// clip aims at, at ε: [shapeQuantile]/20.
func ShapeQuantile(eps float64) float64 { return float64(shapeQuantile(eps)) / 20 }

// shapeOut is what [runShape] publishes: every field a DP output or a
// public scale.
type shapeOut struct {
	clip       int64   // C, the total's clip (rows)
	total      int64   // T̂ = Σ_u min(‖v_u‖₁, C) + noise, in steps
	totalScale float64 // the total's noise scale, in steps
	shapeClip  int64   // r, the shape's clip (rows)
	shape      []int64 // Ŝ_k = Σ_u x_{u,k} + noise at clip r, in steps
	shapeScale float64 // the shape's noise scale, in steps
}

// chargeShape records the four parts of [runShape] under root.
func chargeShape(root *dp.Ledger, rungs, d int, top, eps float64) error {
	epsC, epsR := ShapeTotalClipShare*eps, ShapeClipShare*eps
	epsT, epsS := shapeSplit(eps, d)
	a := shapeQuantile(eps)
	parts := []struct {
		name, proof string
		eps         float64
		params      map[string]any
	}{
		{"total's clip C (exponential mechanism over a public ladder)", fmt.Sprintf("score −#{units whose contributions (in rows, each term over its public bound) exceed C_j} − %g·j/ε_C over C_j ∈ {⌈2^(j/2)⌉} ≤ %v; "+
			"deleting a unit changes the count by at most 1 and the penalty not at all: sensitivity 1 (dp.ExponentialGrid, exact)", ShapeTotalClipPenalty, top), epsC,
			map[string]any{"candidates": rungs, "share": ShapeTotalClipShare}},
		{"total Σ_u min(‖v_u‖₁, C) + discrete Laplace", "deleting a unit removes its clipped norm ≤ C and changes no other unit's: sensitivity C, discrete Laplace of scale C/ε_T", epsT,
			map[string]any{"share": epsT / eps, "answers": d}},
		{"shape's clip r (exponential mechanism, quantile of the units' contributions)", fmt.Sprintf("score −|(20 − a)·#{units with contributions ≤ r_j} − a·#{units above r_j}| with a = %d (the quantile a/20) over the same ladder; "+
			"deleting a unit lowers one count by 1: sensitivity max(a, 20 − a) (dp.ExponentialGrid, exact)", a), epsR,
			map[string]any{"share": ShapeClipShare, "quantile": float64(a) / 20}},
		{"shape: each unit's vector clipped to L1 norm r + discrete Laplace", "deleting a unit removes its clipped vector (L1 norm ≤ r) and changes no other: L1 sensitivity r, discrete Laplace of scale r/ε_S per answer", epsS,
			map[string]any{"share": epsS / eps}},
	}
	for _, p := range parts {
		if err := root.Charge(p.name, dp.Budget{Epsilon: p.eps}, p.proof, p.params); err != nil {
			return err
		}
	}
	return nil
}

// runShape is the clipped mechanism on d ≥ 2 answers: it measures the
// answers' total with a high clip and their shape with a low one, and
// answers each as its share of the shape times the total.
//
//  1. C from ladder by the exponential mechanism at ε_C =
//     [ShapeTotalClipShare]·ε on the scores of [dp.ClipScores] with the
//     penalty κ/ε_C (κ = [ShapeTotalClipPenalty]): near the largest
//     units' ‖v_u‖₁, as for one answer; sensitivity 1.
//  2. T̂ = Σ_u min(‖v_u‖₁, C) + discrete Laplace of scale C/ε_T, ε_T from
//     [shapeSplit] (public: ε and d).
//  3. r from the same ladder by the exponential mechanism at ε_R =
//     [ShapeClipShare]·ε with score −|(20 − a)·#{u: ‖v_u‖₁ ≤ r_j} −
//     a·#{u: ‖v_u‖₁ > r_j}| (a = [shapeQuantile]: a private quantile a/20
//     of the units' contributions; sensitivity max(a, 20 − a)).
//  4. Ŝ_k = Σ_u x_{u,k} + discrete Laplace of scale r/ε_S, x_u the unit's
//     vector clipped to L1 norm r exactly as in [runClip], ε_S the rest
//     ([shapeSplit]).
//
// # Privacy
//
// Deleting a unit (and every tuple referencing it) removes its own
// contributions and changes no other unit's (every query's join results
// belong to one unit, checked by [CheckClip]). The clip choices are
// exponential mechanisms of sensitivity 1 and max(a, 20 − a) with their
// ε; given C, T̂ has sensitivity C; given r, the vector Ŝ has L1
// sensitivity r. Sequential composition: ε_C + ε_T + ε_R + ε_S = ε, pure.
//
// Why: a unit release wins over per-answer noise at C on many cells by
// measuring the shape of its marginals with units bounded far below the
// largest (release.contribution_bound) and the size separately. At r near
// a low quantile nearly every unit weighs r in the shape, whose noise
// relative to a cell then falls like d/(#units·ε_S) instead of
// C·d/(rows·ε) (docs/answers.md measures it). The price is a bias when the
// heavy units spread differently over the answers from the light ones.
func runShape(src dp.Source, vecs [][]clipEntry, d int, ladder []int64, eps float64, mut clipMutation) (shapeOut, error) {
	epsC, epsR := ShapeTotalClipShare*eps, ShapeClipShare*eps
	epsT, epsS := shapeSplit(eps, d)
	norms := make([]uint64, len(vecs))
	for u, v := range vecs {
		for _, e := range v {
			norms[u] += e.steps
		}
	}
	per := uint64(1 / ClipStep)
	above := func(c int64) float64 {
		cs := uint64(c) * per
		n := 0
		for _, x := range norms {
			if x > cs {
				n++
			}
		}
		return float64(n)
	}
	var out shapeOut
	scoresC := dp.ClipScores(ladder, above, ShapeTotalClipPenalty/epsC)
	ci := 0
	if mut == clipMutTrueClip {
		for j, sc := range scoresC {
			if sc > scoresC[ci] {
				ci = j
			}
		}
	} else {
		ci = dp.ExponentialGrid(src, scoresC, epsC, 1, 0)
	}
	out.clip = ladder[ci]
	cs := uint64(out.clip) * per
	var total int64
	for _, x := range norms {
		total += int64(min(x, cs))
	}
	sensT, sensS := float64(cs), 0.0
	if mut == clipMutRowNoise {
		sensT = float64(per) // planted bug: one row's steps, not C's
	}
	if mut == clipMutTotalEps {
		epsT = eps // planted bug: the total noised at the whole ε
	}
	lapT, err := dp.NewDiscreteLaplace(dp.NoiseScale(sensT, epsT))
	if err != nil {
		return shapeOut{}, fmt.Errorf("relational: clipped mechanism's total: %w", err)
	}
	out.total, out.totalScale = total+lapT.Sample(src), lapT.Scale()

	a := shapeQuantile(eps)
	scores := make([]float64, len(ladder))
	for j, c := range ladder {
		n := above(c)
		scores[j] = -math.Abs(float64(20-a)*(float64(len(norms))-n) - float64(a)*n)
	}
	ri := 0
	if mut == clipMutTrueShape {
		for j, sc := range scores {
			if sc > scores[ri] {
				ri = j
			}
		}
	} else {
		ri = dp.ExponentialGrid(src, scores, epsR, float64(max(a, 20-a)), 0)
	}
	out.shapeClip = ladder[ri]
	rs := uint64(out.shapeClip) * per
	out.shape = make([]int64, d)
	for u, v := range vecs {
		for _, e := range v {
			x := e.steps
			if norms[u] > rs {
				hi, lo := bits.Mul64(e.steps, rs)
				x, _ = bits.Div64(hi, lo, norms[u])
			}
			out.shape[e.k] += int64(x)
		}
	}
	sensS = float64(rs)
	if mut == clipMutRowNoise {
		sensS = float64(per)
	}
	lapS, err := dp.NewDiscreteLaplace(dp.NoiseScale(sensS, epsS))
	if err != nil {
		return shapeOut{}, fmt.Errorf("relational: clipped mechanism's shape: %w", err)
	}
	for k := range out.shape {
		out.shape[k] += lapS.Sample(src)
	}
	out.shapeScale = lapS.Scale()
	return out, nil
}

// shapeValues returns, in steps, each answer's value V_k = P_k·T̂⁺/ΣP
// (x⁺ = max(x, 0); P the shape projected onto {x ≥ 0, Σx = ΣŜ⁺ of the
// raw sum}, [simplexProject]; T̂⁺/d each when P is 0), the half-width of
// a 95% interval of its noise around R_k = S_k·T_C/ΣS (the same ratio
// without noise; 0 when ΣS = 0), and the factor T̂⁺/ΣP that brings the
// shape to the total's scale — from DP outputs and public scales only.
//
// Proof: on the event E that |N_k| ≤ s₁ = ⌈b_S·ln 50⌉ (probability of the
// complement < 0.02: P[|N| > s] < e^{−s/b} for the discrete Laplace), |N_T|
// ≤ s₂ = ⌈b_T·ln 100⌉ (< 0.01) and |Σ_j N_j| ≤ s₃ (≤ 0.02: Chebyshev with
// Var N ≤ 2b², s₃ = b_S·√(2d/0.02), or the union bound d·⌈b_S·ln(50d)⌉,
// whichever is smaller — a choice from public values), the true S_k, T_C
// and ΣS lie within those distances of Ŝ_k, T̂ and ΣŜ. R_k rises with S_k
// and T_C and falls with ΣS ≥ S_k, and R_k ≤ T_C: so on E, R_k is between
// lo = S_lo·T_lo/ΣS_hi and hi = min(T_hi, S_hi·T_hi/max(ΣS_lo, S_hi)) (the
// interval ends clamped at 0), and |V_k − R_k| ≤ max(V_k − lo, hi − V_k).
// P[E] ≥ 0.95.
func shapeValues(o shapeOut) (vals, noise []float64, factor float64) {
	d := len(o.shape)
	var sumRaw float64
	raw := make([]float64, d)
	for k, x := range o.shape {
		raw[k] = float64(x)
		sumRaw += raw[k]
	}
	// The shape made non-negative with its own total (the Euclidean
	// projection onto {x ≥ 0, Σx = ΣŜ⁺}): a cell that holds only noise
	// goes to 0 instead of keeping its positive draw, so the answers of a
	// sparse table (most cells empty) are not spread over its empty cells.
	shape := simplexProject(raw, math.Max(sumRaw, 0))
	var sumPos float64
	for _, x := range shape {
		sumPos += x
	}
	tPos := math.Max(float64(o.total), 0)
	bS, bT := o.shapeScale, o.totalScale
	s1 := math.Ceil(bS * math.Log(50))
	s2 := math.Ceil(bT * math.Log(100))
	s3 := math.Min(bS*math.Sqrt(2*float64(d)/0.02), float64(d)*math.Ceil(bS*math.Log(50*float64(d))))
	tLo, tHi := math.Max(float64(o.total)-s2, 0), math.Max(float64(o.total)+s2, 0)
	sumLo, sumHi := math.Max(sumRaw-s3, 0), math.Max(sumRaw+s3, 0)
	vals, noise = make([]float64, d), make([]float64, d)
	if sumPos > 0 {
		factor = tPos / sumPos
	}
	for k, x := range o.shape {
		v := tPos / float64(d)
		if sumPos > 0 {
			v = shape[k] * tPos / sumPos
		}
		sLo, sHi := math.Max(float64(x)-s1, 0), math.Max(float64(x)+s1, 0)
		lo := 0.0
		if sumHi > 0 {
			lo = sLo * tLo / sumHi
		}
		hi := tHi
		if den := math.Max(sumLo, sHi); den > 0 {
			hi = math.Min(tHi, sHi*tHi/den)
		}
		vals[k], noise[k] = v, math.Max(v-lo, hi-v)
	}
	return vals, noise, factor
}

// shapeResults turns runShape's outputs into the answers (see
// answerClipped): Value = round(h·B_k·V_k); NoiseBound95 = h·B_k·(the
// half-width of [shapeValues]) + ½ bounds |Value − h·B_k·R_k| with
// probability ≥ 0.95 (R_k the ratio without noise, Q's clipped
// counterpart: not Q, the bias of both clips is not in it); LowerBound95
// = ⌊h·B_k·(Ŝ_k − ⌈b_S·ln 10⌉) − ½⌋ is below S_k·h·B_k ≤ Q with
// probability ≥ 0.95 (one tail; clipping at r and flooring only lower a
// unit's terms): a true lower bound on the answer, loose by the shape's
// clipping. Threshold is C·B_k, ShapeClip r·B_k.
func shapeResults(o shapeOut, jobs []clipJob, unit string, eps float64, root *dp.Ledger) []Result {
	vals, noise, factor := shapeValues(o)
	one := math.Ceil(o.shapeScale * math.Log(10))
	out := make([]Result, len(jobs))
	for k, j := range jobs {
		unitH := ClipStep * j.bound
		raw := int64(math.Round(unitH * vals[k]))
		r := Result{Query: j.q.Text, Group: groupMap(j.g), Mechanism: ClipMechanism + " (user-level DP, unit " + unit + "; total and shape)", Epsilon: eps}
		r.SetValue(raw, 0, true)
		lower := max(int64(math.Floor(unitH*(float64(o.shape[k])-one)-0.5)), 0)
		r.LowerBound95 = &lower
		// The noise of one answer across cells: the shape's, at the
		// total's scale (a DP output), for PostProcess's shrinkage.
		r.NoiseScale = ptr(unitH * o.shapeScale * factor)
		r.NoiseBound95 = ptr(unitH*noise[k] + 0.5)
		r.Threshold, r.ShapeClip = ptr(float64(o.clip)*j.bound), ptr(float64(o.shapeClip)*j.bound)
		out[k] = r
		root.Publish(fmt.Sprintf("shape_%d", k), unitH*float64(o.shape[k]))
		root.Publish(fmt.Sprintf("answer_%d", k), float64(r.Value))
	}
	root.Publish("clip", float64(o.clip))
	root.Publish("total_steps", float64(o.total))
	root.Publish("shape_clip", float64(o.shapeClip))
	return out
}
