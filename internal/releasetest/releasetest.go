// Package releasetest holds test helpers shared by the tests of the
// release packages (release, output/publish, output/synthfile, workload)
// and the packages that read their output. It is imported by tests only.
// It must not import any release package (their tests import it); see
// internal/synthfiletest for helpers that write synthetic files.
package releasetest

import (
	"context"
	"database/sql"
	"os"
	"reflect"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // the "duckdb" database/sql driver
	"github.com/parquet-go/parquet-go"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/spec"
)

// OpenDuckDB opens an in-memory DuckDB database/sql handle (extensions
// neither installed nor loaded on the fly); it is closed when the test
// ends.
func OpenDuckDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "?autoinstall_known_extensions=false&autoload_known_extensions=false")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// SQLString quotes s as a SQL string literal.
func SQLString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// OpenParquet opens a Parquet file for the test; it is closed when the
// test ends.
func OpenParquet(t testing.TB, path string) *parquet.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	return pf
}

// LoadSpec loads and validates the spec at path.
func LoadSpec(t testing.TB, path string) *spec.Spec {
	t.Helper()
	s, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// LoadedEngine opens an in-memory engine with the spec's tables loaded; it
// is closed when the test ends.
func LoadedEngine(t testing.TB, s *spec.Spec) *engine.Engine {
	t.Helper()
	eng, err := engine.Open(context.Background(), "duckdb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	if err := eng.Load(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return eng
}

// AssertOnly fails t unless dir holds exactly the named entries, given in
// name order (the order of [os.ReadDir]).
func AssertOnly(t testing.TB, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if len(got) != len(names) || (len(got) > 0 && !reflect.DeepEqual(got, names)) {
		t.Errorf("folder holds %q, want %q", got, names)
	}
}
