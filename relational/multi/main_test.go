package multi

import (
	"testing"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/internal/stattest"
)

// TestMain runs the package's tests with the collector settings of
// [stattest.Main] (GOGC = 400, a 1 GiB soft limit, unless GOGC or
// GOMEMLIMIT is set): its audits and oracle tests allocate short-lived
// scratch in every one of thousands of runs. Its embedded DuckDB engines
// run on one thread (engine.ThreadsEnv = 1 unless set; see stattest.Main).
func TestMain(m *testing.M) { stattest.Main(m, stattest.Env{Name: engine.ThreadsEnv, Value: "1"}) }
