package residual

import "errors"

// Sentinel errors. Every error the package returns wraps one of them, so
// callers can tell the categories apart with [errors.Is], except errors of
// a done context, which wrap ctx.Err() ([context.Canceled] or
// [context.DeadlineExceeded]) instead.
var (
	// ErrInvalidParameter is wrapped by errors about β, k or a table that
	// does not fit its hypergraph.
	ErrInvalidParameter = errors.New("residual: invalid parameter")
	// ErrTooManyRelations is wrapped when a join has more than
	// [MaxRelations] relations: T_E is needed for all 2^m subsets.
	ErrTooManyRelations = errors.New("residual: too many relations")
	// ErrNoPrivate is wrapped when every relation is public: no neighbouring
	// instance exists, and a sensitivity of zero would only be divided by
	// downstream.
	ErrNoPrivate = errors.New("residual: no private relation")
	// ErrCounter is wrapped when the [BoundaryCounter] fails or returns a
	// negative count.
	ErrCounter = errors.New("residual: boundary count failed")
	// ErrSearchTooLarge is wrapped when the exact search over k would need
	// more than [MaxK] values of k (β is too small for the join size m).
	ErrSearchTooLarge = errors.New("residual: search over k too large")
)
