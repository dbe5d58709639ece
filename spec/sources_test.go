package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// twoTables is a spec of two joined tables a and b with the given sources
// and public flags; b's source is on line 9.
func twoTables(srcA string, publicA bool, srcB string, publicB bool) string {
	return fmt.Sprintf(`privacy: {epsilon: 1, delta: 1e-6}
tables:
  - name: a
    source: %s
    format: csv
    public: %t
    columns: {k: {type: key}, v: {type: boolean}}
  - name: b
    source: %s
    format: csv
    public: %t
    columns: {k: {type: key}, v: {type: boolean}}
join: ["a.k = b.k"]
release: {columns: [a.v]}
`, srcA, publicA, srcB, publicB)
}

// TestSourcesOnDisk: two tables reading one file are refused when one of
// them is private, however the file is reached (second spelling, symbolic
// link, hard link, linked folder); two public tables may share a file, and
// two files with the same content are two files.
func TestSourcesOnDisk(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	data := "k,v\n1,true\n"
	orig := write("t.csv", data)
	write("copy.csv", data)
	if err := os.Symlink("t.csv", filepath.Join(dir, "sym.csv")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if err := os.Link(orig, filepath.Join(dir, "hard.csv")); err != nil {
		t.Skip("no hard links here:", err)
	}
	if err := os.Symlink(".", filepath.Join(dir, "here")); err != nil {
		t.Fatal(err)
	}
	specPath := filepath.Join(dir, "synth.yaml")

	const selfJoin = "self-joins (two private tables read from one file) are not supported"
	const publicPrivate = "a public table must never change between neighbouring instances"
	for _, tc := range []struct {
		name             string
		srcB             string
		publicA, publicB bool
		msg              string // "" = accepted
	}{
		{"same name", "t.csv", false, false, `"t.csv" is also the source of private table "a" (line 4): ` + selfJoin},
		{"absolute spelling", filepath.Join(dir, ".", "t.csv"), false, false, `is the same file as the source "t.csv" of private table "a" (line 4): ` + selfJoin},
		{"unclean absolute", dir + "/x/../t.csv", false, false, selfJoin},
		{"symbolic link", "sym.csv", false, false, `"sym.csv" is the same file as the source "t.csv" of private table "a" (line 4): ` + selfJoin},
		{"hard link", "hard.csv", false, false, selfJoin},
		{"linked folder", "here/t.csv", false, false, selfJoin},
		{"public via link", "sym.csv", false, true, `public table "b" and private table "a" read the same file; ` + publicPrivate},
		{"private via link", "sym.csv", true, false, `of public table "a" (line 4): public table "a" and private table "b" read the same file; ` + publicPrivate},
		{"both public", "sym.csv", true, true, ""},
		{"a copy", "copy.csv", false, false, ""},
		{"missing file, other name", "missing.csv", false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := twoTables("t.csv", tc.publicA, tc.srcB, tc.publicB)
			if err := os.WriteFile(specPath, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Load(specPath)
			if tc.publicA && tc.publicB {
				// Sharing is fine, but a spec without a private table is
				// refused on its own (checkPrivate).
				if err == nil || !strings.Contains(err.Error(), "every table is public") {
					t.Fatalf("got %v, want the every-table-is-public error", err)
				}
				return
			}
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if len(s.Tables) != 2 {
					t.Fatalf("tables: %+v", s.Tables)
				}
				return
			}
			var e *Error
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &e) {
				t.Fatalf("got %v, want a *spec.Error", err)
			}
			if e.File != specPath || e.Line != 9 || e.Key != "tables[1].source" {
				t.Errorf("got file %q line %d key %q, want %q 9 tables[1].source", e.File, e.Line, e.Key, specPath)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("message %q does not contain %q", err, tc.msg)
			}
		})
	}
}

// TestSourcesShared: sharing is checked against every earlier table, not
// only the previous one, and several public tables may read one file.
func TestSourcesShared(t *testing.T) {
	src := `privacy: {epsilon: 1, delta: 1e-6}
tables:
  - {name: a, source: p.csv, public: true, columns: {k: {type: key}}}
  - {name: b, source: p.csv, public: true, columns: {k: {type: key}}}
  - {name: c, source: c.csv, columns: {k: {type: key}, v: {type: boolean}}}
  - {name: d, source: s3://bucket/d.csv, columns: {k: {type: key}}}
  - {name: e, source: s3://bucket/e.csv, columns: {k: {type: key}}}
join: ["a.k = c.k", "b.k = c.k", "d.k = c.k", "e.k = c.k"]
release: {columns: [v]}
`
	if _, err := Parse([]byte(src), "ok.yaml"); err != nil {
		t.Fatalf("refused: %v", err)
	}
	bad := strings.Replace(src, "name: e, source: s3://bucket/e.csv", "name: e, source: ./p.csv", 1)
	_, err := Parse([]byte(bad), "bad.yaml")
	var e *Error
	if !errors.As(err, &e) || e.File != "bad.yaml" || e.Line != 7 || e.Key != "tables[4].source" ||
		!strings.Contains(err.Error(), `"./p.csv" is the same file as the source "p.csv" of public table "a" (line 3): public table "a" and private table "e"`) {
		t.Errorf("got %v (%+v)", err, e)
	}
}
