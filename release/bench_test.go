package release

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/spec"
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

// BenchmarkTablesSF1 times, on the same TPC-H SF 1 Parquet files, the
// flat privacy-unit release of examples/tpch/synth.yaml (release.output
// join, the file alone) and its tables release (release.output tables: the
// clips, one level per table, the drawn tables, their join file and the
// three table files), seeded. Issue 37 wants the tables release within 2×
// the flat one; compare the two sub-benchmarks of one run (interleaved
// with -count). The files come from SYNTH_BENCH_TPCH_SF1 (default
// /tmp/sf1), made by
//
//	go run ./cmd/tpchgen -sf 1 -format parquet -out /tmp/sf1
//
// and the benchmark is skipped without them. Peak memory is a process's:
// measure it on the CLI with /usr/bin/time -v (docs/relational.md).
func BenchmarkTablesSF1(b *testing.B) {
	dir := cmp.Or(os.Getenv("SYNTH_BENCH_TPCH_SF1"), "/tmp/sf1")
	for _, t := range []string{"customer", "orders", "lineitem"} {
		if _, err := os.Stat(filepath.Join(dir, t+".parquet")); err != nil {
			b.Skipf("no TPC-H SF 1 Parquet in %s (go run ./cmd/tpchgen -sf 1 -format parquet -out %s): %v", dir, dir, err)
		}
	}
	for _, output := range []spec.OutputKind{spec.OutputJoin, spec.OutputTables} {
		b.Run(string(output), func(b *testing.B) {
			s := releasetest.LoadSpec(b, filepath.Join("..", "examples", "tpch", "synth.yaml"))
			for i := range s.Tables {
				s.Tables[i].Source = filepath.Join(dir, s.Tables[i].Name+".parquet")
				s.Tables[i].Format = spec.FormatOf(s.Tables[i].Source)
			}
			s.Release.Output = output
			for b.Loop() {
				if _, err := Run(context.Background(), Options{Spec: s, OutDir: b.TempDir(), Engine: "duckdb", Source: dp.NewSeededSource(1)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
