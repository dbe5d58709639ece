package privacyunit

import (
	"math"
	"slices"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
)

// CountForecast is what the row count of a privacy-unit release (with the
// run's own choice of the count's share, Config.CountShare 0) is expected
// to do on data whose units own the given join rows: computed from the
// TRUE per-unit row counts, so it is NOT differentially private. It is
// for `synth inspect`'s custodian section only and must never reach a
// release or its report.
type CountForecast struct {
	// Units and Rows are the true units with at least one join row and
	// the join's rows.
	Units, Rows int64
	// Share is the row count's share of ε at the true unit count (the
	// run reads a DP unit count instead, so its share varies around it);
	// MarginalsEpsilon the ε the marginals then get (an automatic r's
	// share not included).
	Share, MarginalsEpsilon float64
	// Clip is the clip C the exponential mechanism draws most often
	// (over the unit count's noise too); ClipAtMost2 the probability that
	// it draws C ≤ 2 (a file of about two rows per unit).
	Clip        int64
	ClipAtMost2 float64
	// MeanRatio is the expected rows/true of the file; Below and Above the
	// probabilities that rows/true falls below 0.8 or above 1.25, Tiny
	// below 0.1.
	MeanRatio, Below, Above, Tiny float64
}

// ForecastCount forecasts the DP row count of a release at ε from the true
// per-unit join rows degs (NON-PRIVATE, see [CountForecast]). It sums over
// the DP unit count's noise (discrete Laplace of scale 1/ε_U, within 30
// scales), the share countShareFor draws from it, the clip's exponential
// mechanism at ε_Q over the public ladder (exactly its probabilities,
// exp(ε_Q·score), the monotone mechanism), and the sum's noise at ε_N taken as continuous
// Laplace of scale C/ε_N (the floor at the unit count and the clamp at 0
// left out: they only raise counts near 0).
func ForecastCount(eps float64, degs []engine.UnitDegree) CountForecast {
	var f CountForecast
	type deg struct{ rows, units int64 }
	var ds []deg
	for _, d := range degs {
		if d.Rows > 0 && d.Units > 0 {
			ds = append(ds, deg{d.Rows, d.Units})
			f.Units += d.Units
			f.Rows += d.Rows * d.Units
		}
	}
	if f.Units == 0 || !(eps > 0) {
		return f
	}
	epsU := UnitCountShare * eps
	f.Share = countShareFor(eps, epsU, f.Units)
	f.MarginalsEpsilon = (1 - f.Share) * eps
	above := make([]float64, len(clipCandidates))
	sums := make([]float64, len(clipCandidates))
	for j, c := range clipCandidates {
		for _, d := range ds {
			if d.rows > c {
				above[j] += float64(d.units)
			}
			sums[j] += float64(min(d.rows, c) * d.units)
		}
	}
	total := float64(f.Rows)
	// The shares the unit count's noise can lead to, with their
	// probabilities (discrete Laplace: P(k) ∝ e^{−|k|·ε_U}).
	b := dp.NoiseScale(1, epsU)
	reach := int64(math.Ceil(30 * b))
	clipP := make([]float64, len(clipCandidates))
	var norm float64
	memo := map[[2]float64][]float64{} // (share, penalty) → the clip's probabilities
	for k := -reach; k <= reach; k++ {
		pk := math.Exp(-math.Abs(float64(k)) / b)
		norm += pk
		share := countShareFor(eps, epsU, max(f.Units+k, 0))
		key := [2]float64{share, ClipPenalty(countQuantileShare*(share*eps-epsU), epsU, max(f.Units+k, 0))}
		probs, ok := memo[key]
		if !ok {
			probs = clipProbabilities(share*eps-epsU, key[1], above)
			memo[key] = probs
		}
		epsN := (1 - countQuantileShare) * (share*eps - epsU)
		for j, pj := range probs {
			w := pk * pj
			if w == 0 {
				continue
			}
			clipP[j] += w
			s := float64(clipCandidates[j]) / epsN
			f.MeanRatio += w * (sums[j] + s/2*math.Exp(-sums[j]/s)) / total
			f.Below += w * laplaceCDF(0.8*total-sums[j], s)
			f.Above += w * (1 - laplaceCDF(1.25*total-sums[j], s))
			f.Tiny += w * laplaceCDF(0.1*total-sums[j], s)
		}
	}
	f.MeanRatio /= norm
	f.Below /= norm
	f.Above /= norm
	f.Tiny /= norm
	best := 0
	for j := range clipP {
		clipP[j] /= norm
		if clipP[j] > clipP[best] {
			best = j
		}
		if clipCandidates[j] <= 2 {
			f.ClipAtMost2 += clipP[j]
		}
	}
	f.Clip = clipCandidates[best]
	return f
}

// clipProbabilities are the clip's exponential-mechanism probabilities
// over the ladder when the count gets epsC (its ε_Q = countQuantileShare
// of it) and the step penalty is lambda (ClipPenalty): ∝ exp(ε_Q·score),
// score −above − λ·j (dp.ChooseClipPenalty).
func clipProbabilities(epsC, lambda float64, above []float64) []float64 {
	epsQ := countQuantileShare * epsC
	out := make([]float64, len(above))
	if !(epsQ > 0) {
		return out
	}
	top := math.Inf(-1)
	for j, a := range above {
		out[j] = epsQ * (-a - lambda*float64(j))
		top = max(top, out[j])
	}
	var z float64
	for j := range out {
		out[j] = math.Exp(out[j] - top)
		z += out[j]
	}
	for j := range out {
		out[j] /= z
	}
	return slices.Clip(out)
}

// laplaceCDF is P(X ≤ x) for X Laplace of scale s around 0.
func laplaceCDF(x, s float64) float64 {
	if x < 0 {
		return math.Exp(x/s) / 2
	}
	return 1 - math.Exp(-x/s)/2
}
