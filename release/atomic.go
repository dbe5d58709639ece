package release

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrFileDone is returned when a [File] is written to, finished or committed
// after it was committed or aborted.
var ErrFileDone = errors.New("release: file already committed or aborted")

// File is an output file written atomically. Its bytes go to a temporary
// file in the destination folder, named "." + base name + a random part +
// ".tmp" (so that listings and globs for the final name skip it), and only
// [File.Commit] makes them visible under the final path, by one rename.
// Until then a file with the final name, if any, is left untouched; after an
// error or [File.Abort] the temporary file is removed and the final path is
// as it was.
//
// A File moves through open → finished → committed, or to aborted from any
// state but committed. Not safe for concurrent use.
type File struct {
	path  string
	perm  os.FileMode
	tmp   *os.File // nil once finished (closed)
	name  string   // temporary path
	state fileState
}

type fileState int

const (
	fileOpen fileState = iota
	fileFinished
	fileCommitted
	fileAborted
)

// CreateFile starts an atomic write of path. perm is given to the file at
// [File.Finish] as it is (the umask is not applied). The folder of path must
// exist, and path must not be a folder.
func CreateFile(path string, perm os.FileMode) (*File, error) {
	dir, base := filepath.Split(path)
	if base == "" {
		return nil, fmt.Errorf("release: output path %q names a folder, not a file", path)
	}
	if dir == "" {
		dir = "."
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("release: output path %s is a folder", path)
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("release: creating a temporary file for %s: %w", path, err)
	}
	return &File{path: path, perm: perm, tmp: tmp, name: tmp.Name()}, nil
}

// Path returns the final path of f.
func (f *File) Path() string { return f.path }

// TempPath returns the path of f's temporary file; it no longer exists once
// f is committed or aborted.
func (f *File) TempPath() string { return f.name }

// Write writes p to the temporary file. It implements [io.Writer]. An error
// leaves f open: the caller decides whether to abort.
func (f *File) Write(p []byte) (int, error) {
	if f.state != fileOpen {
		return 0, ErrFileDone
	}
	n, err := f.tmp.Write(p)
	if err != nil {
		err = fmt.Errorf("release: writing %s: %w", f.name, err)
	}
	return n, err
}

// Finish syncs the temporary file to stable storage, closes it and sets its
// permissions, without renaming it: f is then ready for a cheap, nearly
// infallible [File.Commit]. Finishing a finished file does nothing. On error
// f is aborted.
func (f *File) Finish() error {
	switch f.state {
	case fileFinished:
		return nil
	case fileOpen:
	default:
		return ErrFileDone
	}
	err := f.tmp.Sync()
	if err == nil {
		err = f.tmp.Chmod(f.perm)
	}
	if cerr := f.tmp.Close(); err == nil {
		err = cerr
	}
	f.tmp = nil
	if err != nil {
		f.Abort()
		return fmt.Errorf("release: finishing %s: %w", f.path, err)
	}
	f.state = fileFinished
	return nil
}

// Commit finishes f if needed and renames its temporary file onto the final
// path, replacing any file there, then syncs the folder (best effort: an
// error syncing the folder is ignored, since the file is already visible).
// On error f is aborted and the final path is as it was.
func (f *File) Commit() error {
	if err := f.Finish(); err != nil {
		return err
	}
	if err := os.Rename(f.name, f.path); err != nil {
		f.Abort()
		return fmt.Errorf("release: committing %s: %w", f.path, err)
	}
	f.state = fileCommitted
	syncDir(filepath.Dir(f.path))
	return nil
}

// Abort closes and removes the temporary file. It does nothing after
// [File.Commit] or a previous Abort, so `defer f.Abort()` is safe.
func (f *File) Abort() {
	if f.state == fileCommitted || f.state == fileAborted {
		return
	}
	if f.tmp != nil {
		f.tmp.Close()
		f.tmp = nil
	}
	os.Remove(f.name)
	f.state = fileAborted
}

// syncDir syncs a folder so that a rename in it survives a crash. Not every
// platform can sync a folder; errors are ignored.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}

// WriteFileAtomic writes data to path atomically: either path holds all of
// data with permissions perm, or it is as it was before the call (no partial
// file, no temporary file left behind). It is meant for the JSON sidecar
// report and other small outputs.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := CreateFile(path, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// Group commits several files together: all are written and finished
// (synced) first, then renamed one by one in the order they were added.
//
// A group is not transactional: it takes one rename per file, and a crash
// or an error between two renames leaves the files renamed so far in place
// and the others not. Add the files so that the last one is the one readers
// look for: for a release, the JSON report first and the Parquet file last.
// Then a new Parquet file is never visible without its new report beside
// it; the failure case is a new report beside the previous run's Parquet
// file, which is detectable because every Parquet file carries its own
// report in its key-value metadata.
//
// The zero value is an empty group ready to use. Not safe for concurrent
// use.
type Group struct {
	files []*File
}

// Add appends f to the group; g now owns it (Commit or Abort ends it).
func (g *Group) Add(f *File) { g.files = append(g.files, f) }

// Create starts an atomic write of path ([CreateFile]) and adds it to g.
func (g *Group) Create(path string, perm os.FileMode) (*File, error) {
	f, err := CreateFile(path, perm)
	if err != nil {
		return nil, err
	}
	g.Add(f)
	return f, nil
}

// Commit finishes every file of g, then renames them in order. If a file
// cannot be finished, every file is aborted and no final path changes. If a
// rename fails, the files before it stay committed, it and the rest are
// aborted, and the error names the committed files.
func (g *Group) Commit() error {
	for _, f := range g.files {
		if err := f.Finish(); err != nil {
			g.Abort()
			return err
		}
	}
	for i, f := range g.files {
		if err := f.Commit(); err != nil {
			g.Abort()
			if i == 0 {
				return err
			}
			done := make([]string, i)
			for k := range i {
				done[k] = g.files[k].path
			}
			return fmt.Errorf("%w (already committed: %q)", err, done)
		}
	}
	return nil
}

// Abort aborts every file of g that is not committed.
func (g *Group) Abort() {
	for _, f := range g.files {
		f.Abort()
	}
}
