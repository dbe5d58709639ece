package release

import (
	"testing"

	"github.com/synth-dp/synth/internal/stattest"
)

// TestMain runs the package's tests with the collector settings of
// [stattest.Main] (GOGC = 400, a 1 GiB soft limit, unless GOGC or
// GOMEMLIMIT is set): its audits and oracle tests allocate short-lived
// scratch in every one of thousands of runs.
func TestMain(m *testing.M) { stattest.Main(m) }
