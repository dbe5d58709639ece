package cli

import (
	"fmt"

	"github.com/synth-dp/synth/release"
)

// checkRounds validates --rounds or --max-rounds (flag) against
// [release.RoundsLimit]; 0 means the default.
func checkRounds(flag string, n int, zero string) error {
	if n < 0 || n > release.RoundsLimit {
		return usageErrorf("--%s %d: want 0 … %d (0: %s); each round spends a share of ε, so more rounds mean noisier measurements, and the work grows with them",
			flag, n, release.RoundsLimit, zero)
	}
	return nil
}

// checkMemoryCap validates --memory-cap (MiB) against public limits: at
// least [release.MinMemoryCap] (the factored model's junction tree), at
// most the machine's physical memory when it is known.
func checkMemoryCap(mib int64) error {
	lo := int64(release.MinMemoryCap >> 20)
	hi := int64(1 << 40)
	if ram := physicalMemory(); ram > 0 {
		hi = ram >> 20
	}
	if mib < lo || mib > hi {
		return usageErrorf("--memory-cap %d: want a number of MiB in %d … %d (%s)", mib, lo, hi,
			fmt.Sprintf("at least the factored model's %d MiB junction tree, at most this machine's memory", lo))
	}
	return nil
}
