package stattest

import (
	"flag"
	"testing"
	"time"
)

var seedFlag = flag.Uint64("seed", 0, "seed of the random test instances (0: from the clock)")

// Seed returns the seed of a randomized test: the -seed flag of the test
// binary, or the clock when it is 0. It logs the seed, so that a failure
// reproduces with -seed.
func Seed(t testing.TB) uint64 {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -seed %d)", seed, seed)
	return seed
}
