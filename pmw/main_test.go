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
// Unless GOMEMLIMIT is set, a soft limit of 512 MiB makes it collect
// sooner when garbage would grow the heap past that (after a test with a
// large live heap, GOGC = 400 alone let the binary reach 1 GiB against
// 350 MiB at the default); the largest live heap of a test is about 200
// MiB.
func TestMain(m *testing.M) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(512 << 20)
	}
	os.Exit(m.Run())
}
