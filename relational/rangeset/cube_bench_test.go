//go:build unix

package rangeset

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/internal/tpchgen"
	"github.com/synth-dp/synth/spec"
)

// rangesBenchDirEnv names a folder holding lineitem.parquet written by
// cmd/tpchgen for BenchmarkRangeSet; without it the benchmark generates
// scale factor 0.1 in a temporary folder.
const rangesBenchDirEnv = "SYNTH_BENCH_RANGES_DIR"

// rangesSpec declares five ordered lineitem columns (read in place from
// the Parquet file %s).
const rangesSpec = `privacy: {epsilon: 1.0, delta: 1e-6}
tables:
  - name: lineitem
    source: %s
    format: parquet
    columns:
      l_quantity: {type: integer, min: 1, max: 50}
      l_extendedprice: {type: numeric, min: 0, max: 120000, bins: 10}
      l_discount: {type: numeric, min: 0, max: 0.1, bins: 10}
      l_tax: {type: numeric, min: 0, max: 0.08, bins: 8}
      l_shipdate: {type: date, min: 1992-01-01, max: 1998-12-31}
release:
  columns: [l_quantity]
`

// rangeTexts draws n 5-D range counts on lineitem. coarse: ends on a
// dashboard's grid (quantity by 10, price by 10,000, discount and tax by
// the cent, ship date by the year: a cell grid of about 70,000 cells);
// otherwise ends anywhere (price to the cent, ship date to the day: about
// as many occupied cells as rows).
func rangeTexts(n int, coarse bool, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 1))
	pair := func(draw func() float64) (float64, float64) {
		a, b := draw(), draw()
		return min(a, b), max(a, b)
	}
	day0 := time.Date(1992, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]string, n)
	for i := range out {
		var q1, q2, p1, p2 float64
		var s1, s2 time.Time
		if coarse {
			q1, q2 = pair(func() float64 { return float64(1 + 10*r.IntN(5)) })
			q2 += 9
			p1, p2 = pair(func() float64 { return float64(10000 * r.IntN(11)) })
			y1, y2 := pair(func() float64 { return float64(r.IntN(7)) })
			s1, s2 = day0.AddDate(int(y1), 0, 0), day0.AddDate(int(y2)+1, 0, -1)
		} else {
			q1, q2 = pair(func() float64 { return float64(1 + r.IntN(50)) })
			p1, p2 = pair(func() float64 { return float64(r.IntN(10_500_000)) / 100 })
			d1, d2 := pair(func() float64 { return float64(r.IntN(2557)) })
			s1, s2 = day0.AddDate(0, 0, int(d1)), day0.AddDate(0, 0, int(d2))
		}
		d1, d2 := pair(func() float64 { return float64(r.IntN(11)) })
		t1, t2 := pair(func() float64 { return float64(r.IntN(9)) })
		out[i] = fmt.Sprintf(`SELECT COUNT(*) FROM lineitem WHERE l_quantity BETWEEN %g AND %g AND l_extendedprice >= %.2f AND l_extendedprice < %.2f`+
			` AND l_discount BETWEEN %.2f AND %.2f AND l_tax BETWEEN %.2f AND %.2f AND l_shipdate BETWEEN DATE '%s' AND DATE '%s'`,
			q1, q2, p1, p2, d1/100, d2/100, t1/100, t2/100, s1.Format(time.DateOnly), s2.Format(time.DateOnly))
	}
	return out
}

// BenchmarkRangeSet times the true counts of 2,000 5-D range counts on
// TPC-H lineitem read in place from Parquet (one scan and the cells
// matched by bitsets in Go, [cubeCounts]) against plain DuckDB queries over the same table:
// the count of one of the ranges (plain; the scan skips what the filter
// excludes) and one pass reading the five columns (pass: the maximum of
// each). Each iteration runs them all,
// alternating whether the set goes first; the metrics are the fastest of
// each and the ratios, with the ratio of the process's CPU times to the
// plain count's (the machine is shared: minima are the least noisy):
//
//	SYNTH_BENCH_RANGES_DIR=/tmp/sf1 go test ./relational/rangeset/ -run '^$' -bench RangeSet -benchtime 3x
func BenchmarkRangeSet(b *testing.B) {
	ctx := context.Background()
	dir := os.Getenv(rangesBenchDirEnv)
	if dir == "" {
		dir = b.TempDir()
		if _, err := tpchgen.Generate(ctx, tpchgen.Config{ScaleFactor: 0.1, Seed: 1, Dir: dir, Format: "parquet"}); err != nil {
			b.Fatal(err)
		}
	}
	s, err := spec.Parse(fmt.Appendf(nil, rangesSpec, filepath.Join(dir, "lineitem.parquet")), "ranges.yaml")
	if err != nil {
		b.Fatal(err)
	}
	e, err := engine.Open(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	e.ReadInPlace(true)
	if err := e.Load(ctx, s); err != nil {
		b.Fatal(err)
	}
	for _, coarse := range []bool{true, false} {
		b.Run(map[bool]string{true: "coarse", false: "fine"}[coarse], func(b *testing.B) {
			texts := rangeTexts(2000, coarse, 7)
			set, err := Parse(ctx, e, s, texts)
			if err != nil {
				b.Fatal(err)
			}
			plain := "SELECT COUNT(*) FROM lineitem WHERE " + predSQL(set.Queries[0].Where["lineitem"])
			pass := "SELECT MAX(l_quantity), MAX(l_extendedprice), MAX(l_discount), MAX(l_tax), MAX(l_shipdate) FROM lineitem"
			var bestSet, bestPlain, bestPass, cpuSet, cpuPlain time.Duration
			keep := func(best *time.Duration, d time.Duration) {
				if *best == 0 || d < *best {
					*best = d
				}
			}
			runSet := func() {
				start, cpu := time.Now(), processCPU()
				if _, err := cubeCounts(ctx, e, set); err != nil {
					b.Fatal(err)
				}
				keep(&bestSet, time.Since(start))
				keep(&cpuSet, processCPU()-cpu)
			}
			runPlain := func() {
				start, cpu := time.Now(), processCPU()
				var n int64
				if err := e.Aggregate(ctx, plain, nil, func(r *sql.Rows) error { return r.Scan(&n) }); err != nil {
					b.Fatal(err)
				}
				keep(&bestPlain, time.Since(start))
				keep(&cpuPlain, processCPU()-cpu)
				start = time.Now()
				if err := e.Aggregate(ctx, pass, nil, func(*sql.Rows) error { return nil }); err != nil {
					b.Fatal(err)
				}
				keep(&bestPass, time.Since(start))
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					runSet()
					runPlain()
				} else {
					runPlain()
					runSet()
				}
			}
			b.StopTimer()
			b.ReportMetric(bestSet.Seconds(), "set-s")
			b.ReportMetric(bestPlain.Seconds(), "plain-s")
			b.ReportMetric(bestSet.Seconds()/bestPlain.Seconds(), "set/plain")
			b.ReportMetric(bestPass.Seconds(), "pass-s")
			b.ReportMetric(bestSet.Seconds()/bestPass.Seconds(), "set/pass")
			if cpuPlain > 0 {
				b.ReportMetric(cpuSet.Seconds()/cpuPlain.Seconds(), "cpu-set/plain")
			}
		})
	}
}

// processCPU is the CPU time of the whole process (DuckDB's threads
// included): on a busy machine a steadier measure of the work than wall
// time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
