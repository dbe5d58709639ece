package engine

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/spec"
)

// TestStatisticOutOfMemory: an L2 marginal over stored unit rows that
// DuckDB cannot run within its memory limit on two threads runs again on
// one thread and returns the cells it returns under a large limit
// ([Engine.onOneThread]); one that one thread cannot run either fails
// with a [*StatError] that says the engine ran out of memory, names
// [MemoryLimitEnv] and wraps [ErrResource]; and DuckDB's spill files go
// with the engine's scratch folder when it closes.
//
// The stored rows imitate TPC-H SF 1's (6 M join rows, 100,000 units of
// 60 rows, 4 rows an order sharing its order's cell): with DuckDB 1.5.5
// the statement needed more than 20MB on two threads and less on one
// (16MB: neither; 24MB: both). Without the run on one thread the first
// case fails. The test is skipped when two threads fit in 20MB (another
// DuckDB), since it could then show nothing.
func TestStatisticOutOfMemory(t *testing.T) {
	ctx := context.Background()
	e := openDSNTest(t, "")
	if _, err := e.db.ExecContext(ctx, "SET threads = 2"); err != nil {
		t.Fatal(err)
	}
	table := e.d.ident(e.tempName("unit_rows"))
	if _, err := e.db.ExecContext(ctx, "CREATE TABLE "+table+
		" AS SELECT CAST(k // 60 AS BIGINT) AS u, CAST(hash(k // 4) % 1750 * 3 + k % 3 AS INTEGER) AS i FROM range(6000000) AS t(k)"); err != nil {
		t.Fatal(err)
	}
	cols := []spec.ColumnRef{{Table: "c", Column: "a"}, {Table: "o", Column: "b"}, {Table: "l", Column: "c"}, {Table: "l", Column: "d"}, {Table: "o", Column: "e"}}
	r := &UnitRows{e: e, key: UnitKey{Relation: "c", Column: "k"}, cols: cols, sizes: []int{5, 5, 3, 10, 7}, table: table, plain: true}
	set, sizes := []spec.ColumnRef{cols[1], cols[4]}, []int{5, 7}
	const grid, bound = 65536, 65536
	limit := func(m string) {
		t.Helper()
		if _, err := e.db.ExecContext(ctx, "SET memory_limit = '"+m+"'"); err != nil {
			t.Fatal(err)
		}
	}
	want, err := r.UnitMarginalL2(ctx, nil, r.key, set, sizes, grid, bound)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 35 {
		t.Fatalf("%d cells under 256MB, want 35", len(want))
	}

	limit("20MB")
	// The statement alone, on two threads, must run out of memory here.
	q := unitL2From(e.d, "SELECT * FROM "+r.rows()+" AS s", "u", r.cellOf(set, sizes), grid, bound)
	if err := e.scanPairsOnce(ctx, q, "L2 unit marginal", func(a, b int64) error { return nil }); err == nil {
		t.Skip("two threads ran the L2 marginal in 20MB: this DuckDB shows no out-of-memory to recover from")
	} else if !isOutOfMemory(err) {
		t.Fatalf("two threads in 20MB: %v, want DuckDB's out of memory", err)
	}
	got, err := r.UnitMarginalL2(ctx, nil, r.key, set, sizes, grid, bound)
	if err != nil {
		t.Fatalf("in 20MB: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("in 20MB: %v, want %v", got, want)
	}
	var threads int64
	if err := e.db.QueryRowContext(ctx, "SELECT current_setting('threads')").Scan(&threads); err != nil || threads != 2 {
		t.Errorf("threads after the run on one thread: %d (%v), want 2 again", threads, err)
	}

	limit("12MB")
	_, err = r.UnitMarginalL2(ctx, nil, r.key, set, sizes, grid, bound)
	var se *StatError
	if !errors.As(err, &se) || !errors.Is(err, ErrResource) || !strings.Contains(err.Error(), "ran out of memory") || !strings.Contains(err.Error(), MemoryLimitEnv) {
		t.Errorf("in 12MB: %v, want a StatError saying the engine ran out of memory, naming %s, wrapping ErrResource", err, MemoryLimitEnv)
	}
	if strings.Contains(err.Error(), "MiB") {
		t.Errorf("in 12MB: %q quotes DuckDB's message", err)
	}

	dir := e.scratch.dir
	spilled, _ := os.ReadDir(e.scratch.spill())
	t.Logf("files in the spill folder before Close: %d", len(spilled))
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the scratch folder %s after Close: %v, want it removed", dir, err)
	}
}
