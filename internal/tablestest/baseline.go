package tablestest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/score"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/release"
	"github.com/synth-dp/synth/spec"
)

// BaselineOptions configures [Baseline]. Zero values take the defaults.
type BaselineOptions struct {
	// Engine is the release engine's DSN; "" means "duckdb".
	Engine string
	// Source draws every noise and the post-processing draws; nil means
	// dp.NewSource() (crypto/rand). A seeded source makes the baseline
	// reproducible and not private.
	Source dp.Source
	// FanOutShare is the share of ε spent on the fan-out histograms (all
	// edges together), in (0, 1); 0 means 0.2.
	FanOutShare float64
	// MaxFanOutBin is the last fan-out bin of the histograms (public):
	// bins 0, 1, 2–3, …, the last holding 2^(MaxFanOutBin−1) children and
	// more; a parent's fan-out is drawn at most 2^MaxFanOutBin − 1. 0
	// means 12.
	MaxFanOutBin int
	// Work is the folder of the per-table releases; "" means a temporary
	// folder removed at the end.
	Work string
}

// fanOutGrid is G, the weight of one unit in a fan-out histogram: each
// of a unit's n parents on an edge weighs ⌊G/n⌋, so the unit weighs at most
// G in all (see [FanOutHistogram]).
const fanOutGrid = 1 << 16

// BaselineReport describes a baseline run: public parameters and DP
// outputs only.
type BaselineReport struct {
	// TableEpsilon and TableDelta are each table release's budget;
	// EdgeEpsilon each fan-out histogram's (pure ε).
	TableEpsilon, TableDelta, EdgeEpsilon float64
	// Rows are the released tables' row counts, in tree order.
	Rows map[string]int
	// FanOut holds each edge's noisy histogram (weights of G per unit,
	// noise added, projected onto the non-negative histograms of the same
	// total), by child table.
	FanOut map[string][]int64
}

// Baseline builds, in dir, the tables release a user would build by hand
// from our single-table release (issue 37's baseline), in the contract
// [Write] writes, so that [score.EvaluateTables] scores it as it scores a
// tables release:
//
//  1. Every table T of the ownership tree is released on its own by the
//     existing release (package release, method auto, which is the
//     privacy-unit method): a spec of T and its ancestors up to the unit
//     (the join path that says which unit owns a row of T) plus T's folded
//     lookups, privacy.unit the spec's unit, releasing T's columns, with
//     all their 1- and 2-way marginals as the workload and the spec's
//     contribution bound and norm. Under the unit neighbour relation (a
//     unit leaves with its whole subtree) that release is
//     (ε_T, δ_T)-DP: that is what the privacy-unit method proves. A
//     tuple-level release of T alone (join-as-one, or T as its own unit)
//     would not be: one unit owns any number of T's rows, and no public
//     bound caps them.
//  2. Every edge P→C gets a DP histogram of children per parent
//     ([FanOutHistogram]), ε_F-DP under the same relation.
//  3. Post-processing: the unit's released rows are the synthetic units;
//     down the tree, each synthetic parent draws a fan-out bin from its
//     edge's noisy histogram (projected onto the non-negative histograms
//     of the same total, normalised) and a count
//     uniformly inside the bin, and takes that many rows of C's release,
//     drawn at random (a random order of C's rows, then draws with
//     replacement if more are needed).
//
// The budget adds up by basic composition: k tables share (1 − f)·ε and δ
// equally, the k − 1 edges share f·ε (f = FanOutShare), so the whole is
// (ε, δ)-DP under the unit neighbour relation for the spec's (ε, δ).
func Baseline(ctx context.Context, s *spec.Spec, dir string, o BaselineOptions) (*BaselineReport, error) {
	if o.Engine == "" {
		o.Engine = "duckdb"
	}
	if o.Source == nil {
		o.Source = dp.NewSource()
	}
	if o.FanOutShare == 0 {
		o.FanOutShare = 0.2
	}
	if !(o.FanOutShare > 0 && o.FanOutShare < 1) {
		return nil, fmt.Errorf("tablestest: fan-out share %v, want 0 < f < 1", o.FanOutShare)
	}
	if o.MaxFanOutBin == 0 {
		o.MaxFanOutBin = 12
	}
	if o.MaxFanOutBin < 1 || o.MaxFanOutBin > 30 {
		return nil, fmt.Errorf("tablestest: last fan-out bin %d, want 1…30", o.MaxFanOutBin)
	}
	if o.Work == "" {
		w, err := os.MkdirTemp("", "synth-baseline-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(w)
		o.Work = w
	}
	tr, err := score.OwnershipTree(s)
	if err != nil {
		return nil, err
	}
	k := len(tr.Tables)
	eps, delta := s.Privacy.Epsilon, s.Privacy.Delta
	rep := &BaselineReport{
		TableEpsilon: (1 - o.FanOutShare) * eps / float64(k), TableDelta: delta / float64(k),
		EdgeEpsilon: o.FanOutShare * eps / float64(k-1),
		Rows:        map[string]int{}, FanOut: map[string][]int64{},
	}
	rng := rand.New(o.Source)

	// 1. The tables, each on its own.
	released := map[string][][]int{}
	for _, t := range tr.Tables {
		one := tableSpec(s, tr, t, rep.TableEpsilon, rep.TableDelta)
		out := filepath.Join(o.Work, t)
		if _, err := release.Run(ctx, release.Options{Spec: one, OutDir: out, Engine: o.Engine, Source: o.Source, Overwrite: true}); err != nil {
			return nil, fmt.Errorf("tablestest: release of %s: %w", t, err)
		}
		tab, err := score.Synthetic(ctx, one, filepath.Join(out, layout.ParquetName), layout.ColumnNames(one))
		if err != nil {
			return nil, err
		}
		released[t] = tab.Rows
		rep.Rows[t] = len(tab.Rows)
	}

	// 2. The fan-out histograms, from the true tables.
	truth, err := score.TrueTables(ctx, s, tr)
	if err != nil {
		return nil, err
	}
	lap, err := dp.NewDiscreteLaplace(dp.NoiseScale(fanOutGrid, rep.EdgeEpsilon))
	if err != nil {
		return nil, fmt.Errorf("tablestest: fan-out noise: %w", err)
	}
	for _, e := range tr.Edges {
		h := FanOutHistogram(truth, e, o.MaxFanOutBin)
		for i := range h {
			h[i] += lap.Sample(o.Source)
		}
		rep.FanOut[e.Child] = project(h)
	}

	// 3. Post-processing: the tables, linked at random.
	out := &score.Tables{Tree: tr}
	for _, t := range tr.Tables {
		ent := &score.Entities{Table: t, Cols: slices.Clone(tr.Columns[t])}
		rows := released[t]
		e, hasParent := tr.ParentEdge(t)
		if !hasParent {
			ent.Rows = rows
			out.Tables = append(out.Tables, ent)
			continue
		}
		parents := len(out.Get(e.Parent).Rows)
		fan := drawFanOuts(rng, rep.FanOut[t], parents)
		total := 0
		for _, f := range fan {
			total += f
		}
		if len(rows) == 0 && total > 0 {
			return nil, fmt.Errorf("tablestest: the release of %s is empty: its parents cannot get children", t)
		}
		order := rng.Perm(len(rows))
		for p, f := range fan {
			for range f {
				var r int
				if len(ent.Rows) < len(order) {
					r = order[len(ent.Rows)]
				} else {
					r = rng.IntN(len(rows))
				}
				ent.Rows = append(ent.Rows, slices.Clone(rows[r]))
				ent.Parent = append(ent.Parent, p)
			}
		}
		out.Tables = append(out.Tables, ent)
	}
	if err := Write(ctx, dir, s, out); err != nil {
		return nil, err
	}
	return rep, nil
}

// tableSpec is the one-table release spec of table t: t, its ancestors up
// to the unit and t's folded lookups, the joins among them, t's released
// columns with every 1- and 2-way marginal as the workload, budget
// (eps, delta) under the spec's unit, and the spec's release options.
func tableSpec(s *spec.Spec, tr *score.Tree, t string, eps, delta float64) *spec.Spec {
	in := map[string]bool{}
	for _, m := range tr.Members[t] {
		in[m] = true
	}
	for a := t; ; {
		in[a] = true
		e, ok := tr.ParentEdge(a)
		if !ok {
			break
		}
		a = e.Parent
	}
	one := &spec.Spec{
		File:    s.File,
		Privacy: spec.Privacy{Epsilon: eps, Delta: delta, Unit: s.Privacy.Unit},
		PMW:     s.PMW,
		Release: spec.Release{
			Method: s.Release.Method, Beta: s.Release.Beta, ContributionBound: s.Release.ContributionBound,
			ContributionBoundAuto: s.Release.ContributionBoundAuto, ContributionNorm: s.Release.ContributionNorm,
		},
	}
	for _, tb := range s.Tables {
		if in[tb.Name] {
			one.Tables = append(one.Tables, tb)
		}
	}
	for _, eq := range s.Join {
		if in[eq.Left.Table] && in[eq.Right.Table] {
			one.Join = append(one.Join, eq)
		}
	}
	for _, p := range tr.Columns[t] {
		one.Release.Columns = append(one.Release.Columns, s.Release.Columns[p])
	}
	return one
}

// FanOutHistogram returns the histogram of children per parent on edge e
// of the true tables ts, over the public bins 0, 1, 2–3, …, last (a
// parent with 2^(last−1) children or more falls in the last), each parent
// weighted ⌊G/n_u⌋ with n_u the number of rows of the parent table its
// unit owns (G = 2^16).
//
// Sensitivity under the unit neighbour relation: deleting unit u deletes
// its whole subtree, so exactly u's n_u parents leave the histogram and
// with them their children; no other unit's parents, children or n_v
// change (every row has one owner). The histogram moves by
// Σ ⌊G/n_u⌋ ≤ G in L1, and adding a unit is symmetric: Lap_ℤ(G/ε) per bin
// is ε-DP (the geometric mechanism). Weighting by 1/n_u biases the
// histogram towards the units with few parents, as contribution_bound 1
// biases the flat release; that is the price of a bounded sensitivity
// without looking at the data.
func FanOutHistogram(ts *score.Tables, e score.Edge, last int) []int64 {
	// The unit of every row, down the tree.
	unit := map[string][]int{}
	for _, ent := range ts.Tables {
		u := make([]int, len(ent.Rows))
		if edge, ok := ts.Tree.ParentEdge(ent.Table); ok {
			pu := unit[edge.Parent]
			for i, p := range ent.Parent {
				u[i] = pu[p]
			}
		} else {
			for i := range u {
				u[i] = i
			}
		}
		unit[ent.Table] = u
	}
	pu := unit[e.Parent]
	owned := map[int]int64{}
	for _, u := range pu {
		owned[u]++
	}
	n := make([]int, len(pu))
	for _, p := range ts.Get(e.Child).Parent {
		n[p]++
	}
	h := make([]int64, last+1)
	for p, f := range n {
		h[min(score.FanOutBin(f), last)] += fanOutGrid / owned[pu[p]]
	}
	return h
}

// project returns the non-negative histogram closest to the noisy h in
// L2 with the same total (at least 1): h_i − τ clamped at 0, with τ
// chosen so that the total is kept (post-processing). Clamping alone would
// keep the positive noise of the empty bins — with a dozen bins above the
// largest true fan-out, a few per cent of the parents would draw thousands
// of children.
func project(h []int64) []int64 {
	var total int64
	for _, x := range h {
		total += x
	}
	total = max(total, 1)
	// Σ max(0, h_i − τ) decreases in τ: bisect on the integers.
	// mass(lo) ≥ total ≥ mass(hi) = 0: with a bin ≤ 0, mass(min − 1) ≥
	// Σ h_i + 1 − min ≥ total; with every bin > 0, mass(0) = total.
	lo, hi := min(0, slices.Min(h)-1), slices.Max(h)
	mass := func(tau int64) int64 {
		var m int64
		for _, x := range h {
			m += max(0, x-tau)
		}
		return m
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if mass(mid) >= total {
			lo = mid
		} else {
			hi = mid
		}
	}
	out := make([]int64, len(h))
	for i, x := range h {
		out[i] = max(0, x-lo)
	}
	return out
}

// drawFanOuts draws the fan-out of n parents from the clamped noisy
// histogram h (bins of [score.FanOutBin]): a bin with probability
// proportional to its weight, then a count uniform in the bin. An
// all-zero histogram gives every parent no child.
func drawFanOuts(rng *rand.Rand, h []int64, n int) []int {
	var total int64
	for _, w := range h {
		total += w
	}
	out := make([]int, n)
	if total == 0 {
		return out
	}
	for i := range out {
		x := rng.Int64N(total)
		b := 0
		for ; x >= h[b]; b++ {
			x -= h[b]
		}
		switch b {
		case 0:
		case 1:
			out[i] = 1
		default:
			lo := 1 << (b - 1)
			out[i] = lo + rng.IntN(lo)
		}
	}
	return out
}
