package uniformize

import (
	"context"
	"fmt"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/internal/hiergen"
	"github.com/synth-dp/synth/spec"
)

// BenchmarkHierPartitionEngine times the engine-backed partition (degree
// GROUP BY, bucket table, sub-instance views) on the hiergen instance at
// several sizes.
func BenchmarkHierPartitionEngine(b *testing.B) {
	for _, k := range []int{32, 128} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			ctx := context.Background()
			path, err := hiergen.Write(b.TempDir(), k, 1, 1e-6)
			if err != nil {
				b.Fatal(err)
			}
			s, err := spec.Load(path)
			if err != nil {
				b.Fatal(err)
			}
			eng, err := engine.Open(ctx, "duckdb")
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
			if err := eng.Load(ctx, s); err != nil {
				b.Fatal(err)
			}
			h, err := s.Hypergraph()
			if err != nil {
				b.Fatal(err)
			}
			tr, err := NewTree(h)
			if err != nil {
				b.Fatal(err)
			}
			p := HierParams{Eps: 2, Delta: 1e-6, Levels: DefaultHierLevels}
			b.ResetTimer()
			for i := range b.N {
				data := HierEngine(eng, h)
				res, err := PartitionHierarchical(ctx, tr, data, p, dp.NewSeededSource(uint64(i)))
				if err != nil {
					b.Fatal(err)
				}
				for j, sub := range res.Subs {
					if _, _, err := data.Sub(ctx, j, sub); err != nil {
						b.Fatal(err)
					}
				}
				if err := data.Close(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
