package release

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/privacyunit"
	"github.com/synth-dp/synth/spec"
)

// SignalForecast is what a release of a spec can say, before any data is
// read, about whether its measured marginals will carry signal (see
// [Signal]): public parameters only — the budget and the method's split
// of it, the sensitivity where it is public, the workload and the
// declared domain sizes. The release decides per marginal from its DP
// measurement: a marginal keeps signal when its measured spread around the
// mean cell exceeds what noise alone produces (pmw's shrinkage); the
// forecast says how large the true spread must be for that, in rows. pmw
// also keeps a measured table unshrunk when Stein's risk estimate favours
// its non-negative projection (a sparse table: most rows in a few cells),
// which can keep the signal of a table below that spread: for sparse
// marginals of few rows the forecast is pessimistic (docs/small-data.md).
type SignalForecast struct {
	// Known reports that the noise is public: a privacy-unit release
	// (Δ̃ = r, release.contribution_bound) or a join-as-one release on one
	// relation after folding (Δ̃ = 1). Otherwise the noise is Δ̃ times
	// Sigma, with Δ̃ ≥ 1 a DP estimate of the join's sensitivity that only
	// the run learns: the forecast is then a best case.
	Known bool
	// Sensitivity is Δ̃ in rows when Known (else 1: Sigma is per unit of Δ̃).
	Sensitivity float64
	// Sigma is the per-cell standard deviation, in rows, of one
	// measurement at the planned per-round budget: the noise of a round's
	// measurement and, on the dense model, of the initial 1-way marginals
	// (on the factored model, a 1-way's is Sigma/√Share: see
	// MarginalForecast). Rounds
	// that measure a marginal again, or spend more on it (annealing), only
	// lower its noise.
	Sigma float64
	// SigmaMin is the lowest per-cell noise a marginal can reach: the whole
	// rounds' budget spent on it.
	SigmaMin float64
	// SigmaFewRows, on the factored model, is a 1-way marginal's noise
	// when the run finds few rows against Sigma (n̂ < pmw.PoolRatio·Sigma,
	// a DP decision): every 1-way is measured again at
	// pmw.FewRowsRemeasure of the rounds' budget, and the two combine.
	// 0 on the dense model.
	SigmaFewRows float64
	// SigmaAgain, on the factored model, is a 1-way marginal's noise when
	// the run's n̂ is at least pmw.PoolRatio·Sigma but below
	// pmw.AgainRatio·Sigma (a DP decision): every 1-way is measured again
	// at min(pmw.AgainCost times the init's ρ, half the rounds'
	// measurement share), and the two combine. 0 on the dense model.
	SigmaAgain float64
	// Basis says in words what the forecast is computed from.
	Basis string
	// Marginals are the marginals the release may measure: every 1-way
	// marginal, then the workload's other column sets.
	Marginals []MarginalForecast
	// Reason says why nothing is forecast when Marginals is empty.
	Reason string
}

// MarginalForecast is the forecast for one marginal.
type MarginalForecast struct {
	// Marginal names it as a release's [Signal] does, e.g.
	// "marginal(a,b)".
	Marginal string
	// Cells is its number of cells.
	Cells int
	// OneWay marks a 1-way marginal: measured by every release. The
	// others are measured only if a round selects them.
	OneWay bool
	// Share is, for a 1-way marginal on the factored model, its column's
	// share of the init's budget (pmw.InitShares: more for more cells),
	// else 1; Sigma is its noise per cell for one measurement,
	// SignalForecast.Sigma/√Share (a 1-way's SigmaFewRows and SigmaAgain
	// scale the same way).
	Share, Sigma float64
	// SigmaOnce is, for a multi-column marginal that a join-as-one
	// release on the factored model measures once when it measures its
	// workload once (pmw.WorkloadOnceSets; the run does when its DP n̂ is
	// at least pmw.AgainRatio·SignalForecast.Sigma), its noise per cell
	// then: its share of the rounds' whole budget; 0 otherwise.
	SigmaOnce float64
	// Spread is the L2 distance from the uniform table of the same total,
	// in rows (‖t − t̄‖₂ over its cells), that its true table must exceed
	// for a measurement at its Sigma to keep signal on average:
	// Sigma·√(q_k − (k − 1)), q_k the χ²_{k−1} quantile pmw's shrinkage
	// compares the measured spread with (a measured spread is the true one
	// plus (k − 1)·σ² on average).
	Spread float64
}

// MinRows is the fewest rows whose marginal can reach Spread: every row in
// one cell (‖t − t̄‖₂ = N·√(1 − 1/k)). A smaller join carries no signal
// here whatever its distribution.
func (m MarginalForecast) MinRows() float64 {
	if m.Cells < 2 {
		return 0
	}
	return m.Spread / math.Sqrt(1-1/float64(m.Cells))
}

// Deviation is the root-mean-square deviation of the cells from their
// mean, as a share of the mean cell, that a marginal of n rows needs to
// carry signal: √k·Spread/n (1 means cells off their mean by 100% on
// average; the largest possible is √(k − 1), all rows in one cell).
func (m MarginalForecast) Deviation(n float64) float64 {
	if !(n > 0) {
		return math.Inf(1)
	}
	return math.Sqrt(float64(m.Cells)) * m.Spread / n
}

// Hopeless reports that a marginal of at most n rows cannot carry signal
// whatever its distribution.
func (m MarginalForecast) Hopeless(n float64) bool {
	return m.Cells >= 2 && n < m.MinRows()
}

// mwemNoise is the public noise plan of a release's mwem rounds.
type mwemNoise struct {
	gauss      bool
	sens       float64 // Δ̃ in histogram units (1 per unit of Δ̃ when not public)
	perRow     float64 // histogram units per row
	total      float64 // ρ (Gaussian) or ε (Laplace) of the initial marginals and rounds
	unit, init float64 // one round's planned cost; the initial marginals' cost
	d          int
}

// noisePlan returns the mwem noise plan of p (nil and a reason when the
// release publishes no signals), with the sensitivity deltaTilde when it
// is not public (0: per unit of Δ̃).
func noisePlan(p *Plan, deltaTilde float64) (*mwemNoise, bool, string, error) {
	s := p.Spec
	switch {
	case p.Method.Name() == spec.Uniformized:
		return nil, false, "the uniformized release runs PMW on every bucket of a DP partition: its noise is not public", nil
	case p.Variant == pmw.VariantPaper:
		return nil, false, "pmw.variant paper measures single queries, not marginals", nil
	}
	n := &mwemNoise{gauss: pmw.Noise(s.PMW.Noise) != pmw.NoiseLaplace, sens: 1, perRow: 1, d: len(p.Sizes)}
	b := p.RowsBudget
	if b.Epsilon == 0 {
		b = dp.Budget{Epsilon: s.Privacy.Epsilon, Delta: s.Privacy.Delta}
	}
	share, known := 0.0, false
	switch {
	case p.Method.Name() == spec.PrivacyUnit:
		// privacyunit.Prepare: the row count takes DefaultCountShare of ε
		// when ε times the number of units is 500 or more, and up to
		// MaxCountShare with fewer (a DP unit count decides at run time;
		// the forecast, from public parameters, assumes the default and
		// says so in its basis),
		// an automatic r DefaultBoundShare, the marginals the rest with all
		// of δ, at Δ̃ = ⌊Grid·r⌋ grid steps. An automatic r is a DP output
		// (up to 2¹² rows): the noise is then given per row of r, as the
		// join-as-one forecast gives it per unit of its private Δ̃.
		eps := b.Epsilon
		b.Epsilon -= privacyunit.DefaultCountShare * eps
		n.sens, n.perRow, known = math.Floor(privacyunit.Grid*s.Release.Bound()), privacyunit.Grid, true
		if s.Release.ContributionBoundAuto {
			b.Epsilon -= privacyunit.DefaultBoundShare * eps
			n.sens, known = privacyunit.Grid, false
		}
	default:
		// joinasone.Prepare: one relation spends everything on PMW at
		// Δ̃ = 1; more spend half on Δ̃.
		if p.Folded.Len() > 1 {
			b = dp.Budget{Epsilon: b.Epsilon / 2, Delta: b.Delta / 2}
			if deltaTilde > 0 {
				n.sens = deltaTilde
			}
		} else {
			known = true
		}
		if !p.Factored {
			share = s.PMW.NHatShare
			if share == 0 {
				share = pmw.DefaultNHatShare
			}
		}
	}
	epsR := (1 - share) * b.Epsilon
	selFrac := pmw.SelectionShare(pmw.NoiseLaplace)
	if n.gauss {
		selFrac = pmw.SelectionShare(pmw.NoiseGaussian)
		rho, err := dp.RhoForBudget(dp.Budget{Epsilon: epsR, Delta: (1 - share) * b.Delta})
		if err != nil {
			return nil, false, "", fmt.Errorf("release: signal forecast: %w", err)
		}
		n.total = rho
	} else {
		n.total = epsR
	}
	t0 := p.Rounds
	if t0 == 0 {
		k := len(candidateSets(p))
		if p.Factored {
			k = len(p.Families)
		}
		t0 = pmw.PlannedMWEMRounds(k)
	}
	meas := 1 - selFrac
	n.unit = n.total / (float64(t0) + meas*float64(n.d))
	n.init = meas * float64(n.d) * n.unit
	return n, known, "", nil
}

// scale is the per-cell standard deviation, in rows, of a measurement of
// cost c (pmw's noiseScale: σ = Δ̃/√(2·0.9c), or the discrete Laplace
// Δ̃/(0.75c), whose variance is taken as 2b²).
func (n *mwemNoise) scale(c float64) float64 {
	meas := c
	if n.gauss {
		meas *= 1 - pmw.SelectionShare(pmw.NoiseGaussian)
		return dp.NoiseScale(n.sens, math.Sqrt(2*meas)) / n.perRow
	}
	meas *= 1 - pmw.SelectionShare(pmw.NoiseLaplace)
	return math.Sqrt2 * dp.NoiseScale(n.sens, meas) / n.perRow
}

// candidateSets returns the column sets (positions in release order,
// sorted) pmw's mwem rounds choose among: one per workload family,
// deduplicated, in order of first appearance (a sum's family covers its
// summed column and its conditions' columns); every 1-way set when there
// is none.
func candidateSets(p *Plan) [][]int {
	s := p.Spec
	var sets [][]int
	add := func(cols []int) {
		cols = slices.Clone(cols)
		slices.Sort(cols)
		cols = slices.Compact(cols)
		for _, c := range sets {
			if slices.Equal(c, cols) {
				return
			}
		}
		sets = append(sets, cols)
	}
	pos := map[spec.ColumnRef]int{}
	for i, r := range s.Release.Columns {
		pos[r] = i
	}
	for _, f := range p.Families {
		if cols, ok := pmw.FamilyColumns(f); ok && len(cols) > 0 {
			add(cols)
		}
	}
	// Numeric sums are weighted families whose marginal is the summed
	// column with the columns of its conditions (pmw.Weighted's union).
	for _, q := range s.Workload.Numeric {
		i, ok := pos[q.Sum]
		if !ok {
			continue // a measure's sum: not a PMW family
		}
		cols := []int{i}
		for _, c := range q.Where {
			cols = append(cols, pos[c.Column])
		}
		add(cols)
	}
	if len(sets) == 0 {
		for i := range p.Sizes {
			sets = append(sets, []int{i})
		}
	}
	return sets
}

// ForecastSignal forecasts, from the plan alone (public parameters; no
// data), the noise of the release's measured marginals and the spread each
// needs to carry signal. p comes from [Preflight] (or [NewPlan]).
func ForecastSignal(p *Plan) (*SignalForecast, error) {
	n, known, reason, err := noisePlan(p, 0)
	if err != nil || n == nil {
		return &SignalForecast{Reason: reason}, err
	}
	f := &SignalForecast{Known: known, Sensitivity: 1, Sigma: n.scale(n.unit), SigmaMin: n.scale(n.total - n.init)}
	if p.Factored && n.gauss {
		// d 1-ways measured together at φ·R: σ₁ = scale(φR)·√d each.
		s1 := n.scale(pmw.FewRowsRemeasure*(n.total-n.init)) * math.Sqrt(float64(n.d))
		f.SigmaFewRows = 1 / math.Sqrt(1/(f.Sigma*f.Sigma)+1/(s1*s1))
		// pmw's init: ρ_m = min(AgainCost·ρ₀, 0.9·R/2) on the d 1-ways,
		// ρ₀ = n.init (a measurement share already), R = the rounds'
		// budget; scale takes a cost before its 0.9.
		meas := 1 - pmw.SelectionShare(pmw.NoiseGaussian)
		m := math.Min(pmw.AgainCost*n.init, meas*(n.total-n.init)/2)
		s2 := n.scale(m/meas) * math.Sqrt(float64(n.d))
		f.SigmaAgain = 1 / math.Sqrt(1/(f.Sigma*f.Sigma)+1/(s2*s2))
	}
	if known && p.Method.Name() == spec.PrivacyUnit {
		f.Sensitivity = p.Spec.Release.Bound()
	}
	basis := []string{fmt.Sprintf("ε = %s, δ = %s", fmtG(p.Spec.Privacy.Epsilon), fmtG(p.Spec.Privacy.Delta)), string(p.Method.Name()) + "'s budget split"}
	switch {
	case p.Method.Name() == spec.PrivacyUnit && p.Spec.Release.ContributionBoundAuto:
		basis = append(basis, fmt.Sprintf("Δ̃ = r, chosen privately by the run (release.contribution_bound: auto, up to %d rows, with %g%% of ε): every σ is per row of r and multiplies by the r chosen",
			privacyunit.MaxAutoBound, 100*privacyunit.DefaultBoundShare))
	case p.Method.Name() == spec.PrivacyUnit:
		basis = append(basis, fmt.Sprintf("Δ̃ = r = %s row(s) (release.contribution_bound)", fmtG(f.Sensitivity)))
	case known:
		basis = append(basis, "Δ̃ = 1 (one relation after folding)")
	default:
		basis = append(basis, "Δ̃ = 1 as a best case (the run's Δ̃ is a DP estimate from the data, ≥ 1, and multiplies every σ)")
	}
	if p.Method.Name() == spec.PrivacyUnit {
		basis = append(basis, fmt.Sprintf("the row count's share of ε at its default %g%%: with few units (ε × units below %d, a DP unit count decides) "+
			"it grows up to %g%%, and every σ by up to %s",
			100*privacyunit.DefaultCountShare, privacyunit.FullShareUnits(), 100*privacyunit.MaxCountShare,
			fmtG(math.Round(100*(1-privacyunit.DefaultCountShare)/(1-privacyunit.MaxCountShare))/100)))
	}
	sets := candidateSets(p)
	basis = append(basis, fmt.Sprintf("%d released columns, %d candidate marginals, the declared domain sizes", len(p.Sizes), len(sets)))
	f.Basis = strings.Join(basis, "; ")
	// The workload measured once (pmw's rule): on the factored model of
	// a join-as-one release with its rounds chosen by the run, each of
	// the workload's multi-column marginals at its share of the rounds'
	// whole budget R = total − init, selections' part included (scale
	// takes a cost before its measurement share).
	once := map[string]float64{}
	if p.Factored && n.gauss && p.Method.Name() == spec.JoinAsOne && p.Rounds == 0 {
		ws, wshares, err := pmw.WorkloadOnceSets(p.Sizes, p.Families)
		if err != nil {
			return nil, fmt.Errorf("release: signal forecast: %w", err)
		}
		meas := 1 - pmw.SelectionShare(pmw.NoiseGaussian)
		for j, cols := range ws {
			once[marginalName(p.Names, cols)] = n.scale(wshares[j] * (n.total - n.init) / meas)
		}
	}
	seen := map[string]bool{}
	shares := make([]float64, len(p.Sizes))
	for i := range shares {
		shares[i] = 1
	}
	if p.Factored && n.gauss {
		// The factored model's init (no Config.Own on these releases).
		shares = pmw.InitShares(p.Sizes)
	}
	addM := func(cols []int) {
		k := 1
		for _, c := range cols {
			k *= p.Sizes[c]
		}
		name := marginalName(p.Names, cols)
		if seen[name] {
			return
		}
		seen[name] = true
		share := 1.0
		if len(cols) == 1 {
			share = shares[cols[0]]
		}
		sigma := f.Sigma / math.Sqrt(share)
		f.Marginals = append(f.Marginals, MarginalForecast{Marginal: name, Cells: k, OneWay: len(cols) == 1, Share: share, Sigma: sigma,
			SigmaOnce: once[name], Spread: sigma * SpreadFactor(k)})
	}
	for i := range p.Sizes {
		addM([]int{i})
	}
	for _, c := range sets {
		addM(c)
	}
	return f, nil
}

// marginalName names the marginal over cols as a release's [Signal]
// does: "marginal(a,b)".
func marginalName(names []string, cols []int) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = names[c]
	}
	return "marginal(" + strings.Join(parts, ",") + ")"
}

// OneWayRegime says how often the factored model measures the 1-way
// marginals before its rounds: the choice it makes from its DP n̂ against
// the init's noise σ₀ (pmw.PoolRatio, pmw.AgainRatio).
type OneWayRegime int

const (
	// OneWayOnce: n̂ ≥ AgainRatio·σ₀ (or the dense model): measured once.
	OneWayOnce OneWayRegime = iota
	// OneWayAgain: PoolRatio·σ₀ ≤ n̂ < AgainRatio·σ₀: measured again.
	OneWayAgain
	// OneWayFewRows: 0 < n̂ < PoolRatio·σ₀: measured again, noise-dominated
	// cells pooled.
	OneWayFewRows
)

// OneWayNoise is the per-cell noise, in Sigma's units, of a 1-way
// marginal of share 1 (a column's is this over √MarginalForecast.Share),
// before any round measures it again, when the run's DP
// n̂ comes out at n (same units as Sigma: rows, or rows per unit of Δ̃
// when the noise is not public), by the release's rule, and the regime.
// n is the caller's forecast of n̂ (n̂ is unbiased); the run decides on
// its n̂, so near a line either regime happens.
func (f *SignalForecast) OneWayNoise(n float64) (float64, OneWayRegime) {
	switch {
	case f.SigmaFewRows == 0 || !(n > 0):
		return f.Sigma, OneWayOnce
	case n < pmw.PoolRatio*f.Sigma:
		return f.SigmaFewRows, OneWayFewRows
	case n < pmw.AgainRatio*f.Sigma:
		return f.SigmaAgain, OneWayAgain
	}
	return f.Sigma, OneWayOnce
}

// SpreadFactor is √(q_k − (k − 1)) for a table of k cells: the true
// spread, in units of σ, at which the measured spread reaches pmw's
// shrinkage threshold q_k·σ² on average (q_k: the 1 − 10⁻⁴ quantile of
// χ²_{k−1}, pmw.ShrinkQuantile). 0 for one cell.
func SpreadFactor(k int) float64 {
	if k < 2 {
		return 0
	}
	q := pmw.ShrinkQuantile(k)
	return math.Sqrt(math.Max(q-float64(k-1), 0))
}

func fmtG(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// laplaceSD is the standard deviation of the discrete Laplace noise of
// scale b: √(2e^{−1/b})/(1 − e^{−1/b}).
func laplaceSD(b float64) float64 {
	if !(b > 0) {
		return 0
	}
	r := math.Exp(-1 / b)
	return math.Sqrt(2*r) / (1 - r)
}

// NearZeroRate is the stated error rate of the near-zero warning: an empty
// join escapes it with probability at most NearZeroRate, and a join of
// at least twice its threshold raises it with probability at most
// NearZeroRate.
const NearZeroRate = 0.01

// nearZeroZ is the standard normal quantile of 1 − NearZeroRate:
// P(N(0, 1) > 2.3263) = 0.0100.
const nearZeroZ = 2.3263478740408408

// NearZeroThreshold is the largest DP row count the near-zero warning
// fires at: the (1 − [NearZeroRate]) quantile of the count's noise, so
// that an empty join (true count 0, DP count = the noise, raised to at
// most the threshold by the floor at its standard deviation or the clamp
// at 0) stays at or below it with probability at least 1 − NearZeroRate.
// The noise is symmetric, so a true count of at least twice the threshold
// falls to it or below with probability at most NearZeroRate too.
//
// Gaussian noise of public standard deviation sd (laplace = 0: mwem's and
// the factored model's unbiased row estimate, a weighted sum of discrete
// Gaussians): z·sd, z = 2.326. Discrete Laplace noise of scale b (laplace
// = b > 0: the privacy-unit row count): P(X ≥ m) = r^m/(1 + r) for an
// integer m ≥ 0, r = e^{−1/b}, so P(X > t) ≤ r^t/(1 + r) for a real t ≥ 0,
// and t = b·ln(1/(rate·(1 + r))) makes it at most rate (≈ b·ln 50 for a
// large b). 0 when neither is known: no warning.
func NearZeroThreshold(sd, laplace float64) float64 {
	switch {
	case laplace > 0:
		return laplace * math.Log(1/(NearZeroRate*(1+math.Exp(-1/laplace))))
	case sd > 0:
		return nearZeroZ * sd
	}
	return 0
}

// NearZero says, from DP outputs only, whether a DP row count rows is
// within noise of zero — at most [NearZeroThreshold](sd, laplace) — and if
// so why that matters, with the rule's stated error rates: "" when it is
// not, or when the noise is unknown. Post-processing of DP values with a
// public rule.
func NearZero(rows int64, sd, laplace float64) string {
	t := NearZeroThreshold(sd, laplace)
	if !(t > 0) || float64(rows) > t {
		return ""
	}
	law := "Gaussian"
	if laplace > 0 {
		law, sd = "Laplace", laplaceSD(laplace)
	}
	return fmt.Sprintf("the DP row count of the join, %d, is within noise of zero: at most %s, the count an empty join stays below with probability %g%% "+
		"(its %s noise has a standard deviation of about %s rows; a join of %s rows or more gets this warning with probability at most %g%%): "+
		"the join may be empty — an empty table, join keys that never match (07 vs 7, C7 vs 7), a join equality on the wrong "+
		"columns — and then every row of the file is noise; `synth inspect` (NON-PRIVATE, for the data custodian) names the cause",
		rows, strconv.FormatFloat(math.Ceil(t), 'f', 0, 64), 100*(1-NearZeroRate), law,
		strconv.FormatFloat(math.Ceil(sd), 'f', 0, 64), strconv.FormatFloat(math.Ceil(2*t), 'f', 0, 64), 100*NearZeroRate)
}
