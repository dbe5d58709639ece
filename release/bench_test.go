package release

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/releasetest"
)

// BenchmarkReleaseAdult times a whole release of the Adult example (32,561
// rows, 1.6M-cell universe, ε = 1): load and check, statistics, PMW (mwem),
// decode and write Parquet. Target: under 2 s.
func BenchmarkReleaseAdult(b *testing.B) {
	s := releasetest.LoadSpec(b, filepath.Join("..", "examples", "adult", "synth.yaml"))
	for b.Loop() {
		if _, err := Run(context.Background(), Options{Spec: s, OutDir: b.TempDir(), Engine: "duckdb", Source: dp.NewSeededSource(1)}); err != nil {
			b.Fatal(err)
		}
	}
}
