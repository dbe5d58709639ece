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

// loadBenchDirEnv names a folder of TPC-H-shaped CSV files written by
// cmd/tpchgen (customer.csv, orders.csv, lineitem.csv) for BenchmarkLoadSF;
// without it the benchmark generates scale factor 0.1 in a temporary folder.
const loadBenchDirEnv = "SYNTH_BENCH_LOAD_DIR"

// BenchmarkLoadSF times [Engine.Load] of the TPC-H example
// (examples/tpch/synth.yaml: keys, categoricals, an integer and a date,
// every value checked) against a raw typed load of the same columns in the
// same engine: per table, CREATE TABLE AS SELECT of the declared columns
// from read_csv with the columns typed by DuckDB's own reader (BIGINT keys
// and integers, DOUBLE, DATE, VARCHAR categories) and nothing checked. Each
// iteration runs both, alternating which goes first; the metrics are the
// fastest of each over the iterations (the machine is shared: minima are
// the least noisy) and their ratio:
//
//	SYNTH_BENCH_LOAD_DIR=/tmp/sf1 go test ./engine/ -run '^$' -bench LoadSF -benchtime 3x
//
// It runs on the default engine (a temporary database file) and on an
// in-memory one.
func BenchmarkLoadSF(b *testing.B) {
	for _, eng := range []struct{ name, dsn string }{{"file", ""}, {"memory", "duckdb::memory:"}} {
		b.Run(eng.name, func(b *testing.B) { benchmarkLoad(b, eng.dsn) })
	}
}

func benchmarkLoad(b *testing.B, dsn string) {
	ctx := context.Background()
	dir := os.Getenv(loadBenchDirEnv)
	if dir == "" {
		dir = b.TempDir()
		if _, err := tpchgen.Generate(ctx, tpchgen.Config{ScaleFactor: 0.1, Seed: 1, Dir: dir}); err != nil {
			b.Fatal(err)
		}
	}
	s, err := spec.Load("../examples/tpch/synth.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for i := range s.Tables {
		s.Tables[i].Source = filepath.Join(dir, s.Tables[i].Name+".csv")
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
	var bestLoad, bestRaw time.Duration
	runLoad := func() {
		start := time.Now()
		if err := e.Load(ctx, s); err != nil {
			b.Fatal(err)
		}
		if d := time.Since(start); bestLoad == 0 || d < bestLoad {
			bestLoad = d
		}
	}
	runRaw := func() {
		start := time.Now()
		for _, q := range raw {
			if _, err := e.db.ExecContext(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
		if d := time.Since(start); bestRaw == 0 || d < bestRaw {
			bestRaw = d
		}
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
}

// rawTypedLoad is the statement loading t's declared columns with DuckDB's
// CSV reader typing them and nothing checked: the floor a checked load is
// compared with.
func rawTypedLoad(t *spec.Table) (string, error) {
	header, err := csvHeader(t)
	if err != nil {
		return "", err
	}
	d := duckDB{}
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
