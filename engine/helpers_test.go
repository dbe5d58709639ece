package engine

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/spec"
)

// openTest opens an engine of the default DSN (embedded DuckDB in a
// temporary file) closed at the end of the test.
func openTest(t testing.TB) *Engine { t.Helper(); return openDSNTest(t, "") }

// openDSNTest opens the engine of dsn, closed (a failure reported) at the
// end of the test.
func openDSNTest(t testing.TB, dsn string) *Engine {
	t.Helper()
	e, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// writeCSV writes a CSV file with a header into dir and returns its path.
func writeCSV(t testing.TB, dir, name string, header []string, rows [][]string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := csv.NewWriter(f)
	if err := w.Write(header); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteAll(rows); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func day(s string) time.Time {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return d
}

// loadTest opens an embedded test engine, loads s into it and returns the
// engine with s's join hypergraph.
func loadTest(t testing.TB, s *spec.Spec) (*Engine, *hypergraph.Hypergraph) {
	t.Helper()
	e := openTest(t)
	if err := e.Load(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	h, err := s.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	return e, h
}

// openInPlaceTest opens the default engine reading Parquet sources in
// place ([Engine.ReadInPlace]).
func openInPlaceTest(t testing.TB) *Engine {
	t.Helper()
	e := openDSNTest(t, "")
	e.ReadInPlace(true)
	return e
}

// forEachOpenerInPlace is [forEachOpener] and the DuckDB engine reading
// Parquet sources in place, for the tests of Parquet loads.
func forEachOpenerInPlace(t *testing.T, f func(t *testing.T, open func(testing.TB) *Engine)) {
	forEachOpener(t, f)
	t.Run("duckdb in place", func(t *testing.T) { f(t, openInPlaceTest) })
}

// oneThread runs an embedded engine's queries on one DuckDB thread (SET
// threads = 1; other engines are left as they are). The oracle tests load
// many instances of a few dozen rows: each of their queries is one small
// task whatever the thread count, and the result is the same (the rows
// and their order do not depend on it: preserve_insertion_order is set),
// but with the default thread count every query's pipelines also wake
// DuckDB's idle worker thread, which cost about a fifth of these tests'
// CPU time. The loads of larger data keep the default.
func oneThread(t testing.TB, e *Engine) {
	t.Helper()
	if _, ok := e.d.(duckDB); !ok {
		return
	}
	if _, err := e.db.ExecContext(context.Background(), "SET threads = 1"); err != nil {
		t.Fatal(err)
	}
}
