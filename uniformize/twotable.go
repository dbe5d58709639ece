package uniformize

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/joinasone"
	"github.com/synth-dp/synth/pmw"
)

// TwoTableAlgorithm names the mechanism [TwoTable] runs.
const TwoTableAlgorithm = "Ghazi et al. Alg. 4 + Alg. 5 (uniformized two-table partition by noisy degree, Alg. 1 on every bucket)"

// TwoTableConfig holds the public parameters of a run. The embedded
// joinasone.Config describes the release: Epsilon and Delta are the budget
// of the WHOLE mechanism (partition and sub-instances), the other fields
// (columns of h, universe, workload, PMW options) are passed to every
// bucket's join-as-one run, with NoRowsFloor set.
type TwoTableConfig struct {
	joinasone.Config
	// OnBucket, when set, is called before the k-th of the n buckets that
	// run (k from 1) reads its sub-instance, with the bucket's index: DP
	// outputs and public parameters only (the buckets that run are the
	// partition's published output).
	OnBucket func(k, n, bucket int)

	// mut plants a known privacy bug for the audits' ttMutation tests.
	// Unexported: no production path sets it.
	mut ttMutation
	// testPad, when set by a test, replaces the noise of the k-th join
	// value (a coupling of the noise of two neighbouring instances).
	testPad func(k int) int64
	// publicBound (experiment, not used by any production path) runs PMW
	// on bucket i with the public sensitivity ⌊2^i·λ⌋ and the bucket's
	// whole budget instead of Alg. 1's noisy max degree: for every
	// partition in the support under D or D′, a tuple with join value b in
	// bucket i changes the join by the degree of b in the other relation,
	// which is ≤ max{deg₁(b), deg₂(b)} ≤ deg̃(b) ≤ ⌊2^i·λ⌋ (the pad is ≥ 0
	// and that degree is the same on both neighbours).
	publicBound bool
}

// ttMutation names a planted privacy bug (audit tests only).
type ttMutation int

const (
	ttHonest ttMutation = iota
	// ttSkipEmpty runs only the buckets that hold a present join value,
	// not every bucket reachable by the noise alone.
	ttSkipEmpty
	// ttTrueDegree buckets every value by its true degree (no noise).
	ttTrueDegree
	// ttLowBound runs the public-bound variant with sensitivity 1 (the
	// bucket's bound forgotten, as for one table): far below the degrees
	// bucket i holds.
	ttLowBound
)

// BucketRun describes one sub-instance that ran. Its fields are public
// parameters and DP outputs only.
type BucketRun struct {
	// Bucket is i: the sub-instance holds the join values whose noisy
	// degree deg̃ has max{1, ⌈log₂(deg̃/λ)⌉} = i.
	Bucket int `json:"bucket"`
	// MaxNoisyDegree is ⌊2^i·λ⌋, the largest noisy degree of the bucket
	// (public).
	MaxNoisyDegree int64 `json:"max_noisy_degree"`
	// SubRun is the run's DP n̂, Δ̃ (Alg. 1's noisy max degree) and rows,
	// and its budget: (ε/2, δ/2).
	SubRun
}

// TwoTableResult is a run's output: DP values only.
type TwoTableResult struct {
	// Lambda is λ = ln(1/δ_p)/ε_p with (ε_p, δ_p) = (ε/2, δ/2), the
	// partition's budget.
	Lambda float64
	// Tau is τ′ of the degree noise: every noise draw lies in [0, 2τ′].
	Tau int64
	// AlwaysRun are the buckets reachable by the noise alone (a join value
	// of degree 0): run on every input.
	AlwaysRun []int
	// Partitions are the buckets that ran, increasing.
	Partitions []BucketRun
	// Rows is the sum of the buckets' row counts, NHat of their n̂, and
	// DeltaTilde the largest of their Δ̃.
	Rows       int64
	NHat       float64
	DeltaTilde float64

	// The merged counts and the runs: Counts and Runs.
	*subRuns
}

// TwoTablePlan is a uniformized two-table run whose budget is charged and which
// has not read any data yet. It runs once.
type TwoTablePlan struct {
	h      *hypergraph.Hypergraph
	cfg    TwoTableConfig
	attrs  []string
	pad    *dp.TruncatedDiscreteLaplace
	lambda float64
	thr    []int64 // thr[i] = ⌊2^i·λ⌋ (saturated), thr[0] = −1
	always []int
	root   *dp.Ledger
	rel    *subRelease // the buckets' runs, with (ε/2, δ/2) each
}

// maxTwoTableBucket bounds the bucket index: 2^62·λ exceeds any degree.
const maxTwoTableBucket = 62

// PrepareTwoTable validates cfg for the two-relation join h and charges the whole
// budget to ledger — (ε/2, δ/2) for the partition, (ε/2, δ/2) reserved for
// the sub-instances — before any data is read.
func PrepareTwoTable(h *hypergraph.Hypergraph, cfg TwoTableConfig, ledger *dp.Ledger) (*TwoTablePlan, error) {
	if h == nil || h.Len() != 2 || len(h.Boundary(1)) == 0 {
		return nil, ErrNotTwoTable
	}
	if err := (dp.Budget{Epsilon: cfg.Epsilon, Delta: cfg.Delta}).Validate(); err != nil {
		return nil, fmt.Errorf("uniformize: %w", err)
	}
	if cfg.Delta == 0 {
		return nil, fmt.Errorf("uniformize: %w: delta must be > 0 (the degree padding needs it)", dp.ErrInvalidParameter)
	}
	half := dp.Budget{Epsilon: cfg.Epsilon / 2, Delta: cfg.Delta / 2}
	p := &TwoTablePlan{h: h, cfg: cfg, attrs: h.Boundary(1)}
	var err error
	if p.pad, err = dp.CachedTruncatedDiscreteLaplace(half.Epsilon, half.Delta, 1); err != nil {
		return nil, fmt.Errorf("uniformize: degree noise: %w", err)
	}
	// Every tuple lies in one bucket: k = 1.
	if p.rel, err = newSubRelease(h, cfg.Config, half, 1); err != nil {
		return nil, err
	}
	p.lambda = math.Log(1/half.Delta) / half.Epsilon
	p.thr = make([]int64, maxTwoTableBucket+1)
	p.thr[0] = -1
	for i := 1; i <= maxTwoTableBucket; i++ {
		t := math.Floor(math.Ldexp(p.lambda, i))
		if t >= math.MaxInt64/2 {
			t = math.MaxInt64 / 2
		}
		p.thr[i] = int64(t)
	}
	// The buckets reachable by a pad of 0, i.e. by a noisy degree in
	// [0, 2τ′]: bucket i is reachable iff some integer k ≤ 2τ′ has
	// thr[i−1] < k ≤ thr[i] (bucket 1: k ≤ thr[1]).
	top := 2 * p.pad.Tau()
	for i := 1; i <= maxTwoTableBucket; i++ {
		if p.thr[i-1] < p.thr[i] && p.thr[i-1] < top {
			p.always = append(p.always, i)
		}
	}
	if p.root, err = ledger.Split("uniformized two-table release", dp.Budget{Epsilon: cfg.Epsilon, Delta: cfg.Delta},
		"basic composition of the partition and the sub-instances (Ghazi et al. Lemma 4.1)",
		map[string]any{"algorithm": TwoTableAlgorithm, "lambda": p.lambda, "join_attributes": p.attrs}); err != nil {
		return nil, err
	}
	if err := p.root.Charge("truncated discrete Laplace: noisy max degree of every join value (Alg. 5 line 3)", half,
		"parallel composition over join values: one tuple changes the degree of one join value by at most 1 "+
			"(Ghazi et al. Lemma C.1); the buckets are post-processing",
		map[string]any{"tau": p.pad.Tau(), "scale": p.pad.Scale(), "lambda": p.lambda, "always_run": p.always}); err != nil {
		return nil, err
	}
	if p.rel.ledger, err = p.root.Split("sub-instances: join-as-one (Alg. 1) on every bucket", half,
		"parallel composition: every tuple lies in exactly one sub-instance (Ghazi et al. Lemma 4.1)", nil); err != nil {
		return nil, err
	}
	return p, nil
}

// bucketOf is max{1, ⌈log₂(d/λ)⌉} for an integer d ≥ 0: the smallest
// i ≥ 1 with d ≤ 2^i·λ, i.e. d ≤ ⌊2^i·λ⌋ (exact integer comparisons).
func (p *TwoTablePlan) bucketOf(d int64) int {
	for i := 1; i < maxTwoTableBucket; i++ {
		if d <= p.thr[i] {
			return i
		}
	}
	return maxTwoTableBucket
}

// TwoTable runs [PrepareTwoTable] then [TwoTablePlan.Run].
//
// # Guarantee
//
// TwoTable is (ε, δ)-DP for neighbours that add or remove one tuple of one
// private relation. It is Alg. 4 of Ghazi et al. with the partition of
// Alg. 5, run as follows, with (ε_p, δ_p) = (ε/2, δ/2) and
// λ = ln(1/δ_p)/ε_p:
//
//  1. For every value b of the shared attributes B present in either
//     relation, deg̃(b) = max{deg₁(b), deg₂(b)} + X_b with X_b drawn by
//     dp.TruncatedDiscreteLaplace(ε_p, δ_p, 1): an integer in [0, 2τ′].
//  2. b goes to bucket i(b) = max{1, ⌈log₂(deg̃(b)/λ)⌉}.
//  3. The buckets run are R₀ ∪ {i(b) : b present}, where R₀ = {i(k) : k ∈
//     [0, 2τ′]} are the buckets a noisy degree of an absent value (degree 0,
//     noise alone) can reach. Every bucket that runs — also one with no
//     join row — is a sub-instance (each relation restricted to the tuples
//     whose join value is in the bucket) of the package's shared run
//     (package documentation, "Sub-instances") with k = 1: join-as-one
//     Alg. 1 with (ε/2, δ/2) on each.
//
// Proof. (i) Same as Alg. 5 over an unbounded dom(B). A key domain is
// unbounded (the spec declares no list of keys). Alg. 5 draws X_b for every
// b ∈ dom(B); an absent value has noisy degree X_b, and for every k ∈
// [0, 2τ′] P[X_b = k] > 0, so with infinitely many absent values, each
// drawn independently, every bucket of R₀ receives an absent value with
// probability 1; no absent value reaches a bucket outside R₀. So with
// probability 1 the set {i : Bⁱ ≠ ∅} of Alg. 5 is exactly R₀ ∪ {i(b) : b
// present}, the set step 3 runs; the sub-instance of a bucket is the same
// in both (absent values have no tuples), and the noise of absent values
// enters nothing else. The output of TwoTable is therefore distributed
// exactly as Alg. 4 with Alg. 5 on dom(B) infinite, with the noise of the
// absent values marginalised out.
// (ii) Alg. 5 is (ε_p, δ_p)-DP (Lemma C.1): one tuple changes the degree of
// one join value b in one relation by 1, hence max{deg₁(b), deg₂(b)} by at
// most 1 and every other value's not at all; the noisy degrees of distinct
// values use independent noise, so by parallel composition the vector of
// noisy degrees is (ε_p, δ_p)-DP by the guarantee of
// dp.TruncatedDiscreteLaplace, and the buckets, the set of buckets run and
// their thresholds are post-processing. (Against a public relation the
// private side's degree alone moves; the max is still 1-Lipschitz.)
// (iii) Every tuple lies in exactly one bucket's sub-instance, that of its
// join value: k = 1. By (i) and (ii) the buckets that run are a function of
// the partition's DP output, and the shared run's guarantee (package
// documentation) gives (ε, δ)-DP (Lemma 4.1). ∎
//
// The noisy degrees themselves are integers (DESIGN.md §3, invariant 6)
// and are not published; the report holds the buckets that ran, their
// budgets and their DP n̂, Δ̃ and rows.
func TwoTable(ctx context.Context, src dp.Source, h *hypergraph.Hypergraph, data TwoTableData, cfg TwoTableConfig, ledger *dp.Ledger) (*TwoTableResult, error) {
	p, err := PrepareTwoTable(h, cfg, ledger)
	if err != nil {
		return nil, err
	}
	return p.Run(ctx, src, data)
}

// partition draws the noisy degrees and returns every present value's
// bucket and the buckets to run (increasing).
func (p *TwoTablePlan) partition(ctx context.Context, src dp.Source, data TwoTableData) (bucket []int32, run []int, err error) {
	degs, err := data.Degrees(ctx, p.h, p.attrs)
	if err != nil {
		return nil, nil, err
	}
	bucket = make([]int32, len(degs))
	set := map[int]bool{}
	if p.cfg.mut != ttSkipEmpty {
		for _, i := range p.always {
			set[i] = true
		}
	}
	for k, d := range degs {
		noisy := d
		switch {
		case p.cfg.testPad != nil:
			noisy += p.cfg.testPad(k)
		case p.cfg.mut != ttTrueDegree:
			noisy += p.pad.Sample(src)
		}
		i := p.bucketOf(noisy)
		bucket[k] = int32(i)
		set[i] = true
	}
	return bucket, slices.Sorted(maps.Keys(set)), nil
}

// Run reads the statistics and runs the mechanism. It may be called once.
func (p *TwoTablePlan) Run(ctx context.Context, src dp.Source, data TwoTableData) (res *TwoTableResult, err error) {
	if err := p.rel.start(ErrTwoTablePlanUsed); err != nil {
		return nil, err
	}
	defer closeData(ctx, data, &res, &err)
	bucket, run, err := p.partition(ctx, src, data)
	if err != nil {
		return nil, err
	}
	res = &TwoTableResult{Lambda: p.lambda, Tau: p.pad.Tau(), AlwaysRun: slices.Clone(p.always)}
	if len(run) == 0 {
		return res, nil // only under a ttMutation: R₀ is never empty
	}
	if err := data.Assign(ctx, bucket); err != nil {
		return nil, err
	}
	rule := "parallel composition over the buckets' disjoint sub-instances (Ghazi et al. Lemma 4.1)"
	split := subSplit{"join-as-one on every bucket", rule, map[string]any{"buckets": run}}
	in := subSource{
		open: func(ctx context.Context, k int, l *dp.Ledger) (*hypergraph.Hypergraph, joinasone.Stats, error) {
			if p.cfg.OnBucket != nil {
				p.cfg.OnBucket(k+1, len(run), run[k])
			}
			sub, stats, err := data.Bucket(ctx, run[k])
			if err != nil {
				return nil, nil, err
			}
			l.Publish("bucket", float64(run[k]))
			return sub, stats, nil
		},
		name: func(k int) string { return fmt.Sprintf("bucket %d", run[k]) },
	}
	if p.cfg.publicBound {
		in.run = func(ctx context.Context, src dp.Source, k int, sub *hypergraph.Hypergraph, stats joinasone.Stats, l *dp.Ledger) (*joinasone.Result, error) {
			return p.runPublicBound(ctx, src, sub, stats, run[k], l)
		}
	}
	if res.subRuns, err = p.rel.run(ctx, src, len(run), split, in); err != nil {
		return nil, err
	}
	for k, r := range res.subRuns.published(rule) {
		res.Partitions = append(res.Partitions, BucketRun{Bucket: run[k], MaxNoisyDegree: p.thr[run[k]], SubRun: r})
	}
	res.Rows, res.NHat, res.DeltaTilde = res.rows, res.nHat, res.deltaMax
	return res, nil
}

// runPublicBound is the publicBound experiment on bucket i: PMW with
// sensitivity max(1, ⌊2^i·λ⌋) and the bucket's whole budget.
func (p *TwoTablePlan) runPublicBound(ctx context.Context, src dp.Source, sub *hypergraph.Hypergraph, stats joinasone.Stats, i int, l *dp.Ledger) (*joinasone.Result, error) {
	c := p.rel.config(sub)
	cells, err := stats.Histogram(ctx, sub, c.Columns, c.Universe.Sizes())
	if err != nil {
		return nil, err
	}
	hist := make([]pmw.Cell, len(cells))
	for k, x := range cells {
		hist[k] = pmw.Cell{Index: x.Index, Count: x.Count}
	}
	sens := float64(max(1, p.thr[i]))
	if p.cfg.mut == ttLowBound {
		sens = 1
	}
	res, err := pmw.Run(ctx, src, c.Universe, c.Families, hist, pmw.Config{
		Epsilon: p.rel.each.Epsilon, Delta: p.rel.each.Delta, Sensitivity: sens, Variant: c.Variant, Noise: c.Noise,
		NHatShare: c.NHatShare, Rounds: c.Rounds, MaxRounds: c.MaxRounds, Reapply: c.Reapply, Ledger: l,
		Workers: c.Workers, NoRowsFloor: true,
	})
	if err != nil {
		return nil, err
	}
	return &joinasone.Result{Algorithm: "PMW with the public bucket bound", DeltaTilde: sens, PMW: res}, nil
}
