package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// MemoryLimitEnv is the environment variable setting the memory an
// embedded DuckDB engine may use for its buffers (DuckDB's memory_limit:
// the tables' blocks, hash tables, sorts), e.g. "512MB" or "4GiB"; "max"
// leaves DuckDB's own default (80% of the machine's memory). Beyond the
// limit DuckDB evicts blocks of the database file and spills intermediate
// results to a temporary directory that [Engine.Close] removes. Process
// memory beyond the buffers (the Go side, DuckDB's own structures) comes
// on top of it.
const MemoryLimitEnv = "SYNTH_DUCKDB_MEMORY_LIMIT"

// ThreadsEnv is the environment variable setting the number of threads an
// embedded DuckDB engine runs queries on (DuckDB's threads), a positive
// integer; unset or empty leaves DuckDB's default (one per core). Results
// do not depend on it.
const ThreadsEnv = "SYNTH_DUCKDB_THREADS"

// threads returns the threads option to give DuckDB, "" for DuckDB's
// default, or an error naming the variable.
func threads() (string, error) {
	v := strings.TrimSpace(os.Getenv(ThreadsEnv))
	if v == "" {
		return "", nil
	}
	if n, err := strconv.Atoi(v); err != nil || n < 1 {
		return "", fmt.Errorf("%s=%q: want a positive number of threads", ThreadsEnv, v)
	}
	return v, nil
}

// DefaultMemoryLimit is DuckDB's memory_limit when [MemoryLimitEnv] is
// unset or empty. A release of the TPC-H example from Parquet
// (TestReleaseScale, one run each) with 256MB against 512MB: SF 1 2.34 /
// 2.29 s and 0.22 / 0.22 GiB peak RSS, SF 3 8.01 / 7.14 s and 0.34 / 0.42
// GiB, SF 10 35.4 / 39.1 s and 0.45 / 0.64 GiB; 128MB held 0.25 GiB at
// SF 3 but took twice as long (the join's hash tables spill).
const DefaultMemoryLimit = "256MB"

// memoryLimitRE is the syntax [MemoryLimitEnv] accepts: a number and a
// unit, as DuckDB reads them.
var memoryLimitRE = regexp.MustCompile(`^(?i)[0-9]+(\.[0-9]+)?\s*(b|bytes|kb|mb|gb|tb|kib|mib|gib|tib)$`)

// memoryLimit returns the memory_limit to give DuckDB, "" for DuckDB's
// default, or an error naming the variable.
func memoryLimit() (string, error) {
	v := strings.TrimSpace(os.Getenv(MemoryLimitEnv))
	switch {
	case v == "":
		return DefaultMemoryLimit, nil
	case strings.EqualFold(v, "max"):
		return "", nil
	case memoryLimitRE.MatchString(v):
		return v, nil
	}
	return "", fmt.Errorf("%s=%q: want a size such as 512MB or 4GiB, or max", MemoryLimitEnv, v)
}

// allocatorOptions make DuckDB's allocator (jemalloc on Linux; the
// options do nothing elsewhere) return the memory queries free to the
// system: its background threads purge freed pages after their decay
// time (5 s in DuckDB's build), and every bulk deallocation above 32 MB
// (a hash table, a sort, evicted blocks at the end of an operator) purges
// at once.
//
// memory_limit bounds DuckDB's buffers, not the process. With DuckDB's
// defaults (no background threads, a flush only after a bulk
// deallocation above 512 MiB or when one thread's allocations exceed
// allocator_flush_threshold, 128 MiB) the pages a query freed stayed in
// jemalloc's arenas, counted in the RSS, so the RSS of a TPC-H release
// was its buffers plus what earlier queries had used: at SF 3 the
// statistics peaked at 0.56 GiB of RSS with 0.33 GiB of buffers, and an
// idle engine stayed 0.3 GiB above its buffers (TestRSSStages); with
// these options the peak is 0.41 GiB and the idle engine is back near its
// buffers within seconds. What remains grows with the data only up to
// the limit: the buffers (the loaded tables' cached blocks, hash tables,
// sorts) fill memory_limit at about SF 3 with 256MB (SF 10 with 512MB),
// and the process adds some 0.1–0.2 GiB to them (code, Go, DuckDB outside
// its buffers).
// Setting DUCKDB_JE_MALLOC_CONF=dirty_decay_ms:0,muzzy_decay_ms:0 in the
// environment (read when the process starts) purges every freed page at
// once; at SF 3 it gave 0.42 GiB of peak RSS against 0.52 GiB with the
// background threads alone.
const allocatorOptions = "allocator_background_threads=true&allocator_bulk_deallocation_flush_threshold=32MB"

// duckDBScratch is what an embedded engine keeps on disk besides a
// database file it was given: a private folder (mode 0700) in
// [os.TempDir] holding DuckDB's spill files and, for the default DSN, the
// database file itself. Close removes it.
type duckDBScratch struct {
	dir string
	// unlock releases the folder's lock ([lockScratch]), held while the
	// engine is open.
	unlock func()
}

// lockName is the file in a scratch folder its owner holds an exclusive
// lock on while the folder is in use.
const lockName = "lock"

// scratchPrefix starts the name of a scratch folder, followed by the
// process id of its owner, "-" and random digits.
const scratchPrefix = "synth-duckdb-"

// newDuckDBScratch removes the scratch folders that processes no longer
// running left behind (a synth killed before Close: the folders hold
// private rows) and creates the folder.
func newDuckDBScratch() (*duckDBScratch, error) {
	removeStaleScratch()
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", scratchPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("creating a temporary folder for DuckDB: %w", err)
	}
	unlock, ok, err := lockScratch(dir)
	if err == nil && !ok {
		err = errors.New("the folder is locked by another process")
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("locking the temporary folder %s for DuckDB: %w", dir, err)
	}
	return &duckDBScratch{dir: dir, unlock: unlock}, nil
}

// removeStaleScratch removes the scratch folders in [os.TempDir] whose
// owner process is known not to run ([processGone]) and whose lock
// ([lockScratch]) nobody holds. The lock is what protects a live engine
// whose process id means nothing here (another PID namespace or another
// host sharing the folder: its id may look gone, or be reused); the
// process test keeps the sweep off the folder of a live process that has
// not taken its lock yet (between MkdirTemp and lockScratch). Folders it
// cannot read, lock or remove are left alone.
func removeStaleScratch() {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), scratchPrefix+"*-*"))
	for _, m := range matches {
		pid, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(m), scratchPrefix), "-")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(pid)
		if err != nil || n <= 0 || n == os.Getpid() || !processGone(n) {
			continue
		}
		unlock, ok, err := lockScratch(m)
		if err != nil || !ok {
			continue
		}
		os.RemoveAll(m)
		unlock()
	}
}

// database is the path of the default engine's database file.
func (s *duckDBScratch) database() string { return filepath.Join(s.dir, "engine.duckdb") }

// spill is the folder DuckDB spills to.
func (s *duckDBScratch) spill() string { return filepath.Join(s.dir, "spill") }

// remove deletes the folder and everything in it; a nil scratch has
// nothing to remove.
func (s *duckDBScratch) remove() error {
	if s == nil {
		return nil
	}
	err := os.RemoveAll(s.dir)
	if s.unlock != nil {
		s.unlock()
		s.unlock = nil
	}
	return err
}

// duckDBConfig is the query string of the DuckDB connector: the fixed
// options ([duckDBOptions]), the allocator's ([allocatorOptions]),
// the spill folder (DuckDB's default when "") and the memory limit
// (DuckDB's default when ""), and the threads of [ThreadsEnv] when set.
func duckDBConfig(spill, limit string) string {
	q := duckDBOptions + "&" + allocatorOptions
	if n, err := threads(); err == nil && n != "" {
		q += "&threads=" + n
	}
	if spill != "" {
		q += "&temp_directory=" + url.QueryEscape(spill)
	}
	if limit != "" {
		q += "&memory_limit=" + url.QueryEscape(limit)
	}
	return q
}

// DuckDBMemoryLimit is the memory_limit an embedded DuckDB gets from
// [MemoryLimitEnv] ([DefaultMemoryLimit] when unset; "" for "max", DuckDB's
// own default), or an error naming the variable. synth query gives its
// sandbox the same limit.
func DuckDBMemoryLimit() (string, error) { return memoryLimit() }

// onOneThread runs a statistic's statement again, by run, with DuckDB's
// threads set to one, after its first run (whose error is first) ran out
// of memory; it returns first when DuckDB already runs on one thread or
// the engine is not DuckDB.
//
// Why: every thread of a query holds its own pinned blocks beside the
// operators' shared state (each hash aggregate and hash join partitions
// its rows per thread), so the memory a query cannot spill grows with the
// threads, and DuckDB's reservations for its spilling operators are
// estimates; its out-of-memory message suggests fewer threads first. An
// L2 marginal of a privacy-unit release (engine.UnitRows) failed once in
// five SF 10 runs under the 256MB default and passed when run again:
// rather than end a release whose budget is already charged, its
// statement runs once more on one thread (TestStatisticOutOfMemory:
// stored rows that one thread's statement fits in and two threads' does
// not). The statistics are exact integer aggregates, the same on any
// number of threads, so the run's outputs do not change; only its time
// does. Whether the second run happens depends on the data's size, like
// the run's time, and on nothing the release publishes.
//
// DuckDB's threads are a setting of the whole database: a statement that
// runs meanwhile on another connection of the engine runs on one thread
// too (slower, the same result). The previous number is set back after.
func (e *Engine) onOneThread(ctx context.Context, what string, first error, run func() error) error {
	if _, ok := e.d.(duckDB); !ok {
		return first
	}
	e.threadsMu.Lock()
	defer e.threadsMu.Unlock()
	var n int64
	if err := e.db.QueryRowContext(ctx, "SELECT current_setting('threads')").Scan(&n); err != nil || n <= 1 {
		return first
	}
	if _, err := e.db.ExecContext(ctx, "SET threads = 1"); err != nil {
		return first
	}
	defer e.db.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("SET threads = %d", n))
	slog.Warn("engine: a statistic ran out of memory; running it again on one thread", "stat", what, "threads", n)
	return run()
}
