package privacyunit

import (
	"math"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
)

// DefaultBoundShare is the share of ε that chooses the contribution bound
// r when it is chosen privately (Config.AutoBound,
// release.contribution_bound: auto); it comes out of the marginals' share.
const DefaultBoundShare = 0.05

// boundLadder are the public candidates of a privately chosen r: the row
// count's clip ladder ⌈2^(j/2)⌉ up to 2¹² rows (the rule below never asks
// for more than the median unit).
var boundLadder = func() []int64 {
	var out []int64
	for _, c := range clipCandidates {
		if c <= MaxAutoBound {
			out = append(out, c)
		}
	}
	return out
}()

// MaxAutoBound is the largest r a privately chosen bound may take (the
// top of boundLadder).
const MaxAutoBound = 1 << 12

// quantileSteps is the denominator of the quantile q = a/quantileSteps of
// a privately chosen r: scores stay integers.
const quantileSteps = 20

// boundQuantile returns a of the quantile q = a/20 of the units' join
// rows that a privately chosen r aims at: a = round(2ε) clamped to 1…10,
// so q = ε/10 between 1/20 and 1/2 (ε = 0.5 → 0.05, ε = 1 → 0.1, ε = 4 →
// 0.4). Why it grows with ε: r trades the bias of bounding (heavy units
// down-weighted, falling as r grows) against noise (∝ r) relative to the
// bounded weight Σ_u min(n_u, r), which grows like r only while most units
// own more than r rows. At small ε the noise dominates and r below the
// typical unit's rows is best; at large ε the bias dominates and r near
// the median pays. Measured (docs/privacy-units.md): on Online Retail the
// best fixed r was 1–4 at ε ≤ 1 and 16–64 (the 25th to 60th percentile of
// its customers' rows) at ε = 4; on TPC-H every r up to 16 (below nearly
// every customer's rows) was as good as r = 1 and 64 worse. The rule
// ignores the data's size (a larger join would afford a larger r at the
// same ε): it is fitted to two data sets. Public: a function of ε only.
func boundQuantile(eps float64) int64 {
	return int64(min(10, max(1, math.Round(2*eps))))
}

// boundScores are the exponential mechanism's scores of the ladder for the
// quantile q = a/20: −|(20 − a)·#{u : n_u ≤ r_j} − a·#{u : n_u > r_j}|,
// integers. Deleting a unit lowers one of the two counts by one and
// changes nothing else (the other units' n_u stay): sensitivity
// max(a, 20 − a). Units that own no join row are not counted (deleting
// one changes nothing).
func boundScores(degs []engine.UnitDegree, a int64) []float64 {
	scores := make([]float64, len(boundLadder))
	for j, r := range boundLadder {
		var below, above int64
		for _, d := range degs {
			if d.Rows <= r {
				below += d.Units
			} else {
				above += d.Units
			}
		}
		diff := (quantileSteps-a)*below - a*above
		scores[j] = -math.Abs(float64(diff))
	}
	return scores
}

// boundSensitivity is the scores' sensitivity for a.
func boundSensitivity(a int64) float64 { return float64(max(a, quantileSteps-a)) }

// chooseBound draws r from the ladder: the exponential mechanism
// (dp.ExponentialGrid, exact) on boundScores at ε_R, or, for the planted
// bug mutTrueBound, the best score without noise.
func (p *Plan) chooseBound(src dp.Source, degs []engine.UnitDegree) int64 {
	a := boundQuantile(p.cfg.Epsilon)
	scores := boundScores(degs, a)
	if p.cfg.mutation == mutTrueBound {
		best := 0
		for j, s := range scores {
			if s > scores[best] {
				best = j
			}
		}
		return boundLadder[best]
	}
	return boundLadder[dp.ExponentialGrid(src, scores, p.epsR, boundSensitivity(a), 0)]
}
