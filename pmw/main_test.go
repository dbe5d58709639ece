package pmw

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestMain runs the package's tests with the collector at GOGC = 400
// unless GOGC is set: the audits run the mechanism hundreds of thousands
// of times on tiny inputs, each run allocating its short-lived scratch,
// and at the default 100 the collector took about a fifth of their CPU.
// Unless GOMEMLIMIT is set, a soft limit of 2 GiB makes it collect sooner
// if the heap (the Adult tests' is the largest) ever grows that far.
func TestMain(m *testing.M) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(2 << 30)
	}
	os.Exit(m.Run())
}
