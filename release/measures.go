package release

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/numerical"
	"github.com/synth-dp/synth/output/synthfile"
	"github.com/synth-dp/synth/spec"
	"github.com/synth-dp/synth/workload"
)

// MaxMeasureCells bounds the grid of one measure (the product of the bins
// of the released columns the workload's sums on it use as conditions):
// the summary carries two values a cell and every synthetic row looks its
// cell up. A larger grid is refused before any data is read (numerical's
// universe, grid × values, is bounded by the memory cap besides).
const MaxMeasureCells = 1 << 16

// MeasureMaxFullElements is the most elements a measure's full universe
// (grid cells × values of the measure in units of its resolution) may
// have; a larger one runs on the reduced universe of Qiu et al. §4.1
// (numerical.UniverseOptions.MaxFullElements). The mechanism makes about
// 1,100 multiplicative updates, each a pass over its item's support: at
// 2²⁰ elements that is about two seconds, while TPC-H's o_totalprice
// ([0, 600000] in units of 1) over 5 segments, 3·10⁶ elements, took
// 20–30 s of CPU. The choice reads the spec only; both universes carry
// the same guarantee (the reduced one pays its group factor in noise).
// On Adult capital-loss over age × education (557,568 elements, full)
// the full universe's cell sums were 1.5× more accurate than the
// reduced one's, hence full wherever the time allows.
const MeasureMaxFullElements = 1 << 20

// The shares of a measure's ε: MeasureTotalShare measures its whole-file
// total directly (Laplace), MeasureAtomShare the sums of the grid's atoms
// (the cells grouped by the workload boxes that hold them; Laplace), and
// the rest runs numerical's mechanism, whose fitted cell sums only shape
// each atom's sum over its cells. The file's cell sums are then scaled so
// that every atom adds up to its measured sum and the atoms to the
// measured total (post-processing): the whole-file SUM is the measured
// total, every workload box the sum of its atoms' measurements. Measured
// on Adult capital-loss (docs/measures.md).
const (
	MeasureTotalShare = 0.4
	MeasureAtomShare  = 0.35
)

// measureMutation is a planted bug for the audits (tests only).
type measureMutation int

const (
	measureMutNone         measureMutation = iota
	measureMutTotalNoEps                   // the total's noise at the measure's whole ε, not its share
	measureMutNoUnitClip                   // under a unit: the units' contributions not clipped to C
	measureMutTrueAtomClip                 // under a unit: the atoms' clip at the true best quantile score
	measureMutTrueClip                     // under a unit: the clip C at the true best score
)

// atoms groups the cells of a grid of the given sizes by the set of
// queries (boxes over the grid) that hold them: atomOf[g] is cell g's
// atom, and queryAtoms[q] the atoms inside query q (every query is the
// union of its atoms). Public: it reads the spec's boxes only.
func atoms(sizes []int, qs []numerical.Query) (atomOf []int, n int, queryAtoms [][]int) {
	cells := 1
	for _, z := range sizes {
		cells *= z
	}
	in := func(q numerical.Query, codes []int) bool {
		if len(q.Where) == 0 {
			return true
		}
		for d, c := range codes {
			if q.Where[d] != nil && !slices.Contains(q.Where[d], c) {
				return false
			}
		}
		return true
	}
	ids := map[string]int{}
	atomOf = make([]int, cells)
	queryAtoms = make([][]int, len(qs))
	codes := make([]int, len(sizes))
	sig := make([]byte, len(qs))
	for g := 0; g < cells; g++ {
		x := g
		for d := len(sizes) - 1; d >= 0; d-- {
			codes[d] = x % sizes[d]
			x /= sizes[d]
		}
		for q := range qs {
			sig[q] = '0'
			if in(qs[q], codes) {
				sig[q] = '1'
			}
		}
		id, ok := ids[string(sig)]
		if !ok {
			id = len(ids)
			ids[string(sig)] = id
			for q := range qs {
				if sig[q] == '1' {
					queryAtoms[q] = append(queryAtoms[q], id)
				}
			}
		}
		atomOf[g] = id
	}
	return atomOf, len(ids), queryAtoms
}

// measureView is the prefix of the engine views that add a measure's
// value, in units of its resolution, to its relation.
const measureView = "synth_measure_"

// measureUnits is the column (under [engine.BinColumn]) of a measure view
// holding the measure in units, shifted by Δ₋ so that it is ≥ 0.
const measureUnits = "synth_measure_units"

// measure is one release.measures column, planned before any data is read:
// everything in it is public until run fills the DP answers.
type measure struct {
	ref     spec.ColumnRef // the spec's column
	folded  spec.ColumnRef // where it lives in the folded join
	name    string         // the output column
	col     *spec.Column
	grid    []int // positions (release order) of the grid's columns
	u       *numerical.Universe
	queries []numerical.Query // the total, then the workload's sums of it
	// workload[i] is the index in queries of the spec's workload.numeric
	// query i when it sums this measure over a non-empty box, -2 for an
	// empty box, -1 for a sum of another column.
	workload []int
	nCells   int
	ledger   *dp.Ledger // this measure's share
	eps      float64
	// The direct measurements (public plan): the grid's atoms — the cells
	// grouped by which workload boxes hold them, so that the atoms
	// partition the grid and every box is a union of atoms — the atoms of
	// each query, and the shares of eps: epsPMW for numerical's
	// mechanism, epsT for the total, epsA for the atoms' sums.
	atomOf             []int
	nAtoms             int
	queryAtoms         [][]int
	epsPMW, epsT, epsA float64
	pmwLedger          *dp.Ledger
	mut                measureMutation
	// unit is set under a privacy unit (measures_unit.go): no numerical
	// run (epsPMW 0); epsQ chooses the per-unit clip, and clip is the
	// chosen C in the measure's units (a DP output).
	unit bool
	epsQ float64
	clip int64
	// epsR chooses the atoms' own clip (a non-negative measure under a
	// unit; 0 otherwise), and atomNoise is the atoms' noise scale in the
	// measure's units at the total's scale (a DP output).
	epsR      float64
	atomNoise float64
	// After run (DP outputs): the measured total and atom sums, in the
	// measure's units, and the atoms' sums after they are made to add up
	// to the total (post-processing).
	totalDP float64
	atomsDP []float64
	atomFit []float64

	// After run (DP outputs):
	res        *numerical.Result
	sums       []float64 // SUMhat(g) per grid cell, from res.Synthetic
	deltaTilde float64
	scale      MeasureErrorScale
	// After count (post-processing of DP outputs):
	rows []int64   // synthetic rows per grid cell
	rep  []float64 // representative value per grid cell
	lost float64   // Σ SUMhat(g) over the cells without rows
	gone int       // cells without rows
}

// cellSums returns SUMhat(g) for every grid cell g: the sum of the
// measure in cell g of numerical's synthetic histogram D̃ (computed once
// in run; post-processing of the DP output D̃).
func (m *measure) cellSums() []float64 { return m.sums }

// measurePlan is the measures of a release, planned and charged before any
// data is read.
type measurePlan struct {
	ms    []*measure
	share dp.Budget
}

// measureNames returns the output column of each measure: its bare name
// unless a released column or an earlier measure has it, then
// table_column. A name still taken is an error.
func measureNames(s *spec.Spec, released []string) ([]string, error) {
	taken := map[string]bool{}
	for _, n := range released {
		taken[n] = true
	}
	out := make([]string, len(s.Release.Measures))
	for i, r := range s.Release.Measures {
		name := r.Column
		if taken[name] {
			name = r.Table + "_" + r.Column
		}
		if taken[name] {
			return nil, fmt.Errorf("release: %w: release.measures: %s: output column %q is taken by another column", spec.ErrInvalid, r, name)
		}
		taken[name] = true
		out[i] = name
	}
	return out, nil
}

// planMeasures builds the numerical universe and queries of every measure
// from the spec alone and reserves the measures' share of the budget in
// the ledger (before any data is read). It returns nil when the spec has
// no measure. The share is (s·ε, 0) with s = release.measures_share: the
// numerical mechanism is pure ε-DP at its default T = 10 (numerical
// [numerical.Config]); each of the |M| measures gets s·ε/|M| (basic
// composition), and the release's other mechanism gets ((1 − s)·ε, δ).
func planMeasures(s *spec.Spec, folding *hypergraph.Folding, names []string, dec *synthfile.Decoder, memCap int64, ledger *dp.Ledger) (*measurePlan, error) {
	if len(s.Release.Measures) == 0 {
		return nil, nil
	}
	share := s.Release.MeasuresShare
	if !(share > 0 && share < 1) {
		return nil, fmt.Errorf("release: %w: release.measures_share = %v, want a number in (0, 1)", spec.ErrInvalid, share)
	}
	outNames, err := measureNames(s, names)
	if err != nil {
		return nil, err
	}
	sizes := s.ReleaseSizes()
	mp := &measurePlan{share: dp.Budget{Epsilon: share * s.Privacy.Epsilon}}
	epsEach := mp.share.Epsilon / float64(len(s.Release.Measures))
	for i, r := range s.Release.Measures {
		col := s.Column(r)
		if col == nil || (col.Type != spec.Integer && col.Type != spec.Numeric) {
			return nil, fmt.Errorf("release: %w: release.measures: %s is not an integer or numeric column", spec.ErrInvalid, r)
		}
		m := &measure{ref: r, folded: spec.FoldColumns(folding, []spec.ColumnRef{r})[0], name: outNames[i], col: col, eps: epsEach}
		m.grid = workload.SumGrid(s, r)
		g := numerical.Grid{Names: []string{"(all rows)"}, Sizes: []int{1}}
		if len(m.grid) > 0 {
			g = numerical.Grid{}
			for _, p := range m.grid {
				g.Names = append(g.Names, names[p])
				g.Sizes = append(g.Sizes, sizes[p])
			}
		}
		if c := g.Cells(); c > MaxMeasureCells {
			return nil, fmt.Errorf("%w: release.measures: %s: its grid %s has %d cells, more than %d (condition its sums on fewer or coarser columns)",
				ErrUnsupported, r, strings.Join(g.Names, " × "), c, MaxMeasureCells)
		}
		m.nCells = int(g.Cells())
		nm := numerical.Measure{Name: r.String(), Min: col.Min, Max: col.Max,
			Resolution: numerical.DefaultResolution(col.Min, col.Max, col.Type == spec.Integer)}
		if m.u, err = numerical.NewUniverse(g, nm, numerical.UniverseOptions{MemoryCap: memCap, MaxFullElements: MeasureMaxFullElements}); err != nil {
			return nil, fmt.Errorf("release: release.measures: %s: %w", r, err)
		}
		// The queries PMW keeps accurate: the measure's total and the
		// workload's sums of it (their boxes over the grid). The file
		// carries D̃'s per-cell sums, which add up over any box; see the
		// package doc ("Measures") for why not one query per cell.
		m.queries = append(m.queries, numerical.Query{Name: "total"})
		for qi, q := range s.Workload.Numeric {
			m.workload = append(m.workload, -1)
			if q.Sum != r {
				continue
			}
			m.workload[qi] = -2 // a box no bin satisfies: 0
			if where, ok := workload.SumBox(s, dec, m.grid, q); ok {
				m.workload[qi] = len(m.queries)
				m.queries = append(m.queries, numerical.Query{Name: fmt.Sprintf("workload.numeric[%d]", qi), Where: where})
			}
		}
		m.atomOf, m.nAtoms, m.queryAtoms = atoms(g.Sizes, m.queries)
		m.epsT, m.epsA = MeasureTotalShare*m.eps, MeasureAtomShare*m.eps
		m.epsPMW = m.eps - m.epsT - m.epsA
		if s.Privacy.Unit != "" {
			m.unit = true
			m.epsQ, m.epsT, m.epsA, m.epsPMW = MeasureUnitClipShare*m.eps, MeasureUnitTotalShare*m.eps, MeasureUnitAtomShare*m.eps, 0
			if m.u.Bound(true) == 0 {
				m.epsR = MeasureUnitAtomClipShare * m.eps
			} else {
				m.epsA += MeasureUnitAtomClipShare * m.eps
			}
			// The largest noise any row clip could call for (a unit of
			// 2²⁰ rows, or of privacy.max_unit_rows when declared — the
			// ladder's anchor then — each at the domain's largest |value|)
			// must be within the exact sampler: checked now, before any
			// data.
			anchor := int64(1 << 20)
			if s.Privacy.MaxUnitRows > 0 {
				anchor = s.Privacy.MaxUnitRows
			}
			top, err := unitLadder(anchor, max(m.u.Bound(true), m.u.Bound(false)))
			if err == nil {
				_, err = dp.NewDiscreteLaplace(dp.NoiseScale(float64(top[len(top)-1]), min(m.epsT, m.epsA)))
			}
			if err != nil {
				return nil, fmt.Errorf("release: %w: release.measures: %s under privacy.unit: %w (declare a narrower domain, privacy.max_unit_rows, or a larger ε)", spec.ErrInvalid, r, err)
			}
		}
		mp.ms = append(mp.ms, m)
	}
	// The whole share first, then one sub-share per measure, before any
	// data is read.
	if s.Privacy.Unit != "" {
		return mp, mp.chargeUnit(ledger, share)
	}
	mled, err := ledger.Split("measures (Qiu et al. Alg. 2)", mp.share,
		fmt.Sprintf("basic composition with the release's other mechanism, which gets ((1 − %g)·ε, δ); the %d measures compose by basic "+
			"composition, ε/%d each; each is calibrated to the per-tuple sensitivity Δ̃ the release's join-as-one run publishes "+
			"(1 on one table), a DP output, so adaptive composition applies", share, len(mp.ms), len(mp.ms)),
		map[string]any{"measures_share": share, "measures": len(mp.ms)})
	if err != nil {
		return nil, fmt.Errorf("release: measures: %w", err)
	}
	for _, m := range mp.ms {
		initS, alphaS := numerical.DefaultInitShare, numerical.DefaultAlphaShare
		if m.ledger, err = mled.Split("measure "+m.ref.String(), dp.Budget{Epsilon: m.eps},
			"basic composition of the direct total, the atoms' sums and numerical's mechanism (all pure ε-DP); the file's cell sums are post-processing of the three",
			map[string]any{"total_share": MeasureTotalShare, "atom_share": MeasureAtomShare, "atoms": m.nAtoms}); err != nil {
			return nil, fmt.Errorf("release: measures: %w", err)
		}
		if err := m.ledger.Charge("measure "+m.ref.String()+": whole-file total + discrete Laplace", dp.Budget{Epsilon: m.epsT},
			"the sum of the measure over the join in units of its resolution b; a neighbour moves up to ⌈Δ̃⌉ tuples, each by at most Δ units: "+
				"sensitivity Δ·⌈Δ̃⌉ units, discrete Laplace of scale Δ·⌈Δ̃⌉/ε_T (Δ̃ is a DP output of the release's method)", nil); err != nil {
			return nil, fmt.Errorf("release: measures: %w", err)
		}
		if err := m.ledger.Charge("measure "+m.ref.String()+": atoms' sums + discrete Laplace", dp.Budget{Epsilon: m.epsA},
			fmt.Sprintf("the %d atoms (the grid's cells grouped by the workload boxes that hold them) partition the grid: a tuple lies in one atom, "+
				"so the vector of the atoms' sums has L1 sensitivity Δ·⌈Δ̃⌉ units; discrete Laplace of scale Δ·⌈Δ̃⌉/ε_A on each", m.nAtoms), nil); err != nil {
			return nil, fmt.Errorf("release: measures: %w", err)
		}
		if m.pmwLedger, err = m.ledger.Split("measure "+m.ref.String()+" (numerical.Run)", dp.Budget{Epsilon: m.epsPMW},
			"Qiu et al. Alg. 2 with the private α of §6: warm start, PMW rounds and α by basic composition (pure ε-DP)",
			map[string]any{
				"column": m.ref.String(), "output_column": m.name, "grid": m.u.Grid().Names, "grid_cells": m.nCells,
				"queries": len(m.queries), "universe": m.u.String(), "resolution": m.u.Resolution(),
				"group_factor": m.u.GroupFactor(), "reduced_universe": m.u.Reduced(),
				"thresholds_epsilon": (1 - alphaS) * m.epsPMW, "thresholds_rule": fmt.Sprintf(
					"the thresholds Δ̄ are post-processing of the PMW answers to the counting queries c_{w,τ}: its warm start (%.2g·ε) and rounds (%.2g·ε)",
					initS, 1-initS-alphaS),
				"alpha_epsilon": alphaS * m.epsPMW,
			}); err != nil {
			return nil, fmt.Errorf("release: measures: %w", err)
		}
	}
	return mp, nil
}

// run reads the points of every measure (one GROUP BY over the join each)
// and runs numerical's mechanism with the share reserved for it and the
// join's DP sensitivity Δ̃, reporting [PhaseMeasures] after every round
// and logging each measure's start and end (public parameters and DP
// outputs only).
func (mp *measurePlan) run(ctx context.Context, src dp.Source, eng *engine.Engine, h *hypergraph.Hypergraph, s *spec.Spec, folding *hypergraph.Folding,
	deltaTilde float64, rowClip int64, progress func(Phase, int64, int64), log *slog.Logger) error {
	gridCols := spec.FoldColumns(folding, s.Release.Columns)
	sizes := s.ReleaseSizes()
	rounds := int64(numerical.DefaultRounds)
	total := int64(len(mp.ms)) * rounds
	progress(PhaseMeasures, 0, total)
	for i, m := range mp.ms {
		log.Info("measure", "column", m.ref.String(), "measure", i+1, "of", len(mp.ms), "universe", m.u.String(), "epsilon", m.eps)
		if m.unit {
			key, err := unitKey(s, folding)
			if err != nil {
				return fmt.Errorf("release: measure %s: %w", m.ref, err)
			}
			m.deltaTilde = 1
			m.sums = make([]float64, m.nCells) // no shape: the atoms spread by rows
			anchor := rowClip
			if s.Privacy.MaxUnitRows > 0 {
				anchor = s.Privacy.MaxUnitRows
			}
			if err := m.unitDirect(ctx, src, eng, h, key, i, gridCols, sizes, anchor); err != nil {
				return fmt.Errorf("release: measure %s: %w", m.ref, err)
			}
			m.scale = m.errorScale()
			progress(PhaseMeasures, int64(i+1)*rounds, total)
			log.Info("measure done", "column", m.ref.String(), "clip", m.clip, "dp_total", int64(math.Round(m.totalDP)),
				"total_noise_95", int64(math.Round(m.scale.TotalNoise95)))
			continue
		}
		pts, err := m.points(ctx, eng, h, i, gridCols, sizes)
		if err != nil {
			return fmt.Errorf("release: measure %s: %w", m.ref, err)
		}
		m.deltaTilde = deltaTilde
		m.res, err = numerical.Run(ctx, src, m.u, m.queries, pts, numerical.Config{
			Epsilon:     m.epsPMW,
			Sensitivity: deltaTilde,
			Rounds:      int(rounds),
			InitShare:   numerical.DefaultInitShare,
			AlphaShare:  numerical.DefaultAlphaShare,
			Ledger:      m.pmwLedger,
			Progress: func(t, _ int) {
				progress(PhaseMeasures, int64(i)*rounds+int64(t), total)
				log.Debug("measure round", "column", m.ref.String(), "round", t, "of", rounds)
			},
		})
		if err != nil {
			return fmt.Errorf("release: measure %s: %w", m.ref, err)
		}
		m.sums = m.u.CellSums(m.res.Synthetic)
		if err := m.direct(src, pts); err != nil {
			return fmt.Errorf("release: measure %s: %w", m.ref, err)
		}
		m.scale = m.errorScale()
		log.Info("measure done", "column", m.ref.String(), "alpha", m.res.Alpha, "n_hat", m.res.NHat,
			"dp_total", int64(math.Round(m.scale.DPTotal)), "noise_95", int64(math.Round(m.scale.Noise95)), "signal", m.scale.Signal)
	}
	return nil
}

// direct measures m's whole-file total and its atoms' sums from the
// private points (counts per grid cell and value in units of b): each
// plus discrete Laplace noise of scale Δ·⌈Δ̃⌉/ε (Δ = the largest |value|
// in units, Δ̃ the release's DP per-tuple sensitivity), at ε_T and ε_A;
// then the atoms' sums made to add up to the total (post-processing, see
// fitAtoms). Integer sums and integer noise: no raw float leaves.
func (m *measure) direct(src dp.Source, pts []numerical.Point) error {
	sens := float64(max(m.u.Bound(true), m.u.Bound(false))) * math.Ceil(math.Max(m.deltaTilde, 1))
	trueAtoms := make([]int64, m.nAtoms)
	var trueTotal int64
	for _, p := range pts {
		v := p.Units * p.Count
		trueAtoms[m.atomOf[p.Cell]] += v
		trueTotal += v
	}
	total, atoms, err := measureDirect(src, trueTotal, trueAtoms, sens, m.epsT, m.epsA, m.eps, m.mut)
	if err != nil {
		return err
	}
	b := m.u.Resolution()
	m.totalDP = float64(total) * b
	m.atomsDP = make([]float64, m.nAtoms)
	for i, a := range atoms {
		m.atomsDP[i] = float64(a) * b
	}
	m.atomFit = fitAtoms(m.atomsDP, m.totalDP, m.u.Bound(true) == 0)
	return nil
}

// measureDirect adds discrete Laplace noise of scale sens/epsT to the total
// and of scale sens/epsA to each atom's sum (integers, in units). The
// atoms partition the data, so their vector has L1 sensitivity sens: the
// atoms are epsA-DP together, the total epsT-DP. epsM is the measure's
// whole ε (used only by the planted bug measureMutTotalNoEps).
func measureDirect(src dp.Source, total int64, atoms []int64, sens, epsT, epsA, epsM float64, mut measureMutation) (int64, []int64, error) {
	eT := epsT
	if mut == measureMutTotalNoEps {
		eT = epsM // planted bug: the total's noise at the measure's whole ε, not its share
	}
	lt, err := dp.NewDiscreteLaplace(dp.NoiseScale(sens, eT))
	if err != nil {
		return 0, nil, fmt.Errorf("total's noise: %w", err)
	}
	la, err := dp.NewDiscreteLaplace(dp.NoiseScale(sens, epsA))
	if err != nil {
		return 0, nil, fmt.Errorf("atoms' noise: %w", err)
	}
	out := make([]int64, len(atoms))
	for i, a := range atoms {
		out[i] = a + la.Sample(src)
	}
	return total + lt.Sample(src), out, nil
}

// fitAtoms makes the atoms' DP sums add up to the DP total
// (post-processing): for a non-negative measure, negative atoms become 0
// and the rest are scaled by total/Σ (all 0 when the total is ≤ 0; spread
// evenly when every atom is 0 and the total is not); for a signed one, the
// difference is spread evenly. The whole-file sum then equals the total.
func fitAtoms(atoms []float64, total float64, nonNegative bool) []float64 {
	out := slices.Clone(atoms)
	n := float64(len(out))
	if !nonNegative {
		var s float64
		for _, a := range out {
			s += a
		}
		for i := range out {
			out[i] += (total - s) / n
		}
		return out
	}
	total = math.Max(total, 0)
	var s float64
	for i, a := range out {
		out[i] = math.Max(a, 0)
		s += out[i]
	}
	for i := range out {
		if s > 0 {
			out[i] *= total / s
		} else {
			out[i] = total / n
		}
	}
	return out
}

// MeasureErrorScale is the error scale of a measure's sums: public
// parameters and post-processing of DP outputs only.
//
// NoiseScale is b·Δ·⌈Δ̃⌉/ε_m ([numerical.Universe.SumNoiseScale]): the
// Laplace scale that one sum of the measure needs at the measure's share
// ε_m when a neighbour moves ⌈Δ̃⌉ tuples (Δ̃ the release's DP per-tuple
// sensitivity, 1 on one table), each by up to b·Δ = the largest |value|
// of the declared domain. Noise95 = ln(20)·NoiseScale is the half-width
// of a 95% interval of that noise. It is a scale, not a bound: the file's
// sums come from numerical's fitted histogram, whose error on a box can
// be smaller (PMW measures truncated sums, at thresholds below Δ) or
// larger (what the fit did not measure), but a sum whose true value is
// well below Noise95 cannot be told from 0 by any mechanism with this
// budget. Measured (docs/measures.md): on Adult capital-loss the file's
// box errors stayed below Noise95 in most boxes; on TPC-H o_totalprice
// under tuple-level DP (Δ̃ ≈ 10³) Noise95 is 4× the true total.
type MeasureErrorScale struct {
	// SumSensitivity is b·Δ·⌈Δ̃⌉: how far one neighbour moves any sum.
	SumSensitivity float64 `json:"sum_sensitivity"`
	// NoiseScale and Noise95 are defined above, in the measure's units.
	NoiseScale float64 `json:"noise_scale"`
	Noise95    float64 `json:"noise_95"`
	// DPTotal is Σ SUMhat(g), the DP total of the measure (post-processing).
	DPTotal float64 `json:"dp_total"`
	// Signal is false when Noise95 ≥ |DPTotal|: the noise of one sum at
	// this budget is as large as the whole DP total, so no sum of the
	// measure carries signal at this ε.
	Signal bool `json:"signal"`
	// TotalNoise95 is the half-width of a 95% interval of the noise of
	// the whole-file sum: it is the total measured directly with discrete
	// Laplace of scale TotalNoiseScale = b·Δ·⌈Δ̃⌉/ε_T, so
	// P[|file's SUM − true sum| > ln(20)·TotalNoiseScale] < 0.05 whenever
	// every synthetic cell that needs a row has one (LostSum 0).
	TotalNoiseScale float64 `json:"total_noise_scale"`
	TotalNoise95    float64 `json:"total_noise_95"`
	// AtomNoiseScale is the Laplace scale of each atom's measured sum
	// (b·Δ·⌈Δ̃⌉/ε_A); a workload box of k atoms has its k atoms' noise and
	// a share of the total's fit (docs/measures.md).
	AtomNoiseScale float64 `json:"atom_noise_scale"`
	// UnitClip is, under a privacy unit, the clip C on one unit's
	// contribution to the measure (the L1 norm of its sums over the atoms,
	// in the measure's units), chosen privately: SumSensitivity is C and
	// every scale above is C over its ε (docs/measures.md). 0 without a
	// unit.
	UnitClip float64 `json:"unit_clip,omitempty"`
	// Text says the above in one sentence.
	Text string `json:"text"`
}

// errorScale returns m's error scale once run has set its DP outputs.
func (m *measure) errorScale() MeasureErrorScale {
	if m.unit {
		return m.unitErrorScale()
	}
	var e MeasureErrorScale
	d := math.Ceil(math.Max(m.deltaTilde, 1))
	e.NoiseScale = m.u.SumNoiseScale(m.eps, m.deltaTilde)
	e.SumSensitivity = e.NoiseScale * m.eps
	e.Noise95 = math.Log(20) * e.NoiseScale
	for _, a := range m.sums {
		e.DPTotal += a
	}
	e.Signal = e.Noise95 < math.Abs(e.DPTotal)
	if m.epsT > 0 {
		e.TotalNoiseScale = m.u.SumNoiseScale(m.epsT, m.deltaTilde)
		e.TotalNoise95 = math.Log(20) * e.TotalNoiseScale
		e.AtomNoiseScale = m.u.SumNoiseScale(m.epsA, m.deltaTilde)
	}
	e.Text = fmt.Sprintf("a sum of %s at ε = %.3g carries noise of scale %.3g (95%%: ±%.3g; one neighbour moves a sum by up to %.3g = %.3g per tuple × Δ̃ %g); the DP total is %.3g",
		m.ref, m.eps, e.NoiseScale, e.Noise95, e.SumSensitivity, e.SumSensitivity/d, d, e.DPTotal)
	if e.TotalNoise95 > 0 {
		e.Text += fmt.Sprintf("; the whole-file sum is the total measured directly (95%%: ±%.3g) and every workload box the sum of its atoms' measured sums (scale %.3g each)",
			e.TotalNoise95, e.AtomNoiseScale)
	}
	if !e.Signal {
		e.Text += ": the noise is as large as the total, so the measure's sums carry no signal at this ε (more ε or release.measures_share, a narrower declared domain, or a join whose Δ̃ is smaller would help)"
	}
	return e
}

// quoteIdent quotes an SQL identifier (standard SQL: DuckDB and
// PostgreSQL).
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// points returns the private points of measure m: the number of join
// tuples per grid cell and measure value in units of b, by one histogram
// over the join (engine.Histogram) in which m's relation is replaced by a
// view adding the measure in units (rounded to the resolution, clamped to
// the declared domain — the load already enforced it — and shifted by Δ₋).
func (m *measure) points(ctx context.Context, eng *engine.Engine, h *hypergraph.Hypergraph, i int, gridCols []spec.ColumnRef, sizes []int) ([]numerical.Point, error) {
	neg, pos := m.u.Bound(true), m.u.Bound(false)
	nv := neg + pos + 1
	var pts []numerical.Point
	err := m.withView(ctx, eng, h, i, gridCols, sizes, func(hv *hypergraph.Hypergraph, view string, cols []spec.ColumnRef, sz []int) error {
		cols, sz = append(cols, spec.ColumnRef{Table: view, Column: measureUnits}), append(sz, int(nv))
		cells, err := eng.Histogram(ctx, hv, cols, sz)
		if err != nil {
			return err
		}
		pts = make([]numerical.Point, 0, len(cells))
		for _, c := range cells {
			pts = append(pts, numerical.Point{Cell: c.Index / nv, Units: c.Index%nv - neg, Count: c.Count})
		}
		return nil
	})
	return pts, err
}

// withView creates the view of m's relation that adds the measure in
// units (rounded to the resolution, clamped to the declared domain — the
// load already enforced it — and shifted by Δ₋, under the bin column of
// measureUnits) and calls f with the join in which it replaces the
// relation, its name, and the grid's columns and sizes in that join; the
// view is dropped after.
func (m *measure) withView(ctx context.Context, eng *engine.Engine, h *hypergraph.Hypergraph, i int, gridCols []spec.ColumnRef, sizes []int,
	f func(hv *hypergraph.Hypergraph, view string, cols []spec.ColumnRef, sz []int) error) error {
	rel := h.Index(m.folded.Table)
	if rel < 0 {
		return fmt.Errorf("no relation %q in the join", m.folded.Table)
	}
	neg, pos := m.u.Bound(true), m.u.Bound(false)
	view := fmt.Sprintf("%s%d", measureView, i)
	expr := fmt.Sprintf("COALESCE(LEAST(GREATEST(CAST(round(CAST(%s AS DOUBLE PRECISION) / CAST(%v AS DOUBLE PRECISION)) AS BIGINT), %d), %d), 0) + %d",
		quoteIdent(m.folded.Column), m.u.Resolution(), -neg, pos, neg)
	q := "SELECT *, " + expr + " AS " + quoteIdent(engine.BinColumn(measureUnits)) + " FROM " + quoteIdent(m.folded.Table)
	if err := eng.CreateView(ctx, view, q); err != nil {
		return err
	}
	defer eng.DropView(context.WithoutCancel(ctx), view) //nolint:errcheck // a leftover view in the run's engine is harmless
	rels := h.Relations()
	rels[rel].Name = view
	hv, err := hypergraph.New(rels)
	if err != nil {
		return err
	}
	var cols []spec.ColumnRef
	var sz []int
	for _, p := range m.grid {
		c := gridCols[p]
		if c.Table == m.folded.Table {
			c.Table = view
		}
		cols, sz = append(cols, c), append(sz, sizes[p])
	}
	return f(hv, view, cols, sz)
}

// gridCell returns the grid cell of a synthetic row given its bins.
func (m *measure) gridCell(bins []int, sizes []int) int {
	g := 0
	for _, p := range m.grid {
		g = g*sizes[p] + bins[p]
	}
	return g
}

// count sets, from the cells of the rows to be written (DP outputs and
// post-processing), rows(g), the representative value SUMhat(g)/rows(g)
// of every grid cell and the sum lost in cells without rows.
func (mp *measurePlan) count(dec *synthfile.Decoder, sizes []int, cells []int64) error {
	var bins []int
	for _, m := range mp.ms {
		m.rows = make([]int64, m.nCells)
	}
	for _, c := range cells {
		var err error
		if bins, err = dec.Bins(c, bins); err != nil {
			return err
		}
		for _, m := range mp.ms {
			m.rows[m.gridCell(bins, sizes)]++
		}
	}
	for _, m := range mp.ms {
		m.fitCells()
		m.rep = make([]float64, m.nCells)
		m.lost, m.gone = 0, 0
		for g, a := range m.cellSums() {
			if m.rows[g] == 0 {
				m.lost += a
				m.gone++
				continue
			}
			m.rep[g] = a / float64(m.rows[g])
		}
	}
	return nil
}

// fitCells sets the cell sums from the fitted atoms' sums
// (post-processing of DP outputs and of the rows to be written): each
// atom's sum goes to its cells with rows in proportion to numerical's
// fitted cell sums (their positive parts), or to their rows when those are
// all 0. An atom none of whose cells has a row is lost (LostSum).
func (m *measure) fitCells() {
	if m.atomFit == nil {
		return
	}
	if m.unit {
		m.shrinkAtoms()
	}
	shape := make([]float64, m.nAtoms)
	rows := make([]float64, m.nAtoms)
	for g, a := range m.sums {
		if m.rows[g] > 0 {
			shape[m.atomOf[g]] += math.Max(a, 0)
			rows[m.atomOf[g]] += float64(m.rows[g])
		}
	}
	out := make([]float64, m.nCells)
	for g := range out {
		at := m.atomOf[g]
		switch {
		case m.rows[g] == 0 && rows[at] > 0:
			out[g] = 0
		case rows[at] == 0:
			// No row in the whole atom: its sum stays on its cells (lost
			// from the file), evenly.
			out[g] = m.atomFit[at] / float64(m.atomCells(at))
		case shape[at] > 0:
			out[g] = m.atomFit[at] * math.Max(m.sums[g], 0) / shape[at]
		default:
			out[g] = m.atomFit[at] * float64(m.rows[g]) / rows[at]
		}
	}
	m.sums = out
	var t float64
	for _, a := range out {
		t += a
	}
	m.scale.DPTotal = t
	m.scale.Signal = m.scale.Noise95 < math.Abs(t)
}

// atomCells returns the number of grid cells of atom a.
func (m *measure) atomCells(a int) int {
	n := 0
	for _, x := range m.atomOf {
		if x == a {
			n++
		}
	}
	return n
}

// columns returns the measure columns for the writer.
func (mp *measurePlan) columns(sizes []int) []synthfile.MeasureColumn {
	out := make([]synthfile.MeasureColumn, len(mp.ms))
	for i, m := range mp.ms {
		out[i] = synthfile.MeasureColumn{Name: m.name, Value: func(bins []int) float64 { return m.rep[m.gridCell(bins, sizes)] }}
	}
	return out
}

// summaries returns the public description of every measure.
func (mp *measurePlan) summaries() []MeasureSummary {
	out := make([]MeasureSummary, len(mp.ms))
	for i, m := range mp.ms {
		out[i] = MeasureSummary{
			Column: m.ref, OutputColumn: m.name, Grid: m.u.Grid().Names, CellSums: slices.Clone(m.cellSums()),
			CellRows: slices.Clone(m.rows), LostSum: m.lost, CellsWithoutRows: m.gone, Epsilon: m.eps,
			GroupFactor: m.u.GroupFactor(), DeltaTilde: m.deltaTilde,
			ErrorScale: m.scale, Universe: m.u.String(),
		}
		if m.res != nil {
			out[i].Alpha, out[i].NHat = m.res.Alpha, m.res.NHat
		}
		if m.unit {
			out[i].Universe = "none (privacy unit: clipped direct sums)"
		}
		if len(m.grid) == 0 {
			out[i].Grid = nil
		}
		for _, k := range m.workload {
			a := math.NaN()
			switch {
			case k >= 0 && m.atomFit != nil:
				a = 0
				for _, at := range m.queryAtoms[k] {
					a += m.atomFit[at]
				}
			case k >= 0 && m.res != nil:
				a = m.res.Answers[k]
			case k == -2:
				a = 0
			}
			out[i].WorkloadAnswers = append(out[i].WorkloadAnswers, a)
		}
	}
	return out
}

// params returns the report parameters of the measures (public parameters
// and DP outputs only).
func (mp *measurePlan) params() []map[string]any {
	var out []map[string]any
	for _, s := range mp.summaries() {
		out = append(out, map[string]any{
			"column": s.Column.String(), "output_column": s.OutputColumn, "grid": s.Grid, "grid_cells": len(s.CellSums),
			"epsilon": s.Epsilon, "group_factor": s.GroupFactor, "alpha": s.Alpha, "n_hat": s.NHat, "delta_tilde": s.DeltaTilde,
			"lost_sum": s.LostSum, "cells_without_rows": s.CellsWithoutRows, "error_scale": s.ErrorScale, "universe": s.Universe,
			"encoding": "each row holds SUMhat(g)/rows(g) of its grid cell g, SUMhat(g) the sum of the measure in g of numerical's DP synthetic histogram: SUM over any set of grid cells is the sum of their SUMhat",
		})
	}
	return out
}

// MeasureSummary describes one measure of a finished release: public
// parameters, DP outputs and their post-processing only.
type MeasureSummary struct {
	// Column is the spec's column and OutputColumn its float64 column in
	// the file.
	Column       spec.ColumnRef
	OutputColumn string
	// Grid names the released columns whose cells carry separate sums
	// (nil: one cell, every row).
	Grid []string
	// CellSums are SUMhat(g), one per grid cell (mixed radix over Grid,
	// first most significant): the sum of the measure in cell g of
	// numerical's DP synthetic histogram D̃. CellRows are the synthetic
	// rows written in each cell.
	CellSums []float64
	CellRows []int64
	// WorkloadAnswers are numerical's DP answers to the spec's
	// workload.numeric queries, in spec order, answered directly as boxes
	// (NaN for a query on another column; 0 for a box no bin satisfies).
	// The file's SUM over a box is instead the sum of CellSums over it.
	WorkloadAnswers []float64
	// LostSum is Σ SUMhat(g) over the CellsWithoutRows cells with no
	// synthetic row: the part of the measure the file cannot carry.
	LostSum          float64
	CellsWithoutRows int
	// Epsilon is the measure's share of ε; GroupFactor the universe
	// reduction's group-privacy factor; Alpha and NHat numerical's α̃ and
	// n̂; DeltaTilde the per-tuple sensitivity used.
	Epsilon     float64
	GroupFactor int
	Alpha, NHat int64
	DeltaTilde  float64
	// ErrorScale is the scale of the noise of the measure's sums.
	ErrorScale MeasureErrorScale
	// Universe describes numerical's universe (full or reduced, §4.1).
	Universe string
}

// finite reports whether every answer is finite (a guard before writing).
func (mp *measurePlan) finite() error {
	for _, m := range mp.ms {
		for g, a := range m.cellSums() {
			if math.IsNaN(a) || math.IsInf(a, 0) {
				return fmt.Errorf("release: measure %s: cell %d has a non-finite answer", m.ref, g)
			}
		}
	}
	return nil
}

// writeMeasuresMarkdown writes the privacy report's section on the
// measures' error scales (nothing when v, the report's "measures"
// parameter, holds none).
func writeMeasuresMarkdown(b *bytes.Buffer, v any) {
	ms, _ := v.([]map[string]any)
	var rows []string
	for _, m := range ms {
		e, ok := m["error_scale"].(MeasureErrorScale)
		if !ok {
			continue
		}
		signal := "yes"
		if !e.Signal {
			signal = "**no**"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %.4g | %.4g | ±%.4g | %.4g | ±%.4g | %.4g | %s |", cell(fmt.Sprint(m["column"])), cell(fmt.Sprint(m["universe"])),
			e.SumSensitivity, e.NoiseScale, e.Noise95, e.DPTotal, e.TotalNoise95, e.AtomNoiseScale, signal))
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("## Measures: error scale\n\n")
	b.WriteString("For each measure (release.measures): how far one neighbour moves any sum of it (the largest |value| of its declared ")
	b.WriteString("domain times the per-tuple sensitivity Δ̃), the Laplace scale one sum needs at the measure's ε, the half-width of a ")
	b.WriteString("95% interval of that noise, in the measure's units, and its DP total. A box whose true sum is well below the 95% ")
	b.WriteString("half-width cannot be told from 0 at this budget; when the half-width exceeds the DP total, no sum of the measure ")
	b.WriteString("carries signal. The whole-file sum is the total measured directly: it is within \"total 95%\" of the true sum with probability 95%; ")
	b.WriteString("each workload box is the sum of its atoms' direct measurements, each with Laplace noise of the \"atom scale\". ")
	b.WriteString("All are public parameters or post-processing of DP outputs.\n\n")
	b.WriteString("| measure | universe | sum sensitivity | noise scale | 95% noise | DP total | total 95% | atom scale | signal |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	b.WriteString("\n")
}

// CheckMeasures returns the error a release of s would stop with, before
// reading any data, because of its release.measures — the method cannot
// carry them (uniformized, the tables output), the universe then needs the
// factored model, a measure is not an integer or numeric column, its
// grid or universe is too large, release.measures_share is out of range
// or an output name is taken — and nil when the spec has no measure or a
// release would accept them. memCap is the release's memory cap in bytes,
// as [Options.MemoryCap] (the CLI's release passes --memory-cap, default
// pmw.DefaultMemoryCap; 0 means the libraries' defaults, as for Run). It reads the spec only and
// charges nothing. A refusal of the spec that does not come from its
// measures is left to the release (nil here).
func CheckMeasures(s *spec.Spec, memCap int64) error {
	if len(s.Release.Measures) == 0 {
		return nil
	}
	p, err := NewPlan(s, memCap, 0, 0)
	if err != nil {
		// The same spec without measures (nor the workload's sums of
		// them): if it plans, the measures are the reason.
		bare := *s
		bare.Release.Measures = nil
		bare.Workload.Numeric = nil
		for _, q := range s.Workload.Numeric {
			if !slices.Contains(s.Release.Measures, q.Sum) {
				bare.Workload.Numeric = append(bare.Workload.Numeric, q)
			}
		}
		if _, errBare := NewPlan(&bare, memCap, 0, 0); errBare == nil {
			return err
		}
		return nil
	}
	ledger, err := dp.NewLedger(dp.Budget{Epsilon: s.Privacy.Epsilon, Delta: s.Privacy.Delta})
	if err != nil {
		return nil // the release refuses the budget itself
	}
	dec, err := synthfile.NewDecoder(p.Names, p.Columns)
	if err != nil {
		return nil
	}
	_, err = planMeasures(s, p.Folding, p.Names, dec, memCap, ledger)
	return err
}
