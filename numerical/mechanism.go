package numerical

import (
	"context"
	"fmt"
	"math"

	"github.com/synth-dp/synth/dp"
)

// DefaultRounds is T when [Config.Rounds] is 0: Qiu et al. §6 follow
// Hardt–Ligett–McSherry and use T = 10.
const DefaultRounds = 10

// DefaultSweeps is how many times every measurement is re-applied after
// each round when [Config.Sweeps] is 0 (MWEM practice; post-processing).
const DefaultSweeps = 20

// DefaultInitShare and DefaultAlphaShare are the budget shares of the warm
// start (the noisy 1-way marginals, which also give n̂) and of the private
// α (or, for [GlobalTruncation], of the global threshold) when the Config
// leaves them 0. The rounds get the rest.
const (
	DefaultInitShare  = 0.2
	DefaultAlphaShare = 0.1
)

// Config parameterises the mechanisms. Epsilon must be set.
type Config struct {
	// Epsilon and Delta are the whole budget (ε, δ): ε > 0 finite,
	// 0 ≤ δ < 1. δ is used only where advanced composition of the rounds
	// beats basic composition (never at T = 10 and δ ≥ 1e-9); otherwise
	// the mechanisms are pure ε-DP.
	Epsilon, Delta float64
	// Sensitivity is Δ̃ ≥ 1, the number of tuples of the (join) result one
	// neighbour adds or removes (Ghazi et al. Alg. 1/3; 1 on one table);
	// 0 means 1. It is rounded up to an integer: every noisy value is an
	// integer drawn by an exact discrete sampler.
	Sensitivity float64
	// Rounds is T (0 means [DefaultRounds]).
	Rounds int
	// Sweeps is the number of re-applications of all measurements after
	// each round (0 means [DefaultSweeps]).
	Sweeps int
	// InitShare and AlphaShare are the shares of ε spent on the warm start
	// (and n̂) and on α (0 means the defaults); their sum must be < 1.
	InitShare, AlphaShare float64
	// Beta is the failure probability of [Composition]'s per-query
	// truncation (0 means 0.1).
	Beta float64
	// Ledger, when not nil, is charged for the whole split before any data
	// is read and receives the published integers (n̂, α̃).
	Ledger *dp.Ledger
	// Progress, when not nil, is called with t of T after every PMW round
	// (t and T are public: T is the configured number of rounds). It is
	// called from the run's goroutine and must return quickly.
	Progress func(t, total int)

	// Mutation knobs and lenses for the privacy audits; unexported so that
	// no production path sets them.
	//
	// testAlphaNoNoise publishes α̃ = ⌈α⌉ without noise (a planted bug).
	testAlphaNoNoise bool
	// testIgnoreDeltaTilde calibrates every noise (the warm start, the
	// items, α) to ⌈Δ̃⌉ = 1 whatever cfg.Sensitivity says (a planted
	// bug: a join's neighbour moves up to Δ̃ rows of the join result).
	testIgnoreDeltaTilde bool
	// testSynthetic, when not nil, replaces the PMW output by this public
	// histogram (a lens on the α step: not a bug).
	testSynthetic []float64
}

func (c Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case math.IsNaN(c.Epsilon) || math.IsInf(c.Epsilon, 0) || c.Epsilon <= 0:
		return bad("epsilon = %v, want a finite number > 0", c.Epsilon)
	case math.IsNaN(c.Delta) || c.Delta < 0 || c.Delta >= 1:
		return bad("delta = %v, want 0 ≤ delta < 1", c.Delta)
	case math.IsNaN(c.Sensitivity) || math.IsInf(c.Sensitivity, 0) || c.Sensitivity < 0 || (c.Sensitivity > 0 && c.Sensitivity < 1):
		return bad("sensitivity = %v, want 0 (one table) or a finite number ≥ 1", c.Sensitivity)
	case c.Rounds < 0 || c.Sweeps < 0:
		return bad("rounds = %d, sweeps = %d, want ≥ 0", c.Rounds, c.Sweeps)
	case math.IsNaN(c.InitShare) || math.IsNaN(c.AlphaShare) || c.InitShare < 0 || c.AlphaShare < 0 ||
		c.initShare()+c.alphaShare() >= 1:
		return bad("shares init = %v, α = %v, want ≥ 0 with a sum < 1", c.InitShare, c.AlphaShare)
	case math.IsNaN(c.Beta) || c.Beta < 0 || c.Beta >= 1:
		return bad("beta = %v, want 0 ≤ beta < 1", c.Beta)
	}
	return nil
}

func (c Config) initShare() float64  { return orDefault(c.InitShare, DefaultInitShare) }
func (c Config) alphaShare() float64 { return orDefault(c.AlphaShare, DefaultAlphaShare) }
func (c Config) rounds() int         { return int(orDefault(float64(c.Rounds), DefaultRounds)) }
func (c Config) sweeps() int         { return int(orDefault(float64(c.Sweeps), DefaultSweeps)) }
func (c Config) beta() float64       { return orDefault(c.Beta, 0.1) }
func (c Config) dtilde() int64       { return int64(math.Ceil(math.Max(c.Sensitivity, 1))) }

func orDefault(v, d float64) float64 {
	if v == 0 {
		return d
	}
	return v
}

// Result is the output of a mechanism. Everything exported is public: a
// DP output, a post-processing of DP outputs, or a public parameter.
type Result struct {
	// Answers are the private answers w̃(D), one per query, in the
	// measure's units (w̃⁺ − w̃⁻ for a signed measure).
	Answers []float64
	// Thresholds are the truncation thresholds Δ̄_w chosen per query, in the
	// measure's units: [0] for w⁺, [1] for w⁻ (0 when the sign is absent).
	// For [Normalization] they are Δ_w; for [GlobalTruncation] the global
	// Δ̄; for [Composition] the truncation threshold R2T's maximum picked.
	Thresholds [][2]float64
	// NHat is n̂, the noisy number of universe elements (an integer).
	NHat int64
	// Alpha is α̃, the private α of Alg. 2 in elements (an integer; 0 for
	// the baselines).
	Alpha int64
	// Rounds is T; Eps0 the per-step ε₀ of the rounds.
	Rounds int
	Eps0   float64
	// Items is the number of derived (counting and linear) queries PMW
	// answered.
	Items int
	// Universe is the universe the mechanism ran on.
	Universe *Universe
	// Synthetic is the output histogram D̃ over the universe (len Size,
	// total n̂); nil for [Composition].
	Synthetic []float64
	// Seeded reports a seeded source: the run is not private.
	Seeded bool
}

// signs returns the signs present in u.
func signs(u *Universe) []int {
	var s []int
	for k := range 2 {
		if u.bound[k] > 0 {
			s = append(s, k)
		}
	}
	return s
}

// powers returns 1, 2, 4, … below bound (units).
func powers(bound int64) []int64 {
	var p []int64
	for t := int64(1); t < bound; t <<= 1 {
		p = append(p, t)
	}
	return p
}

// charge records the spends in l (when set), refusing before any charge
// when the total does not remain.
func charge(l *dp.Ledger, total dp.Budget, spends []spend) error {
	if l == nil {
		return nil
	}
	rem := l.Remaining()
	if rem.Epsilon < total.Epsilon*(1-1e-12) || rem.Delta < total.Delta*(1-1e-12) {
		return fmt.Errorf("numerical: %w: needs (ε=%g, δ=%g) but (ε=%g, δ=%g) remain",
			dp.ErrBudgetExceeded, total.Epsilon, total.Delta, rem.Epsilon, rem.Delta)
	}
	for _, s := range spends {
		if s.b.Epsilon == 0 {
			continue
		}
		if err := l.Charge(s.name, s.b, s.rule, s.details); err != nil {
			return fmt.Errorf("numerical: %w", err)
		}
	}
	return nil
}

type spend struct {
	name    string
	b       dp.Budget
	rule    string
	details map[string]any
}

// pmwPlan is the part of a PMW run common to Alg. 2 and the
// normalisation baselines: n̂ at εn, T rounds at (εr, δ).
type pmwPlan struct {
	epsN, epsR, delta float64
	rounds            int
	eps0              float64
}

func newPlan(cfg Config, epsN, epsR float64) (pmwPlan, error) {
	p := pmwPlan{epsN: epsN, epsR: epsR, delta: cfg.Delta, rounds: cfg.rounds()}
	var err error
	if p.eps0, err = dp.PerStepEpsilon(epsR, cfg.Delta, 2*p.rounds); err != nil {
		return p, fmt.Errorf("numerical: rounds: %w", err)
	}
	return p, nil
}

func (p pmwPlan) spends(u *Universe, items int, dt int64) []spend {
	d := 0.0
	if p.eps0 > p.epsR/float64(2*p.rounds)*(1+1e-12) {
		d = p.delta // advanced composition is used
	}
	return []spend{
		{name: "numerical: n̂ (discrete Laplace)", b: dp.Budget{Epsilon: p.epsN},
			rule:    fmt.Sprintf("discrete Laplace of scale k·⌈Δ̃⌉/ε on the integer number of universe elements, k = %d elements a tuple (group privacy, Qiu et al. §4.1), ⌈Δ̃⌉ = %d; pure ε-DP", u.group, dt),
			details: map[string]any{"group_factor": u.group, "sensitivity": dt}},
		{name: "numerical: PMW rounds (exponential mechanism + discrete Laplace)", b: dp.Budget{Epsilon: p.epsR, Delta: d},
			rule:    fmt.Sprintf("%d ε₀-DP steps, ε₀ = %g (dp.PerStepEpsilon); every item measured with discrete Laplace of scale (its per-tuple sensitivity in the %s universe × ⌈Δ̃⌉)/ε₀", 2*p.rounds, p.eps0, map[bool]string{true: "reduced", false: "full"}[u.reduced]),
			details: map[string]any{"T": p.rounds, "eps0": p.eps0, "items": items, "group_factor": u.group, "universe": u.Size()}},
	}
}

// start reads the data through a core and sets the warm start: the
// 1-way marginals of every grid column and of the value axis, each count
// plus Lap_ℤ((d+1)·k·⌈Δ̃⌉/ε_init). One tuple is at most k elements, all in
// one cell and on distinct values, so it moves each marginal by at most k
// in L1 and the d+1 marginals together by (d+1)·k: ε_init-DP. n̂ is the
// rounded inverse-variance mean of the marginals' noisy totals (at least
// 1), A₀ the product
// of the marginals clamped at 0 plus a floor of ½, scaled to n̂: both
// post-processing.
func (p pmwPlan) start(src dp.Source, ev *evaluator, data []Point, dt int64, l *dp.Ledger) (*core, error) {
	c, _, err := newCore(ev, data, dt)
	if err != nil {
		return nil, err
	}
	u := ev.u
	g := u.grid
	nd := len(g.Sizes)
	group := u.group
	if u.testNoGroup {
		group = 1 // mutation knob: the group-privacy factor forgotten
	}
	lap, err := dp.NewDiscreteLaplace(dp.NoiseScale(float64(int64((nd+1)*group)*dt), p.epsN))
	if err != nil {
		return nil, fmt.Errorf("numerical: warm start: %w", err)
	}
	nv := len(u.vals)
	margs := make([][]float64, nd+1)
	for d, size := range g.Sizes {
		margs[d] = make([]float64, size)
	}
	margs[nd] = make([]float64, nv)
	codes := make([]int, nd)
	for cell := int64(0); cell < u.cells; cell++ {
		for j, x := range c.w[cell*int64(nv) : (cell+1)*int64(nv)] {
			for d := range nd {
				margs[d][codes[d]] += x
			}
			margs[nd][j] += x
		}
		for d := nd - 1; d >= 0; d-- {
			codes[d]++
			if codes[d] < g.Sizes[d] {
				break
			}
			codes[d] = 0
		}
	}
	// Each noisy total is |D̂| plus zero-mean noise of variance ∝ its
	// number of cells: weights ∝ 1/cells, fixed before any data is read,
	// give the inverse-variance (unbiased) combination.
	var total, weights float64
	for _, m := range margs {
		var sum float64
		for i := range m {
			m[i] = math.Round(m[i]) + float64(lap.Sample(src))
			sum += m[i]
			m[i] = math.Max(m[i], 0) + 0.5
		}
		total += sum / float64(len(m))
		weights += 1 / float64(len(m))
	}
	nhat := max(int64(math.Round(total/weights)), 1)
	if l != nil {
		l.Publish("numerical_n_hat", float64(nhat))
	}
	for _, m := range margs {
		var sum float64
		for _, x := range m {
			sum += x
		}
		for i := range m {
			m[i] /= sum
		}
	}
	clear(codes)
	for cell := int64(0); cell < u.cells; cell++ {
		pc := 1.0
		for d := range nd {
			pc *= margs[d][codes[d]]
		}
		row := c.w[cell*int64(nv) : (cell+1)*int64(nv)]
		for j := range row {
			row[j] = pc * margs[nd][j]
		}
		for d := nd - 1; d >= 0; d-- {
			codes[d]++
			if codes[d] < g.Sizes[d] {
				break
			}
			codes[d] = 0
		}
	}
	c.start(float64(nhat))
	return c, nil
}

func (p pmwPlan) run(ctx context.Context, src dp.Source, c *core, sweeps int, progress func(t, total int)) error {
	for t := range p.rounds {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("numerical: stopped before round %d: %w", t+1, err)
		}
		if err := c.round(src, p.eps0, sweeps); err != nil {
			return err
		}
		if progress != nil {
			progress(t+1, p.rounds)
		}
	}
	c.answers()
	return nil
}

// Run answers the numerical queries qs on the data by Algorithm 2 of Qiu,
// Dong, Yi, Wu and Li (KDD '22): one PMW over the counting queries
// c_{w,τ} = 1[w > τ] (τ ∈ {0, b, 2b, …} below Δ) and the linear queries
// ℓ_{w,τ} = min{w/τ, 1} (τ ∈ {b, 2b, …} below Δ, and Δ), per sign; the
// private α of §6; and, per query and sign, the doubling search for the
// threshold Δ̄_w (the first τ with c_{w,τ}(D̃) ≤ α̃), answered by
// τ·ℓ_{w,τ}(D̃). On the reduced universe (§4.1) the queries are the
// transformed ŵ(x, 2^i) = f_w(x)·2^i, so truncation acts per binary digit.
//
// # Guarantee
//
// (ε, δ)-DP under add/remove-one-tuple neighbours when a neighbour
// changes the (join) result by at most Δ̃ = cfg.Sensitivity tuples; pure
// ε-DP unless advanced composition is used for the rounds (see [Config]).
// With s_i = InitShare, s_α = AlphaShare, k = [Universe.GroupFactor] and
// D = ⌈Δ̃⌉, by basic composition of three parts:
//
//  1. Warm start: the d+1 one-way marginals of the universe elements (each
//     grid column, and the value axis) plus Lap_ℤ((d+1)·k·D/(s_i·ε)) a
//     count. One tuple is at most k elements, all in one cell and on
//     distinct values, so the marginals move by at most (d+1)·k·D in L1:
//     s_i·ε-DP. n̂ (the inverse-variance mean of their noisy totals) and
//     A₀ (their product, scaled to n̂) are post-processing. The paper
//     starts PMW uniform; on the reduced universe a uniform A₀ puts most
//     of its mass on the high digits, and ten rounds do not undo it
//     (Bank at ε = 1: median error of normalisation 2.1·10⁷ from a
//     uniform start, 1.9·10⁵ warm).
//  2. T rounds: the exponential mechanism with score |q(A) − q(D̂)|/s_q
//     (sensitivity 1, since each item q moves by at most s_q, its
//     per-tuple native sensitivity times D: 1 a counting query in the
//     full universe, the number of axis values above τ reduced; τ, or
//     Σ_i min(2^i, τ), for τ·ℓ) and the integer measurement
//     q(D̂) + Lap_ℤ(s_q/ε₀): 2T ε₀-DP steps, ε₀ = dp.PerStepEpsilon of
//     ((1 − s_i − s_α)·ε, δ), hence ((1 − s_i − s_α)·ε, δ)-DP. This is the
//     paper's group privacy ε̂₀ = ε₀/(1 + log Δ) made exact per query.
//  3. α = max_{c ∈ C} |c(D̂) − c(D̃)| given the PMW output D̃ (a DP
//     output, so adaptive composition applies) moves by at most
//     s_α' = max_{c∈C} s_c; α̃ = ⌈α⌉ + Lap_ℤ(s_α'/(s_α·ε)) (⌈·⌉ keeps an
//     integer sensitivity): s_α·ε-DP.
//
// Every measurement is then re-applied [Config.Sweeps] times after each
// round by the log-ratio multiplicative update (post-processing); the
// output D̃ is the final iterate. The search and the answers are
// post-processing. Published numbers (n̂, α̃) are integers from the exact
// discrete samplers; the answers are
// deterministic functions of integer measurements, selected indices and
// n̂ (DESIGN.md §3, invariant 6). Every control-flow decision reads DP
// outputs only.
//
// Utility (Thm. 3.2 / 4.3): with probability 1 − β every answer is within
// O(Δ_w(D)·α) of w(D), plus b/2 a tuple for the rounding to the
// resolution.
func Run(ctx context.Context, src dp.Source, u *Universe, qs []Query, data []Point, cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ev, err := newEvaluator(u, qs)
	if err != nil {
		return nil, err
	}
	// Items per query and sign: counting at τ = 0, 1, 2, … < Δ_s; linear
	// at 1, 2, … < Δ_s and Δ_s.
	type plan struct{ cnt, lin []int }
	items := make([][2]plan, len(qs))
	for q := range qs {
		for _, s := range signs(u) {
			p := &items[q][s]
			p.cnt = append(p.cnt, ev.addItem(q, table{sign: s, kind: countKind, tau: 0}))
			for _, t := range powers(u.bound[s]) {
				p.cnt = append(p.cnt, ev.addItem(q, table{sign: s, kind: countKind, tau: t}))
				p.lin = append(p.lin, ev.addItem(q, table{sign: s, kind: linearKind, tau: t}))
			}
			p.lin = append(p.lin, ev.addItem(q, table{sign: s, kind: linearKind, tau: u.bound[s]}))
		}
	}
	dt := cfg.dtilde()
	if cfg.testIgnoreDeltaTilde {
		dt = 1 // mutation knob: the join's Δ̃ ignored
	}
	epsN, epsA := cfg.initShare()*cfg.Epsilon, cfg.alphaShare()*cfg.Epsilon
	pl, err := newPlan(cfg, epsN, cfg.Epsilon-epsN-epsA)
	if err != nil {
		return nil, err
	}
	// α's sensitivity: the largest counting-query sensitivity (public).
	var sA float64
	for _, t := range ev.tables {
		if t.kind == countKind {
			sA = math.Max(sA, u.sensitivity(t)*float64(dt))
		}
	}
	alphaLap, err := dp.NewDiscreteLaplace(dp.NoiseScale(sA, epsA))
	if err != nil {
		return nil, fmt.Errorf("numerical: α: %w", err)
	}
	spends := append(pl.spends(u, len(ev.items), dt), spend{name: "numerical: private α (discrete Laplace)",
		b:       dp.Budget{Epsilon: epsA},
		rule:    fmt.Sprintf("α = max over the counting queries of |c(D̂) − c(D̃)| given the DP output D̃, sensitivity %g (k·⌈Δ̃⌉); ⌈α⌉ plus discrete Laplace of scale %g (Qiu et al. §6)", sA, alphaLap.Scale()),
		details: map[string]any{"sensitivity": sA, "scale": alphaLap.Scale(), "group_factor": u.group}})
	if err := charge(cfg.Ledger, dp.Budget{Epsilon: cfg.Epsilon, Delta: cfg.Delta}, spends); err != nil {
		return nil, err
	}
	c, err := pl.start(src, ev, data, dt, cfg.Ledger)
	if err != nil {
		return nil, err
	}
	if cfg.testSynthetic != nil {
		copy(c.w, cfg.testSynthetic)
		c.z, c.nhat = 0, 0
		for _, x := range c.w {
			c.z += x
		}
		c.nhat = c.z
		if c.z == 0 {
			c.z = 1
		}
		c.answers()
	} else if err := pl.run(ctx, src, c, cfg.sweeps(), cfg.Progress); err != nil {
		return nil, err
	}
	var alpha float64
	for i, it := range ev.items {
		if ev.tables[it.t].kind == countKind {
			alpha = math.Max(alpha, math.Abs(c.ans[i]-c.truth[i]))
		}
	}
	alphaT := int64(math.Ceil(alpha - 1e-9))
	if !cfg.testAlphaNoNoise {
		alphaT += alphaLap.Sample(src)
	}
	if cfg.Ledger != nil {
		cfg.Ledger.Publish("numerical_alpha", float64(alphaT))
	}
	res := &Result{Answers: make([]float64, len(qs)), Thresholds: make([][2]float64, len(qs)), NHat: int64(c.nhat),
		Alpha: alphaT, Rounds: pl.rounds, Eps0: pl.eps0, Items: len(ev.items), Universe: u, Seeded: src.Seeded()}
	a := float64(alphaT)
	for q := range qs {
		for _, s := range signs(u) {
			p := items[q][s]
			var ans, thr float64
			switch {
			case c.ans[p.cnt[0]] <= a:
				ans, thr = 0, 0
			default:
				k := 1
				for ; k < len(p.cnt); k++ {
					if c.ans[p.cnt[k]] <= a {
						break
					}
				}
				// k−1 indexes the linear query at τ = 2^(k−1), or at Δ_s
				// when every counting query stayed above α.
				ans = c.ans[p.lin[k-1]]
				thr = float64(ev.tables[ev.items[p.lin[k-1]].t].tau)
			}
			if s == 1 {
				ans = -ans
			}
			res.Answers[q] += ans * u.b
			res.Thresholds[q][s] = thr * u.b
		}
	}
	res.Synthetic = c.synthetic()
	return res, nil
}
