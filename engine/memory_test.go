package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenScratch checks that the default engine keeps its database in a
// private temporary folder that Close removes, and an in-memory engine
// spills to one.
func TestOpenScratch(t *testing.T) {
	ctx := context.Background()
	for _, dsn := range []string{"", "duckdb", "duckdb::memory:"} {
		e, err := Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		dir := e.scratch.dir
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%q: scratch folder %s: %v, %v; want mode 0700", dsn, dir, fi, err)
		}
		var db, spill string
		if err := e.db.QueryRow("SELECT COALESCE((SELECT path FROM duckdb_databases() WHERE database_name = current_database()), ''), current_setting('temp_directory')").Scan(&db, &spill); err != nil {
			t.Fatal(err)
		}
		if spill != e.scratch.spill() {
			t.Errorf("%q: temp_directory %q, want %q", dsn, spill, e.scratch.spill())
		}
		if dsn == "duckdb::memory:" {
			if db != "" {
				t.Errorf("%q: database file %q, want none", dsn, db)
			}
		} else if db != e.scratch.database() {
			t.Errorf("%q: database file %q, want %q", dsn, db, e.scratch.database())
		}
		src := writeCSV(t, t.TempDir(), "orders.csv", ordersHeader, ordersRows())
		if err := e.Load(ctx, ordersSpec(src, nil)); err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%q: scratch folder %s after Close: %v, want it removed", dsn, dir, err)
		}
	}
	// A database file of the user's spills next to it: two engines on one
	// file must agree on the options.
	path := filepath.Join(t.TempDir(), "x.duckdb")
	e, err := Open(ctx, "duckdb:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.scratch != nil {
		t.Errorf("duckdb:PATH: scratch folder %s, want none", e.scratch.dir)
	}
}

// TestMemoryLimit checks the memory limit the engine gives DuckDB.
func TestMemoryLimit(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		env, want string // want: current_setting('memory_limit'), "" for DuckDB's default
		bad       bool
	}{
		{env: "", want: "244.1 MiB"}, // DefaultMemoryLimit
		{env: "512MB", want: "488.2 MiB"},
		{env: " 2GiB ", want: "2.0 GiB"},
		{env: "max"},
		{env: "lots", bad: true},
		{env: "-1GB", bad: true},
		{env: "1GB; DROP", bad: true},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(MemoryLimitEnv, tc.env)
			e, err := Open(ctx, "")
			if tc.bad {
				if err == nil {
					e.Close()
					t.Fatalf("Open with %s=%q succeeded", MemoryLimitEnv, tc.env)
				}
				if !strings.Contains(err.Error(), MemoryLimitEnv) {
					t.Errorf("error %q does not name %s", err, MemoryLimitEnv)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			var got string
			if err := e.db.QueryRow("SELECT current_setting('memory_limit')").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && got != tc.want {
				t.Errorf("memory_limit %q, want %q", got, tc.want)
			}
			if tc.want == "" && (got == "244.1 MiB" || got == "") {
				t.Errorf("memory_limit %q, want DuckDB's default", got)
			}
			// Freed memory goes back to the system (allocatorOptions).
			for name, want := range map[string]string{
				"allocator_background_threads":                "true",
				"allocator_bulk_deallocation_flush_threshold": "30.5 MiB",
			} {
				if err := e.db.QueryRow("SELECT current_setting('" + name + "')::VARCHAR").Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%s %q, want %q", name, got, want)
				}
			}
		})
	}
}

// TestThreads: SYNTH_DUCKDB_THREADS sets DuckDB's threads; unset leaves
// DuckDB's default; anything but a positive integer fails Open with an
// error naming the variable.
func TestThreads(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		env  string
		want int64 // 0: DuckDB's default, whatever it is
		bad  bool
	}{
		{env: ""},
		{env: "1", want: 1},
		{env: " 3 ", want: 3},
		{env: "0", bad: true},
		{env: "two", bad: true},
		{env: "1&memory_limit=1TB", bad: true},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(ThreadsEnv, tc.env)
			e, err := Open(ctx, "duckdb::memory:")
			if tc.bad {
				if err == nil {
					e.Close()
					t.Fatalf("Open with %s=%q succeeded", ThreadsEnv, tc.env)
				}
				if !strings.Contains(err.Error(), ThreadsEnv) {
					t.Errorf("error %q does not name %s", err, ThreadsEnv)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			var got int64
			if err := e.db.QueryRow("SELECT current_setting('threads')").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if tc.want != 0 && got != tc.want {
				t.Errorf("threads %d, want %d", got, tc.want)
			}
		})
	}
}

// TestStaleScratchRemoved checks that Open removes the scratch folders of
// processes that no longer run (a synth killed before Close) and keeps
// those of running processes and folders that are not scratch folders.
func TestStaleScratchRemoved(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := osexec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skipf("cannot run a short-lived process: %v", err)
	}
	if !processGone(dead.Process.Pid) {
		t.Skipf("process %d still reported running", dead.Process.Pid)
	}
	mk := func(name string) string {
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "engine.duckdb"), []byte("private"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := mk(fmt.Sprintf("%s%d-123", scratchPrefix, dead.Process.Pid))
	live := mk(fmt.Sprintf("%s%d-456", scratchPrefix, os.Getppid()))
	other := mk(scratchPrefix + "notapid-789")
	// A live engine whose process id looks gone here (another PID
	// namespace sharing the folder): its lock keeps the folder.
	locked := mk(fmt.Sprintf("%s%d-321", scratchPrefix, dead.Process.Pid))
	unlock, ok, err := lockScratch(locked)
	if err != nil || !ok {
		t.Fatalf("lockScratch(%s) = %v, %v", locked, ok, err)
	}
	defer unlock()
	e, err := Open(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale folder %s: %v, want it removed", stale, err)
	}
	for _, p := range []string{live, other, locked} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("folder %s: %v, want it kept", p, err)
		}
	}
	if !strings.HasPrefix(e.scratch.dir, filepath.Join(tmp, fmt.Sprintf("%s%d-", scratchPrefix, os.Getpid()))) {
		t.Errorf("scratch folder %s, want it in %s named after pid %d", e.scratch.dir, tmp, os.Getpid())
	}
}
