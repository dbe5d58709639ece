package publish

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/synth-dp/synth/internal/releasetest"
	"github.com/synth-dp/synth/output/layout"
)

// writeRelease writes a stand-in release (the Parquet file and the
// report, both holding content) into dir.
func writeRelease(t *testing.T, dir, content string) {
	t.Helper()
	for _, f := range []string{layout.ParquetName, layout.ReportName} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// reportOf returns the stand-in report in dir.
func reportOf(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, layout.ReportName))
	return string(b)
}

// TestStageBusy: while one run holds a target (from NewStage until its
// Publish or Abort), a second run into the same folder is refused with
// ErrBusy, with or without overwrite, before it could read any data; once
// the first has published (or aborted), the next run proceeds. A lock file
// a killed run left behind (no process holds its flock) does not block,
// and a finished run leaves no lock file.
func TestStageBusy(t *testing.T) {
	if !locksSupported {
		t.Skip("no flock here")
	}
	parent := t.TempDir()
	target := filepath.Join(parent, "rel")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	writeRelease(t, target, "old")
	first, err := NewStage(target, true)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Abort()
	// Into a new folder, without overwrite, as well.
	fresh := filepath.Join(parent, "new")
	firstNew, err := NewStage(fresh, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, second := range []struct {
		target    string
		overwrite bool
	}{{target, true}, {fresh, false}} {
		st, err := NewStage(second.target, second.overwrite)
		if err == nil {
			st.Abort()
		}
		if !errors.Is(err, ErrBusy) {
			t.Fatalf("a second run into %s (overwrite %v) while the first holds it: err = %v, want ErrBusy", second.target, second.overwrite, err)
		}
	}
	firstNew.Abort()
	writeRelease(t, first.Dir(), "first")
	if _, err := first.Publish(true); err != nil {
		t.Fatal(err)
	}
	releasetest.AssertOnly(t, parent, "rel")

	// Published: the next run proceeds; so does the one after an Abort.
	for range 2 {
		st, err := NewStage(target, true)
		if err != nil {
			t.Fatalf("a run after the first published: %v", err)
		}
		st.Abort()
	}
	releasetest.AssertOnly(t, parent, "rel")

	// A killed run's lock file: present, but nobody holds its flock.
	if err := os.WriteFile(lockPath(target), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := NewStage(target, true)
	if err != nil {
		t.Fatalf("a stale lock file blocked the run: %v", err)
	}
	writeRelease(t, st.Dir(), "after a kill")
	if _, err := st.Publish(true); err != nil || reportOf(target) != "after a kill" {
		t.Fatalf("publish after a stale lock: %v, %q", err, reportOf(target))
	}
	releasetest.AssertOnly(t, parent, "rel")
}

// TestStageOverwriteReadOnly: --overwrite of a release in a folder whose
// entries cannot be removed is refused up front (ErrNotWritable), the old
// release left whole and alone in the folder, instead of being swapped out
// into a sibling nobody can delete. Root may write anywhere, so the test
// needs another user: setpriv --reuid=65534 --regid=65534 --clear-groups
// runs a compiled test binary as nobody.
func TestStageOverwriteReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root can write into a read-only folder; run the test binary as another user")
	}
	parent := t.TempDir()
	target := filepath.Join(parent, "rel")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	writeRelease(t, target, "old")
	if err := os.Chmod(target, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Let t.TempDir remove whatever is left, read-only folders too.
		filepath.WalkDir(parent, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
	st, err := NewStage(target, true)
	if err == nil {
		writeRelease(t, st.Dir(), "new")
		_, perr := st.Publish(true)
		ents, _ := os.ReadDir(parent)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("NewStage accepted a read-only folder; Publish: %v; the parent now holds %q", perr, names)
	}
	if !errors.Is(err, ErrNotWritable) {
		t.Fatalf("err = %v, want ErrNotWritable", err)
	}
	if reportOf(target) != "old" {
		t.Errorf("the old release changed: %q", reportOf(target))
	}
	releasetest.AssertOnly(t, parent, "rel")
	releasetest.AssertOnly(t, target, layout.ReportName, layout.ParquetName)
}
