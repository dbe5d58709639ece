package cli

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// TestEngineCSVErrorOneLine: a CSV that does not parse is reported on one
// line naming the file and line, with none of DuckDB's own options.
func TestEngineCSVErrorOneLine(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"too many fields", "aid,size\n1,S\n2,M,extra\n3,L\n", " line 3: 3 fields, the header has 2: check quoting or the delimiter"},
		{"unterminated quote", "aid,size\n1,S\n2,\"M\n3,L\n", " line 3: unterminated or malformed quoted field"},
		{"not UTF-8", "aid,size\n1,S\n2,M\n3,\xff\n", " line 4: not valid UTF-8: convert the file to UTF-8"},
		{"duplicate header", "aid,size,aid\n1,S,1\n", " line 1: columns 1 and 3 of the header are both named \"aid\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, dir := writeTiny(t, tinyOptions{bSource: "bad.csv", bData: tc.data})
			r := run(t, "inspect", "--config", cfg)
			if r.code != ExitRuntime {
				t.Errorf("exit %d, want %d", r.code, ExitRuntime)
			}
			want := filepath.Join(dir, "bad.csv") + tc.want
			var hit string
			for _, l := range strings.Split(r.stderr, "\n") {
				if strings.Contains(l, want) {
					hit = l
				}
			}
			if hit == "" {
				t.Errorf("stderr has no line holding %q:\n%s", want, r.stderr)
			}
			for _, bad := range []string{"strict_mode", "ignore_errors", "Possible", "LINE 1"} {
				if strings.Contains(r.stderr, bad) {
					t.Errorf("stderr holds DuckDB's %q:\n%s", bad, r.stderr)
				}
			}
		})
	}
}

// TestEngineFileKeepsUserTable: --engine duckdb:PATH on a database file
// holding a table named like a spec table leaves it as it was, and leaves
// no table of synth in the file.
func TestEngineFileKeepsUserTable(t *testing.T) {
	cfg, _ := writeTiny(t, tinyOptions{})
	path := filepath.Join(t.TempDir(), "user.duckdb")
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"CREATE TABLE b (mine VARCHAR)", "INSERT INTO b VALUES ('keep me')"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	mustRun(t, "--engine", "duckdb:"+path, "inspect", "--config", cfg)
	db, err = sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var got string
	if err := db.QueryRow("SELECT string_agg(mine, ',') FROM b").Scan(&got); err != nil || got != "keep me" {
		t.Errorf("user table b = %q, %v; want its one row", got, err)
	}
	var tables string
	if err := db.QueryRow("SELECT string_agg(table_schema || '.' || table_name, ',' ORDER BY 1) FROM information_schema.tables WHERE table_catalog = current_database()").Scan(&tables); err != nil || tables != "main.b" {
		t.Errorf("tables in the file = %q, %v; want main.b only", tables, err)
	}
}
