package uniformize

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/joinasone"
)

// HierAlgorithm names the mechanism [Hier] runs.
const HierAlgorithm = "Ghazi et al. Alg. 4 with Alg. 6 + 7 (uniformized hierarchical partition by noisy degrees, Alg. 3 on every sub-instance)"

// DefaultHierLevels is the public number of bucket levels L of a
// hierarchical release when [HierConfig.Levels] is 0: buckets (0, 2λ],
// (2λ, 4λ] and (4λ, ∞). Every level multiplies the bound K on the
// sub-instances a tuple sits in (K = L^{n_i}, [Tree.Multiplicity]), and so
// divides every sub-instance's budget; more levels pay only where degrees
// are far above λ.
const DefaultHierLevels = 3

// HierConfig holds the public parameters of a hierarchical run. The
// embedded joinasone.Config describes the release: Epsilon and Delta are
// the budget of the WHOLE mechanism (partition and sub-instances); the
// other fields are passed to every sub-instance's join-as-one run (Alg. 3),
// with NoRowsFloor set.
type HierConfig struct {
	joinasone.Config
	// Levels is the public number of bucket levels L ≥ 1; 0 means
	// DefaultHierLevels. Noisy degrees above λ·2^(L−1) share bucket L.
	Levels int
	// OnSub, when set, is called before sub-instance k of n runs, with its
	// degree configuration (DP outputs and public parameters only).
	OnSub func(k, n int, config string)

	// mut plants a known privacy bug in the partition (audit tests only).
	mut hierMutation
}

// HierSubRun describes one sub-instance that ran. Its fields are public
// parameters and DP outputs only.
type HierSubRun struct {
	// Config is the degree configuration σ: the bucket of every decomposed
	// node of the attribute tree, named by its attributes (roots, never
	// split, are left out), e.g. {"members.member_id": 2}.
	Config map[string]int `json:"config"`
	// SubRun is the run's DP n̂, Δ̃ (Alg. 3's noisy residual sensitivity)
	// and rows, and its budget: (ε/(2K), δ/(2K)).
	SubRun
}

// HierReleaseResult is a hierarchical run's output: DP values and public
// parameters only.
type HierReleaseResult struct {
	// Tree is the attribute tree ([Tree.String]).
	Tree string
	// Levels is L; Lambda is λ = τ′ of the degree noise and Tau that τ′.
	Levels int
	Lambda int64
	Tau    int64
	// K bounds the sub-instances one tuple sits in and KDeg the noisy
	// degrees one tuple moves (public, from the tree and L).
	K, KDeg int64
	// Partitions are the sub-instances that ran, in the partition's order.
	Partitions []HierSubRun
	// Rows is the sum of the sub-instances' rows, NHat of their n̂, and
	// DeltaTilde of their Δ̃: a bound on one tuple's change to the whole
	// join, whose rows the sub-instances' joins partition (Lemma 4.10) but
	// which may spread over up to K of them — the largest Δ̃ alone would
	// not bound it (the two-table buckets are disjoint; these are not).
	Rows       int64
	NHat       float64
	DeltaTilde float64

	// The merged counts and the runs: Counts and Runs.
	*subRuns
}

// HierPlan is a uniformized hierarchical run whose budget is charged and
// which has not read any data yet. It runs once.
type HierPlan struct {
	h      *hypergraph.Hypergraph
	tree   *Tree
	cfg    HierConfig
	levels int
	deg    HierSplit // per noisy degree, K_deg
	sub    HierSplit // per sub-instance, K
	tau    int64
	rel    *subRelease // the sub-instances' runs, with (ε/(2K), δ/(2K)) each
}

// PrepareHier validates cfg for the hierarchical join h and charges the
// whole budget to ledger before any data is read: (ε/2, δ/2) for the
// partition, whose every noisy degree gets (ε/(2·K_deg), δ/(2·K_deg)), and
// (ε/2, δ/2) reserved for the sub-instances, each run with
// (ε/(2K), δ/(2K)). It returns an error wrapping [ErrNotHierarchical] for a
// join that is not hierarchical.
func PrepareHier(h *hypergraph.Hypergraph, cfg HierConfig, ledger *dp.Ledger) (*HierPlan, error) {
	if h == nil || h.Len() < 3 {
		return nil, fmt.Errorf("uniformize: the hierarchical partition is for three or more relations (two: PrepareTwoTable)")
	}
	tree, err := NewTree(h)
	if err != nil {
		return nil, fmt.Errorf("uniformize: %w", err)
	}
	if err := (dp.Budget{Epsilon: cfg.Epsilon, Delta: cfg.Delta}).Validate(); err != nil {
		return nil, fmt.Errorf("uniformize: %w", err)
	}
	if cfg.Delta == 0 {
		return nil, fmt.Errorf("uniformize: %w: delta must be > 0 (the degree padding needs it)", dp.ErrInvalidParameter)
	}
	if h.Private() == 0 {
		return nil, joinasone.ErrNoPrivateRelation
	}
	levels := cfg.Levels
	if levels == 0 {
		levels = DefaultHierLevels
	}
	if levels < 1 || levels > hierMaxLevels {
		return nil, fmt.Errorf("%w: levels = %d, want 1 to %d", ErrHierParams, levels, hierMaxLevels)
	}
	half := dp.Budget{Epsilon: cfg.Epsilon / 2, Delta: cfg.Delta / 2}
	p := &HierPlan{h: h, tree: tree, cfg: cfg, levels: levels}
	if p.deg, err = HierDegreeBudget(half.Epsilon, half.Delta, tree, levels); err != nil {
		return nil, err
	}
	if p.sub, err = HierBudget(half.Epsilon, half.Delta, tree, levels); err != nil {
		return nil, err
	}
	if cfg.mut == hierNoMultiplicity {
		p.sub = HierSplit{Eps: half.Epsilon, Delta: half.Delta, K: 1} // planted bug (audit tests only)
	}
	noise, err := dp.CachedTruncatedDiscreteLaplace(p.deg.Eps, p.deg.Delta, 1)
	if err != nil {
		return nil, fmt.Errorf("uniformize: degree noise: %w", err)
	}
	p.tau = noise.Tau()
	if p.rel, err = newSubRelease(h, cfg.Config, half, p.sub.K); err != nil {
		return nil, err
	}
	root, err := ledger.Split("uniformized hierarchical release", dp.Budget{Epsilon: cfg.Epsilon, Delta: cfg.Delta},
		"basic composition of the partition and the sub-instances (Ghazi et al. Lemma 4.11, corrected: see uniformize.HierBudget)",
		map[string]any{"algorithm": HierAlgorithm, "attribute_tree": tree.String(), "levels": levels})
	if err != nil {
		return nil, err
	}
	if err := root.Charge("truncated discrete Laplace: noisy degree deg_{atom(x),y}(t) of every value t of the ancestors y of every non-root node x of the attribute tree (Alg. 7 line 4)", half,
		fmt.Sprintf("each noisy degree is (ε/(2·K_deg), δ/(2·K_deg))-DP (sensitivity 1, parallel over the values of one query); "+
			"one tuple moves at most K_deg = %d of them (uniformize.Tree.DegreeCount), basic composition with adaptive choices; "+
			"the buckets and the sub-instances are post-processing", p.deg.K),
		map[string]any{"k_deg": p.deg.K, "epsilon_per_degree": p.deg.Eps, "delta_per_degree": p.deg.Delta,
			"tau": p.tau, "lambda": p.tau, "levels": levels}); err != nil {
		return nil, err
	}
	if p.rel.ledger, err = root.Split("sub-instances: join-as-one (Alg. 3) on every sub-instance", half,
		fmt.Sprintf("one tuple lies in at most K = %d sub-instances (Lemma 4.10, K = max over private relations i of L^{n_i}, "+
			"n_i the non-root nodes of the attribute tree off relation i's path; uniformize.Tree.Multiplicity); every sub-instance "+
			"runs with (ε/(2K), δ/(2K)), so basic composition over the at most K it changes gives (ε/2, δ/2) (Lemma 4.11's group "+
			"privacy step, by composition)", p.sub.K),
		map[string]any{"k": p.sub.K, "epsilon_per_sub_instance": p.sub.Eps, "delta_per_sub_instance": p.sub.Delta}); err != nil {
		return nil, err
	}
	return p, nil
}

// Hier runs [PrepareHier] then [HierPlan.Run].
//
// # Guarantee
//
// Hier is (ε, δ)-DP for neighbours that add or remove one tuple of one
// private relation. It is Alg. 4 of Ghazi et al. with the partition of
// Alg. 6 + 7 on a hierarchical join, run as follows, with L the public
// number of levels:
//
//  1. [PartitionHierarchical] with every noisy degree drawn by
//     dp.TruncatedDiscreteLaplace(ε/(2·K_deg), δ/(2·K_deg), 1), K_deg =
//     [Tree.DegreeCount](L), λ = τ′ of that noise: (ε/2, δ/2)-DP
//     ([HierDegreeBudget]). Its output is the list of sub-instances, each
//     a degree configuration and the bucket maps that carve it out.
//  2. Every sub-instance of that list — also one with no join row (its n̂
//     is pure padding) — is a sub-instance of the package's shared run
//     (package documentation, "Sub-instances") with k = K =
//     [Tree.Multiplicity](L): join-as-one Alg. 3 (Δ̃ from the noisy
//     residual sensitivity, then PMW) with (ε/(2K), δ/(2K)) on each. One
//     tuple lies in at most K sub-instances (Lemma 4.10 bullet 2, proved
//     on [Tree.Multiplicity]).
//
// With the section below (the list is a function of step 1's output), the
// shared run's guarantee gives (ε, δ)-DP.
//
// # Which sub-instances run
//
// The sub-instances that run are exactly the list of step 1: a function of
// DP outputs and public parameters only. Proof. Alg. 7 draws a noisy degree
// for every t ∈ dom(y), also the values absent from the data, and its
// sub-instances are the buckets i with yⁱ ≠ ∅. With λ ≥ τ′ an absent value
// (degree 0, noisy degree ≤ 2τ′ ≤ 2λ) is in bucket 1 whatever its noise, so
// over an unbounded dom(y) bucket 1 is never empty, and no absent value
// reaches another bucket: the non-empty buckets are {1} ∪ {i(deg̃(t)) :
// deg(t) > 0}, which is what PartitionHierarchical materialises (noising
// the present values only; the absent values' noise enters nothing else).
// That set is a function of the bucket map restricted to buckets ≥ 2 — the
// DP output of step 1 — and the sub-instances at each node are the products
// of those sets along the tree, so the number of sub-instances, their
// configurations, and hence the number of join-as-one and PMW runs, are
// post-processing of step 1 (the audit of TestHierAuditPartition catches a
// partition that drops bucket 1 when no present value lies in it). The
// noisy degrees themselves are integers and are not published; the report
// holds the configurations that ran, their budgets, their DP n̂, Δ̃ and
// rows, K, K_deg, L and λ.
//
// # Measured
//
// On examples/hier (k = 128, 35,653 join rows, universe 270, δ = 10⁻⁶;
// release.TestHierMeasure, 5 seeds) neither method moves PMW off its
// uniform start at ε = 1 or 4 (mean TVD of the workload marginals 0.268,
// the uniform distribution's): the errors differ only through the DP row
// count, and uniformized, whose sub-instances run with ε/(2K) = ε/6, loses
// (median absolute error of a workload count at ε = 4: 10,089 against
// join-as-one's 1,456). At ε = 32 the sub-instances' Δ̃ (161, 215, 2,877)
// fall far below join-as-one's (20,648) and uniformized is the only one to
// learn (mean TVD 0.19 against 0.27).
func Hier(ctx context.Context, src dp.Source, h *hypergraph.Hypergraph, data HierData, cfg HierConfig, ledger *dp.Ledger) (*HierReleaseResult, error) {
	p, err := PrepareHier(h, cfg, ledger)
	if err != nil {
		return nil, err
	}
	return p.Run(ctx, src, data)
}

// params are the partition's parameters.
func (p *HierPlan) params() HierParams {
	return HierParams{Eps: p.deg.Eps, Delta: p.deg.Delta, Levels: p.levels, mut: p.cfg.mut}
}

// configOf names the buckets of a configuration by node attributes.
func (p *HierPlan) configOf(s HierSub) map[string]int {
	out := map[string]int{}
	for v, b := range s.Config {
		if p.tree.Decomposed(v) {
			out[strings.Join(p.tree.Node(v).Attrs, ",")] = b
		}
	}
	return out
}

// Run reads the statistics and runs the mechanism. It may be called once.
func (p *HierPlan) Run(ctx context.Context, src dp.Source, data HierData) (res *HierReleaseResult, err error) {
	if err := p.rel.start(ErrHierPlanUsed); err != nil {
		return nil, err
	}
	defer closeData(ctx, data, &res, &err)
	part, err := PartitionHierarchical(ctx, p.tree, data, p.params(), src)
	if err != nil {
		return nil, err
	}
	res = &HierReleaseResult{Tree: p.tree.String(), Levels: p.levels, Lambda: part.Lambda, Tau: part.Tau, K: p.sub.K, KDeg: p.deg.K}
	if len(part.Subs) == 0 {
		return res, nil // only under a hierMutation: bucket 1 always exists
	}
	rule := fmt.Sprintf("one tuple lies in at most K = %d sub-instances; basic composition over them (Lemma 4.11 by composition)", p.sub.K)
	split := subSplit{"join-as-one (Alg. 3) on every sub-instance",
		rule + fmt.Sprintf("; each sub-instance spends (ε/(2K), δ/(2K)) = (%g, %g) of its share", p.sub.Eps, p.sub.Delta),
		map[string]any{"sub_instances": len(part.Subs), "k": p.sub.K}}
	cfgs := make([]map[string]int, len(part.Subs))
	open := func(ctx context.Context, k int, l *dp.Ledger) (*hypergraph.Hypergraph, joinasone.Stats, error) {
		cfgs[k] = p.configOf(part.Subs[k])
		if p.cfg.OnSub != nil {
			p.cfg.OnSub(k+1, len(part.Subs), fmt.Sprint(cfgs[k]))
		}
		sub, stats, err := data.Sub(ctx, k, part.Subs[k])
		if err != nil {
			return nil, nil, err
		}
		for _, v := range slices.Sorted(maps.Keys(cfgs[k])) {
			l.Publish("bucket of "+v, float64(cfgs[k][v]))
		}
		return sub, stats, nil
	}
	name := func(k int) string { return fmt.Sprintf("sub-instance %v", cfgs[k]) }
	if res.subRuns, err = p.rel.run(ctx, src, len(part.Subs), split, subSource{open: open, name: name}); err != nil {
		return nil, err
	}
	for k, r := range res.subRuns.published(rule) {
		res.Partitions = append(res.Partitions, HierSubRun{Config: cfgs[k], SubRun: r})
	}
	res.Rows, res.NHat, res.DeltaTilde = res.rows, res.nHat, res.deltaSum
	return res, nil
}
