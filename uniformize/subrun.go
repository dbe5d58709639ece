package uniformize

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/joinasone"
	"github.com/synth-dp/synth/spec"
)

// subRelease is the part of Alg. 4 of Ghazi et al. that the two
// uniformized releases share: once the partition (Alg. 5, or Alg. 6 + 7)
// has chosen the sub-instances, join-as-one runs on every one of them with
// a budget divided by k, the bound on the sub-instances one tuple lies in,
// and the union of their rows is the release. Its guarantee, proved once
// for both releases, is the package documentation's "Sub-instances"
// section.
type subRelease struct {
	// h is the join and cfg the release's configuration (Epsilon and
	// Delta: the whole mechanism's budget).
	h   *hypergraph.Hypergraph
	cfg joinasone.Config
	// share is the sub-instances' share of the budget and each the budget
	// of every sub-instance: share divided by k (public).
	share, each dp.Budget
	k           int64
	// ledger is where share is reserved (charged at prepare time).
	ledger *dp.Ledger
	ran    bool
}

// newSubRelease checks, on a scratch ledger and before any data is read,
// that a sub-instance's join-as-one run can start with budget share/k.
func newSubRelease(h *hypergraph.Hypergraph, cfg joinasone.Config, share dp.Budget, k int64) (*subRelease, error) {
	s := &subRelease{h: h, cfg: cfg, share: share, k: k,
		each: dp.Budget{Epsilon: share.Epsilon / float64(k), Delta: share.Delta / float64(k)}}
	scratch, err := dp.NewLedger(s.each)
	if err != nil {
		return nil, fmt.Errorf("uniformize: %w", err)
	}
	if _, err := joinasone.Prepare(h, s.config(h), scratch); err != nil {
		return nil, err
	}
	return s, nil
}

// config is the join-as-one configuration of a sub-instance whose
// hypergraph is sub (relation j of sub is relation j of s.h, renamed): the
// release's, with the sub-instance's budget, the columns on sub's
// relations and NoRowsFloor set (the rows are summed over the
// sub-instances, so none may be floored on its own).
func (s *subRelease) config(sub *hypergraph.Hypergraph) joinasone.Config {
	c := s.cfg
	c.Epsilon, c.Delta = s.each.Epsilon, s.each.Delta
	c.NoRowsFloor = true
	c.Columns = make([]spec.ColumnRef, len(s.cfg.Columns))
	for j, ref := range s.cfg.Columns {
		c.Columns[j] = ref
		if k := s.h.Index(ref.Table); k >= 0 {
			c.Columns[j].Table = sub.Relation(k).Name
		}
	}
	return c
}

// subSplit is how a release names, in the ledger, the split of its share
// among the sub-instances that run.
type subSplit struct {
	mechanism, rule string
	details         map[string]any
}

// subSource is sub-instance k of the partition as [subRelease.run] reads
// it: open returns its hypergraph and statistics after publishing its
// description (public parameters and DP outputs only) to its ledger l;
// name labels it in errors; run, when set, replaces the join-as-one run
// (the two-table publicBound experiment).
type subSource struct {
	open func(ctx context.Context, k int, l *dp.Ledger) (*hypergraph.Hypergraph, joinasone.Stats, error)
	name func(k int) string
	run  func(ctx context.Context, src dp.Source, k int, sub *hypergraph.Hypergraph, stats joinasone.Stats, l *dp.Ledger) (*joinasone.Result, error)
}

// SubRun is what one sub-instance's run published: DP values and public
// parameters only.
type SubRun struct {
	// NHat, DeltaTilde and Rows are the sub-instance's DP join size,
	// sensitivity bound and row count (joinasone.Result).
	NHat       float64 `json:"n_hat"`
	DeltaTilde float64 `json:"delta_tilde"`
	Rows       int64   `json:"rows"`
	// Epsilon and Delta are the sub-instance's budget; Rule how it composes.
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	Rule    string  `json:"rule"`
}

// published describes every run, in order, with the composition rule.
func (r *subRuns) published(rule string) []SubRun {
	out := make([]SubRun, len(r.runs))
	for k, x := range r.runs {
		out[k] = SubRun{NHat: x.PMW.NHat, DeltaTilde: x.DeltaTilde, Rows: x.PMW.Rows,
			Epsilon: r.each.Epsilon, Delta: r.each.Delta, Rule: rule}
	}
	return out
}

// subRuns is what the sub-instances' runs produced: DP values only.
type subRuns struct {
	runs []*joinasone.Result
	// counts is the union of the runs' synthetic rows.
	counts mergedCounts
	// rows and nHat sum the runs' row counts and n̂; deltaSum and deltaMax
	// are the sum and the largest of their Δ̃.
	rows               int64
	nHat               float64
	deltaSum, deltaMax float64
	// each is every run's budget.
	each dp.Budget
}

// run splits the sub-instances' share among the n sub-instances that the
// partition chose — SplitOverlap with k: basic composition over the at
// most k a tuple lies in, parallel composition when k = 1 — and runs them
// in order, each with its own ledger; each run's counts are merged as
// soon as it finishes and its weights dropped (mergedCounts). n ≥ 1.
func (s *subRelease) run(ctx context.Context, src dp.Source, n int, split subSplit, in subSource) (*subRuns, error) {
	ledgers, err := s.ledger.SplitOverlap(split.mechanism, s.share, n, s.k, split.rule, split.details)
	if err != nil {
		return nil, err
	}
	out := &subRuns{each: s.each}
	for k := range n {
		sub, stats, err := in.open(ctx, k, ledgers[k])
		if err != nil {
			return nil, err
		}
		var r *joinasone.Result
		if in.run != nil {
			r, err = in.run(ctx, src, k, sub, stats, ledgers[k])
		} else {
			var plan *joinasone.Plan
			if plan, err = joinasone.Prepare(sub, s.config(sub), ledgers[k]); err != nil {
				return nil, err
			}
			r, err = plan.Run(ctx, src, stats)
		}
		if err != nil {
			return nil, fmt.Errorf("uniformize: %s: %w", in.name(k), err)
		}
		if err := out.counts.add(src, r); err != nil {
			return nil, err
		}
		out.runs = append(out.runs, r)
		out.rows += r.PMW.Rows
		out.nHat += r.PMW.NHat
		out.deltaSum += r.DeltaTilde
		out.deltaMax = math.Max(out.deltaMax, r.DeltaTilde)
	}
	return out, nil
}

// Counts emits the union of the sub-instances' synthetic rows: for every
// cell of the universe the sum of their integer counts, in increasing cell
// order, cells with a zero sum left out (nothing when no sub-instance ran).
// Each run's counts were drawn by Run as soon as the run finished
// (pmw.Result.Counts with the run's randomness, post-processing; see
// mergedCounts), so src is not used: Counts is deterministic and may be
// called more than once.
func (r *subRuns) Counts(src dp.Source, emit func(cell, count int64) error) error {
	if r == nil {
		return nil
	}
	return r.counts.emit(emit)
}

// Runs returns the join-as-one result of every sub-instance that ran, in
// the order of Partitions. Their PMW weights are dropped once counted
// (pmw.Result.Weights is nil).
func (r *subRuns) Runs() []*joinasone.Result {
	if r == nil {
		return nil
	}
	return slices.Clone(r.runs)
}

// start marks the release as run, or returns used if it already ran: its
// budget is spent.
func (s *subRelease) start(used error) error {
	if s.ran {
		return used
	}
	s.ran = true
	return nil
}

// closeData closes the partition's data after a run (deferred); an error
// in closing fails a run that had none.
func closeData[R any](ctx context.Context, data interface{ Close(context.Context) error }, res *R, err *error) {
	if cerr := data.Close(ctx); cerr != nil && *err == nil {
		var zero R
		*res, *err = zero, cerr
	}
}
