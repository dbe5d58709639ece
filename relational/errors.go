package relational

import (
	"errors"
	"fmt"
)

// ErrUnsupported is wrapped by every error about a query outside the query
// model (see the package documentation): the message names the construct.
var ErrUnsupported = errors.New("relational: unsupported query")

// ErrInvalid is wrapped by errors about a query that does not fit the spec
// (unknown table or column, a column compared with a value of another
// type, a GROUP BY column without an enumerable public domain) and about
// invalid privacy or mechanism parameters.
var ErrInvalid = errors.New("relational: invalid query or parameter")

// ErrNeedsCLP is wrapped when R2T needs an LP solver (three or more units
// in one query) and the binary was built without the clp build tag.
var ErrNeedsCLP = errors.New("relational: R2T with three or more units needs the CLP solver; rebuild with -tags clp (apt-get install coinor-libclp-dev)")

// ErrPureRS is returned for the residual-sensitivity mechanism with δ = 0:
// its pure ε-DP variant needs a continuous (Cauchy) sampler, whose rounded
// floats are not DP at large noise scales (see [ReleaseRS]).
var ErrPureRS = errors.New("relational: the residual-sensitivity mechanism needs δ > 0 (its pure ε-DP variant would publish rounded floats of a continuous sampler, which are not DP at large scales); give δ > 0, or --unit for R2T, which is pure ε-DP")

// QueryError is an error about one query: the query's text (or its
// position in a file) and the cause, which wraps [ErrUnsupported] or
// [ErrInvalid].
type QueryError struct {
	// Query is the query's text.
	Query string
	// Err is the cause.
	Err error
}

func (e *QueryError) Error() string { return fmt.Sprintf("query %q: %v", e.Query, e.Err) }

// Unwrap returns the cause.
func (e *QueryError) Unwrap() error { return e.Err }

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, fmt.Sprintf(format, args...))
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
