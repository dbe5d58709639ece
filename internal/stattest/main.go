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
func Main(m *testing.M) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(AuditGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(AuditMemoryLimit)
	}
	os.Exit(m.Run())
}
