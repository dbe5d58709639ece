package multi

import (
	"cmp"
	"context"
	"math"
	"math/big"
	"math/bits"
	"slices"
	"sync"

	"github.com/synth-dp/synth/dp"
)

// DefaultFailure is the failure probability β of Alg. 1's radius search
// (the paper's experiments use β = 0.1).
const DefaultFailure = 0.1

// Entry is one unit's total contribution to one query coordinate: the sum
// of ψ over the join results of that query (or group) that reference the
// unit, in grid steps of the public grid g ([Config.Quantum]), a whole
// number ≥ 0.
type Entry struct {
	// Unit is the unit's id, dense from 0.
	Unit int
	// Coord is the query coordinate k ∈ [0, d).
	Coord int
	// Psi is S_{k,i}(I) in grid steps.
	Psi float64
}

// Config holds the public parameters of one [Run].
type Config struct {
	// Epsilon and Delta are the budget of the whole run.
	Epsilon, Delta float64
	// Failure is β of Alg. 1 (0 means [DefaultFailure]).
	Failure float64
	// GS is a public bound on one unit's ℓ2 contribution in the queries'
	// units; the radii tried are r = 2^0, 2^1, …, 2^(n−1) with
	// n = ⌈log₂ GS⌉ + 1, and r̃ = 2^(n−1) ≥ GS when the SVT never stops.
	// GS needs no check against the data: it only sets the ladder.
	GS float64
	// Quantum is the public grid g (a power of two; 0 means 1) on which
	// the entries are measured.
	Quantum float64
	// JumpStart selects the SVT jump start of Alg. 3 (same output, fewer
	// Count evaluations).
	JumpStart bool

	noThresholdNoise bool    // mutation knob for the audit test
	noClip           bool    // mutation knob: sum the raw vectors (unbounded sensitivity)
	clipFactor       float64 // mutation knob: clip to clipFactor·r̃ (0 means 1)
	noiseFactor      float64 // mutation knob: σ multiplied by noiseFactor (0 means 1)
	noiseRadiusOne   bool    // mutation knob of Alg. 2: noise scaled by r = 1 instead of r̃
	sigmaQueryUnits  bool    // mutation knob: σ from r̃ in query units, not grid steps (1/g too small for g < 1)
}

// Result is the output of [Run]: the d DP answers and the public
// parameters behind them (DP outputs and functions of public values only),
// except Trace, which is not DP.
type Result struct {
	// Values are the d answers, integers.
	Values []int64
	// Radius is r̃, the truncation radius chosen by the SVT (a DP output).
	Radius float64
	// Sigma is the standard-deviation parameter σ of the discrete Gaussian
	// noise per coordinate, in the queries' units.
	Sigma float64
	// NoiseBound95 bounds the noise of each coordinate with probability
	// ≥ 95%: |Values[k] − g·Σ_i x_{i,k}| ≤ σ·√(2 ln 40) (+1/2 for the
	// rounding when g < 1; the discrete Gaussian is σ-subgaussian, CKS
	// 2020 Prop. 19: P[|Z| ≥ t] ≤ 2e^{−t²/2σ²}). It does not cover the
	// clipping bias Σ_i (S_{i,k} − x_{i,k}) ≥ 0, which no DP output can
	// bound from above (see [relational.Result]).
	NoiseBound95 float64
	// LowerGap95 is the one-sided bound σ·√(2 ln 20) (+1/2 when g < 1):
	// P[Values[k] − g·Σ_i x_{i,k} > LowerGap95] ≤ 0.05, and
	// Σ_i x_{i,k} ≤ Σ_i S_{i,k} (clipping only shrinks non-negative
	// entries), so Values[k] − LowerGap95 is a 95% lower bound on the true
	// answer of coordinate k, clipping bias included.
	LowerGap95 float64
	// Rungs is n, the number of radii.
	Rungs int
	// Trace says which Count(I, 2^ℓ) the SVT computed. NOT differentially
	// private: the jump start's guess is DS_Q(I) itself, so the indices
	// evaluated and skipped reveal it. For the data custodian's diagnostics
	// only; never publish it or print it into the answers' output.
	Trace SVTTrace
}

func (c Config) validate() (Config, error) {
	switch {
	case !(c.Epsilon > 0) || math.IsInf(c.Epsilon, 0):
		return c, invalid("ε = %v, want a finite number > 0", c.Epsilon)
	case !(c.Delta > 0 && c.Delta < 1):
		return c, invalid("δ = %v, want 0 < δ < 1 (Alg. 1 adds Gaussian noise)", c.Delta)
	case !(c.GS >= 1) || math.IsInf(c.GS, 0):
		return c, invalid("GS = %v, want a finite number ≥ 1", c.GS)
	}
	if c.Failure == 0 {
		c.Failure = DefaultFailure
	}
	if !(c.Failure > 0 && c.Failure < 1) {
		return c, invalid("failure probability β = %v, want 0 < β < 1", c.Failure)
	}
	if c.Quantum == 0 {
		c.Quantum = 1
	}
	if frac, _ := math.Frexp(c.Quantum); !(c.Quantum > 0) || math.IsInf(c.Quantum, 0) || frac != 0.5 {
		return c, invalid("grid g = %v, want a power of two", c.Quantum)
	}
	return c, nil
}

// Rungs returns n = ⌈log₂ GS⌉ + 1, the number of radii 2^0 … 2^(n−1).
func Rungs(gs float64) int { return int(math.Ceil(math.Log2(math.Max(gs, 1)))) + 1 }

// Run is Alg. 1 of Dong–Sun–Yi (multiple self-join-free queries) on the
// per-unit contribution vectors S_i(I) given by entries (d coordinates):
//
//  1. ĩ ← SVT(T = −(60/ε)·ln(4/β), ε/10, f(ℓ) = Count(I, 2^(ℓ−1)) − N,
//     ℓ = 1..n), with the jump start of Alg. 3 when cfg.JumpStart; r̃ =
//     2^(ĩ−1) (r̃ = 2^(n−1) when no ℓ qualifies). Count − N is an integer
//     of sensitivity 1, so the SVT compares integers with the exact
//     discrete Laplace Lap_ℤ(2/ε₁), Lap_ℤ(4/ε₁) in place of the paper's
//     continuous noise of the same scales ([svt] proves it ε₁-DP).
//  2. Clip: x_i = ⌊min(1, r̃/‖S_i‖)·S_i⌋ (coordinatewise, in grid steps),
//     so ‖x_i‖ ≤ r̃ exactly (checked in exact integer arithmetic).
//  3. Output Σ_i x_i + Z, Z_k ~ N_ℤ(0, σ²) independent, σ = (r̃/g)/√(2ρ)
//     with ρ the largest zCDP budget that converts to (9ε/10, δ)
//     ([dp.RhoForBudget]); each coordinate is multiplied by g and rounded
//     to an integer.
//
// # Guarantee and proof sketch
//
// (ε, δ)-DP under user-level DP, for every instance. Deleting a unit
// removes exactly its vector S_i (no self-join: no other unit's vector
// changes). (1) Count(I, r) − N = −|{i : ‖S_i‖ > r}| changes by at most 1
// and is non-decreasing in r, so the SVT (with or without jump start) is
// ε/10-DP ([SVT]). (2) Given r̃, Σ_i x_i changes by one x_i, of ℓ2 norm
// ≤ r̃/g grid steps: the multivariate discrete Gaussian with
// σ = (r̃/g)/√(2ρ) is ρ-zCDP (Canonne–Kamath–Steinke 2020, Thm. 14), hence
// (9ε/10, δ)-DP ([dp.RhoToEpsilon]), where the paper uses the continuous
// Gaussian with σ(9ε/10, δ) of Lemma 3.6. (3) Basic composition gives
// (ε, δ); scaling by the public g and rounding is post-processing. The
// output is an integer vector (DESIGN.md §3 inv. 6).
//
// Utility (Thm. 4.2): with probability ≥ 1 − β, r̃ ≤ DS_Q(I) rounded up to
// a power of two and at most O((1/ε)·log(log DS/β)) units are clipped, so
// the ℓ2 error is O(DS_Q(I)/ε·(log(log DS/β) + √(d·log(1/δ)·log(1/β)))).
// Flooring loses less than one grid step per coordinate per clipped unit.
//
// Errors: invalid parameters, an entry outside [0, d) or with ψ not a
// whole number ≥ 0, noise beyond the exact sampler's range (σ above
// [dp.MaxDiscreteScale] grid steps: a function of r̃, a DP output), ctx.
func Run(ctx context.Context, src dp.Source, entries []Entry, d int, cfg Config) (Result, error) {
	r, err := newRunner(ctx, entries, d, cfg)
	if err != nil {
		return Result{}, err
	}
	return r.run(src)
}

// runner is [Run] on one instance, split into the part that depends on
// the instance and the public parameters only — validation, the unit
// vectors, the SVT queries and samplers, ρ — built once by [newRunner],
// and the randomised part, [runner.run], which draws exactly what [Run]
// draws. The clipped sum and the Gaussian sampler of each radius are
// functions of r̃ (and the instance) only; they are built the first time
// that radius is drawn and reused, so many runs on one instance (the
// privacy audits) pay for them once. Safe for concurrent use with
// distinct sources.
type runner struct {
	cfg       Config
	d         int
	vecs      [][]coord
	f         func(int) (float64, error)
	n, k      int
	noise     *svtNoise
	rho       float64
	rhoErr    error
	rungs     []rungState // by SVT index − 1
	threshold float64
}

// rungState is what [runner.run] needs for one radius r̃ = 2^(idx−1).
type rungState struct {
	once  sync.Once
	sum   []int64                  // Σ_i x_i (read only once built)
	err   error                    // the sampler's error for σ
	gauss *dp.DiscreteGaussianPool // σ in grid steps
}

func newRunner(ctx context.Context, entries []Entry, d int, cfg Config) (*runner, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if d < 1 {
		return nil, invalid("d = %d queries, want ≥ 1", d)
	}
	vecs, err := unitVectors(entries, d)
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, d: d, vecs: vecs}
	r.f, r.n, r.k, r.threshold = radiusQueries(ctx, vecs, cfg)
	eps1 := cfg.Epsilon / 10
	if !(eps1 > 0) || math.IsInf(eps1, 0) {
		return nil, invalid("SVT ε = %v, want a finite number > 0", eps1)
	}
	if math.IsNaN(r.threshold) || math.IsInf(r.threshold, 0) {
		return nil, invalid("SVT threshold = %v, want a finite number", r.threshold)
	}
	if r.noise, err = newSVTNoise(r.threshold, eps1, countGrid); err != nil {
		return nil, err
	}
	// An error here is reported after the SVT has run, as [Run] always did.
	r.rho, r.rhoErr = dp.RhoForBudget(dp.Budget{Epsilon: 0.9 * cfg.Epsilon, Delta: cfg.Delta})
	r.rungs = make([]rungState, r.n)
	return r, nil
}

// rung returns the state of SVT index idx (1 ≤ idx ≤ n), building it on
// first use.
func (r *runner) rung(idx int) *rungState {
	st := &r.rungs[idx-1]
	st.once.Do(func() {
		cfg, g := r.cfg, r.cfg.Quantum
		radius := math.Ldexp(1, idx-1)
		rGrid := radius / g
		sigma := rGrid / math.Sqrt(2*r.rho)
		if cfg.sigmaQueryUnits {
			sigma = radius / math.Sqrt(2*r.rho)
		}
		if cfg.noiseFactor != 0 {
			sigma *= cfg.noiseFactor
		}
		if sigma < dp.MinDiscreteScale {
			sigma = dp.MinDiscreteScale // more noise is still private
		}
		gauss, err := dp.NewDiscreteGaussianPool(sigma)
		if err != nil {
			st.err = invalid("radius r̃ = %v needs noise σ = %v grid steps beyond the exact sampler's range: %v", radius, sigma, err)
			return
		}
		st.gauss = gauss
		clipR := rGrid
		if cfg.clipFactor != 0 {
			clipR *= cfg.clipFactor
		}
		sum := clippedSum(r.vecs, clipR, r.d)
		if cfg.noClip {
			clear(sum)
			for _, v := range r.vecs {
				for _, c := range v {
					sum[c.k] += int64(c.psi)
				}
			}
		}
		st.sum = sum
	})
	return st
}

// run is one run of Alg. 1 on the runner's instance (see [Run]).
func (r *runner) run(src dp.Source) (Result, error) {
	g := r.cfg.Quantum
	res := Result{Rungs: r.n}
	idx, err := r.noise.run(src, r.f, r.n, r.k, &res.Trace, r.cfg.noThresholdNoise)
	if err != nil {
		return Result{}, err
	}
	if idx == 0 {
		idx = r.n
	}
	res.Radius = math.Ldexp(1, idx-1)
	if r.rhoErr != nil {
		return Result{}, r.rhoErr
	}
	st := r.rung(idx)
	if st.err != nil {
		return Result{}, st.err
	}
	gauss := st.gauss.Get()
	res.Values = make([]int64, r.d)
	for k := range st.sum {
		res.Values[k] = int64(math.Round(float64(st.sum[k]+gauss.Sample(src)) * g))
	}
	st.gauss.Put(gauss)
	res.Sigma = st.gauss.Sigma() * g
	slack := 0.0
	if g < 1 {
		slack = 0.5 // round((Σx + Z)·g)
	}
	res.NoiseBound95 = res.Sigma*math.Sqrt(2*math.Log(40)) + slack
	res.LowerGap95 = res.Sigma*math.Sqrt(2*math.Log(20)) + slack
	return res, nil
}

// radiusQueries returns the SVT queries of Alg. 1 on the unit vectors:
// f(ℓ) = Count(I, 2^(ℓ−1)) − N for ℓ = 1..n, the jump-start guess k (0
// without jump start) and the threshold T = −(60/ε)·ln(4/β).
func radiusQueries(ctx context.Context, vecs [][]coord, cfg Config) (f func(int) (float64, error), n, k int, threshold float64) {
	sorted := make([]float64, len(vecs)) // ‖S_i‖ in the queries' units
	for i, v := range vecs {
		s := 0.0
		for _, c := range v {
			s += c.psi * c.psi
		}
		sorted[i] = math.Sqrt(s) * cfg.Quantum
	}
	slices.Sort(sorted)
	// Count(I, r) − N = −|{i : ‖S_i‖ > r}|: units with no entry have
	// S_i = 0 and cancel.
	f = func(l int) (float64, error) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		r := math.Ldexp(1, l-1)
		return -float64(len(sorted) - upperBound(sorted, r)), nil
	}
	n = Rungs(cfg.GS)
	if cfg.JumpStart {
		// The guess of Alg. 3: the smallest ℓ with 2^(ℓ−1) ≥ DS_Q(I) (it
		// may depend on the data).
		ds := 0.0
		if len(sorted) > 0 {
			ds = sorted[len(sorted)-1]
		}
		for k = 1; k < n && math.Ldexp(1, k-1) < ds; k++ {
		}
	}
	threshold = -(60 / cfg.Epsilon) * math.Log(4/cfg.Failure)
	return f, n, k, threshold
}

type coord struct {
	k   int
	psi float64
}

// unitVectors groups the entries by unit (sparse vectors, coordinates
// merged and sorted, units in increasing id order) and checks them.
func unitVectors(entries []Entry, d int) ([][]coord, error) {
	es := slices.Clone(entries)
	for i, e := range es {
		if e.Coord < 0 || e.Coord >= d {
			return nil, invalid("entry for coordinate %d of %d", e.Coord, d)
		}
		es[i].Psi = clampPsi(e.Psi)
		if !(es[i].Psi >= 0) || es[i].Psi != math.Trunc(es[i].Psi) {
			return nil, invalid("contribution ψ = %v grid steps, want a whole number ≥ 0", e.Psi)
		}
	}
	// A stable sort keeps the input order within a (unit, coordinate), so
	// the sums add up in the same order as the entries come.
	es = sortEntries(es)
	var out [][]coord
	for i := 0; i < len(es); {
		u := es[i].Unit
		var v []coord
		for ; i < len(es) && es[i].Unit == u; i++ {
			if n := len(v); n > 0 && v[n-1].k == es[i].Coord {
				v[n-1].psi = clampPsi(v[n-1].psi + es[i].Psi)
			} else {
				v = append(v, coord{es[i].Coord, es[i].Psi})
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// sortEntries sorts es stably by (unit, coordinate), as
// slices.SortStableFunc would. Units numbered densely from 0 (as
// Contributions numbers them) go through a counting sort, one pass, and
// each unit's few entries are then sorted by coordinate unless already in
// order: the stable merge sort of the whole slice was some 7% of the CPU
// of `synth answer --multi` over 25 groups at TPC-H SF 1 (1.2 M entries).
// Other numberings fall back to that sort. It may reuse es.
func sortEntries(es []Entry) []Entry {
	byCoord := func(a, b Entry) int { return a.Coord - b.Coord }
	lo, hi := 0, -1
	for i, e := range es {
		if i == 0 || e.Unit < lo {
			lo = e.Unit
		}
		if i == 0 || e.Unit > hi {
			hi = e.Unit
		}
	}
	if len(es) == 0 || lo < 0 || hi >= 4*len(es)+16 {
		slices.SortStableFunc(es, func(a, b Entry) int {
			if a.Unit != b.Unit {
				return cmp.Compare(a.Unit, b.Unit)
			}
			return byCoord(a, b)
		})
		return es
	}
	start := make([]int, hi+2)
	for _, e := range es {
		start[e.Unit+1]++
	}
	for u := range hi + 1 {
		start[u+1] += start[u]
	}
	out := make([]Entry, len(es))
	next := slices.Clone(start[:hi+1])
	for _, e := range es {
		out[next[e.Unit]] = e
		next[e.Unit]++
	}
	for u := range hi + 1 {
		v := out[start[u]:start[u+1]]
		if !slices.IsSortedFunc(v, byCoord) {
			slices.SortStableFunc(v, byCoord)
		}
	}
	return out
}

// maxPsi is the largest contribution, in grid steps, the mechanisms take:
// every whole number up to it is exact in a float64.
const maxPsi = 1 << 53

// clampPsi returns min(psi, 2⁵³) (+Inf included). A contribution is a sum
// over the data, so one tuple more can push it past 2⁵³; refusing it would
// be an error after the charge whose occurrence depends on the data.
// Clamping instead changes each unit's (or join group's) own contribution
// only, as a function of that contribution, so the clipped-sum and QCQP
// sensitivity arguments hold unchanged for the clamped queries. ψ below 0
// or not whole cannot come from a query that passed the public domain
// checks (non-negative summands in grid steps) and stays an error.
func clampPsi(psi float64) float64 {
	if psi > maxPsi {
		return maxPsi
	}
	return psi
}

// upperBound is the number of elements ≤ x of a sorted slice.
func upperBound(s []float64, x float64) int {
	lo, hi := 0, len(s)
	for lo < hi {
		m := (lo + hi) / 2
		if s[m] <= x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// clippedSum returns Σ_i x_i with x_i = ⌊min(1, r/‖S_i‖)·S_i⌋, r in grid
// steps. Each coordinate of a clipped unit is decided exactly: x_k is the
// largest integer with x_k²·‖S_i‖² ≤ S_k²·r² (big-integer arithmetic from a
// float64 first guess), so ‖x_i‖² ≤ Σ_k S_k²·r²/‖S_i‖² = r² holds exactly,
// whatever the rounding of float64.
func clippedSum(vecs [][]coord, r float64, d int) []int64 {
	sum := make([]int64, d)
	r2 := new(big.Int)
	if r >= 1 {
		new(big.Float).SetFloat64(r * r).Int(r2) // exact: r is a power of two
	}
	lhs, rhs, t := new(big.Int), new(big.Int), new(big.Int)
	fits := func(x int64, n2, s2r2 *big.Int) bool { // x²·n2 ≤ s2r2
		t.SetInt64(x)
		lhs.Mul(t, t)
		lhs.Mul(lhs, n2)
		return lhs.Cmp(s2r2) <= 0
	}
	r2small, r2fits := uint64(0), r2.IsUint64()
	if r2fits {
		r2small = r2.Uint64()
	}
	x := []int64{}
	for _, v := range vecs {
		x = x[:0]
		for _, c := range v {
			x = append(x, int64(c.psi))
		}
		// Fast path, exact: ‖x‖² in 128 bits (no overflow for entries
		// ≤ 2⁵³ and fewer than 2²⁰ coordinates) against r² when it fits
		// in 64 bits.
		if hi, lo, ok := normSq128(x); ok && r2fits && hi == 0 && lo <= r2small {
			for j, c := range v {
				sum[c.k] += x[j]
			}
			continue
		}
		n2 := normSq(x)
		if n2.Cmp(r2) > 0 {
			norm := math.Sqrt(float64(n2.Int64()))
			if !n2.IsInt64() {
				f, _ := new(big.Float).SetInt(n2).Float64()
				norm = math.Sqrt(f)
			}
			for j, c := range v {
				t.SetInt64(x[j])
				rhs.Mul(t, t)
				rhs.Mul(rhs, r2)
				g := int64(math.Floor(c.psi * (r / norm)))
				g = max(0, min(g, x[j]))
				for g > 0 && !fits(g, n2, rhs) {
					g--
				}
				for g < x[j] && fits(g+1, n2, rhs) {
					g++
				}
				x[j] = g
			}
		}
		for j, c := range v {
			sum[c.k] += x[j]
		}
	}
	return sum
}

// normSq128 returns Σ x_j² as a 128-bit number (hi, lo), ok = false if
// it might overflow (entries must be ≥ 0).
func normSq128(x []int64) (hi, lo uint64, ok bool) {
	if len(x) >= 1<<20 {
		return 0, 0, false
	}
	for _, v := range x {
		if v < 0 || v > 1<<53 {
			return 0, 0, false
		}
		h, l := bits.Mul64(uint64(v), uint64(v))
		var c uint64
		lo, c = bits.Add64(lo, l, 0)
		hi += h + c
	}
	return hi, lo, true
}

func normSq(x []int64) *big.Int {
	s, t := new(big.Int), new(big.Int)
	for _, v := range x {
		t.SetInt64(v)
		s.Add(s, t.Mul(t, t))
	}
	return s
}
