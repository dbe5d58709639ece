package release

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	if err := WriteFileAtomic(path, []byte(`{"v":1}`), 0o640); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, path); got != `{"v":1}` {
		t.Errorf("content %q", got)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o640 {
		t.Errorf("permissions %v, want 0640", st.Mode().Perm())
	}
	// Overwrite.
	if err := WriteFileAtomic(path, []byte(`{"v":2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, path); got != `{"v":2}` {
		t.Errorf("content after overwrite %q", got)
	}
	assertOnly(t, dir, "report.json")
}

func TestWriteFileAtomicErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"missing/report.json", "sub", "sub/"} {
		err := WriteFileAtomic(filepath.Join(dir, p), []byte("x"), 0o644)
		if err == nil || !strings.HasPrefix(err.Error(), "release: ") {
			t.Errorf("WriteFileAtomic(%q) = %v, want a release: error", p, err)
		}
	}
	if _, err := CreateFile(dir+string(os.PathSeparator), 0o644); err == nil {
		t.Error("CreateFile of a path ending in a separator succeeded")
	}
	assertOnly(t, dir, "sub")
	assertOnly(t, filepath.Join(dir, "sub"))
}

func TestFileLifecycle(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "data.bin")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := CreateFile(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	tmp := f.TempPath()
	if filepath.Dir(tmp) != dir || !strings.HasPrefix(filepath.Base(tmp), ".data.bin.") || !strings.HasSuffix(tmp, ".tmp") {
		t.Errorf("temporary file %q is not a hidden .tmp file beside %q", tmp, path)
	}
	if f.Path() != path {
		t.Errorf("Path() = %q", f.Path())
	}
	if _, err := f.Write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := f.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := f.Finish(); err != nil {
		t.Errorf("second Finish: %v", err)
	}
	if _, err := f.Write([]byte("more")); !errors.Is(err, ErrFileDone) {
		t.Errorf("Write after Finish = %v, want ErrFileDone", err)
	}
	if got := readString(t, path); got != "old" {
		t.Errorf("final path changed before Commit: %q", got)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, path); got != "new" {
		t.Errorf("content after Commit %q", got)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary file still there: %v", err)
	}
	if err := f.Commit(); !errors.Is(err, ErrFileDone) {
		t.Errorf("second Commit = %v, want ErrFileDone", err)
	}
	f.Abort() // no effect after Commit
	assertOnly(t, dir, "data.bin")
	if got := readString(t, path); got != "new" {
		t.Errorf("Abort after Commit changed the file: %q", got)
	}
}

func TestFileAbort(t *testing.T) {
	for _, finish := range []bool{false, true} {
		dir := t.TempDir()
		path := filepath.Join(dir, "data.bin")
		if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := CreateFile(path, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("new")); err != nil {
			t.Fatal(err)
		}
		if finish {
			if err := f.Finish(); err != nil {
				t.Fatal(err)
			}
		}
		f.Abort()
		f.Abort()
		assertOnly(t, dir, "data.bin")
		if got := readString(t, path); got != "old" {
			t.Errorf("finish=%v: earlier file changed to %q", finish, got)
		}
		if err := f.Commit(); !errors.Is(err, ErrFileDone) {
			t.Errorf("finish=%v: Commit after Abort = %v, want ErrFileDone", finish, err)
		}
	}
}

func TestGroupCommit(t *testing.T) {
	dir := t.TempDir()
	var g Group
	defer g.Abort()
	a, err := g.Create(filepath.Join(dir, "report.json"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	b, err := CreateFile(filepath.Join(dir, "out.parquet"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	g.Add(b)
	a.Write([]byte("A"))
	b.Write([]byte("B"))
	for _, name := range []string{"report.json", "out.parquet"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s visible before Commit (%v)", name, err)
		}
	}
	if err := g.Commit(); err != nil {
		t.Fatal(err)
	}
	assertOnly(t, dir, "out.parquet", "report.json")
	if readString(t, filepath.Join(dir, "report.json")) != "A" || readString(t, filepath.Join(dir, "out.parquet")) != "B" {
		t.Error("wrong contents after Commit")
	}
}

func TestGroupAbort(t *testing.T) {
	dir := t.TempDir()
	var g Group
	for _, name := range []string{"a", "b"} {
		f, err := g.Create(filepath.Join(dir, name), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(name))
	}
	g.Abort()
	assertOnly(t, dir)
	if err := g.Commit(); !errors.Is(err, ErrFileDone) {
		t.Errorf("Commit after Abort = %v, want ErrFileDone", err)
	}
	assertOnly(t, dir)
}

// A rename that fails part-way leaves the earlier files committed and
// removes the temporary files of the rest; the error names what was
// committed.
func TestGroupCommitPartialFailure(t *testing.T) {
	dir := t.TempDir()
	var g Group
	defer g.Abort()
	first, err := g.Create(filepath.Join(dir, "report.json"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	second, err := g.Create(filepath.Join(dir, "out.parquet"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	third, err := g.Create(filepath.Join(dir, "extra.txt"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	first.Write([]byte("A"))
	second.Write([]byte("B"))
	third.Write([]byte("C"))
	// A non-empty folder appears where the second file goes: its rename
	// fails.
	if err := os.MkdirAll(filepath.Join(dir, "out.parquet", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err = g.Commit()
	if err == nil {
		t.Fatal("Commit succeeded onto a non-empty folder")
	}
	if !strings.HasPrefix(err.Error(), "release: ") || !strings.Contains(err.Error(), "report.json") {
		t.Errorf("error %q should be prefixed and name the committed report.json", err)
	}
	assertOnly(t, dir, "out.parquet", "report.json")
	if st, err := os.Stat(filepath.Join(dir, "out.parquet")); err != nil || !st.IsDir() {
		t.Errorf("out.parquet should still be the folder: %v", err)
	}
}
