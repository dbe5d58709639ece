package pmw

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/stattest"
	"gonum.org/v1/gonum/stat/distuv"
)

// randomModel returns a calibrated model over 3 to maxD columns of 2 to
// maxBins bins with random factor sets (cycles included) and N(0, scale²)
// potentials, and
// its brute-force distribution over the full universe.
func randomModel(t *testing.T, r *rand.Rand, maxD, maxBins int, scale float64) (*graphical, []float64) {
	t.Helper()
	d := 3 + r.IntN(maxD-2)
	sizes := make([]int, d)
	for i := range sizes {
		sizes[i] = 2 + r.IntN(maxBins-1)
	}
	g, err := newGraphical(sizes, randomSets(r, d))
	if err != nil {
		t.Fatal(err)
	}
	for f := range g.theta {
		for k := range g.theta[f] {
			g.theta[f][k] = scale * r.NormFloat64()
		}
	}
	g.calibrate()
	full := make([]float64, cellsOf(sizes, seqInts(d)))
	x := make([]int, d)
	var z float64
	for cell := range full {
		rest := cell
		for c := d - 1; c >= 0; c-- {
			x[c] = rest % sizes[c]
			rest /= sizes[c]
		}
		var lp float64
		for f, s := range g.sets {
			k := 0
			for _, c := range s {
				k = k*sizes[c] + x[c]
			}
			lp += g.theta[f][k]
		}
		full[cell] = math.Exp(lp)
		z += full[cell]
	}
	for i := range full {
		full[i] /= z
	}
	return g, full
}

// dealModes are the two ways extend deals a pool (the same law), for
// tests that run both: by the pool's size, always the shuffled deck,
// always the hypergeometric draws.
var dealModes = []struct {
	name string
	by   func(groups, cells, rows int64) bool
}{
	{"by size", func(groups, cells, rows int64) bool { return groups*cells < rows }},
	{"deck", func(int64, int64, int64) bool { return false }},
	{"hypergeometric", func(int64, int64, int64) bool { return true }},
}

// eachDeal runs f once per deal mode, dealByHypergeometric set to it.
func eachDeal(t *testing.T, f func(t *testing.T)) {
	defer func(old func(int64, int64, int64) bool) { dealByHypergeometric = old }(dealByHypergeometric)
	for _, m := range dealModes {
		dealByHypergeometric = m.by
		t.Run(m.name, f)
	}
}

// TestDrawCountsControlledRounding: the rows drawCounts draws keep every
// clique marginal within rounding of the model's. The root clique's counts
// are within one row of rows·P per cell; a child clique c's count of
// (s, v) (s its separator value) is within one row of n_s·P(v | s), n_s
// the rows drawn with s, so within 1 + P(v | s)·|n_s − rows·P(s)| of
// rows·P(s, v), where |n_s − rows·P(s)| is read off the same draw. A
// sampler that splits every prefix drawn so far on its own (the one this
// replaced) adds one rounding error per prefix and fails this on most
// instances. Deterministic bounds: no false failures.
func TestDrawCountsControlledRounding(t *testing.T) {
	eachDeal(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(stattest.Seed(t), 11))
		for inst := range 200 {
			g, _ := randomModel(t, r, 5, 4, 1.5)
			rows := int64(1 + r.IntN(5000))
			full := make([]float64, cellsOf(g.sizes, seqInts(len(g.sizes))))
			var total int64
			last := int64(-1)
			if err := g.drawCounts(dp.NewSeededSource(uint64(inst)), rows, func(cell, c int64) error {
				if cell <= last || c <= 0 {
					t.Fatalf("instance %d: emitted (%d, %d) after cell %d", inst, cell, c, last)
				}
				last = cell
				full[cell] += float64(c)
				total += c
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if total != rows {
				t.Fatalf("instance %d: %d rows, want %d", inst, total, rows)
			}
			checkControlled(t, g, full, rows, inst)
		}
	})
}

// TestDrawCountsUnbiased: over many draws, the mean count of every cell of
// the full universe is rows times the model's probability of it (the
// brute-force product of the potentials, normalised): the rotation makes
// each pooled row's new cell follow the model's conditional law whatever
// the rest of its prefix. Each cell's mean is checked within 5.5 standard
// errors (estimated from the draws; a false failure has probability about
// 4e-8 per cell by the CLT, under 1e-5 over the test's cells), on small
// models (3 columns of 2–3 bins) and for cells expected at least 50 times
// over the draws, where the normal approximation holds.
func TestDrawCountsUnbiased(t *testing.T) {
	eachDeal(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(stattest.Seed(t), 12))
		src := dp.NewSeededSource(stattest.Seed(t))
		for inst := range 3 {
			g, p := randomModel(t, r, 3, 3, 1)
			const rows, R = 37, 4000
			sum := make([]float64, len(p))
			sum2 := make([]float64, len(p))
			cur := make([]float64, len(p))
			for range R {
				clear(cur)
				if err := g.drawCounts(src, rows, func(cell, c int64) error { cur[cell] = float64(c); return nil }); err != nil {
					t.Fatal(err)
				}
				for i, c := range cur {
					sum[i] += c
					sum2[i] += c * c
				}
			}
			for i := range p {
				if rows*p[i]*R < 50 {
					continue // too rare for the normal approximation
				}
				mean := sum[i] / R
				sd := math.Sqrt(math.Max(sum2[i]/R-mean*mean, 0))
				se := math.Max(sd, 0.5/math.Sqrt(R)) / math.Sqrt(R)
				if math.Abs(mean-rows*p[i]) > 5.5*se {
					t.Errorf("instance %d cell %d: mean count %.4f, model %.4f (se %.4f)", inst, i, mean, rows*p[i], se)
				}
			}
		}
	})
}

// TestDenseCountsFollowTheTree: an MWEM result's rows are drawn through the
// junction tree of its measured sets: the tree's beliefs are the weights'
// clique marginals, and the rows keep the bounds of
// TestDrawCountsControlledRounding (the universe-order systematic sampler
// it replaced left errors of the order of √count on marginals of the least
// significant columns).
func TestDenseCountsFollowTheTree(t *testing.T) {
	u, hist := testUniverse(t)
	fams := testFamilies()
	for seed := range uint64(20) {
		res, err := Run(t.Context(), dp.NewSeededSource(seed), u, fams, hist, Config{Epsilon: 1, Delta: 1e-6, Sensitivity: 1})
		if err != nil {
			t.Fatal(err)
		}
		g, ok := denseModel(res)
		if !ok {
			t.Fatal("no junction tree for a 60-cell universe")
		}
		full := make([]float64, u.Len())
		if err := res.Counts(dp.NewSeededSource(seed+100), func(cell, c int64) error { full[cell] += float64(c); return nil }); err != nil {
			t.Fatal(err)
		}
		var tot float64
		for _, w := range res.Weights {
			tot += w
		}
		model := make([]float64, len(res.Weights))
		for i, w := range res.Weights {
			model[i] = w / tot
		}
		for ci, cols := range g.cliques {
			want := denseMarginal(u.sizes, model, cols)
			for k, v := range g.belief[ci] {
				if math.Abs(v-want[k]) > 1e-12 {
					t.Fatalf("seed %d clique %v cell %d: belief %v, weights' marginal %v", seed, cols, k, v, want[k])
				}
			}
		}
		checkControlled(t, g, full, res.Rows, int(seed))
	}
}

// checkControlled checks the bounds of TestDrawCountsControlledRounding on
// the full-universe counts of one draw of rows rows from g.
func checkControlled(t *testing.T, g *graphical, full []float64, rows int64, inst int) {
	t.Helper()
	n := float64(rows)
	for _, ci := range g.order {
		cols := g.cliques[ci]
		got := denseMarginal(g.sizes, full, cols)
		p := g.belief[ci]
		if g.parent[ci] < 0 {
			for k := range p {
				if math.Abs(got[k]-n*p[k]) >= 1+1e-6 {
					t.Fatalf("instance %d root clique %v cell %d: %v rows, expected %v", inst, cols, k, got[k], n*p[k])
				}
			}
			continue
		}
		sp := g.sepProj[ci]
		ps := make([]float64, cellsOf(g.sizes, g.sep[ci])) // P(s)
		ns := make([]float64, len(ps))                     // n_s drawn
		for k, v := range p {
			ps[sp[k]] += v
			ns[sp[k]] += got[k]
		}
		for k, v := range p {
			s := sp[k]
			cond := 0.0
			if ps[s] > 0 {
				cond = v / ps[s]
			}
			bound := 1 + cond*math.Abs(ns[s]-n*ps[s]) + 1e-6
			if math.Abs(got[k]-n*v) >= bound {
				t.Fatalf("instance %d clique %v (separator %v) cell %d: %v rows, expected %v ± %v",
					inst, cols, g.sep[ci], k, got[k], n*v, bound)
			}
		}
	}
}

// TestDrawCountsIndependentAcrossCliques: columns the model makes
// independent (two 1-way factors, cliques joined by an empty separator)
// come out independent in the rows: the χ² statistic of the rows' 2-way
// table against rows·P(a)·P(b) stays below the 1 − 10⁻⁶ quantile of χ² with
// (k_a − 1)(k_b − 1) degrees of freedom (the margins are rounded, not
// drawn, which only lowers the statistic; false failure below 10⁻⁵ over
// the 10 instances). A deal that hands each group a block of cells instead
// of a random hand gives statistics in the thousands.
func TestDrawCountsIndependentAcrossCliques(t *testing.T) {
	eachDeal(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(stattest.Seed(t), 13))
		for inst := range 10 {
			sizes := []int{2 + r.IntN(4), 2 + r.IntN(4)}
			g, err := newGraphical(sizes, [][]int{{0}, {1}})
			if err != nil {
				t.Fatal(err)
			}
			for f := range g.theta {
				for k := range g.theta[f] {
					g.theta[f][k] = r.NormFloat64()
				}
			}
			g.calibrate()
			const rows = 3000
			tab := make([]float64, sizes[0]*sizes[1])
			if err := g.drawCounts(dp.NewSeededSource(uint64(inst)), rows, func(cell, c int64) error { tab[cell] = float64(c); return nil }); err != nil {
				t.Fatal(err)
			}
			pa, _ := g.marginal([]int{0})
			pb, _ := g.marginal([]int{1})
			var chi2 float64
			for a := range sizes[0] {
				for b := range sizes[1] {
					e := rows * pa[a] * pb[b]
					chi2 += (tab[a*sizes[1]+b] - e) * (tab[a*sizes[1]+b] - e) / e
				}
			}
			dof := float64((sizes[0] - 1) * (sizes[1] - 1))
			if limit := (distuv.ChiSquared{K: dof}).Quantile(1 - 1e-6); chi2 > limit {
				t.Errorf("instance %d sizes %v: χ² = %.1f > %.1f (%v dof)", inst, sizes, chi2, limit, dof)
			}
		}
	})
}

// BenchmarkDrawCounts draws 2 M rows through the junction tree of a
// 13-column model (a chain of 2-way sets plus two 3-way ones, 4–25 bins a
// column: the shape of examples/tpch/wide.yaml); B/op is the sampler's
// memory.
func BenchmarkDrawCounts(b *testing.B) {
	sizes := []int{25, 5, 10, 16, 7, 4, 3, 12, 9, 24, 6, 8, 11}
	sets := [][]int{{0, 1, 2}, {2, 3}, {3, 4}, {4, 5, 6}, {6, 7}, {7, 8}, {8, 9}, {9, 10}, {10, 11}, {11, 12}}
	g, err := newGraphical(sizes, sets)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for f := range g.theta {
		for k := range g.theta[f] {
			g.theta[f][k] = r.NormFloat64()
		}
	}
	g.calibrate()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		var cells int
		if err := g.drawCounts(dp.NewSeededSource(uint64(i)), 2_000_000, func(_, _ int64) error { cells++; return nil }); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(cells), "cells")
	}
}
