package tpchgen

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// Environment of TestReleaseFloor.
const (
	// floorEnv names the folder of customer, orders and lineitem files
	// (SYNTH_BENCH_FORMAT: csv, the default, or parquet) the floor reads;
	// without it TestReleaseFloor is skipped.
	floorEnv = "SYNTH_BENCH_FLOOR"
	// floorRowsEnv is the number of rows the floor writes; without it,
	// the join's size (what the release writes, up to its noise).
	floorRowsEnv = "SYNTH_BENCH_FLOOR_ROWS"
	// floorOutEnv is the Parquet file the floor writes (default: a
	// temporary folder's).
	floorOutEnv = "SYNTH_BENCH_FLOOR_OUT"
	// floorChildEnv is set in TestReleaseScale's floor child.
	floorChildEnv = "SYNTH_BENCH_FLOOR_CHILD"
	// floorCopyEnv, when 1, makes the floor copy each file's columns
	// into an in-memory table first (CREATE TABLE … AS) instead of
	// reading the file at each statistic: the better plain program when
	// the statistics read the tables more than once.
	floorCopyEnv = "SYNTH_BENCH_FLOOR_COPY"
	// floorMemEnv is DuckDB's memory_limit for the floor (default:
	// DuckDB's own, 80% of the machine's memory: at the release's 256MB
	// plain DuckDB runs out of memory on the CSV join).
	floorMemEnv = "SYNTH_BENCH_FLOOR_MEMORY"
)

// floorTimes are one floor run's wall times per stage and peak RSS.
type floorTimes struct {
	Load, Histogram, Degrees, L2, Write, Total time.Duration
	Rows                                       int64
	MaxRSS                                     int64
	CPU                                        time.Duration // user and system (the parent's measure)
}

// floorViews are the release's views of examples/tpch/synth.yaml (the
// same column names and bin columns the engine's load makes) defined
// straight over the files: what a plain DuckDB program reads, with no
// copy and no validation. %s is the table's reader (read_parquet('…') or
// read_csv('…')).
var floorViews = map[string]string{
	"customer": `SELECT "c_custkey", "c_mktsegment",
	  list_position(['AUTOMOBILE', 'BUILDING', 'FURNITURE', 'HOUSEHOLD', 'MACHINERY'], "c_mktsegment") - 1 AS "_synth_bin_c_mktsegment" FROM %s`,
	"orders": `SELECT "o_orderkey", "o_custkey", "o_orderpriority",
	  list_position(['1-URGENT', '2-HIGH', '3-MEDIUM', '4-NOT SPECIFIED', '5-LOW'], "o_orderpriority") - 1 AS "_synth_bin_o_orderpriority",
	  "o_orderdate", year("o_orderdate") - 1992 AS "_synth_bin_o_orderdate" FROM %s`,
	"lineitem": `SELECT "l_orderkey", "l_linenumber", "l_returnflag", list_position(['A', 'N', 'R'], "l_returnflag") - 1 AS "_synth_bin_l_returnflag",
	  "l_quantity", CASE WHEN "l_quantity" < 6 THEN 0 WHEN "l_quantity" < 11 THEN 1 WHEN "l_quantity" < 16 THEN 2 WHEN "l_quantity" < 21 THEN 3
	  WHEN "l_quantity" < 26 THEN 4 WHEN "l_quantity" < 31 THEN 5 WHEN "l_quantity" < 36 THEN 6 WHEN "l_quantity" < 41 THEN 7
	  WHEN "l_quantity" < 46 THEN 8 ELSE 9 END AS "_synth_bin_l_quantity" FROM %s`,
}

// floorFrom is the join of the privacy-unit release's statistics, as the
// engine writes it (engine/unit.go, logged with DuckDB's log_query_path
// from a release of examples/tpch/synth.yaml).
const floorFrom = ` FROM "lineitem" AS t0 JOIN "orders" AS t1 ON t1."o_orderkey" = t0."l_orderkey" JOIN "customer" AS t2 ON t2."c_custkey" = t1."o_custkey"`

// floorUnits stores every unit's join-row count in the table n; floorDegrees
// is its histogram and floorHistogram the bounded cells, each join row
// weighted through n: the release's statistics SQL, word for word.
const (
	floorUnits     = `CREATE TEMP TABLE n AS SELECT v0 AS u, c AS nu FROM (SELECT t2."c_custkey" AS v0, count(*) AS c` + floorFrom + ` GROUP BY 1) AS j`
	floorHistogram = `SELECT i, CAST(SUM(wc) AS BIGINT) FROM (SELECT CASE WHEN v1 < 0 OR v1 >= 5 OR v2 < 0 OR v2 >= 5 OR v3 < 0 OR v3 >= 3
  OR v4 < 0 OR v4 >= 10 OR v5 < 0 OR v5 >= 7 THEN -1 ELSE ((((CAST(v1 AS BIGINT) * 5 + v2) * 3 + v3) * 10 + v4) * 7 + v5) END AS i,
  CAST(j.c AS BIGINT) * LEAST(65536, CAST(FLOOR(CAST(65536 AS DOUBLE PRECISION) / CAST(n.nu AS DOUBLE PRECISION)) AS BIGINT)) AS wc
  FROM (SELECT t2."c_custkey" AS v0, t2."_synth_bin_c_mktsegment" AS v1, t1."_synth_bin_o_orderpriority" AS v2,
  t0."_synth_bin_l_returnflag" AS v3, t0."_synth_bin_l_quantity" AS v4, t1."_synth_bin_o_orderdate" AS v5, 1 AS c` + floorFrom + `) AS j
  JOIN n AS n ON j.v0 IS NOT DISTINCT FROM n.u) AS x GROUP BY i ORDER BY i`
	floorDegrees = `SELECT CAST(nu AS BIGINT) AS nu, CAST(COUNT(*) AS BIGINT) AS units FROM n AS n GROUP BY nu ORDER BY nu`
)

// floorCopy writes rows rows of the released table's schema (three
// categorical columns as VARCHAR, the binned quantity as BIGINT, the year
// as DATE) in a random order with COPY … TO Parquet: each row's values
// drawn with random(), the plain-SQL stand-in for the release's shuffled
// rows (cheaper than a true shuffle, so the floor is if anything low).
const floorCopy = `COPY (SELECT (['AUTOMOBILE', 'BUILDING', 'FURNITURE', 'HOUSEHOLD', 'MACHINERY'])[1 + CAST(floor(random() * 5) AS INTEGER)] AS c_mktsegment,
  (['1-URGENT', '2-HIGH', '3-MEDIUM', '4-NOT SPECIFIED', '5-LOW'])[1 + CAST(floor(random() * 5) AS INTEGER)] AS o_orderpriority,
  (['A', 'N', 'R'])[1 + CAST(floor(random() * 3) AS INTEGER)] AS l_returnflag,
  CAST(1 + 5 * floor(random() * 10) AS BIGINT) AS l_quantity,
  make_date(1992 + CAST(floor(random() * 7) AS INTEGER), 1, 1) AS o_orderdate
  FROM range(%d)) TO '%s' (FORMAT parquet)`

// TestReleaseFloor is the release's fair floor (issue 29): a plain DuckDB
// program, through the same driver, that reads the same files as a release
// of examples/tpch/synth.yaml (views straight over them: no copy, no
// validation), runs the same statistics SQL the release runs (the bounded
// join histogram and the per-unit contribution distribution) and writes
// the same number of rows to Parquet with COPY. It prints its stage times
// and peak RSS as one JSON line (FLOOR {…}). With SYNTH_BENCH_FLOOR_COPY=1
// it first copies the columns it reads into in-memory tables (the better
// plain program for CSV, which the two statistics would parse twice).
// Gated by SYNTH_BENCH_FLOOR=DIR; TestReleaseScale runs both variants
// beside every DuckDB release and takes the faster as the floor.
func TestReleaseFloor(t *testing.T) {
	arg := os.Getenv(floorChildEnv)
	if arg == "" {
		dir := os.Getenv(floorEnv)
		if dir == "" {
			t.Skipf("%s is not set: the floor benchmark is skipped", floorEnv)
		}
		format := cmp.Or(os.Getenv(benchFmtEnv), FormatCSV)
		rows := int64(0)
		if v := os.Getenv(floorRowsEnv); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				t.Fatalf("%s = %q", floorRowsEnv, v)
			}
			rows = n
		}
		out := os.Getenv(floorOutEnv)
		if out == "" {
			out = filepath.Join(t.TempDir(), "floor.parquet")
		}
		b, _ := json.Marshal(floorRun{Data: dir, Format: format, Rows: rows, Out: out, Copy: os.Getenv(floorCopyEnv) == "1"})
		arg = string(b)
	}
	var r floorRun
	if err := json.Unmarshal([]byte(arg), &r); err != nil {
		t.Fatal(err)
	}
	st, err := runFloor(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(st)
	fmt.Printf("\nFLOOR %s\n", b)
}

// floorRun is one floor run: the data folder, its format, the rows to
// write (0: the join's size) and the output file.
type floorRun struct {
	Data, Format, Out string
	Rows              int64
	Copy              bool // tables copied from the files first, not views
	// L2 are the L2-clipped marginals' statements the unit release ran
	// (the engine's SQL, logged), run after the degrees.
	L2 []string
}

// runFloor runs the floor: the views, the two statistics, the COPY.
func runFloor(ctx context.Context, r floorRun) (*floorTimes, error) {
	start := time.Now()
	spill, err := os.MkdirTemp("", "synth-floor-")
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	defer os.RemoveAll(spill)
	// A spill folder, as the release has, and DuckDB's memory_limit
	// unless SYNTH_BENCH_FLOOR_MEMORY sets one.
	cfg := "?temp_directory=" + url.QueryEscape(spill)
	if limit := os.Getenv(floorMemEnv); limit != "" {
		cfg += "&memory_limit=" + url.QueryEscape(limit)
	}
	conn, err := duckdb.NewConnector(cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("floor: open DuckDB: %w", err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	db.SetMaxOpenConns(1) // views live in the one connection's catalog anyway
	kind := "VIEW"
	if r.Copy {
		kind = "TABLE"
	}
	for name, body := range floorViews {
		src := filepath.Join(r.Data, name+"."+r.Format)
		reader := fmt.Sprintf("read_parquet('%s')", src)
		if r.Format == FormatCSV {
			reader = fmt.Sprintf("read_csv('%s', header = true)", src)
		}
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`CREATE %s %q AS `+body, kind, name, reader)); err != nil {
			return nil, fmt.Errorf("floor: view %s: %w", name, err)
		}
	}
	st := &floorTimes{}
	t0 := time.Now()
	if _, err := db.ExecContext(ctx, floorUnits); err != nil {
		return nil, fmt.Errorf("floor: unit row counts: %w", err)
	}
	var total int64
	if err := scanPairs(ctx, db, floorHistogram, "histogram", func(_, wc int64) { total += wc }); err != nil {
		return nil, err
	}
	t1 := time.Now()
	var joinSize int64
	if err := scanPairs(ctx, db, floorDegrees, "degrees", func(nu, units int64) { joinSize += nu * units }); err != nil {
		return nil, err
	}
	if total == 0 || joinSize == 0 {
		return nil, fmt.Errorf("floor: empty join (histogram weight %d, join size %d)", total, joinSize)
	}
	t2 := time.Now()
	for _, q := range r.L2 {
		if err := scanPairs(ctx, db, q, "L2 marginal", func(int64, int64) {}); err != nil {
			return nil, err
		}
	}
	t3 := time.Now()
	st.Rows = cmp.Or(r.Rows, joinSize)
	if _, err := db.ExecContext(ctx, fmt.Sprintf(floorCopy, st.Rows, r.Out)); err != nil {
		return nil, fmt.Errorf("floor: copy: %w", err)
	}
	end := time.Now()
	st.Load, st.Histogram, st.Degrees, st.L2, st.Write, st.Total = t0.Sub(start), t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), end.Sub(t3), end.Sub(start)
	st.MaxRSS = highWaterRSS()
	return st, nil
}

// scanPairs runs q, whose rows are two integers, and calls f on each;
// errors name the statistic what.
func scanPairs(ctx context.Context, db *sql.DB, q, what string, f func(a, b int64)) error {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("floor: %s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		var a, b int64
		if err := rows.Scan(&a, &b); err != nil {
			return fmt.Errorf("floor: %s: %w", what, err)
		}
		f(a, b)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("floor: %s: %w", what, err)
	}
	return nil
}

// runFloorChild runs the floor in a fresh process (the test binary
// re-executed), so that its peak RSS is its own.
func runFloorChild(t testing.TB, r floorRun) *floorTimes {
	t.Helper()
	var st floorTimes
	peak, cpu := runTestChild(t, "TestReleaseFloor", floorChildEnv, r, "FLOOR ", &st)
	if st.MaxRSS == 0 {
		st.MaxRSS = peak
	}
	st.CPU = cpu
	return &st
}

// BenchmarkReleaseVsFloor is the release against its fair floor (issue
// 41) on the same files: each iteration runs a seeded privacy-unit
// release of examples/tpch/synth.yaml on the files of SYNTH_BENCH_FLOOR
// (format SYNTH_BENCH_FORMAT, csv by default) and then the floor with the
// release's row count and L2 marginals, each in a fresh process
// (TestReleaseScale's child and TestReleaseFloor's), the floor both
// reading the files at each statistic and copying them first unless
// SYNTH_BENCH_FLOOR_COPY chooses one (the one of less CPU kept). It
// reports the CPU seconds (user and system) of each, their ratio, and
// each one's peak RSS, means over the iterations: on a loaded machine
// the CPU is what compares. Skipped without SYNTH_BENCH_FLOOR; minutes
// per iteration at SF 1, a quarter of an hour at SF 10 (-benchtime 1x).
func BenchmarkReleaseVsFloor(b *testing.B) {
	dir := os.Getenv(floorEnv)
	if dir == "" {
		b.Skipf("%s is not set: the release-versus-floor benchmark is skipped", floorEnv)
	}
	format := cmp.Or(os.Getenv(benchFmtEnv), FormatCSV)
	specPath, err := filepath.Abs("../../examples/tpch/synth.yaml")
	if err != nil {
		b.Fatal(err)
	}
	copies := []bool{false, true}
	switch os.Getenv(floorCopyEnv) {
	case "1":
		copies = []bool{true}
	case "0":
		copies = []bool{false}
	}
	var rel, floor time.Duration
	var relRSS, floorRSS int64
	for i := 0; i < b.N; i++ {
		st := runParent(b, childRun{Spec: specPath, Data: dir, Engine: "duckdb", Out: filepath.Join(b.TempDir(), "out"), Format: format})
		var best *floorTimes
		for _, cp := range copies {
			ft := runFloorChild(b, floorRun{Data: dir, Format: format, Out: filepath.Join(b.TempDir(), "floor.parquet"), Copy: cp, Rows: st.Rows, L2: st.L2})
			b.Logf("iteration %d: release CPU %.1f s (peak RSS %.2f GiB), floor (copy %v) CPU %.1f s (peak RSS %.2f GiB)",
				i, st.CPU.Seconds(), float64(st.MaxRSS)/(1<<30), cp, ft.CPU.Seconds(), float64(ft.MaxRSS)/(1<<30))
			if best == nil || ft.CPU < best.CPU {
				best = ft
			}
		}
		rel, floor = rel+st.CPU, floor+best.CPU
		relRSS, floorRSS = relRSS+st.MaxRSS, floorRSS+best.MaxRSS
	}
	n := float64(b.N)
	b.ReportMetric(rel.Seconds()/n, "release-cpu-s")
	b.ReportMetric(floor.Seconds()/n, "floor-cpu-s")
	b.ReportMetric(rel.Seconds()/floor.Seconds(), "release/floor")
	b.ReportMetric(float64(relRSS)/n/(1<<30), "release-rss-GiB")
	b.ReportMetric(float64(floorRSS)/n/(1<<30), "floor-rss-GiB")
}
