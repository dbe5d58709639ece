package numerical

import (
	"context"
	"fmt"
	"math"

	"github.com/synth-dp/synth/dp"
)

// Normalization answers every query by PMW on the normalised linear query
// ℓ_w = w/Δ_w (per sign; Δ_w = Δ_s for a box indicator), scaled back by
// Δ_w: the paper's "normalization" baseline, and the normalisation the pmw
// package's numeric-sum family applies. It runs the same PMW as [Run] on
// the same universe (on the reduced one, ŵ/Δ truncates nothing since
// every digit is ≤ Δ). Guarantee: as [Run] without α — n̂ at
// InitShare·ε, the rounds at the rest; (ε, δ)-DP, pure unless advanced
// composition is used.
func Normalization(ctx context.Context, src dp.Source, u *Universe, qs []Query, data []Point, cfg Config) (*Result, error) {
	return normalised(ctx, src, u, qs, data, cfg, func(s int) int64 { return u.bound[s] }, 0)
}

// GlobalTruncation answers every query by PMW on min{w, Δ̄}/Δ̄ with one
// private global threshold Δ̄ per sign (the paper's "global truncation"
// baseline): with P the powers of two below Δ_s, each count
// N_τ = #{t : |g(t)| > τ} (τ ∈ powers, sensitivity ⌈Δ̃⌉) gets
// Lap_ℤ(P·#signs·⌈Δ̃⌉/(AlphaShare·ε)) (basic composition: AlphaShare·ε-DP
// together), and Δ̄ is the first τ whose noisy count is at most
// scale·ln(P/β) (Δ_s when none is). n̂ and the rounds as [Normalization]
// with the rest of ε.
func GlobalTruncation(ctx context.Context, src dp.Source, u *Universe, qs []Query, data []Point, cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	epsG := cfg.alphaShare() * cfg.Epsilon
	sg := signs(u)
	var thr [2]int64
	dt := cfg.dtilde()
	// Charge the threshold's share first; normalised charges the rest.
	if err := charge(cfg.Ledger, dp.Budget{Epsilon: cfg.Epsilon, Delta: cfg.Delta}, []spend{{
		name: "numerical: global truncation threshold (discrete Laplace counts)", b: dp.Budget{Epsilon: epsG},
		rule: "noisy counts of tuples above each power of two, basic composition"}}); err != nil {
		return nil, err
	}
	for _, s := range sg {
		ps := powers(u.bound[s])
		thr[s] = u.bound[s]
		if len(ps) == 0 {
			continue
		}
		scale := float64(len(ps)*len(sg)) * float64(dt) / epsG
		lap, err := dp.NewDiscreteLaplace(scale)
		if err != nil {
			return nil, fmt.Errorf("numerical: global threshold: %w", err)
		}
		cut := scale * math.Log(float64(len(ps))/cfg.beta())
		for _, t := range ps {
			var n int64
			for _, p := range data {
				y := p.Units
				if (s == 1) != (y < 0) {
					continue
				}
				if y < 0 {
					y = -y
				}
				if y > t {
					n += p.Count
				}
			}
			if float64(n+lap.Sample(src)) <= cut {
				thr[s] = t
				break
			}
		}
	}
	return normalised(ctx, src, u, qs, data, cfg, func(s int) int64 { return thr[s] }, epsG)
}

// normalised runs PMW on the linear queries at τ = tau(s) and answers
// τ·ℓ_{w,τ}(D̃). spent is the ε already charged by the caller.
func normalised(ctx context.Context, src dp.Source, u *Universe, qs []Query, data []Point, cfg Config, tau func(s int) int64, spent float64) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ev, err := newEvaluator(u, qs)
	if err != nil {
		return nil, err
	}
	idx := make([][2]int, len(qs))
	for q := range qs {
		for _, s := range signs(u) {
			idx[q][s] = ev.addItem(q, table{sign: s, kind: linearKind, tau: tau(s)})
		}
	}
	dt := cfg.dtilde()
	eps := cfg.Epsilon - spent
	epsN := cfg.initShare() * cfg.Epsilon
	pl, err := newPlan(cfg, epsN, eps-epsN)
	if err != nil {
		return nil, err
	}
	total := dp.Budget{Epsilon: eps, Delta: cfg.Delta}
	if err := charge(cfg.Ledger, total, pl.spends(u, len(ev.items), dt)); err != nil {
		return nil, err
	}
	c, err := pl.start(src, ev, data, dt, cfg.Ledger)
	if err != nil {
		return nil, err
	}
	if err := pl.run(ctx, src, c, cfg.sweeps(), cfg.Progress); err != nil {
		return nil, err
	}
	res := &Result{Answers: make([]float64, len(qs)), Thresholds: make([][2]float64, len(qs)), NHat: int64(c.nhat),
		Rounds: pl.rounds, Eps0: pl.eps0, Items: len(ev.items), Universe: u, Seeded: src.Seeded()}
	for q := range qs {
		for _, s := range signs(u) {
			a := c.ans[idx[q][s]] * u.b
			if s == 1 {
				a = -a
			}
			res.Answers[q] += a
			res.Thresholds[q][s] = float64(tau(s)) * u.b
		}
	}
	res.Synthetic = c.synthetic()
	return res, nil
}

// Composition answers each query and sign independently by R2T's
// truncation mechanism (Dong, Fang, Yi, Tao, Machanavajjhala, SIGMOD '22,
// for a sum of one table, where the truncated sum Q(τ) = Σ min{|w(t)|, τ}
// has sensitivity τ·⌈Δ̃⌉): with J thresholds τ ∈ {1, 2, 4, …} ∪ {Δ_s} and
// ε_q = ε/(|Q|·#signs), release max{0, max_τ Q(τ) + Lap_ℤ(J·τ·⌈Δ̃⌉/ε_q)
// − J·τ·⌈Δ̃⌉·ln(J/β)/ε_q}. Each query is ε_q-DP (J steps of ε_q/J), the
// whole basic composition ε-DP: the paper's "composition" baseline with a
// per-query instance-optimal truncation. The universe gives the grid, the
// units and the bounds only (always the full values: no reduction).
func Composition(ctx context.Context, src dp.Source, u *Universe, qs []Query, data []Point, cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ev, err := newEvaluator(u, qs)
	if err != nil {
		return nil, err
	}
	for _, p := range data {
		if p.Cell < 0 || p.Cell >= u.cells || p.Count < 0 || p.Units > u.bound[0] || -p.Units > u.bound[1] {
			return nil, fmt.Errorf("%w: point %+v outside the universe", ErrInvalidInput, p)
		}
	}
	sg := signs(u)
	dt := cfg.dtilde()
	epsQ := cfg.Epsilon / float64(len(qs)*len(sg))
	if err := charge(cfg.Ledger, dp.Budget{Epsilon: cfg.Epsilon}, []spend{{name: "numerical: composition (R2T per query)",
		b: dp.Budget{Epsilon: cfg.Epsilon}, rule: fmt.Sprintf("%d queries × %d signs at ε/%d each, basic composition", len(qs), len(sg), len(qs)*len(sg))}}); err != nil {
		return nil, err
	}
	res := &Result{Answers: make([]float64, len(qs)), Thresholds: make([][2]float64, len(qs)), Universe: u, Seeded: src.Seeded()}
	tab := make([]float64, u.cells)
	sat := make([]float64, ev.layout.len)
	best := make([][2]float64, len(qs))
	for _, s := range sg {
		taus := append(powers(u.bound[s]), u.bound[s])
		j := float64(len(taus))
		for q := range qs {
			best[q][s] = 0
		}
		for _, t := range taus {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("numerical: composition: %w", err)
			}
			clear(tab)
			for _, p := range data {
				y := p.Units
				if (s == 1) != (y < 0) || y == 0 {
					continue
				}
				if y < 0 {
					y = -y
				}
				tab[p.Cell] += float64(p.Count * min(y, t))
			}
			ev.layout.build(tab, sat)
			scale := j * float64(t) * float64(dt) / epsQ
			lap, err := dp.NewDiscreteLaplace(scale)
			if err != nil {
				return nil, fmt.Errorf("numerical: composition: %w", err)
			}
			shift := scale * math.Log(j/cfg.beta())
			for q, c := range ev.qs {
				v := math.Round(c.sum(sat)) + float64(lap.Sample(src)) - shift
				if v > best[q][s] {
					best[q][s] = v
					res.Thresholds[q][s] = float64(t) * u.b
				}
			}
		}
		for q := range qs {
			a := best[q][s] * u.b
			if s == 1 {
				a = -a
			}
			res.Answers[q] += a
		}
	}
	return res, nil
}

// Exact returns the true answers Σ w(t) of every query on the data as the
// mechanisms see it (values rounded to the resolution), in the measure's
// units: for tests and utility evaluation only — never publish them.
func Exact(u *Universe, qs []Query, data []Point) ([]float64, error) {
	ev, err := newEvaluator(u, qs)
	if err != nil {
		return nil, err
	}
	tab := make([]float64, u.cells)
	for _, p := range data {
		if p.Cell < 0 || p.Cell >= u.cells {
			return nil, fmt.Errorf("%w: cell %d outside [0, %d)", ErrInvalidInput, p.Cell, u.cells)
		}
		tab[p.Cell] += float64(p.Count * p.Units)
	}
	sat := make([]float64, ev.layout.len)
	ev.layout.build(tab, sat)
	out := make([]float64, len(qs))
	for q, c := range ev.qs {
		out[q] = math.Round(c.sum(sat)) * u.b
	}
	return out, nil
}
