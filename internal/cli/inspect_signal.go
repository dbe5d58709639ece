package cli

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/release"
	"github.com/synth-dp/synth/spec"
)

// refuseLikeRelease refuses, before any data is read, every spec a
// release would refuse before reading data — its method and checks, the
// memory plan, release.measures and the budget split (release.Preflight),
// and the samplers' ranges (checkSamplers) — with the release's own error
// and exit code, at the memory cap memCap (bytes) a release would run
// with (release --memory-cap; its default is inspect's). It is the one
// place inspect asks the release what it would refuse, and returns the
// release's plan for the signal forecast.
func refuseLikeRelease(s *spec.Spec, memCap int64) (*release.Plan, error) {
	if err := checkSamplers(s); err != nil {
		return nil, err
	}
	p, err := release.Preflight(s, memCap)
	if err != nil {
		return nil, fmt.Errorf("a release of this spec would be refused before reading any data: %w", err)
	}
	return p, nil
}

// signalForecast is the public part of inspect's forecast of which
// measured marginals will carry signal: from the spec alone.
type signalForecast struct {
	// Basis says what it is computed from (never the data).
	Basis string `json:"basis"`
	// Known: the noise is public; otherwise it is Δ̃ times SigmaRows.
	Known bool `json:"noise_public"`
	// SigmaRows is the per-cell noise of one measurement, in rows (per
	// unit of Δ̃ when not Known); SigmaMinRows the least any marginal can
	// reach.
	SigmaRows    float64 `json:"noise_per_cell_rows"`
	SigmaMinRows float64 `json:"noise_per_cell_rows_best"`
	// SigmaFewRowsRows is a 1-way marginal's noise when the run finds few
	// rows (its 1-ways measured twice; 0 on the dense model).
	SigmaFewRowsRows float64 `json:"one_way_noise_per_cell_rows_few_rows,omitempty"`
	// SigmaAgainRows is a 1-way marginal's noise when the run's n̂ is
	// between 8 and 20 times SigmaRows (its 1-ways measured twice; 0 on
	// the dense model).
	SigmaAgainRows float64            `json:"one_way_noise_per_cell_rows_again,omitempty"`
	Marginals      []marginalForecast `json:"marginals"`
	Suggestions    []string           `json:"suggestions"`
	// Reason says why nothing is forecast.
	Reason string `json:"reason,omitempty"`

	f *release.SignalForecast
}

// marginalForecast is one marginal's public forecast.
type marginalForecast struct {
	Marginal string `json:"marginal"`
	Cells    int    `json:"cells"`
	// Measured says when the release measures it: always (a 1-way
	// marginal) or if a round selects it.
	Measured string `json:"measured"`
	// NoiseRows is its noise per cell for one measurement (a 1-way's on
	// the factored model depends on its cells: pmw.InitShares).
	NoiseRows float64 `json:"noise_per_cell_rows"`
	// NoiseOnceRows is, for a workload marginal the release measures once
	// when its DP row estimate is at least 20 times one measurement's
	// noise (release.MarginalForecast.SigmaOnce), its noise per cell then.
	NoiseOnceRows float64 `json:"noise_per_cell_rows_once,omitempty"`
	// SpreadRows is the L2 distance from uniform its true table must
	// exceed to carry signal; MinRows the fewest rows that can (all in
	// one cell); Rows50 the rows it needs when its cells are 50% off
	// their mean (RMS).
	SpreadRows float64 `json:"spread_rows"`
	MinRows    float64 `json:"min_rows"`
	Rows50     float64 `json:"rows_at_50pct_deviation"`

	f release.MarginalForecast
}

// forecastBasis heads the forecast: it reads no data.
const forecastBasis = "public parameters only, no data"

// buildForecast forecasts the signal of a release planned as p.
func buildForecast(p *release.Plan) (*signalForecast, error) {
	f, err := release.ForecastSignal(p)
	if err != nil {
		return nil, err
	}
	out := &signalForecast{Basis: f.Basis, Known: f.Known, SigmaRows: f.Sigma, SigmaMinRows: f.SigmaMin, SigmaFewRowsRows: f.SigmaFewRows,
		SigmaAgainRows: f.SigmaAgain, Marginals: []marginalForecast{}, Suggestions: []string{}, Reason: f.Reason, f: f}
	if len(f.Marginals) == 0 {
		return out, nil
	}
	for _, m := range f.Marginals {
		mf := marginalForecast{Marginal: m.Marginal, Cells: m.Cells, Measured: "if a round selects it", NoiseRows: m.Sigma, SpreadRows: m.Spread,
			MinRows: m.MinRows(), Rows50: math.Sqrt(float64(m.Cells)) * m.Spread / 0.5, f: m}
		if m.OneWay {
			mf.Measured = "always (1-way)"
		}
		if m.SigmaOnce > 0 {
			mf.NoiseOnceRows = m.SigmaOnce
			mf.Measured = fmt.Sprintf("once at noise %s rows per cell when the run's DP row estimate is at least %d times one measurement's noise, "+
				"else if a round selects it", fmtRows(m.SigmaOnce), pmw.AgainRatio)
		}
		out.Marginals = append(out.Marginals, mf)
	}
	// What would help: more ε (the same plan at 4ε), fewer cells, a unit.
	more := *p
	more.RowsBudget.Epsilon *= 4
	if more.RowsBudget.Epsilon == 0 {
		more.RowsBudget.Epsilon = 4 * p.Spec.Privacy.Epsilon
		more.RowsBudget.Delta = p.Spec.Privacy.Delta
	}
	if f4, err := release.ForecastSignal(&more); err == nil && f4.Sigma > 0 {
		out.Suggestions = append(out.Suggestions, fmt.Sprintf("more ε: at 4 times this ε the noise per cell would be %s rows instead of %s (every row count above scales with it)",
			fmtRows(f4.Sigma), fmtRows(f.Sigma)))
	}
	var wide []string
	for _, m := range out.Marginals {
		if m.Cells >= 8 {
			half := m.f
			half.Cells = m.Cells / 2
			half.Spread = f.Sigma * release.SpreadFactor(half.Cells)
			wide = append(wide, fmt.Sprintf("%s: %s rows at 50%% deviation with %d cells, %s with %d",
				m.Marginal, fmtRows(m.Rows50), m.Cells, fmtRows(math.Sqrt(float64(half.Cells))*half.Spread/0.5), half.Cells))
		}
	}
	if len(wide) > 0 {
		out.Suggestions = append(out.Suggestions, "coarser bins or fewer columns (fewer cells need fewer rows): "+strings.Join(wide, "; "))
	}
	if !f.Known {
		out.Suggestions = append(out.Suggestions, "a privacy unit (privacy.unit): on a join one tuple reaches many join rows, and the run's Δ̃ "+
			"(a DP bound on that, hundreds on a skewed join) multiplies every σ above; a unit bounds each person's rows to "+
			"r (release.contribution_bound), which makes the noise public and usually far smaller")
	}
	return out, nil
}

// custodianSignal is the NON-PRIVATE part of the forecast: the public
// forecast held against the true row counts inspect already reads.
type custodianSignal struct {
	// Rows bounds the rows (or, under a unit, the row weight) the
	// marginals hold; Why says where the bound comes from.
	Rows      float64            `json:"rows_bound"`
	Why       string             `json:"rows_bound_from"`
	Marginals []custodianVerdict `json:"marginals"`
}

// custodianVerdict is one marginal's verdict at the true size.
type custodianVerdict struct {
	Marginal string `json:"marginal"`
	// Deviation is the RMS deviation of its cells from their mean, as a
	// share of the mean cell, that it needs to carry signal (absent when
	// no distribution of that many rows can).
	Deviation float64 `json:"needed_deviation,omitempty"`
	Verdict   string  `json:"verdict"`
}

// buildCustodianSignal holds the forecast against the true join size and,
// under a unit, the unit table's rows (both already in the NON-PRIVATE
// section): no other read of the data.
func buildCustodianSignal(s *spec.Spec, f *signalForecast, c *custodianReport) *custodianSignal {
	if f == nil || len(f.Marginals) == 0 {
		return nil
	}
	cs := &custodianSignal{Rows: float64(c.JoinSize), Why: "the join size", Marginals: []custodianVerdict{}}
	if s.Privacy.Unit != "" {
		for _, t := range c.Tables {
			if t.Table == s.Privacy.Unit {
				if w := s.Release.Bound() * float64(t.LoadedRows); w < cs.Rows {
					cs.Rows = w
					cs.Why = fmt.Sprintf("r = %s × the %d loaded rows of the unit table %s (each unit weighs at most r rows)",
						fmtG(s.Release.Bound()), t.LoadedRows, t.Table)
				}
			}
		}
	}
	// The 1-ways' regime follows the release's rule (pmw.PoolRatio,
	// pmw.AgainRatio against σ₀) with the true size as the forecast of
	// the run's DP n̂: below 20σ₀ they are measured twice, and their
	// spread needed shrinks with the combined noise.
	sigma1, regime := f.f.OneWayNoise(cs.Rows)
	for _, m := range f.Marginals {
		mf, twice := m.f, ""
		if mf.OneWay && regime != release.OneWayOnce {
			sigma1 := sigma1 / math.Sqrt(mf.Share)
			mf.Spread = sigma1 * release.SpreadFactor(mf.Cells)
			line := "20"
			if regime == release.OneWayFewRows {
				line = "8"
			}
			twice = fmt.Sprintf("measured twice (these rows are below %s times one measurement's noise: the release measures every 1-way marginal again), "+
				"noise about %s rows per cell: ", line, fmtRows(sigma1))
		}
		if mf.SigmaOnce > 0 && cs.Rows >= pmw.AgainRatio*f.f.Sigma {
			// The release measures its workload once (pmw's rule on n̂).
			mf.Sigma = mf.SigmaOnce
			mf.Spread = mf.Sigma * release.SpreadFactor(mf.Cells)
			twice = fmt.Sprintf("measured once (these rows are at least %d times one measurement's noise: the release measures every workload marginal once "+
				"instead of selecting), noise about %s rows per cell: ", pmw.AgainRatio, fmtRows(mf.Sigma))
		}
		v := custodianVerdict{Marginal: m.Marginal, Deviation: mf.Deviation(cs.Rows)}
		switch {
		case mf.Hopeless(cs.Rows) || math.IsInf(v.Deviation, 0):
			v.Deviation = 0
			v.Verdict = fmt.Sprintf("no signal expected whatever the data: at one measurement's noise it would need at least %s rows", fmtRows(mf.MinRows()))
			if twice != "" {
				v.Verdict = fmt.Sprintf("no signal expected whatever the data: at that noise it would need at least %s rows", fmtRows(mf.MinRows()))
			}
		case v.Deviation > 1:
			v.Verdict = fmt.Sprintf("signal only if very skewed: its cells must be off their mean by %.0f%% (RMS) or more", 100*v.Deviation)
		default:
			v.Verdict = fmt.Sprintf("signal if its cells are off their mean by %.0f%% (RMS) or more; nearer uniform, it falls back to uniform", 100*v.Deviation)
		}
		v.Verdict = twice + v.Verdict
		if !f.Known {
			v.Verdict = "at Δ̃ = 1 (the best case; the run's Δ̃ multiplies the deviation needed): " + v.Verdict
			if mr := mf.MinRows(); mr > 0 && cs.Rows >= mr {
				v.Verdict += fmt.Sprintf("; above Δ̃ = %.0f no distribution of these rows carries signal here "+
					"(`synth sensitivity`, NON-PRIVATE, prints the data's residual sensitivity)", math.Floor(cs.Rows/mr))
			}
		}
		cs.Marginals = append(cs.Marginals, v)
	}
	return cs
}

// writeForecastText prints the public forecast.
func writeForecastText(tw io.Writer, f *signalForecast) {
	if f == nil {
		return
	}
	if len(f.Marginals) == 0 {
		fmt.Fprintf(tw, "signal forecast:\tnone (%s)\n", f.Reason)
		return
	}
	noise := fmt.Sprintf("%s rows per cell", fmtRows(f.SigmaRows))
	if !f.Known {
		noise = fmt.Sprintf("Δ̃ × %s rows per cell (Δ̃ ≥ 1 is learned from the data with noise)", fmtRows(f.SigmaRows))
	}
	fmt.Fprintf(tw, "signal forecast:\t%s (%s): noise %s for one measurement; a marginal measured again or with more of the budget gets less, at best %s rows per cell\n",
		forecastBasis, f.Basis, noise, fmtRows(f.SigmaMinRows))
	if f.SigmaAgainRows > 0 {
		fmt.Fprintf(tw, "signal forecast:\twhen the run's DP row estimate is below 20 times one measurement's noise, every 1-way marginal is measured twice: "+
			"%s rows per cell (below 8 times, %s, its noise-dominated cells pooled) for a 1-way of noise %s, in proportion for the others\n",
			fmtRows(f.SigmaAgainRows), fmtRows(f.SigmaFewRowsRows), fmtRows(f.SigmaRows))
	}
	for _, m := range f.Marginals {
		fmt.Fprintf(tw, "signal forecast:\t%s (%d cells, measured %s, noise %s rows per cell): carries signal only if its cells are ≥ %s rows (L2) from uniform: "+
			"about %s rows in all with cells 50%% off their mean, at least %s rows even with every row in one cell\n",
			m.Marginal, m.Cells, m.Measured, fmtRows(m.NoiseRows), fmtRows(m.SpreadRows), fmtRows(m.Rows50), fmtRows(m.MinRows))
	}
	for _, sg := range f.Suggestions {
		fmt.Fprintf(tw, "would help:\t%s\n", sg)
	}
}

// writeCustodianSignal prints the NON-PRIVATE verdicts.
func writeCustodianSignal(tw io.Writer, cs *custodianSignal) {
	if cs == nil {
		return
	}
	fmt.Fprintf(tw, "NON-PRIVATE signal forecast:\tthe public forecast above at the true size: at most %s rows (%s)\n", fmtRows(cs.Rows), cs.Why)
	for _, v := range cs.Marginals {
		fmt.Fprintf(tw, "NON-PRIVATE signal forecast:\t%s: %s\n", v.Marginal, v.Verdict)
	}
}

// fmtRows prints a row count: whole rows from 10 up, one decimal below.
func fmtRows(x float64) string {
	if x >= 10 {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.1f", x)
}

func fmtG(x float64) string { return fmt.Sprintf("%g", x) }
