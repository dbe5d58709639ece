package tpchgen

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/release"
	"github.com/synth-dp/synth/spec"
)

// Environment of TestReleaseScale.
const (
	benchEnv      = "SYNTH_BENCH_RELEASE" // "1" runs the benchmark
	benchSFEnv    = "SYNTH_BENCH_SF"      // scale factors, comma-separated (default 0.1,1)
	benchRepsEnv  = "SYNTH_BENCH_REPS"    // runs per cell, the fastest kept (default 1)
	benchOutEnv   = "SYNTH_BENCH_OUT"     // file the markdown table is written to
	benchFmtEnv   = "SYNTH_BENCH_FORMAT"  // input formats, comma-separated: csv (default), parquet
	benchChildEnv = "SYNTH_BENCH_CHILD"   // set in the child process: JSON of one run
	// benchDataEnv names a folder holding FORMAT/ subfolders (csv/,
	// parquet/) of tpchgen output at the one scale factor of
	// SYNTH_BENCH_SF, used instead of generating the data (minutes at
	// SF 10): `tpchgen -sf 10 -format parquet -out DIR/parquet`.
	benchDataEnv = "SYNTH_BENCH_DATA"
	pgEnv        = "SYNTH_TEST_POSTGRES" // PostgreSQL URL; without it only DuckDB runs
	// clusterEnv is the coordinator URL of a sharded PostgreSQL cluster
	// (scripts/pg-cluster.sh start DIR prints it); without it the cluster
	// does not run.
	clusterEnv = "SYNTH_TEST_POSTGRES_CLUSTER"
)

// stageTimes are one release's wall times per stage, from its progress
// reports: load and checks (PhaseLoad), statistics (from the end of the
// load to PMW's first round), mechanism (PMW to the first row written, with
// decoding and sampling) and write.
type stageTimes struct {
	Load, Stats, Mechanism, Write, Total time.Duration
	Rows                                 int64
	MaxRSS                               int64 // bytes, the child process's peak
	// CPU is the child process's user and system time (the parent's
	// measure): on a loaded machine the wall times mean little.
	CPU time.Duration
	// L2 are the statements of the L2-clipped marginals the release
	// measured (from the engine's debug log), each over its own join as
	// engine.Engine.UnitMarginalL2 runs it: the fair floor runs them too.
	L2 []string
}

// childRun is what the parent asks the child to run.
type childRun struct {
	Spec, Data, Engine, Out, Format string
	// TupleLevel releases the spec without its privacy.unit, by
	// join-as-one.
	TupleLevel bool
}

// TestReleaseScale is the release benchmark of issue 16: a seeded release
// of examples/tpch/synth.yaml (customer ⋈ orders ⋈ lineitem; its
// privacy-unit release and the tuple-level join-as-one release of the same
// spec, interleaved)
// on TPC-H-shaped data at each scale factor, on embedded DuckDB and, with
// SYNTH_TEST_POSTGRES, on PostgreSQL and, with SYNTH_TEST_POSTGRES_CLUSTER,
// on a sharded PostgreSQL cluster; from CSV files or, with
// SYNTH_BENCH_FORMAT=parquet (or csv,parquet), Parquet files. Each run is
// a fresh process (the test binary re-executed) so that its peak RSS is
// its own. It prints a markdown table (and writes it to SYNTH_BENCH_OUT).
// Gated by SYNTH_BENCH_RELEASE=1: minutes at SF 1.
func TestReleaseScale(t *testing.T) {
	if c := os.Getenv(benchChildEnv); c != "" {
		runChild(t, c)
		return
	}
	if os.Getenv(benchEnv) != "1" {
		t.Skipf("%s is not 1: release benchmark skipped", benchEnv)
	}
	sfs := []float64{0.1, 1}
	if v := os.Getenv(benchSFEnv); v != "" {
		sfs = nil
		for _, f := range strings.Split(v, ",") {
			sf, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				t.Fatalf("%s: %v", benchSFEnv, err)
			}
			sfs = append(sfs, sf)
		}
	}
	reps := 1
	if v := os.Getenv(benchRepsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s = %q", benchRepsEnv, v)
		}
		reps = n
	}
	engines := []struct{ name, dsn string }{{"DuckDB (embedded)", "duckdb"}}
	if u := os.Getenv(pgEnv); u != "" {
		engines = append(engines, struct{ name, dsn string }{"PostgreSQL 15", u})
	}
	if u := os.Getenv(clusterEnv); u != "" {
		n := 0
		if _, v, ok := strings.Cut(u, "synth_shards="); ok {
			v, _, _ = strings.Cut(v, "&")
			n = len(strings.Split(v, ","))
		}
		engines = append(engines, struct{ name, dsn string }{fmt.Sprintf("PostgreSQL 15, %d shards (postgres_fdw)", n), u})
	}
	specPath, err := filepath.Abs("../../examples/tpch/synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	formats := []string{FormatCSV}
	if v := os.Getenv(benchFmtEnv); v != "" {
		formats = strings.Split(v, ",")
	}
	var b strings.Builder
	b.WriteString("| SF | input | engine | method | rows written | load + checks | statistics | mechanism | write | total | peak RSS of synth | fair floor (files + unit counts and histogram + degrees + L2 marginals + COPY) | total / floor | CPU (synth / floor) |\n")
	b.WriteString("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, sf := range sfs {
		for _, format := range formats {
			data, generated := t.TempDir(), true
			if dir := os.Getenv(benchDataEnv); dir != "" {
				if len(sfs) != 1 {
					t.Fatalf("%s needs one scale factor in %s", benchDataEnv, benchSFEnv)
				}
				data, generated = filepath.Join(dir, format), false
				t.Logf("SF %g: reading %s (%s)", sf, data, benchDataEnv)
			} else {
				start := time.Now()
				res, err := Generate(context.Background(), Config{ScaleFactor: sf, Seed: 1, Dir: data, Format: format})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("SF %g: generated %d line items (%s) in %v", sf, res.Rows["lineitem"], format, time.Since(start).Round(time.Millisecond))
			}
			for _, eng := range engines {
				// The example's privacy-unit release and the tuple-level
				// join-as-one release of the same spec, interleaved.
				// On embedded DuckDB, the fair floor (TestReleaseFloor,
				// reading the files at each statistic and copying them
				// first, the faster kept) interleaved with them.
				best := map[bool]*stageTimes{}
				var floor *floorTimes
				for range reps {
					for _, tuple := range []bool{false, true} {
						st := runParent(t, childRun{Spec: specPath, Data: data, Engine: eng.dsn, Out: filepath.Join(t.TempDir(), "out"), Format: format, TupleLevel: tuple})
						if best[tuple] == nil || st.Total < best[tuple].Total {
							best[tuple] = st
						}
					}
					if eng.dsn == "duckdb" {
						for _, cp := range []bool{false, true} {
							// As many rows as the unit release wrote: the join's
							// size up to noise, or release.DefaultMaxRows (10 M at
							// SF 10, where the join has 60 M rows).
							// The same L2 marginals as the unit release.
							ft := runFloorChild(t, floorRun{Data: data, Format: format, Out: filepath.Join(t.TempDir(), "floor.parquet"), Copy: cp,
								Rows: best[false].Rows, L2: best[false].L2})
							t.Logf("SF %g %s floor (copy %v): %+v", sf, format, cp, *ft)
							if floor == nil || ft.Total < floor.Total {
								floor = ft
							}
						}
					}
				}
				sec := func(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
				for _, tuple := range []bool{false, true} {
					b1, method := best[tuple], "privacy-unit (customer)"
					if tuple {
						method = "join-as-one (tuple-level)"
					}
					fl, ratio, cpu := "—", "—", sec(b1.CPU)
					if floor != nil {
						fl = fmt.Sprintf("%s + %s + %s + %s + %s = %s (%.2f GiB)", sec(floor.Load), sec(floor.Histogram), sec(floor.Degrees), sec(floor.L2), sec(floor.Write), sec(floor.Total), float64(floor.MaxRSS)/(1<<30))
						ratio = fmt.Sprintf("%.2f", b1.Total.Seconds()/floor.Total.Seconds())
						cpu += " / " + sec(floor.CPU)
					}
					fmt.Fprintf(&b, "| %g | %s | %s | %s | %d | %s | %s | %s | %s | %s | %.2f GiB | %s | %s | %s |\n", sf, format, eng.name, method, b1.Rows,
						sec(b1.Load), sec(b1.Stats), sec(b1.Mechanism), sec(b1.Write), sec(b1.Total), float64(b1.MaxRSS)/(1<<30), fl, ratio, cpu)
					t.Logf("SF %g %s %s %s: %+v", sf, format, eng.name, method, *b1)
				}
				t.Logf("SF %g %s %s: privacy-unit / join-as-one total = %.2f", sf, format, eng.name, best[false].Total.Seconds()/best[true].Total.Seconds())
			}
			if generated {
				if err := os.RemoveAll(data); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	fmt.Print(b.String())
	if p := os.Getenv(benchOutEnv); p != "" {
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runParent runs one release in a child process and returns its times and
// peak RSS.
func runParent(t testing.TB, r childRun) *stageTimes {
	t.Helper()
	var st stageTimes
	peak, cpu := runTestChild(t, "TestReleaseScale", benchChildEnv, r, "STAGES ", &st)
	if st.MaxRSS == 0 {
		st.MaxRSS = peak
	}
	st.CPU = cpu
	return &st
}

// runTestChild re-executes the test binary running test with env set to
// the JSON of arg, decodes the payload of the last output line that starts
// with prefix into out, and returns the child's rusage peak RSS and its
// user and system CPU time. A child
// reports its own high-water mark (VmHWM, reset by exec) when it can read
// it; the rusage peak is the fallback, as Linux carries it across exec
// from the forked parent — and the parent is large once it has converted
// Parquet files with DuckDB.
func runTestChild(t testing.TB, test, env string, arg any, prefix string, out any) (int64, time.Duration) {
	t.Helper()
	js, _ := json.Marshal(arg)
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+string(js))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s child: %v\n%s", test, err, stdout)
	}
	line := ""
	for _, l := range strings.Split(string(stdout), "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			line = v
		}
	}
	if err := json.Unmarshal([]byte(line), out); err != nil {
		t.Fatalf("%s child output %q: %v", test, stdout, err)
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss * 1024, cpu // kilobytes on Linux
	}
	return 0, cpu
}

// runChild runs the release the parent asked for and prints its stage
// times as one JSON line.
func runChild(t *testing.T, arg string) {
	var r childRun
	if err := json.Unmarshal([]byte(arg), &r); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(r.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if r.TupleLevel {
		s.Privacy.Unit, s.Release.Method = "", spec.JoinAsOne
	}
	for i := range s.Tables {
		s.Tables[i].Source = filepath.Join(r.Data, s.Tables[i].Name+"."+cmp.Or(r.Format, FormatCSV))
		s.Tables[i].Format = spec.FormatOf(s.Tables[i].Source)
	}
	var st stageTimes
	l2 := &statLog{next: slog.Default().Handler(), stats: []string{statStored, statL2}}
	slog.SetDefault(slog.New(l2))
	start := time.Now()
	var loadStart, loadEnd, pmw, write time.Time
	progress := func(p release.Phase, done, total int64) {
		now := time.Now()
		switch {
		case p == release.PhaseLoad && done == 0:
			loadStart = now
		case p == release.PhaseLoad && done == total:
			loadEnd = now
		case p == release.PhasePMW && pmw.IsZero():
			pmw = now
		case p == release.PhaseWrite && write.IsZero():
			write = now
		}
	}
	sum, err := release.Run(context.Background(), release.Options{Spec: s, OutDir: r.Out, Engine: r.Engine,
		Source: dp.NewSeededSource(1), Overwrite: true, Progress: progress})
	if err != nil {
		// The data are generated, not private: the engine's withheld
		// message may be printed here.
		var se *engine.StatError
		if errors.As(err, &se) {
			t.Fatalf("%v: %v", err, errors.Join(se.Unwrap()...))
		}
		t.Fatal(err)
	}
	end := time.Now()
	if pmw.IsZero() {
		pmw = loadEnd
	}
	if write.IsZero() {
		write = end
	}
	st.Load, st.Stats, st.Mechanism, st.Write = loadEnd.Sub(loadStart), pmw.Sub(loadEnd), write.Sub(pmw), end.Sub(write)
	st.Total, st.Rows = end.Sub(start), sum.Rows
	st.MaxRSS = highWaterRSS()
	if st.L2, err = perMarginalL2(l2.statements()); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(st)
	fmt.Printf("\nSTAGES %s\n", out)
}

// The statistics of the engine's debug log that TestReleaseScale keeps.
const (
	statL2     = "L2 unit marginal"
	statStored = "stored unit rows" // engine.Engine.StoreUnitRows
)

// perMarginalL2 returns the statements of the L2 marginals of recs, each
// over its own join: the release reads them from the join's rows stored
// once (statStored, whose SELECT replaces the stored table in each), a
// plain program runs the join for each, as engine.Engine.UnitMarginalL2
// does (here each row's cell over every released column is computed, and
// the marginal's cell from it, as the release computes them).
func perMarginalL2(recs []statRec) ([]string, error) {
	var table, rows string
	var out []string
	for _, r := range recs {
		switch r.Stat {
		case statStored: // CREATE OR REPLACE TABLE "name" AS SELECT …
			head, body, ok := strings.Cut(r.SQL, " AS ")
			if !ok {
				return nil, fmt.Errorf("stored unit rows: no AS in %q", r.SQL)
			}
			table, rows = strings.TrimPrefix(head, "CREATE OR REPLACE TABLE "), body
		case statL2:
			q := r.SQL
			if table != "" {
				q = strings.Replace(q, "FROM "+table+")", "FROM ("+rows+") AS stored)", 1)
				if strings.Contains(q, table) {
					return nil, fmt.Errorf("L2 marginal %q reads the stored rows %s otherwise than in one subquery", r.SQL, table)
				}
			}
			out = append(out, q)
		}
	}
	return out, nil
}

// statRec is one kept statistic: its name and SQL.
type statRec struct{ Stat, SQL string }

// statLog is a slog handler that keeps the SQL of the engine's debug
// records of some statistics ("engine: statistic" with stat in stats) and
// passes every other record at Info and above to next.
type statLog struct {
	next  slog.Handler
	stats []string
	mu    *sync.Mutex
	sqls  *[]statRec
}

func (h *statLog) init() {
	if h.mu == nil {
		h.mu, h.sqls = new(sync.Mutex), new([]statRec)
	}
}

func (h *statLog) Enabled(ctx context.Context, l slog.Level) bool {
	return l == slog.LevelDebug || h.next.Enabled(ctx, l)
}

func (h *statLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message != "engine: statistic" {
		if r.Level >= slog.LevelInfo && h.next.Enabled(ctx, r.Level) {
			return h.next.Handle(ctx, r)
		}
		return nil
	}
	var stat, q string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "stat":
			stat = a.Value.String()
		case "sql":
			q = a.Value.String()
		}
		return true
	})
	if slices.Contains(h.stats, stat) {
		h.init()
		h.mu.Lock()
		*h.sqls = append(*h.sqls, statRec{Stat: stat, SQL: q})
		h.mu.Unlock()
	}
	return nil
}

func (h *statLog) WithAttrs(as []slog.Attr) slog.Handler {
	h.init()
	return &statLog{next: h.next.WithAttrs(as), stats: h.stats, mu: h.mu, sqls: h.sqls}
}

func (h *statLog) WithGroup(name string) slog.Handler {
	h.init()
	return &statLog{next: h.next.WithGroup(name), stats: h.stats, mu: h.mu, sqls: h.sqls}
}

// statements returns the statistics kept so far.
func (h *statLog) statements() []statRec {
	h.init()
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(*h.sqls)
}

// highWaterRSS returns this process's peak resident set size in bytes,
// VmHWM of /proc/self/status (Linux), or 0 when it cannot be read.
func highWaterRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
