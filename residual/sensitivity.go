package residual

import (
	"context"

	"github.com/synth-dp/synth/hypergraph"
)

// Sensitivity is the residual sensitivity of the join count of one instance
// and the statistics it was computed from. Every field is a true, non-
// private value of the data: it may feed a mechanism (Alg. 3 perturbs
// ln RS) or an internal report, but must never be published as is
// (DESIGN.md §3, invariant 5).
type Sensitivity struct {
	// Beta is the smoothing parameter β (Alg. 3 uses β = ε/ln(1/δ)).
	Beta float64 `json:"beta"`
	// RS is RS^β = max_{k≥0} e^{−βk}·LŜ^k (Def. 3.6).
	RS float64 `json:"rs"`
	// LocalSensitivity is LŜ^0 = max over private i of T_{[m]∖{i}}, an
	// upper bound on the local sensitivity of the join count.
	LocalSensitivity float64 `json:"local_sensitivity"`
	// ArgmaxK is the smallest k with e^{−βk}·LŜ^k = RS.
	ArgmaxK int `json:"k"`
	// TE maps every non-empty proper subset E of the relations to T_E. Keys
	// are the names of the relations in E, sorted and joined by commas,
	// e.g. "lineitem,orders".
	TE map[string]float64 `json:"t_e"`
}

// Compute evaluates T_E for every proper subset of h's relations through
// counter ([TE]) and returns the β-residual sensitivity of the join count
// ([RS]) with its ingredients. The neighbour relation is DESIGN.md §3's:
// add or remove one tuple of one private relation; public relations are
// part of every join but never change.
//
// ctx is passed to every query and to the search ([RSContext]): once it is
// done, Compute stops within a few milliseconds of search work (or when the
// current query returns) and returns an error wrapping ctx.Err()
// ([context.Canceled] or [context.DeadlineExceeded]).
//
// Other errors wrap [ErrInvalidParameter] (β not a finite number > 0, nil
// arguments), [ErrTooManyRelations], [ErrNoPrivate], [ErrSearchTooLarge] or
// [ErrCounter]. β is checked before any query runs.
func Compute(ctx context.Context, h *hypergraph.Hypergraph, counter BoundaryCounter, beta float64) (*Sensitivity, error) {
	if err := checkBeta(beta); err != nil {
		return nil, err
	}
	if err := checkRelations(h); err != nil {
		return nil, err
	}
	if _, err := SearchLimit(h.Private().Len(), beta); err != nil {
		return nil, err // no private relation, or β too small
	}
	te, err := TE(ctx, h, counter)
	if err != nil {
		return nil, err
	}
	rs, k, err := RSContext(ctx, te, h, beta)
	if err != nil {
		return nil, err
	}
	ls, err := LocalSensitivityAtContext(ctx, te, h, 0)
	if err != nil {
		return nil, err
	}
	out := &Sensitivity{Beta: beta, RS: rs, LocalSensitivity: ls, ArgmaxK: k, TE: te.Named(h)}
	return out, nil
}

// Named returns the table as a map from relation names (sorted, joined by
// commas) to T_E, for every non-empty proper subset E of h's relations. h
// must be the hypergraph the table was built for; Named panics when its
// size differs (programmer error).
func (t *Table) Named(h *hypergraph.Hypergraph) map[string]float64 {
	if h.Len() != t.m {
		panic("residual: Table.Named with a hypergraph of another size")
	}
	out := make(map[string]float64, len(t.v))
	for e := hypergraph.Set(1); e < h.All(); e++ {
		out[setName(h, e)] = t.v[e]
	}
	return out
}
