package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/privacyunit"
	"github.com/synth-dp/synth/spec"
)

// unitDegreer reads the units' join rows (*engine.Engine has it).
type unitDegreer interface {
	UnitHistogram(ctx context.Context, h *hypergraph.Hypergraph, key engine.UnitKey, cols []spec.ColumnRef, sizes []int, grid, bound int64) ([]engine.Cell, []engine.UnitDegree, error)
}

// custodianCount is the NON-PRIVATE forecast of a privacy-unit release
// on the true data (issue 40): its row count, which with few units is the
// least reliable part of the file, and the regime its marginals fall in.
// Computed from the true per-unit join rows: never published.
type custodianCount struct {
	// Units own at least one join row; Rows is the join; MedianUnitRows
	// and MaxUnitRows describe the units' rows.
	Units          int64 `json:"units"`
	Rows           int64 `json:"join_rows"`
	MedianUnitRows int64 `json:"median_unit_rows"`
	MaxUnitRows    int64 `json:"max_unit_rows"`
	// Share is the row count's share of ε at the true unit count (the run
	// draws a DP unit count, so its share varies around it).
	Share float64 `json:"row_count_share_of_epsilon"`
	// Clip is the likeliest clip C of the count; ClipAtMost2 the chance
	// of C ≤ 2 (a file of about two rows per unit).
	Clip        int64   `json:"likely_clip"`
	ClipAtMost2 float64 `json:"p_clip_at_most_2"`
	// MeanRatio is the file's expected rows/true; Below, Above and Tiny
	// the chances of rows/true below 0.8, above 1.25 and below 0.1.
	MeanRatio float64 `json:"rows_over_true_mean"`
	Below     float64 `json:"p_rows_over_true_below_0_8"`
	Above     float64 `json:"p_rows_over_true_above_1_25"`
	Tiny      float64 `json:"p_rows_over_true_below_0_1"`
	// SigmaRows is the 1-way marginals' noise per cell at that share (the
	// public forecast assumes the default share); WeightRows the rows the
	// 1-way marginals hold (Σ_u min(n_u, r); 0 when r is chosen by the
	// run); FewRows reports WeightRows below 8 σ (pmw's few-rows regime:
	// noise-dominated cells pooled, the 1-ways measured again, no 2-way
	// marginal expected to carry signal).
	SigmaRows  float64 `json:"one_way_noise_per_cell_rows"`
	WeightRows float64 `json:"one_way_weight_rows,omitempty"`
	FewRows    bool    `json:"few_rows"`
	// Again reports WeightRows at least 8 σ but below 20 σ (pmw's rule
	// for measuring every 1-way marginal again right after the init);
	// AgainSigmaRows is then a 1-way marginal's combined noise per cell.
	Again          bool    `json:"one_ways_again"`
	AgainSigmaRows float64 `json:"one_way_noise_per_cell_rows_again,omitempty"`
	// KeepRows, in the few-rows regime, is how many rows more than the
	// cells below it a 1-way cell needs to be kept: 3σ of the two 1-way
	// measurements combined.
	KeepRows float64 `json:"one_way_cell_keep_rows,omitempty"`
}

// buildCustodianCount forecasts, for a privacy-unit spec, the release's
// row count and its marginals' regime from the units' true join rows (one
// aggregate query: the rows per unit, grouped). f is the public forecast
// (its σ is at the default share); nil without a unit or a forecast.
func buildCustodianCount(ctx context.Context, s *spec.Spec, fold *hypergraph.Folding, eng unitDegreer, f *signalForecast) (*custodianCount, error) {
	unit := s.Privacy.Unit
	t := s.Table(unit)
	if unit == "" || t == nil || len(t.PrimaryKey) != 1 || f == nil || len(f.Marginals) == 0 {
		return nil, nil
	}
	rel, col, ok := fold.Locate(unit, t.PrimaryKey[0])
	if !ok {
		return nil, nil
	}
	_, degs, err := eng.UnitHistogram(ctx, fold.Folded(), engine.UnitKey{Relation: rel, Column: col}, nil, nil, privacyunit.Grid, privacyunit.Grid)
	if err != nil {
		return nil, fmt.Errorf("inspect: the units' join rows: %w", err)
	}
	eps := s.Privacy.Epsilon
	fc := privacyunit.ForecastCount(eps, degs)
	if fc.Units == 0 {
		return nil, nil
	}
	c := &custodianCount{Units: fc.Units, Rows: fc.Rows, Share: fc.Share, Clip: fc.Clip, ClipAtMost2: fc.ClipAtMost2,
		MeanRatio: fc.MeanRatio, Below: fc.Below, Above: fc.Above, Tiny: fc.Tiny}
	sorted := append([]engine.UnitDegree(nil), degs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Rows < sorted[j].Rows })
	var seen int64
	for _, d := range sorted {
		if d.Rows <= 0 {
			continue
		}
		if seen < (fc.Units+1)/2 && seen+d.Units >= (fc.Units+1)/2 {
			c.MedianUnitRows = d.Rows
		}
		seen += d.Units
		c.MaxUnitRows = max(c.MaxUnitRows, d.Rows)
	}
	// The public σ is at the default share; the marginals get (1 − share)
	// of ε instead of (1 − default) (an automatic r's share out of both).
	auto := 0.0
	if s.Release.ContributionBoundAuto {
		auto = privacyunit.DefaultBoundShare
	}
	ratio, err := noiseRatio(s, (1-privacyunit.DefaultCountShare-auto)*eps, (1-fc.Share-auto)*eps)
	if err != nil {
		return nil, err
	}
	c.SigmaRows = f.SigmaRows * ratio
	if !s.Release.ContributionBoundAuto {
		r := s.Release.Bound()
		for _, d := range degs {
			c.WeightRows += math.Min(float64(d.Rows), r) * float64(d.Units)
		}
		c.FewRows = c.WeightRows < pmw.PoolRatio*c.SigmaRows
		c.Again = !c.FewRows && c.WeightRows < pmw.AgainRatio*c.SigmaRows
	}
	if c.Again {
		c.AgainSigmaRows = f.SigmaAgainRows * ratio
	}
	if c.FewRows {
		c.KeepRows = 3 * f.SigmaFewRowsRows * ratio
	}
	return c, nil
}

// noiseRatio is σ at the marginals' budget epsTo over σ at epsFrom (with
// the spec's δ): √(ρ_from/ρ_to) for Gaussian noise, epsFrom/epsTo for
// Laplace.
func noiseRatio(s *spec.Spec, epsFrom, epsTo float64) (float64, error) {
	if pmw.Noise(s.PMW.Noise) == pmw.NoiseLaplace {
		return epsFrom / epsTo, nil
	}
	from, err := dp.RhoForBudget(dp.Budget{Epsilon: epsFrom, Delta: s.Privacy.Delta})
	if err != nil {
		return 0, err
	}
	to, err := dp.RhoForBudget(dp.Budget{Epsilon: epsTo, Delta: s.Privacy.Delta})
	if err != nil {
		return 0, err
	}
	return math.Sqrt(from / to), nil
}

// writeCustodianCount prints the NON-PRIVATE row count forecast.
func writeCustodianCount(tw io.Writer, c *custodianCount) {
	if c == nil {
		return
	}
	fmt.Fprintf(tw, "NON-PRIVATE row count forecast:\t%d units own the %d join rows (median %d, largest %d); the run gives the row count "+
		"about %.0f%% of ε (it reads a DP unit count); the clip C is most likely %d (C ≤ 2, about two rows per unit, with probability %.0f%%); "+
		"rows/true of the file: mean %.2f, below 0.8 with probability %.0f%%, above 1.25 %.0f%%, below 0.1 %.0f%%\n",
		c.Units, c.Rows, c.MedianUnitRows, c.MaxUnitRows, 100*c.Share, c.Clip, 100*c.ClipAtMost2, c.MeanRatio, 100*c.Below, 100*c.Above, 100*c.Tiny)
	weight := ""
	if c.WeightRows > 0 {
		weight = fmt.Sprintf(" against the %s rows of bounded weight the 1-way marginals hold", fmtRows(c.WeightRows))
	}
	verdict := "above 20 σ: the 1-way marginals are measured once before the rounds"
	if c.FewRows {
		verdict = fmt.Sprintf("below 8 σ, the few-rows regime: the release measures the 1-way marginals again and keeps a cell only when it holds "+
			"about %s rows more than the cells below it (the rest pooled into their mean); no 2-way marginal is expected to carry signal", fmtRows(c.KeepRows))
	}
	if c.Again {
		verdict = fmt.Sprintf("between 8 σ and 20 σ: the release measures the 1-way marginals again right after its first measurement "+
			"(combined noise about %s rows per cell)", fmtRows(c.AgainSigmaRows))
	}
	if c.WeightRows == 0 {
		verdict = "the bounded weight depends on the r the run chooses"
	}
	fmt.Fprintf(tw, "NON-PRIVATE small data:\tat that share the 1-way marginals' noise is about %s rows per cell%s: %s\n", fmtRows(c.SigmaRows), weight, verdict)
}
