package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synth-dp/synth/internal/tpchgen"
	"github.com/synth-dp/synth/spec"
)

// loadBenchDirEnv names a folder of TPC-H-shaped files written by
// cmd/tpchgen (customer, orders and lineitem, as .csv and/or .parquet) for
// BenchmarkLoadSF; without it the benchmark generates scale factor 0.1 in
// both formats in a temporary folder.
const loadBenchDirEnv = "SYNTH_BENCH_LOAD_DIR"

// BenchmarkLoadSF times [Engine.Load] of the TPC-H example
// (examples/tpch/synth.yaml: keys, categoricals, an integer and a date,
// every value checked) against a raw typed load of the same columns in the
// same engine: per table, CREATE TABLE AS SELECT of the declared columns
// from read_csv with the columns typed by DuckDB's own reader (BIGINT keys
// and integers, DOUBLE, DATE, VARCHAR categories), or from read_parquet
// as the file types them, and nothing checked. Each iteration runs both,
// alternating which goes first; the metrics are the fastest of each over
// the iterations (the machine is shared: minima are the least noisy) and
// their ratio, with the ratio of the process's CPU times (minima too):
//
//	SYNTH_BENCH_LOAD_DIR=/tmp/sf1 go test ./engine/ -run '^$' -bench LoadSF -benchtime 3x
//
// It runs on the default engine (a temporary database file) and on an
// in-memory one, for CSV and Parquet sources; a format whose files the
// folder lacks is skipped.
func BenchmarkLoadSF(b *testing.B) {
	dir := os.Getenv(loadBenchDirEnv)
	if dir == "" {
		dir = b.TempDir()
		for _, f := range []string{"csv", "parquet"} {
			if _, err := tpchgen.Generate(context.Background(), tpchgen.Config{ScaleFactor: 0.1, Seed: 1, Dir: dir, Format: f}); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, eng := range []struct{ name, dsn string }{{"file", ""}, {"memory", "duckdb::memory:"}} {
		for _, f := range []string{"csv", "parquet"} {
			b.Run(eng.name+"/"+f, func(b *testing.B) {
				if _, err := os.Stat(filepath.Join(dir, "lineitem."+f)); err != nil {
					b.Skipf("no %s files in %s", f, dir)
				}
				benchmarkLoad(b, eng.dsn, dir, f)
			})
		}
	}
}

func benchmarkLoad(b *testing.B, dsn, dir, format string) {
	ctx := context.Background()
	s, err := spec.Load("../examples/tpch/synth.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for i := range s.Tables {
		s.Tables[i].Source = filepath.Join(dir, s.Tables[i].Name+"."+format)
		s.Tables[i].Format = format
	}
	e, err := Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	raw := make([]string, len(s.Tables))
	for i := range s.Tables {
		if raw[i], err = rawTypedLoad(&s.Tables[i]); err != nil {
			b.Fatal(err)
		}
	}
	var bestLoad, bestRaw, cpuLoad, cpuRaw time.Duration
	keep := func(best *time.Duration, d time.Duration) {
		if *best == 0 || d < *best {
			*best = d
		}
	}
	runLoad := func() {
		start, cpu := time.Now(), processCPU()
		if err := e.Load(ctx, s); err != nil {
			b.Fatal(err)
		}
		keep(&bestLoad, time.Since(start))
		keep(&cpuLoad, processCPU()-cpu)
	}
	runRaw := func() {
		start, cpu := time.Now(), processCPU()
		for _, q := range raw {
			if _, err := e.db.ExecContext(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
		keep(&bestRaw, time.Since(start))
		keep(&cpuRaw, processCPU()-cpu)
		for i := range s.Tables {
			if _, err := e.db.ExecContext(ctx, "DROP TABLE "+e.d.ident("raw_"+s.Tables[i].Name)); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			runLoad()
			runRaw()
		} else {
			runRaw()
			runLoad()
		}
	}
	b.StopTimer()
	b.ReportMetric(bestLoad.Seconds(), "load-s")
	b.ReportMetric(bestRaw.Seconds(), "raw-s")
	b.ReportMetric(bestLoad.Seconds()/bestRaw.Seconds(), "load/raw")
	if cpuRaw > 0 {
		// CPU time of the whole process (DuckDB's threads included): on a
		// busy machine a steadier measure of the work than wall time.
		b.ReportMetric(cpuLoad.Seconds()/cpuRaw.Seconds(), "cpu-load/raw")
	}
}

// rawTypedLoad is the statement loading t's declared columns with DuckDB's
// CSV reader typing them, or as the Parquet file types them, and nothing
// checked: the floor a checked load is compared with.
func rawTypedLoad(t *spec.Table) (string, error) {
	d := duckDB{}
	if format(t) == "parquet" {
		sel := make([]string, len(t.Columns))
		for i, c := range t.Columns {
			sel[i] = d.ident(c.Name)
		}
		return "CREATE TABLE " + d.ident("raw_"+t.Name) + " AS SELECT " + strings.Join(sel, ", ") + " FROM read_parquet(" + d.str(t.Source) + ")", nil
	}
	header, err := csvHeader(t)
	if err != nil {
		return "", err
	}
	types := map[string]string{}
	var sel []string
	for _, c := range t.Columns {
		ty := "VARCHAR"
		switch c.Type {
		case spec.Key, spec.Integer:
			ty = "BIGINT"
		case spec.Numeric:
			ty = "DOUBLE"
		case spec.Date:
			ty = "DATE"
		case spec.Boolean:
			ty = "BOOLEAN"
		}
		types[c.Name] = ty
		sel = append(sel, d.ident(c.Name))
	}
	cols := make([]string, len(header))
	for i, h := range header {
		ty := types[h]
		if ty == "" {
			ty = "VARCHAR"
		}
		cols[i] = d.str(h) + ": " + d.str(ty)
	}
	return "CREATE TABLE " + d.ident("raw_"+t.Name) + " AS SELECT " + strings.Join(sel, ", ") + " FROM read_csv(" + d.str(t.Source) +
		", auto_detect = false, header = true, skip = 0, columns = {" + strings.Join(cols, ", ") + "}" +
		", delim = ',', quote = '\"', escape = '\"', comment = '', strict_mode = true, null_padding = false)", nil
}
