package publish

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/output/layout"
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
	releasetest.AssertOnly(t, dir, "report.json")
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
	releasetest.AssertOnly(t, dir, "sub")
	releasetest.AssertOnly(t, filepath.Join(dir, "sub"))
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
	releasetest.AssertOnly(t, dir, "data.bin")
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
		releasetest.AssertOnly(t, dir, "data.bin")
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
	releasetest.AssertOnly(t, dir, "out.parquet", "report.json")
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
	releasetest.AssertOnly(t, dir)
	if err := g.Commit(); !errors.Is(err, ErrFileDone) {
		t.Errorf("Commit after Abort = %v, want ErrFileDone", err)
	}
	releasetest.AssertOnly(t, dir)
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
	releasetest.AssertOnly(t, dir, "out.parquet", "report.json")
	if st, err := os.Stat(filepath.Join(dir, "out.parquet")); err != nil || !st.IsDir() {
		t.Errorf("out.parquet should still be the folder: %v", err)
	}
}

// TestTempNamesMatch ties CleanStale's pattern to the names CreateFile
// really generates: if os.CreateTemp ever changed its random part, a
// temporary file left by a killed run would no longer be recognised.
func TestTempNamesMatch(t *testing.T) {
	dir := t.TempDir()
	for _, base := range []string{layout.ParquetName, layout.ReportName} {
		for range 200 {
			f, err := CreateFile(filepath.Join(dir, base), 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if name := filepath.Base(f.TempPath()); !isStaleName(name) || !isTempName(name, base) {
				t.Errorf("CreateFile's temporary name %q is not recognised", name)
			}
			f.Abort()
		}
	}
	if isStaleName(".other.csv.123.tmp") {
		t.Error("a temporary file of another name counts as ours")
	}
}

// age sets the modification time of path to d ago.
func age(t *testing.T, path string, d time.Duration) {
	t.Helper()
	old := time.Now().Add(-d)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// killed leaves the temporary file of an atomic write of dir/base behind,
// as a hard-killed run does, d ago.
func killed(t *testing.T, dir, base string, d time.Duration) string {
	t.Helper()
	f, err := CreateFile(filepath.Join(dir, base), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("partial")); err != nil {
		t.Fatal(err)
	}
	if err := f.tmp.Close(); err != nil { // no Abort: the process died
		t.Fatal(err)
	}
	age(t, f.TempPath(), d)
	return f.TempPath()
}

func TestCleanStale(t *testing.T) {
	dir := t.TempDir()
	old := StaleAge + time.Minute
	stale := []string{killed(t, dir, layout.ParquetName, old), killed(t, dir, layout.ReportName, 24*time.Hour)}
	slices.Sort(stale)
	keep := []string{
		filepath.Base(killed(t, dir, layout.ParquetName, StaleAge-time.Minute)), // may be a live run's
		filepath.Base(killed(t, dir, layout.ReportName, -time.Hour)),            // in the future: clock skew
		filepath.Base(killed(t, dir, "other.parquet", old)),                     // not a file a release writes
	}
	// Old foreign files with similar names.
	for _, name := range []string{
		layout.ParquetName, layout.ReportName,
		".synthetic.parquet.backup", "notes.tmp", ".synthetic.parquet.tmp", ".synthetic.parquet..tmp",
		".synthetic.parquet.12a.tmp", ".synthetic.parquet.-1.tmp", ".synthetic.parquet.+1.tmp",
		".synthetic.parquet.0123.tmp", ".synthetic.parquet.4294967296.tmp", "synthetic.parquet.123.tmp",
		".synthetic.parquet.123.tmp.bak", ".synthetic.parquet.123.TMP", ".SYNTHETIC.PARQUET.123.tmp",
		"x.synthetic.parquet.123.tmp", ".privacy-report.json.123.tmp~", ".privacy-report.json 123.tmp",
		"target",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
		age(t, p, 24*time.Hour)
		keep = append(keep, name)
	}
	// A folder and a symbolic link named like temporary files.
	if err := os.Mkdir(filepath.Join(dir, ".synthetic.parquet.77.tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	age(t, filepath.Join(dir, ".synthetic.parquet.77.tmp"), 24*time.Hour)
	if err := os.Symlink("target", filepath.Join(dir, ".privacy-report.json.78.tmp")); err != nil {
		t.Fatal(err)
	}
	keep = append(keep, ".synthetic.parquet.77.tmp", ".privacy-report.json.78.tmp")
	slices.Sort(keep)

	removed, err := CleanStale(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, stale) {
		t.Errorf("removed %q, want %q", removed, stale)
	}
	releasetest.AssertOnly(t, dir, keep...)
	if got := readString(t, filepath.Join(dir, "target")); got != "keep" {
		t.Errorf("symbolic link target changed: %q", got)
	}
	// Nothing left to clean.
	if removed, err := CleanStale(dir); err != nil || len(removed) != 0 {
		t.Errorf("second CleanStale = %q, %v", removed, err)
	}
}

func TestCleanStaleNoFolder(t *testing.T) {
	dir := t.TempDir()
	removed, err := CleanStale(filepath.Join(dir, "missing"))
	if err != nil || removed != nil {
		t.Errorf("CleanStale of a missing folder = %q, %v; want nothing", removed, err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	removed, err = CleanStale(file)
	var pe *fs.PathError
	if err == nil || !strings.HasPrefix(err.Error(), "release: ") || !errors.As(err, &pe) || removed != nil {
		t.Errorf("CleanStale of a file = %q, %v; want a release: error wrapping a *fs.PathError", removed, err)
	}
}

// An error removing one file is returned, joined with the others, and does
// not stop the rest.
func TestCleanStaleRemoveErrorContinues(t *testing.T) {
	dir := t.TempDir()
	a := killed(t, dir, layout.ParquetName, time.Hour)
	b := killed(t, dir, layout.ReportName, time.Hour)
	c := killed(t, dir, layout.ParquetName, time.Hour)
	defer func() { removeFile = os.Remove }()
	removeFile = func(path string) error {
		if path == b {
			return &fs.PathError{Op: "remove", Path: path, Err: fs.ErrPermission}
		}
		return os.Remove(path)
	}
	removed, err := CleanStale(dir)
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), filepath.Base(b)) {
		t.Errorf("error %v should wrap fs.ErrPermission and name %s", err, b)
	}
	want := []string{a, c}
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	releasetest.AssertOnly(t, dir, filepath.Base(b))
	// A file that vanished meanwhile (another cleaner) is no error.
	removeFile = func(path string) error { return &fs.PathError{Op: "remove", Path: path, Err: fs.ErrNotExist} }
	if removed, err := CleanStale(dir); err != nil || len(removed) != 0 {
		t.Errorf("CleanStale with the file gone = %q, %v; want nothing", removed, err)
	}
}

// A group whose temporary file disappeared (removed by a cleaner that took
// a stalled run for a dead one) renames nothing.
func TestGroupCommitTempGone(t *testing.T) {
	dir := t.TempDir()
	var g Group
	defer g.Abort()
	report, err := g.Create(filepath.Join(dir, layout.ReportName), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	data, err := g.Create(filepath.Join(dir, layout.ParquetName), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	report.Write([]byte("R"))
	data.Write([]byte("P"))
	if err := os.Remove(data.TempPath()); err != nil {
		t.Fatal(err)
	}
	err = g.Commit()
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "release: ") {
		t.Fatalf("Commit = %v, want a release: error wrapping fs.ErrNotExist", err)
	}
	releasetest.AssertOnly(t, dir)
}
