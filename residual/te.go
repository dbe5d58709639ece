package residual

import (
	"context"
	"fmt"
	"math"

	"github.com/synth-dp/synth/hypergraph"
)

// MaxRelations is the largest number of relations m that [TE] and the
// functions built on it accept: T_E is needed for all 2^m subsets E of the
// relations, one engine query per connected subset.
const MaxRelations = 16

// BoundaryCounter evaluates maximum boundary queries (Ghazi et al. Eq. 1).
// The engine's *engine.Engine satisfies it; tests use a brute-force
// in-memory implementation.
type BoundaryCounter interface {
	// MaxBoundaryCount returns T_E(I) for a connected non-empty set e of
	// h's relations: the maximum over values t of the boundary ∂e of the
	// size of the join of the relations in e restricted to ∂e = t; the join
	// size of e when ∂e is empty; 0 when the join of e is empty.
	MaxBoundaryCount(ctx context.Context, h *hypergraph.Hypergraph, e hypergraph.Set) (int64, error)
}

// Table holds the maximum boundary queries T_E(I) of one instance I for
// every proper subset E of the relations [m] of a hypergraph: T_∅ = 1, a
// connected E has the value its [BoundaryCounter] returned, and a
// disconnected E the product over its connected components.
//
// T_[m] (the join size itself) is not part of the table: Def. 3.6 never uses
// it. Values are float64; counts above 2^53 and products of counts lose
// their last bits, which is immaterial for a sensitivity bound.
//
// A Table is immutable after construction and safe for concurrent use.
type Table struct {
	m int
	v []float64 // indexed by hypergraph.Set; v[All] is NaN
}

// Len is the number of relations m the table was built for.
func (t *Table) Len() int { return t.m }

// At returns T_E. It returns NaN for E = [m], which the table does not hold,
// and panics when E contains a relation index ≥ m (programmer error).
func (t *Table) At(e hypergraph.Set) float64 {
	if uint64(e) >= uint64(len(t.v)) {
		panic(fmt.Sprintf("residual: set %b outside a table of %d relations", uint64(e), t.m))
	}
	return t.v[e]
}

// checkRelations validates the size of h.
func checkRelations(h *hypergraph.Hypergraph) error {
	if h == nil {
		return fmt.Errorf("%w: nil hypergraph", ErrInvalidParameter)
	}
	if m := h.Len(); m > MaxRelations {
		return fmt.Errorf("%w: %d relations, at most %d (T_E is needed for all 2^m subsets)", ErrTooManyRelations, m, MaxRelations)
	}
	return nil
}

// TE computes T_E(I) for every proper subset E of h's relations, querying
// counter once for every connected non-empty proper subset (and for nothing
// else) and deriving the rest: T_∅ = 1 and a disconnected E gets the product
// of T over its components (h.Components). Public relations are included
// like any other: they never change between neighbours, but they take part
// in the joins.
//
// TE returns an error wrapping [ErrTooManyRelations] when h has more than
// [MaxRelations] relations and one wrapping [ErrCounter] when counter fails
// or returns a negative count. It checks ctx between queries.
func TE(ctx context.Context, h *hypergraph.Hypergraph, counter BoundaryCounter) (*Table, error) {
	if err := checkRelations(h); err != nil {
		return nil, err
	}
	if counter == nil {
		return nil, fmt.Errorf("%w: nil counter", ErrInvalidParameter)
	}
	m := h.Len()
	all := h.All()
	t := &Table{m: m, v: make([]float64, 1<<uint(m))}
	t.v[0] = 1
	t.v[all] = math.NaN()
	for e := hypergraph.Set(1); e < all; e++ {
		if !h.Connected(e) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("residual: T_E: %w", err)
		}
		n, err := counter.MaxBoundaryCount(ctx, h, e)
		if err != nil {
			return nil, fmt.Errorf("%w: T_{%s}: %w", ErrCounter, setName(h, e), err)
		}
		if n < 0 {
			return nil, fmt.Errorf("%w: T_{%s} = %d < 0", ErrCounter, setName(h, e), n)
		}
		t.v[e] = float64(n)
	}
	fillDisconnected(h, t)
	return t, nil
}

// fillDisconnected sets T_E for every disconnected proper subset E to the
// product over its components, which are connected and already set.
func fillDisconnected(h *hypergraph.Hypergraph, t *Table) {
	all := h.All()
	for e := hypergraph.Set(1); e < all; e++ {
		comps := h.Components(e)
		if len(comps) < 2 {
			continue
		}
		p := 1.0
		for _, c := range comps {
			p *= t.v[c]
		}
		t.v[e] = p
	}
}

// NewTable builds a table from given values of T_E for the connected
// non-empty proper subsets E of h's relations, deriving T_∅ = 1 and the
// disconnected subsets as [TE] does. It is meant for tests, benchmarks and
// values computed elsewhere. Every connected non-empty proper subset needs a
// finite value ≥ 0; a value for any other set is an error, since it would
// be ignored.
func NewTable(h *hypergraph.Hypergraph, connected map[hypergraph.Set]float64) (*Table, error) {
	if err := checkRelations(h); err != nil {
		return nil, err
	}
	m := h.Len()
	all := h.All()
	t := &Table{m: m, v: make([]float64, 1<<uint(m))}
	t.v[0] = 1
	t.v[all] = math.NaN()
	for e, x := range connected {
		if e == 0 || e >= all || e&^all != 0 || !h.Connected(e) {
			return nil, fmt.Errorf("%w: T_E given for set %b, which is not a connected non-empty proper subset", ErrInvalidParameter, uint64(e))
		}
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return nil, fmt.Errorf("%w: T_{%s} = %v, want a finite number ≥ 0", ErrInvalidParameter, setName(h, e), x)
		}
	}
	for e := hypergraph.Set(1); e < all; e++ {
		if !h.Connected(e) {
			continue
		}
		x, ok := connected[e]
		if !ok {
			return nil, fmt.Errorf("%w: T_{%s} missing", ErrInvalidParameter, setName(h, e))
		}
		t.v[e] = x
	}
	fillDisconnected(h, t)
	return t, nil
}
