package workload

import "errors"

// ErrUnsupported is wrapped by the error for a workload query this version
// cannot keep accurate (a sum of a column that is neither released nor a
// release.measures column, or whose domain gives no scale).
var ErrUnsupported = errors.New("workload: not supported")
