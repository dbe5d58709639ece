package release

import (
	"context"
	"fmt"
	"math"
	"math/bits"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/spec"
)

// The shares of a measure's ε under a privacy unit: MeasureUnitClipShare
// chooses the per-unit clip C (exponential mechanism over a public
// ladder), MeasureUnitTotalShare measures the clipped whole-file total and
// MeasureUnitAtomShare the clipped atoms' sums (discrete Laplace of scale
// C/ε each). Numerical's mechanism (Qiu et al.) does not run under a unit:
// its guarantee is per tuple; the atoms' sums are spread over their cells
// in proportion to the synthetic rows instead (post-processing).
//
// The shares were chosen by simulating the mechanism on TPC-H SF 0.01's
// per-customer sums of l_quantity (measure ε 0.5–0.7) and on a sample of
// 100 of its customers: the whole-file sum's error is the noise at C plus
// the clipping bias, so the total gets the largest share; with a clip
// share below 0.15 the clip spread to the ladder's top more often.
//
// A non-negative measure's atoms are clipped at a clip of their own,
// chosen at a low quantile of the units' contributions
// (MeasureUnitAtomClipShare, [measureAtomQuantile]), and then fitted to
// the total: nearly every unit weighs the same in the atoms' shape, whose
// noise is then that of the low clip, not of C (the way `synth answer`
// measures a marginal's shape, relational.runShape). TPC-H l_quantity,
// 10 seeds: the workload boxes' median relative error 0.057 → 0.029,
// docs/measures.md. A signed measure keeps its atoms at C (its atoms are
// fitted to the total additively, which needs them on the total's scale):
// the atoms' clip share goes to its atoms. The total has 65%: at 55% the
// whole-file sum missed 2% in 2 of those 10 runs.
const (
	MeasureUnitClipShare     = 0.15
	MeasureUnitTotalShare    = 0.65
	MeasureUnitAtomClipShare = 0.05
	MeasureUnitAtomShare     = 0.15
)

// measureAtomQuantile is a of the quantile a/20 of the units'
// contributions that a non-negative measure's atoms' clip aims at: 1
// (the 5% quantile), below nearly every unit, so that the atoms' shape
// weighs the units alike and its noise is small against their number.
const measureAtomQuantile = 1

// MeasureUnitClipPenalty is κ of the clip's step penalty λ = κ/ε_Q: a
// step up the ladder (√2 times the noise) must bring κ/ε_Q more units
// under the clip. Past the largest unit every step then costs a factor
// e^(−κ/2) of probability; with κ = 1 (the unit release's row count and
// synth answer) the clip landed 2–3 rungs above the largest customer in
// 4 of 10 TPC-H runs, and the whole-file sum missed 2% in 2 of them. On
// the ladder's 9 rungs the climb costs at most 16/ε_Q units (simulated:
// 100 customers still get a clip within 2 rungs of their largest).
const MeasureUnitClipPenalty = 2.0

// MeasureUnitLadderRungs is the number of rungs of a measure's clip ladder
// under a unit: ⌈R·Δ·2^(−k/2)⌉ for k = 0 … 8, Δ the measure's largest
// |value| in units and R a bound on one unit's rows — privacy.max_unit_rows
// when the spec declares it (public), else the unit release's DP row clip
// (a DP output of the same release) — from R·Δ, what a unit of R rows can
// contribute at most, down to 1/16 of it. The ladder is short on purpose:
// the exponential mechanism's penalty λ·j (λ = 1/ε_Q) grows along the
// ladder, and a ladder climbing from 1 made the penalty outweigh every unit
// of a small data set (100 customers: C = 1–3, the sum 90% off, in
// simulation); one anchored at R starts near the units' scale. The row
// clip is a poor anchor when the rows' ε is small (at ε 0.3 for the rows
// it chose C = 1 row on TPC-H SF 0.01, whose customers own 57 rows at the
// median): declare max_unit_rows then.
const MeasureUnitLadderRungs = 9

// unitLadder returns the clip ladder of a measure under a unit (see
// [MeasureUnitLadderRungs]), in units of the measure's resolution:
// public given rowClip (a DP output) and delta (the declared domain).
func unitLadder(rowClip, delta int64) ([]int64, error) {
	rowClip, delta = max(rowClip, 1), max(delta, 1)
	if hi, lo := bits.Mul64(uint64(rowClip), uint64(delta)); hi != 0 || lo > 1<<62 {
		return nil, fmt.Errorf("a unit's largest contribution, %d rows × %d units, is beyond 2⁶²", rowClip, delta)
	}
	top := float64(rowClip * delta)
	var out []int64
	for k := MeasureUnitLadderRungs - 1; k >= 0; k-- {
		c := int64(math.Max(1, math.Ceil(top*math.Pow(2, -float64(k)/2)-1e-9)))
		if k == 0 {
			c = rowClip * delta
		}
		if len(out) == 0 || out[len(out)-1] < c {
			out = append(out, c)
		}
	}
	return out, nil
}

// unitAtom is one unit's signed contribution to one atom, in units.
type unitAtom struct {
	atom int
	sum  int64
}

// measureUnitDirect is the mechanism of a measure under a privacy unit on
// the units' vectors over the atoms (vecs[u]: unit u's non-zero sums per
// atom, in units of the measure's resolution):
//
//  1. C is drawn from ladder by the exponential mechanism at epsQ
//     ([dp.ExponentialGrid], exact) on [dp.ClipScores]: score −#{units
//     with ‖v_u‖₁ > C_j} − j·κ/ε_Q (κ = [MeasureUnitClipPenalty]),
//     sensitivity 1 (deleting a unit changes one count by at most one;
//     the penalty is public).
//  2. Each unit's vector is clipped to L1 norm C: x_{u,a} = sign(v)·
//     ⌊|v_{u,a}|·C/‖v_u‖₁⌋ when ‖v_u‖₁ > C (exact integer arithmetic),
//     x = v otherwise.
//  3. The total Σ_u Σ_a x_{u,a} gets discrete Laplace noise of scale C/ε_T.
//  4. With epsR > 0 (a non-negative measure) the atoms' clip r is drawn
//     from the same ladder by the exponential mechanism at epsR on the
//     quantile score −|(20 − a)·#{u: ‖v_u‖₁ ≤ r_j} − a·#{u: ‖v_u‖₁ >
//     r_j}| (a = [measureAtomQuantile], sensitivity max(a, 20 − a));
//     else r = C. Each atom's Σ_u x_{u,a}, the vectors clipped to L1 norm
//     r as in step 2, gets discrete Laplace of scale r/ε_A.
//
// # Privacy
//
// Under the unit neighbour relation, deleting unit u (with every tuple
// that references it, hence exactly its join rows) removes its clipped
// vector x_u and changes no other unit's vector (each join row belongs to
// one unit: the release's key checks). ‖x_u‖₁ ≤ C, so the atoms' vector
// moves by at most r in L1 (its vector clipped at r) and the total by
// |Σ_a x_{u,a}| ≤ C: the Laplace (geometric) mechanism makes them ε_A- and
// ε_T-DP given r and C, C is ε_Q-DP and r ε_R-DP: sequential composition
// gives ε_Q + ε_T + ε_R + ε_A, pure. The
// ladder is public given the row clip (a DP output of the same release:
// adaptive composition). Integer sums and integer noise: no raw float
// leaves.
//
// epsM is the measure's whole ε, used only by the planted bug
// measureMutTotalNoEps; measureMutNoUnitClip skips step 2.
func measureUnitDirect(src dp.Source, vecs [][]unitAtom, nAtoms int, ladder []int64, epsQ, epsT, epsR, epsA, epsM float64, mut measureMutation) (clip, atomClip, total int64, atoms []int64, err error) {
	norms := make([]uint64, len(vecs))
	for u, v := range vecs {
		for _, e := range v {
			norms[u] += absU(e.sum)
		}
	}
	scores := dp.ClipScores(ladder, func(c int64) float64 {
		n := 0
		for _, x := range norms {
			if x > uint64(c) {
				n++
			}
		}
		return float64(n)
	}, MeasureUnitClipPenalty/epsQ)
	ci := 0
	if mut == measureMutTrueClip {
		for j, sc := range scores {
			if sc > scores[ci] {
				ci = j
			}
		}
	} else {
		ci = dp.ExponentialGrid(src, scores, epsQ, 1, 0)
	}
	clip = ladder[ci]
	// clipped returns the units' vectors clipped to L1 norm c, summed per
	// atom: x_{u,a} = sign(v)·⌊|v_{u,a}|·c/‖v_u‖₁⌋ when ‖v_u‖₁ > c.
	clipped := func(c int64) []int64 {
		cs := uint64(c)
		out := make([]int64, nAtoms)
		for u, v := range vecs {
			for _, e := range v {
				x := absU(e.sum)
				if norms[u] > cs && mut != measureMutNoUnitClip {
					// ⌊|v|·c/‖v‖₁⌋ exactly: |v| ≤ ‖v‖₁, so the quotient is ≤ c.
					hi, lo := bits.Mul64(x, cs)
					x, _ = bits.Div64(hi, lo, norms[u])
				}
				if e.sum < 0 {
					out[e.atom] -= int64(x)
				} else {
					out[e.atom] += int64(x)
				}
			}
		}
		return out
	}
	for _, a := range clipped(clip) {
		total += a
	}
	atomClip = clip
	if epsR > 0 {
		// The atoms' own clip: the exponential mechanism on the quantile
		// score −|(20 − a)·#{u: ‖v_u‖₁ ≤ r_j} − a·#{u: ‖v_u‖₁ > r_j}|,
		// sensitivity max(a, 20 − a) (deleting a unit lowers one count by
		// one).
		a := int64(measureAtomQuantile)
		qs := make([]float64, len(ladder))
		for j, c := range ladder {
			var below, above int64
			for _, x := range norms {
				if x > uint64(c) {
					above++
				} else {
					below++
				}
			}
			qs[j] = -math.Abs(float64((20-a)*below - a*above))
		}
		ri := 0
		if mut == measureMutTrueAtomClip {
			for j, sc := range qs {
				if sc > qs[ri] {
					ri = j
				}
			}
		} else {
			ri = dp.ExponentialGrid(src, qs, epsR, float64(max(a, 20-a)), 0)
		}
		atomClip = ladder[ri]
	}
	atoms = clipped(atomClip)
	eT := epsT
	if mut == measureMutTotalNoEps {
		eT = epsM // planted bug: the total's noise at the measure's whole ε, not its share
	}
	lt, err := dp.NewDiscreteLaplace(dp.NoiseScale(float64(clip), eT))
	if err != nil {
		return 0, 0, 0, nil, fmt.Errorf("total's noise: %w", err)
	}
	la, err := dp.NewDiscreteLaplace(dp.NoiseScale(float64(atomClip), epsA))
	if err != nil {
		return 0, 0, 0, nil, fmt.Errorf("atoms' noise: %w", err)
	}
	for i := range atoms {
		atoms[i] += la.Sample(src)
	}
	return clip, atomClip, total + lt.Sample(src), atoms, nil
}

// absU is |x| as an unsigned integer (exact for math.MinInt64).
func absU(x int64) uint64 {
	if x < 0 {
		return uint64(-(x + 1)) + 1
	}
	return uint64(x)
}

// unitDirect reads each unit's contributions to m's atoms (one aggregate
// over the join, engine.UnitCellSums) and runs [measureUnitDirect] with
// the ladder anchored at the release's DP row clip rowClip; then the
// atoms' sums are made to add up to the total ([fitAtoms],
// post-processing). key is the unit's key in the folded join.
func (m *measure) unitDirect(ctx context.Context, src dp.Source, eng *engine.Engine, h *hypergraph.Hypergraph, key engine.UnitKey, i int,
	gridCols []spec.ColumnRef, sizes []int, rowClip int64) error {
	neg, pos := m.u.Bound(true), m.u.Bound(false)
	ladder, err := unitLadder(rowClip, max(neg, pos))
	if err != nil {
		return err
	}
	var vecs [][]unitAtom
	acc := map[int]int64{}
	flush := func() {
		if len(acc) == 0 {
			return
		}
		var v []unitAtom
		for a := 0; a < m.nAtoms; a++ {
			if s, ok := acc[a]; ok && s != 0 {
				v = append(v, unitAtom{atom: a, sum: s})
			}
		}
		vecs = append(vecs, v)
		clear(acc)
	}
	cur := int64(-1)
	err = m.withView(ctx, eng, h, i, gridCols, sizes, func(hv *hypergraph.Hypergraph, view string, cols []spec.ColumnRef, sz []int) error {
		k := key
		if k.Relation == m.folded.Table {
			k.Relation = view
		}
		return eng.UnitCellSums(ctx, hv, k, cols, sz, spec.ColumnRef{Table: view, Column: measureUnits}, int(neg+pos+1), neg, func(u, c, s int64) error {
			if u != cur {
				flush()
				cur = u
			}
			if c >= int64(len(m.atomOf)) {
				return fmt.Errorf("a cell %d outside the grid of %d cells", c, len(m.atomOf))
			}
			acc[m.atomOf[c]] += s
			return nil
		})
	})
	if err != nil {
		return err
	}
	flush()
	clip, atomClip, total, atoms, err := measureUnitDirect(src, vecs, m.nAtoms, ladder, m.epsQ, m.epsT, m.epsR, m.epsA, m.eps, m.mut)
	if err != nil {
		return err
	}
	b := m.u.Resolution()
	m.clip = clip
	m.totalDP = float64(total) * b
	m.atomsDP = make([]float64, m.nAtoms)
	// Atoms clipped at r < C measure the shape: they are brought to the
	// total's scale (Σ⁺ atoms = the total, post-processing) and their
	// noise scale with them.
	scale := 1.0
	if atomClip != clip {
		var pos float64
		for _, a := range atoms {
			pos += math.Max(float64(a), 0)
		}
		if pos > 0 {
			scale = math.Max(float64(total), 0) / pos
		}
	}
	for i, a := range atoms {
		m.atomsDP[i] = float64(a) * b * scale
	}
	m.atomNoise = float64(atomClip) * b * scale / m.epsA
	m.atomFit = fitAtoms(m.atomsDP, m.totalDP, neg == 0)
	return nil
}

// unitErrorScale is m's error scale under a privacy unit once unitDirect
// has run: one unit moves any sum by at most C·b (its clipped vector's L1
// norm, in the measure's units), so a sum at ε carries noise of scale
// C·b/ε; the total's and the atoms' are C·b/ε_T and C·b/ε_A. Public given
// C (a DP output). The clipping bias (units above C lose their excess) is
// not in these scales.
func (m *measure) unitErrorScale() MeasureErrorScale {
	var e MeasureErrorScale
	b := m.u.Resolution()
	e.UnitClip = float64(m.clip) * b
	e.SumSensitivity = e.UnitClip
	e.NoiseScale = e.UnitClip / m.eps
	e.Noise95 = math.Log(20) * e.NoiseScale
	e.DPTotal = m.totalDP
	e.Signal = e.Noise95 < math.Abs(e.DPTotal)
	e.TotalNoiseScale = e.UnitClip / m.epsT
	e.TotalNoise95 = math.Log(20) * e.TotalNoiseScale
	e.AtomNoiseScale = m.atomNoise
	e.Text = fmt.Sprintf("under privacy unit: each unit's contribution to %s is clipped to %.4g (chosen privately); the whole-file sum is the clipped total measured directly "+
		"(95%% noise ±%.3g) and every workload box the sum of its atoms' measured sums (scale %.3g each); units above the clip lose their excess (a bias the noise does not cover)",
		m.ref, e.UnitClip, e.TotalNoise95, e.AtomNoiseScale)
	if !e.Signal {
		e.Text += ": the noise is as large as the total, so the measure's sums carry no signal at this ε"
	}
	return e
}

// unitKey returns the privacy unit's key column in the folded join.
func unitKey(s *spec.Spec, folding *hypergraph.Folding) (engine.UnitKey, error) {
	t := s.Table(s.Privacy.Unit)
	if t == nil || len(t.PrimaryKey) != 1 {
		return engine.UnitKey{}, fmt.Errorf("privacy.unit %q needs a one-column primary key", s.Privacy.Unit)
	}
	rel, col, ok := folding.Locate(t.Name, t.PrimaryKey[0])
	if !ok {
		return engine.UnitKey{}, fmt.Errorf("privacy.unit %s is not in the join", t.Name)
	}
	return engine.UnitKey{Relation: rel, Column: col}, nil
}

// chargeUnit charges the measures' share under a privacy unit (before any
// data is read): the share split evenly between the measures (basic
// composition), each into its clip, total and atoms.
func (mp *measurePlan) chargeUnit(ledger *dp.Ledger, share float64) error {
	mled, err := ledger.Split("measures (per-unit clipped direct sums)", mp.share,
		fmt.Sprintf("basic composition with the release's other mechanism, which gets ((1 − %g)·ε, δ); the %d measures compose by basic "+
			"composition, ε/%d each; all under the unit neighbour relation (pure ε-DP)", share, len(mp.ms), len(mp.ms)),
		map[string]any{"measures_share": share, "measures": len(mp.ms)})
	if err != nil {
		return fmt.Errorf("release: measures: %w", err)
	}
	for _, m := range mp.ms {
		if m.ledger, err = mled.Split("measure "+m.ref.String(), dp.Budget{Epsilon: m.eps},
			"basic composition of the clip's choice, the clipped total and the clipped atoms' sums (all pure ε-DP); the file's cell sums are post-processing",
			map[string]any{"clip_share": MeasureUnitClipShare, "total_share": MeasureUnitTotalShare, "atom_clip_share": m.epsR / m.eps, "atom_share": m.epsA / m.eps, "atoms": m.nAtoms,
				"ladder_rungs": MeasureUnitLadderRungs}); err != nil {
			return fmt.Errorf("release: measures: %w", err)
		}
		for _, c := range []struct {
			what, why string
			eps       float64
		}{
			{"clip C (exponential mechanism over a public ladder)", fmt.Sprintf("score −#{units whose contribution (the L1 norm of their sums over the atoms, in units) exceeds C_j} − j·%g/ε_Q "+
				"over the %d rungs ⌈R·Δ·2^(−k/2)⌉, R the release's DP row clip and Δ the domain's largest |value|: deleting a unit changes the count by at most 1 "+
				"and the penalty not at all: sensitivity 1 (dp.ExponentialGrid, exact)", MeasureUnitClipPenalty, MeasureUnitLadderRungs), m.epsQ},
			{"whole-file total, each unit clipped to C, + discrete Laplace", "deleting a unit removes its clipped vector (L1 norm ≤ C) and changes no other unit's: " +
				"the total moves by at most C; discrete Laplace of scale C/ε_T; C is a DP output, so the parts compose", m.epsT},
			{"atoms' clip r (exponential mechanism, quantile of the units' contributions)", fmt.Sprintf("score −|(20 − a)·#{units with contribution ≤ r_j} − a·#{units above r_j}| with a = %d "+
				"over the same ladder: deleting a unit lowers one count by 1: sensitivity max(a, 20 − a) (dp.ExponentialGrid, exact); a non-negative measure only", measureAtomQuantile), m.epsR},
			{"atoms' sums, each unit clipped to r (C for a signed measure), + discrete Laplace", fmt.Sprintf("the %d atoms partition the grid: the vector of their sums moves by at most r in L1 "+
				"when a unit goes; discrete Laplace of scale r/ε_A on each", m.nAtoms), m.epsA},
		} {
			if c.eps == 0 {
				continue
			}
			if err := m.ledger.Charge("measure "+m.ref.String()+": "+c.what, dp.Budget{Epsilon: c.eps}, c.why, nil); err != nil {
				return fmt.Errorf("release: measures: %w", err)
			}
		}
	}
	return nil
}

// shrinkAtoms (under a unit, once the rows' cells are known) shrinks the
// atoms' measured sums toward the rows' shape of the measured total —
// r_a = total·rows(a)/rows, the synthetic rows in atom a (DP outputs) —
// by positive-part James–Stein: with v = 2(C·b/ε_A)² the public variance
// of one atom's noise and k atoms, y_a becomes r_a + λ(y_a − r_a),
// λ = clamp(1 − (k − 2)·v/‖y − r‖², 0, 1); then the atoms are fitted to
// the total again ([fitAtoms]). The target does not depend on the atoms'
// noise (the rows and the total are separate measurements), which is
// James–Stein's own setting: for Gaussian noise of that variance it
// lowers the atoms' total squared error whatever the target when k ≥ 3
// (the noise here is discrete Laplace: measured, not proved). On TPC-H
// (docs/measures.md) it brought the workload boxes' median relative error
// from 0.086 to 0.057; with Efron–Morris's limited translation at one
// noise deviation, 0.064. Post-processing of DP outputs only.
func (m *measure) shrinkAtoms() {
	k := m.nAtoms
	if k < 3 || m.totalDP <= 0 {
		return
	}
	rows := make([]float64, k)
	var all float64
	for g, n := range m.rows {
		rows[m.atomOf[g]] += float64(n)
		all += float64(n)
	}
	if all == 0 {
		return
	}
	v := 2 * m.atomNoise * m.atomNoise
	var rss float64
	r := make([]float64, k)
	for a := range r {
		r[a] = m.totalDP * rows[a] / all
		rss += (m.atomsDP[a] - r[a]) * (m.atomsDP[a] - r[a])
	}
	if rss == 0 {
		return
	}
	lambda := math.Min(1, math.Max(0, 1-float64(k-2)*v/rss))
	y := make([]float64, k)
	for a := range y {
		y[a] = m.atomsDP[a] - (1-lambda)*(m.atomsDP[a]-r[a])
	}
	m.atomFit = fitAtoms(y, m.totalDP, m.u.Bound(true) == 0)
}

// clipValue is the chosen clip C in the measure's units (C·b).
func (m *measure) clipValue() float64 { return float64(m.clip) * m.u.Resolution() }
