package stattest

import (
	"os"
	"runtime/debug"
	"testing"
)

// AuditGCPercent and AuditMemoryLimit are the collector's settings of
// [Main]: GOGC = 400 with a soft limit of 1 GiB.
const (
	AuditGCPercent   = 400
	AuditMemoryLimit = 1 << 30
)

// Main runs a package's tests (call it from TestMain) with the collector
// at GOGC = [AuditGCPercent] unless GOGC is set, and, unless GOMEMLIMIT
// is set, a soft memory limit of [AuditMemoryLimit] that makes it collect
// sooner when garbage would grow the heap past it. The audits and oracle
// tests run a mechanism thousands of times on tiny inputs, each run
// allocating its short-lived scratch; at the default GOGC = 100 the
// collector took a third of the CPU of uniformize's TestAuditHierWhole
// (8.4 s of user time against 5.8 s at 400). pmw's TestMain does the same
// with a 512 MiB limit. Nothing a test checks depends on the collector.
//
// Each of env is set, for the tests and the processes they start, unless
// the environment sets it already. The packages whose tests open many
// small embedded DuckDB engines pass {engine.ThreadsEnv, "1"}: one DuckDB
// thread gives the same results (they do not depend on the thread count)
// without waking DuckDB's idle worker for every query of a few rows, which
// cost about a tenth of their CPU (release: 52.3 s of user+sys against
// 46.8 s on one thread; internal/cli, which does it too, a quarter).
func Main(m *testing.M, env ...Env) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(AuditGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(AuditMemoryLimit)
	}
	for _, e := range env {
		if _, ok := os.LookupEnv(e.Name); !ok {
			os.Setenv(e.Name, e.Value)
		}
	}
	os.Exit(m.Run())
}

// Env is an environment variable [Main] sets unless it is set already.
type Env struct{ Name, Value string }
