package release

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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
	tmp, err := os.CreateTemp(dir, tempPrefix(base)+"*"+tempSuffix)
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

// Commit finishes every file of g, checks that every temporary file is
// still there (another process, such as [CleanStale] misjudging a stalled
// run, may have removed one), then renames them in order. If a file cannot
// be finished or its temporary file is gone, every file is aborted and no
// final path changes. If a rename fails, the files before it stay
// committed, it and the rest are aborted, and the error names the committed
// files.
func (g *Group) Commit() error {
	for _, f := range g.files {
		if err := f.Finish(); err != nil {
			g.Abort()
			return err
		}
	}
	for _, f := range g.files {
		if _, err := os.Lstat(f.name); err != nil {
			g.Abort()
			return fmt.Errorf("release: committing %s: temporary file: %w", f.path, err)
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

// Temporary file names: "." + base name + "." + random part + ".tmp", where
// the random part is what [os.CreateTemp] puts in place of its "*": the
// decimal form of a uint32, without leading zeros. [isTempName] recognises
// exactly these names; TestTempNamesMatch ties the two together.
const tempSuffix = ".tmp"

func tempPrefix(base string) string { return "." + base + "." }

// isTempName reports whether name is a name [CreateFile] gives the
// temporary file of a file called base.
func isTempName(name, base string) bool {
	rnd, ok := strings.CutPrefix(name, tempPrefix(base))
	if !ok {
		return false
	}
	rnd, ok = strings.CutSuffix(rnd, tempSuffix)
	if !ok {
		return false
	}
	v, err := strconv.ParseUint(rnd, 10, 32)
	return err == nil && strconv.FormatUint(v, 10) == rnd
}

// StaleAge is how long a temporary file must have gone unmodified before
// [CleanStale] removes it.
//
// Nothing stops two releases from writing into one output folder (the last
// commit wins), so a temporary file may belong to a live run. [Run] creates
// the Parquet temporary file only after the mechanism has run, and from then
// on the file grows whenever the Parquet writer's 32 KiB output buffer
// fills: the rows come in runs of identical rows and compress well, so that
// is every few million rows, a few seconds apart (38 million rows took 11 s
// in a test, a write every 2 s), plus at most one pass over the universe
// when few cells have rows. The report's temporary file is written and
// committed at once. A file untouched for ten minutes is therefore taken to
// belong to a killed run.
//
// Should the guess be wrong (a run stalled for longer, or a clock skewed by
// more than that on a network file system), the other run still publishes
// nothing partial: its [Group.Commit] finds its temporary file gone before
// renaming anything and fails, leaving the final files as they were. A lock
// would avoid the guess, but every run, including older versions and runs on
// other hosts sharing the folder, would have to take it, and a lock file
// left by a killed run would itself need cleaning.
const StaleAge = 10 * time.Minute

// staleBases are the final names of the files a release writes; CleanStale
// removes temporary files of these only.
var staleBases = []string{ParquetName, ReportName}

// CleanStale removes the temporary files a killed release left in dir:
// regular files named exactly as [CreateFile] names the temporary files of
// [ParquetName] and [ReportName] (".synthetic.parquet.<digits>.tmp",
// ".privacy-report.json.<digits>.tmp") and not modified for [StaleAge]. It
// never removes anything else: not other files with similar names, not
// folders or symbolic links, not younger temporary files, which may belong
// to a release running into the same folder (see [StaleAge]).
//
// It returns the paths it removed, in name order. A dir that does not exist
// holds nothing to clean: (nil, nil). An error reading dir is returned; an
// error removing one file does not stop the others, and the errors are
// joined. A file another cleaner removed first is skipped silently.
func CleanStale(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("release: cleaning stale temporary files: %w", err)
	}
	now := time.Now()
	var removed []string
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() || !isStaleName(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("release: cleaning stale temporary files: %w", err))
			}
			continue
		}
		// A modification time in the future (clock skew) counts as fresh.
		if now.Sub(info.ModTime()) < StaleAge {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if err := removeFile(path); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("release: removing stale temporary file: %w", err))
			}
			continue
		}
		removed = append(removed, path)
	}
	return removed, errors.Join(errs...)
}

// removeFile is os.Remove; tests replace it to make a removal fail.
var removeFile = os.Remove

// isStaleName reports whether name is a temporary file name of one of
// staleBases.
func isStaleName(name string) bool {
	for _, base := range staleBases {
		if isTempName(name, base) {
			return true
		}
	}
	return false
}
