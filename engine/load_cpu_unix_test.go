//go:build unix

package engine

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the process has used, for
// benchmarks on a shared machine, where it is less noisy than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
