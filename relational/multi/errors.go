package multi

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by errors about parameters or queries that do not
// fit the mechanism.
var ErrInvalid = errors.New("multi: invalid query or parameter")

// ErrNeedsIpopt is returned for queries whose join results reference two or
// more units (self-joins) in a build without the ipopt tag.
var ErrNeedsIpopt = errors.New("multi: queries whose join results reference two or more units (self-joins) need the QCQP of Dong–Sun–Yi Alg. 2, solved by Ipopt; rebuild with -tags ipopt (apt-get install coinor-libipopt-dev)")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
