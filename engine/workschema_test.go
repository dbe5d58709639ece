package engine

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/spec"
)

// TestEngineFileUserObjects: on an existing database file holding a table
// named like a spec table, Load, the statistics and Close touch none of
// the user's objects, and no table of the engine stays in the file.
func TestEngineFileUserObjects(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "user.duckdb")
	decoy := WorkSchemaPrefix + "0123456789abcdef" // named like ours, but no marker: the user's
	stale := WorkSchemaPrefix + "fedcba9876543210" // a crashed engine's left-over
	exec(t, path,
		"CREATE TABLE orders (user_col VARCHAR)",
		"INSERT INTO orders VALUES ('user-row')",
		"CREATE TABLE notes AS SELECT 42 AS n",
		"CREATE VIEW user_view AS SELECT n + 1 AS m FROM notes",
		"CREATE SCHEMA user_schema",
		"CREATE TABLE user_schema.orders (x INTEGER)",
		`CREATE SCHEMA "`+decoy+`"`,
		`CREATE TABLE "`+decoy+`".t AS SELECT 1 AS x`,
		`CREATE SCHEMA "`+stale+`"`,
		`CREATE TABLE "`+stale+`"."`+ownerTable+`" (owner VARCHAR)`,
		`CREATE TABLE "`+stale+`".orders AS SELECT 'old-private' AS o_orderkey`,
	)

	var rows [][]string
	for i := range 300 {
		rows = append(rows, []string{fmt.Sprintf("secretkey-%04d", i), "c", "100", "3", "2-HIGH", "2020-03-04", "t"})
	}
	src := writeCSV(t, dir, "orders.csv", ordersHeader, rows)
	s := ordersSpec(src, nil)
	e, err := Open(ctx, "duckdb:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	h, err := s.Hypergraph()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := e.JoinSize(ctx, h); err != nil || n != 300 {
		t.Fatalf("JoinSize = %d, %v; want 300 (the loaded rows, not the user's table)", n, err)
	}
	if _, err := e.Histogram(ctx, h, []spec.ColumnRef{{Table: "orders", Column: "o_qty"}}, []int{10}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var got string
	if err := db.QueryRow("SELECT string_agg(user_col, ',') FROM main.orders").Scan(&got); err != nil || got != "user-row" {
		t.Errorf("user table orders = %q, %v; want its one row user-row", got, err)
	}
	var m int
	if err := db.QueryRow("SELECT m FROM user_view").Scan(&m); err != nil || m != 43 {
		t.Errorf("user view = %d, %v; want 43", m, err)
	}
	objs := list(t, db, "SELECT table_schema || '.' || table_name FROM information_schema.tables WHERE table_catalog = current_database() ORDER BY 1")
	want := []string{decoy + ".t", "main.notes", "main.orders", "main.user_view", "user_schema.orders"}
	if !slices.Equal(objs, want) {
		t.Errorf("tables and views in the file = %v, want the user's %v", objs, want)
	}
	schemas := list(t, db, "SELECT schema_name FROM information_schema.schemata WHERE catalog_name = current_database() ORDER BY 1")
	for _, s := range schemas {
		if workSchemaRE.MatchString(s) && s != decoy {
			t.Errorf("schema %s left in the file", s)
		}
	}
	if !slices.Contains(schemas, decoy) || !slices.Contains(schemas, "user_schema") {
		t.Errorf("schemas = %v, want the user's %s and user_schema kept", schemas, decoy)
	}
	cols := list(t, db, "SELECT table_schema || '.' || table_name || '.' || column_name FROM information_schema.columns WHERE column_name LIKE 'o\\_%' ESCAPE '\\'")
	if len(cols) > 0 {
		t.Errorf("columns of the spec table left in the file: %v", cols)
	}
	db.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("secretkey-")); n > 0 {
		t.Logf("%d bytes of private keys remain in unused blocks of the file (DuckDB does not zero freed blocks)", n)
	}
}

// exec runs statements on a database file and closes it.
func exec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// list returns the single text column of a query's rows.
func list(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEngineTwoOnOneFile: two engines open on one file (one database
// instance in the driver) keep their tables apart, and the second's Open
// does not take the first's schema for a left-over.
func TestEngineTwoOnOneFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "x.duckdb")
	src := writeCSV(t, dir, "orders.csv", ordersHeader, ordersRows())
	a, err := Open(ctx, "duckdb:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Load(ctx, ordersSpec(src, nil)); err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, "duckdb:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if n := tableCount(t, a, "orders"); n != 4 {
		t.Errorf("first engine's orders has %d rows after a second Open, want 4", n)
	}
	var n int
	err = b.db.QueryRow("SELECT count(*) FROM orders").Scan(&n)
	if err == nil || !strings.Contains(err.Error(), "orders") {
		t.Errorf("second engine reads the first's orders (%d rows, %v); want no such table", n, err)
	}
}
