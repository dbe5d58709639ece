package multi

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/synth-dp/synth/dp"
)

// BenchmarkRun is Alg. 1 (with jump start) on prebuilt random contribution
// vectors: n units with ~d/3 non-zero coordinates each.
func BenchmarkRun(b *testing.B) {
	for _, size := range []struct{ n, d int }{{1_500, 25}, {15_000, 100}, {150_000, 100}} {
		entries := randomEntries(rand.New(rand.NewPCG(1, 2)), size.n, size.d)
		b.Run(fmt.Sprintf("n=%d,d=%d", size.n, size.d), func(b *testing.B) {
			src := dp.NewSeededSource(1)
			for i := 0; i < b.N; i++ {
				if _, err := Run(context.Background(), src, entries, size.d, Config{Epsilon: 4, Delta: 1e-7, GS: 1 << 30, JumpStart: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
