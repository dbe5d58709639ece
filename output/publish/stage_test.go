package publish

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/output/layout"
)

// TestStagePublish covers the publish cases: a new folder, an empty
// folder, a previous release (refused, then replaced with overwrite), a
// foreign folder, and a release appearing while the run goes.
func TestStagePublish(t *testing.T) {
	write := func(dir, content string) {
		for _, f := range []string{layout.ParquetName, layout.ReportName} {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	content := func(dir string) string {
		b, _ := os.ReadFile(filepath.Join(dir, layout.ReportName))
		return string(b)
	}
	parent := t.TempDir()
	target := filepath.Join(parent, "nested", "rel")
	st, err := NewStage(target, false)
	if err != nil {
		t.Fatal(err)
	}
	write(st.Dir(), "one")
	if replaced, err := st.Publish(false); err != nil || replaced {
		t.Fatalf("publish new: %v, %v", replaced, err)
	}
	if content(target) != "one" {
		t.Fatal("not published")
	}
	releasetest.AssertOnly(t, filepath.Dir(target), "rel")

	if _, err := NewStage(target, false); !errors.Is(err, ErrExists) {
		t.Errorf("NewStage over a release without overwrite: %v", err)
	}
	st, err = NewStage(target, true)
	if err != nil {
		t.Fatal(err)
	}
	write(st.Dir(), "two")
	if replaced, err := st.Publish(true); err != nil || !replaced {
		t.Fatalf("publish over: %v, %v", replaced, err)
	}
	if content(target) != "two" {
		t.Fatal("not replaced")
	}
	releasetest.AssertOnly(t, filepath.Dir(target), "rel")
	releasetest.AssertOnly(t, target, layout.ReportName, layout.ParquetName)

	// An empty folder is replaced without overwrite.
	empty := filepath.Join(parent, "empty")
	os.Mkdir(empty, 0o755)
	st, err = NewStage(empty, false)
	if err != nil {
		t.Fatal(err)
	}
	write(st.Dir(), "three")
	if _, err := st.Publish(false); err != nil || content(empty) != "three" {
		t.Fatalf("publish into an empty folder: %v", err)
	}

	// A release appearing meanwhile is not replaced without overwrite.
	late := filepath.Join(parent, "late")
	st, err = NewStage(late, false)
	if err != nil {
		t.Fatal(err)
	}
	write(st.Dir(), "mine")
	os.Mkdir(late, 0o755)
	write(late, "theirs")
	if _, err := st.Publish(false); !errors.Is(err, ErrExists) || content(late) != "theirs" {
		t.Errorf("publish over a release that appeared: %v, content %q", err, content(late))
	}

	// A folder with foreign files is never replaced.
	foreign := filepath.Join(parent, "foreign")
	os.Mkdir(foreign, 0o755)
	os.WriteFile(filepath.Join(foreign, "thesis.tex"), nil, 0o644)
	write(foreign, "x")
	if _, err := NewStage(foreign, true); err == nil || !strings.Contains(err.Error(), "thesis.tex") {
		t.Errorf("NewStage over a foreign folder: %v", err)
	}

	// A tables release (a tables folder of Parquet files beside the
	// release's files) is replaced with overwrite, refused without it; a
	// tables folder holding anything else is foreign.
	tables := filepath.Join(parent, "tables-release")
	os.MkdirAll(filepath.Join(tables, layout.TablesDir), 0o755)
	write(tables, "old")
	os.WriteFile(filepath.Join(tables, layout.TablesDir, "orders.parquet"), nil, 0o644)
	if _, err := NewStage(tables, false); !errors.Is(err, ErrExists) {
		t.Errorf("NewStage over a tables release without overwrite: %v", err)
	}
	st, err = NewStage(tables, true)
	if err != nil {
		t.Fatalf("NewStage over a tables release with overwrite: %v", err)
	}
	write(st.Dir(), "new")
	if _, err := st.Publish(true); err != nil || content(tables) != "new" {
		t.Fatalf("publish over a tables release: %v", err)
	}
	os.MkdirAll(filepath.Join(tables, layout.TablesDir), 0o755)
	os.WriteFile(filepath.Join(tables, layout.TablesDir, "notes.txt"), nil, 0o644)
	if _, err := NewStage(tables, true); err == nil || !strings.Contains(err.Error(), layout.TablesDir) {
		t.Errorf("NewStage over a tables folder holding notes.txt: %v", err)
	}

	// Abort leaves nothing.
	st, err = NewStage(filepath.Join(parent, "aborted"), false)
	if err != nil {
		t.Fatal(err)
	}
	write(st.Dir(), "x")
	st.Abort()
	releasetest.AssertOnly(t, parent, "empty", "foreign", "late", "nested", "tables-release")
}

// TestCleanStaleStages: a staging folder whose lock is free (its run was
// killed) is removed by CleanStale; a live run's (locked) one and foreign
// folders with similar names are not.
func TestCleanStaleStages(t *testing.T) {
	if !locksSupported {
		t.Skip("no flock here")
	}
	parent := t.TempDir()
	target := filepath.Join(parent, "rel")
	dead, err := NewStage(target, false)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dead.Dir(), layout.ParquetName), []byte("partial"), 0o644)
	// As if killed: the kernel drops its locks, the files stay.
	dead.lock.Close()
	dead.tlock.Close()
	live, err := NewStage(target, false)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Abort()
	// Look-alikes that are not ours: a folder holding other files, a file.
	other := filepath.Join(parent, ".rel.77.tmp")
	os.Mkdir(other, 0o755)
	os.WriteFile(filepath.Join(other, "data.csv"), nil, 0o644)
	os.WriteFile(filepath.Join(parent, ".rel.78.tmp"), nil, 0o644)

	removed, err := CleanStale(target)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != dead.Dir() {
		t.Errorf("removed %q, want only %s", removed, dead.Dir())
	}
	want := []string{".rel.77.tmp", ".rel.78.tmp", ".rel.lock", filepath.Base(live.Dir())}
	slices.Sort(want)
	releasetest.AssertOnly(t, parent, want...)
	if _, err := live.Publish(false); err != nil {
		t.Fatal(err)
	}
}

// TestStageSymlinkAndBadNames: a symbolic link to a release folder is
// followed (the folder it names is replaced, the link stays); "." and ".."
// are refused.
func TestStageSymlinkAndBadNames(t *testing.T) {
	parent := t.TempDir()
	real := filepath.Join(parent, "real")
	link := filepath.Join(parent, "link")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", link); err != nil {
		t.Fatal(err)
	}
	for i, content := range []string{"one", "two"} {
		st, err := NewStage(link, i > 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{layout.ParquetName, layout.ReportName} {
			if err := os.WriteFile(filepath.Join(st.Dir(), f), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.Publish(i > 0); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(link, layout.ReportName)); err != nil || string(b) != content {
			t.Fatalf("through the link: %q, %v; want %q", b, err, content)
		}
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	releasetest.AssertOnly(t, parent, "link", "real")
	for _, bad := range []string{".", "..", string(filepath.Separator)} {
		if st, err := NewStage(bad, true); err == nil {
			st.Abort()
			t.Errorf("NewStage(%q): no error", bad)
		}
	}
}

// TestStagePublishFallback: where the atomic exchange is not available,
// Publish moves the previous release aside and renames the new one in:
// the result is the new release, nothing left beside it.
func TestStagePublishFallback(t *testing.T) {
	defer func(f func(a, b string) error) { exchange = f }(exchange)
	exchange = func(a, b string) error { return errExchangeUnsupported }
	target := filepath.Join(t.TempDir(), "rel")
	for i, content := range []string{"one", "two", "three"} {
		st, err := NewStage(target, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{layout.ParquetName, layout.ReportName} {
			if err := os.WriteFile(filepath.Join(st.Dir(), f), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if replaced, err := st.Publish(true); err != nil || replaced != (i > 0) {
			t.Fatalf("publish %d: %v, %v", i, replaced, err)
		}
		if b, _ := os.ReadFile(filepath.Join(target, layout.ParquetName)); string(b) != content {
			t.Fatalf("publish %d: %q", i, b)
		}
		releasetest.AssertOnly(t, filepath.Dir(target), "rel")
		releasetest.AssertOnly(t, target, layout.ReportName, layout.ParquetName)
	}
}
