//go:build !ipopt

package ipopt

import "context"

// Available reports whether the package was built with Ipopt.
const Available = false

// Solve returns [ErrUnavailable]: this build has no Ipopt.
func Solve(context.Context, *QCQP, []float64) (Solution, error) { return Solution{}, ErrUnavailable }
