package audit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"

	"golang.org/x/sync/errgroup"
	"gonum.org/v1/gonum/mathext"

	"github.com/synth-dp/synth/dp"
)

// ErrInvalidOptions is wrapped by errors about audit options.
var ErrInvalidOptions = errors.New("audit: invalid options")

// ErrVacuous is wrapped by the error of an audit none of whose events could
// have given evidence: every event (or its complement) occurred too rarely
// on both inputs for any bound above 0, even against a count of 0 on the
// other input (see [Result].Ceiling) — its statistic was constant, or
// constant but for a few runs (the "mwem weighted family" statistic of
// issue 39 differed in 1 run of 2,000), or its events never split the
// outputs. Such an audit reports ε ≥ 0 and cannot fail whatever the
// mechanism does.
var ErrVacuous = errors.New("audit: vacuous")

// Mechanism is one run of a randomised mechanism on a fixed input, drawing
// its noise from src. It may be called concurrently with distinct sources.
type Mechanism[T any] func(src dp.Source) T

// Neighbours turns a mechanism that takes its input into the pair of
// closures on the neighbouring inputs d and dPrime that [Run] expects.
func Neighbours[I, T any](mech func(src dp.Source, in I) T, d, dPrime I) (Mechanism[T], Mechanism[T]) {
	return func(src dp.Source) T { return mech(src, d) },
		func(src dp.Source) T { return mech(src, dPrime) }
}

// Event is a named set S of outputs: In reports whether an output is in S.
type Event[T any] struct {
	Name string
	In   func(T) bool
}

// Options configures an audit. Zero values take the documented defaults.
type Options struct {
	// N is the number of runs on each input (default 100 000).
	N int
	// Delta is the δ of the claim being audited (default 0; must be < 1).
	Delta float64
	// Confidence is the probability that the reported bound is below the
	// true ε, simultaneously over all events tried (default 0.95; must lie
	// in (0, 1)).
	Confidence float64
	// Workers is the number of goroutines (default GOMAXPROCS).
	Workers int
	// Seed, when non-zero, makes the audit reproducible by drawing from
	// seeded sources; zero draws from fresh crypto sources.
	Seed uint64
	// Thresholds is the number of thresholds [RunScalar] tries (default
	// 64).
	Thresholds int
	// PilotN is the number of pilot runs per input from which [RunScalar]
	// picks its thresholds (default N/4, at least 1000).
	PilotN int
}

func (o Options) withDefaults() (Options, error) {
	if o.N == 0 {
		o.N = 100_000
	}
	if o.Confidence == 0 {
		o.Confidence = 0.95
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Thresholds == 0 {
		o.Thresholds = 64
	}
	if o.PilotN == 0 {
		o.PilotN = max(o.N/4, 1000)
	}
	switch {
	case o.N < 1:
		return o, fmt.Errorf("%w: N = %d, want ≥ 1", ErrInvalidOptions, o.N)
	case math.IsNaN(o.Delta) || o.Delta < 0 || o.Delta >= 1:
		return o, fmt.Errorf("%w: delta = %v, want 0 ≤ delta < 1", ErrInvalidOptions, o.Delta)
	case !(o.Confidence > 0 && o.Confidence < 1):
		return o, fmt.Errorf("%w: confidence = %v, want 0 < confidence < 1", ErrInvalidOptions, o.Confidence)
	case o.Workers < 1:
		return o, fmt.Errorf("%w: workers = %d, want ≥ 1", ErrInvalidOptions, o.Workers)
	case o.Thresholds < 1:
		return o, fmt.Errorf("%w: thresholds = %d, want ≥ 1", ErrInvalidOptions, o.Thresholds)
	case o.PilotN < 1:
		return o, fmt.Errorf("%w: pilot N = %d, want ≥ 1", ErrInvalidOptions, o.PilotN)
	}
	return o, nil
}

// Result is the outcome of an audit.
type Result struct {
	// EpsilonLowerBound is the largest ε lower bound over the events and
	// directions tried, or 0 when no event gave evidence (ε ≥ 0 always).
	EpsilonLowerBound float64
	// Confidence is the probability, over the audit's randomness, that
	// EpsilonLowerBound ≤ the mechanism's true ε at the audited δ.
	Confidence float64
	// Event names the event that gave the bound ("" when the bound is 0).
	Event string
	// Swapped is false when the bound compares the first input over the
	// second (P[M(D) ∈ S] large, P[M(D′) ∈ S] small) and true otherwise.
	Swapped bool
	// CountD and CountDPrime are how often Event occurred in the N runs on
	// each input.
	CountD, CountDPrime int64
	// PLower and PUpper are the Clopper–Pearson bounds that gave the
	// result: the lower bound on the larger side's probability and the
	// upper bound on the other's.
	PLower, PUpper float64
	// Degenerate is the number of events of the family that occurred in
	// none of the runs on either input, or in all of them on both: they
	// carry no evidence.
	Degenerate int
	// Ceiling is the largest bound the family could have given with the
	// counts observed on the side where each event was more frequent,
	// had it occurred in no run on the other side. Each event is taken in
	// its rarer orientation (the event, or its complement when the event
	// occurred in more than N of the 2N runs), so that an event that
	// occurred in nearly every run on both inputs counts by its rare
	// complement: Ceiling = max over the events of
	// ln((p_lo(max(k_D, k_D′)) − δ)/p_hi(0)) at the audit's level, the k
	// of the rarer orientation (−Inf when no numerator is positive). An
	// audit whose claim is at or above its Ceiling could not have failed,
	// whatever the other side did: a test shows its power by
	// Ceiling > claim. When Ceiling ≤ 0 the audit fails with [ErrVacuous]
	// instead.
	Ceiling float64
	// N is the number of runs per input; Events the number of events in
	// the family (for RunScalar, thresholds each with its complement);
	// Intervals the number of Clopper–Pearson intervals in the Bonferroni
	// correction.
	N, Events, Intervals int
}

// ClopperPearson returns the exact two-sided binomial confidence interval
// of level 1 − alpha for k successes in n trials: the alpha/2 quantile of
// Beta(k, n−k+1) and the 1 − alpha/2 quantile of Beta(k+1, n−k), with 0
// and 1 at the edges (Clopper and Pearson 1934), found by bisection on the
// exact binomial tail and rounded outwards. It panics unless
// 0 ≤ k ≤ n, n ≥ 1 and 0 < alpha < 1.
func ClopperPearson(k, n int64, alpha float64) (lo, hi float64) {
	if n < 1 || k < 0 || k > n || !(alpha > 0 && alpha < 1) {
		panic("audit: ClopperPearson needs 0 ≤ k ≤ n, n ≥ 1, 0 < alpha < 1")
	}
	lo, hi = 0, 1
	if k > 0 {
		// lo solves P[Bin(n, p) ≥ k] = I_p(k, n−k+1) = α/2.
		lo = solveIncBeta(float64(k), float64(n-k+1), alpha/2)
	}
	if k < n {
		// hi solves P[Bin(n, p) ≤ k] = α/2, i.e. with q = 1 − p,
		// I_q(n−k, k+1) = α/2 (no cancellation near 1 − α/2).
		// Round 1 − q up: near 1 the subtraction rounds either way.
		hi = math.Min(1, math.Nextafter(1-solveIncBeta(float64(n-k), float64(k+1), alpha/2), 2))
	}
	return lo, hi
}

// solveIncBeta returns the x in (0, 1) with I_x(a, b) = target, by
// bisection on the regularized incomplete beta function, which increases
// in x. Quantile inversion (gonum's Beta.Quantile) loses accuracy at the
// extreme levels audits use (α ≈ 1e-8 with n ≈ 10⁵): its bounds were off
// by orders of magnitude, always conservatively but enough to hide a
// broken mechanism; bisection to 1e-300 keeps every digit I_x has.
func solveIncBeta(a, b, target float64) float64 {
	lo, hi := 0.0, 1.0
	for i := 0; i < 200 && hi-lo > 1e-300; i++ {
		mid := lo + (hi-lo)/2
		if mathext.RegIncBeta(a, b, mid) < target {
			lo = mid
		} else {
			hi = mid
		}
	}
	// The side below the root: both callers need it (lo directly, hi as
	// 1 − x) to keep the interval conservative.
	return lo
}

// candidate is the bound from one event in both directions.
type candidate struct {
	eps     float64
	swapped bool
	lo, hi  float64
}

// bound returns the larger of ln((lo_D − δ)/hi_D′) and ln((lo_D′ − δ)/hi_D)
// from intervals of level 1 − alpha; −Inf when neither numerator is > 0.
func bound(kD, kP, n int64, delta, alpha float64) candidate {
	loD, hiD := ClopperPearson(kD, n, alpha)
	loP, hiP := ClopperPearson(kP, n, alpha)
	c := candidate{eps: math.Inf(-1)}
	if loD-delta > 0 {
		c = candidate{eps: math.Log((loD - delta) / hiP), lo: loD, hi: hiP}
	}
	if loP-delta > 0 {
		if e := math.Log((loP - delta) / hiD); e > c.eps {
			c = candidate{eps: e, swapped: true, lo: loP, hi: hiD}
		}
	}
	return c
}

// Run audits a mechanism with a family of events fixed in advance: it runs
// d and dPrime (the mechanism on two neighbouring inputs) opt.N times each,
// counts every event, and returns the best ε lower bound at opt.Delta with
// confidence opt.Confidence, Bonferroni-corrected over the 2·len(events)
// Clopper–Pearson intervals. ctx cancels the sampling.
func Run[T any](ctx context.Context, d, dPrime Mechanism[T], events []Event[T], opt Options) (Result, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return Result{}, err
	}
	if len(events) == 0 {
		return Result{}, fmt.Errorf("%w: no events", ErrInvalidOptions)
	}
	m := len(events)
	count := func(mech Mechanism[T], phase uint64) ([]int64, error) {
		return collect(ctx, mech, opt.N, opt, phase,
			func() []int64 { return make([]int64, m) },
			func(c []int64, x T) error {
				for i, e := range events {
					if e.In(x) {
						c[i]++
					}
				}
				return nil
			})
	}
	cD, err := count(d, 1)
	if err != nil {
		return Result{}, err
	}
	cP, err := count(dPrime, 2)
	if err != nil {
		return Result{}, err
	}
	names := make([]string, m)
	for i, e := range events {
		names[i] = e.Name
	}
	return summarise(names, cD, cP, opt, m, 2*m)
}

// summarise turns event counts into a Result with intervals at level
// 1 − (1−confidence)/intervals each. It fails with [ErrVacuous] when every
// event is degenerate (count 0 on both inputs, or N on both).
func summarise(names []string, cD, cP []int64, opt Options, events, intervals int) (Result, error) {
	n := int64(opt.N)
	alpha := (1 - opt.Confidence) / float64(intervals)
	res := Result{Confidence: opt.Confidence, N: opt.N, Events: events, Intervals: intervals}
	res.Ceiling = math.Inf(-1)
	for i := range names {
		if cD[i] == cP[i] && (cD[i] == 0 || cD[i] == n) {
			res.Degenerate++
		}
		a, b := cD[i], cP[i]
		if a+b > n {
			a, b = n-a, n-b // the complement is the rarer orientation
		}
		res.Ceiling = math.Max(res.Ceiling, bound(max(a, b), 0, n, opt.Delta, alpha).eps)
	}
	if res.Degenerate == len(names) {
		return res, fmt.Errorf("%w: each of the %d events (e.g. %q) occurred in none or all of the %d runs on both inputs: the statistic does not vary, so the audit cannot fail", ErrVacuous, len(names), names[0], opt.N)
	}
	if !(res.Ceiling > 0) {
		return res, fmt.Errorf("%w: no event of the %d (e.g. %q), nor its complement where rarer, occurred often enough on either input, in %d runs, to give a bound above 0 even against no occurrence on the other: the statistic hardly varies, so the audit cannot fail", ErrVacuous, len(names), names[0], opt.N)
	}
	best := candidate{eps: math.Inf(-1)}
	for i := range names {
		c := bound(cD[i], cP[i], n, opt.Delta, alpha)
		if c.eps > best.eps {
			best = c
			res.Event, res.CountD, res.CountDPrime = names[i], cD[i], cP[i]
		}
	}
	if !(best.eps > 0) {
		res.Event, res.CountD, res.CountDPrime = "", 0, 0
		return res, nil
	}
	res.EpsilonLowerBound, res.Swapped, res.PLower, res.PUpper = best.eps, best.swapped, best.lo, best.hi
	return res, nil
}

// RunScalar audits a mechanism with a real-valued output using threshold
// events: a pilot run of opt.PilotN per input fixes opt.Thresholds
// thresholds at evenly spaced quantiles of the pooled pilot outputs; then
// fresh runs of opt.N per input estimate P[x > t] and P[x ≤ t] for every
// threshold t, and the best ε lower bound over these events and both
// directions is returned, Bonferroni-corrected over 2·(number of distinct
// thresholds) intervals. A NaN output is an error.
func RunScalar(ctx context.Context, d, dPrime Mechanism[float64], opt Options) (Result, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return Result{}, err
	}
	pilot := func(mech Mechanism[float64], phase uint64) ([]float64, error) {
		parts, err := collectAll(ctx, mech, opt.PilotN, opt, phase)
		if err != nil {
			return nil, err
		}
		return slices.Concat(parts...), nil
	}
	pD, err := pilot(d, 3)
	if err != nil {
		return Result{}, err
	}
	pP, err := pilot(dPrime, 4)
	if err != nil {
		return Result{}, err
	}
	pool := append(pD, pP...)
	slices.Sort(pool)
	ts := make([]float64, 0, opt.Thresholds)
	for i := 1; i <= opt.Thresholds; i++ {
		t := pool[min(len(pool)-1, i*len(pool)/(opt.Thresholds+1))]
		if len(ts) == 0 || t > ts[len(ts)-1] {
			ts = append(ts, t)
		}
	}
	k := len(ts)
	// hist[i] counts outputs with exactly i thresholds below them, so
	// #{x > ts[j]} = Σ_{i > j} hist[i].
	hist := func(mech Mechanism[float64], phase uint64) ([]int64, error) {
		return collect(ctx, mech, opt.N, opt, phase,
			func() []int64 { return make([]int64, k+1) },
			func(h []int64, x float64) error {
				if math.IsNaN(x) {
					return errors.New("audit: mechanism returned NaN")
				}
				h[sort.SearchFloat64s(ts, x)]++
				return nil
			})
	}
	hD, err := hist(d, 5)
	if err != nil {
		return Result{}, err
	}
	hP, err := hist(dPrime, 6)
	if err != nil {
		return Result{}, err
	}
	above := func(h []int64) []int64 {
		out := make([]int64, 2*k)
		var s int64
		for j := k - 1; j >= 0; j-- {
			s += h[j+1]
			out[2*j] = s                  // x > ts[j]
			out[2*j+1] = int64(opt.N) - s // x ≤ ts[j]
		}
		return out
	}
	names := make([]string, 2*k)
	for j, t := range ts {
		names[2*j] = fmt.Sprintf("x > %g", t)
		names[2*j+1] = fmt.Sprintf("x ≤ %g", t)
	}
	// The complement's interval mirrors the event's, so only 2k intervals
	// (one per threshold and input) enter the Bonferroni correction.
	return summarise(names, above(hD), above(hP), opt, 2*k, 2*k)
}

// collect runs mech n times over opt.Workers goroutines, each with its own
// source and its own state from newState, and adds the states up.
func collect[T any](ctx context.Context, mech Mechanism[T], n int, opt Options, phase uint64,
	newState func() []int64, observe func([]int64, T) error) ([]int64, error) {
	states := make([][]int64, opt.Workers)
	g, ctx := errgroup.WithContext(ctx)
	for w := range opt.Workers {
		states[w] = newState()
		lo, hi := w*n/opt.Workers, (w+1)*n/opt.Workers
		src := source(opt, phase, w)
		g.Go(func() error {
			for i := lo; i < hi; i++ {
				if (i-lo)%1024 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				if err := observe(states[w], mech(src)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := states[0]
	for _, s := range states[1:] {
		for i := range out {
			out[i] += s[i]
		}
	}
	return out, nil
}

// collectAll runs mech n times and keeps the outputs, one slice per worker.
func collectAll(ctx context.Context, mech Mechanism[float64], n int, opt Options, phase uint64) ([][]float64, error) {
	parts := make([][]float64, opt.Workers)
	g, ctx := errgroup.WithContext(ctx)
	for w := range opt.Workers {
		lo, hi := w*n/opt.Workers, (w+1)*n/opt.Workers
		src := source(opt, phase, w)
		g.Go(func() error {
			out := make([]float64, 0, hi-lo)
			for i := lo; i < hi; i++ {
				if (i-lo)%1024 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				x := mech(src)
				if math.IsNaN(x) {
					return errors.New("audit: mechanism returned NaN")
				}
				out = append(out, x)
			}
			parts[w] = out
			return nil
		})
	}
	return parts, g.Wait()
}

// source returns the source of one worker in one phase of an audit.
func source(opt Options, phase uint64, worker int) dp.Source {
	if opt.Seed == 0 {
		return dp.NewSource()
	}
	return dp.NewSeededSource(opt.Seed*0x9e3779b97f4a7c15 + phase<<32 + uint64(worker))
}
