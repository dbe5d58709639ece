package publish

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/synth-dp/synth/internal/failpoint"
	"github.com/synth-dp/synth/output/layout"
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

// Committed reports whether f was committed: its bytes are under its final
// path.
func (f *File) Committed() bool { return f.state == fileCommitted }

// Aborted reports whether f was aborted: its temporary file is gone and
// the final path is as it was.
func (f *File) Aborted() bool { return f.state == fileAborted }

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
// This age rule is for the temporary files older versions of release.Run wrote
// into the output folder itself (the current Run writes into a locked
// staging folder, see [NewStage], whose staleness its lock decides), and
// for staging folders where flock is not available. What follows describes
// those older runs.
//
// Nothing stops two releases from writing into one output folder (the last
// commit wins), so a temporary file may belong to a live run. release.Run creates
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

// staleBases are the final names of the files an older release version
// wrote into the output folder itself; CleanStale removes temporary files
// of these only.
var staleBases = []string{layout.ParquetName, layout.ReportName}

// CleanStale removes the temporary files a killed release left in dir:
// regular files named exactly as [CreateFile] names the temporary files of
// [layout.ParquetName] and [layout.ReportName] (".synthetic.parquet.<digits>.tmp",
// ".privacy-report.json.<digits>.tmp") and not modified for [StaleAge]. It
// never removes anything else: not other files with similar names, not
// folders or symbolic links, not younger temporary files, which may belong
// to a release running into the same folder (see [StaleAge]).
//
// It also removes the staging folders of killed runs beside dir (see
// [NewStage]): folders in dir's parent named "." + base name of dir + "." +
// digits + ".tmp", holding release files only, whose flock no live run
// holds (where flock is not available: not modified for [StaleAge]). A
// killed run leaves such a folder with its partial output, or with the
// previous release it had just swapped out.
//
// It returns the paths it removed, files in dir first, each part in name
// order. A dir that does not exist holds no temporary files, only its
// staging folders are looked for. An error reading dir is returned; an
// error removing one file does not stop the others, and the errors are
// joined. A file another cleaner removed first is skipped silently.
func CleanStale(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return cleanStaleStages(dir)
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
	stages, serr := cleanStaleStages(dir)
	removed = append(removed, stages...)
	errs = append(errs, serr)
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

// ErrExists is wrapped by the error of [NewStage] and [Stage.Publish] when
// the target already holds a release and overwriting was not asked for.
var ErrExists = errors.New("the output folder already holds a release")

var errExchangeUnsupported = errors.New("release: atomic folder exchange not supported here")

// exchange is renameExchange; tests replace it to exercise the fallback.
var exchange = renameExchange

// probeName is the probe file [NewStage] writes and removes in the staging
// folder; probeSize is its size.
const (
	probeName = ".synth-probe"
	probeSize = 64 << 10
)

// Stage is the staging folder of one release (see the package doc,
// "Release folders").
type Stage struct {
	target string
	dir    string
	lock   *os.File // flock on dir: a live run's staging folder
	tlock  *os.File // the target's lock (see lockTarget); nil once released
	done   bool
}

// NewStage checks target, takes its lock and creates its staging folder
// (see the package doc). The target must be a folder path: it may not
// exist yet (its parent folders are created), may be an empty folder, or
// may hold a previous release, which is an error wrapping [ErrExists]
// unless overwrite is set (then the folder must be writable, else
// [ErrNotWritable]). Another live run holding the target is an error
// wrapping [ErrBusy]. A symbolic link at target is followed: the release
// replaces the folder it points to.
func NewStage(target string, overwrite bool) (*Stage, error) {
	if target == "" {
		return nil, errors.New("release: empty output folder")
	}
	target = filepath.Clean(target)
	if fi, err := os.Lstat(target); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if target, err = filepath.EvalSymlinks(target); err != nil {
			return nil, fmt.Errorf("release: output folder: %w", err)
		}
	}
	if _, err := checkTarget(target, overwrite); err != nil {
		return nil, err
	}
	parent, base := filepath.Split(target)
	if parent == "" {
		parent = "."
	}
	if base == "" || base == "." || base == ".." {
		return nil, fmt.Errorf("release: output folder %q: give a folder name, not %q", target, base)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("release: creating the output folder's parent: %w", err)
	}
	tlock, err := lockTarget(target)
	if err != nil {
		return nil, err
	}
	// Under the lock, nobody else publishes into target: check again.
	if _, err := checkTarget(target, overwrite); err != nil {
		unlockTarget(tlock)
		return nil, err
	}
	var lastErr error
	for range 5 {
		dir, err := os.MkdirTemp(parent, tempPrefix(base)+"*"+tempSuffix)
		if err != nil {
			unlockTarget(tlock)
			return nil, fmt.Errorf("release: output folder %s is not writable: %w", target, err)
		}
		// A concurrent run's cleaner may take the folder for a killed run's
		// between MkdirTemp and the lock: then it is gone or locked, and a
		// new one is made.
		f, err := os.Open(dir)
		if err != nil {
			lastErr = err
			continue
		}
		ok, err := tryLock(f)
		fi, serr := f.Stat()
		pi, perr := os.Lstat(dir)
		if err != nil || !ok || serr != nil || perr != nil || !os.SameFile(fi, pi) {
			f.Close()
			lastErr = errors.Join(err, serr, perr)
			continue
		}
		s := &Stage{target: target, dir: dir, lock: f, tlock: tlock}
		if err := os.Chmod(dir, 0o755); err != nil {
			s.Abort()
			return nil, fmt.Errorf("release: output folder: %w", err)
		}
		if err := probe(filepath.Join(dir, probeName)); err != nil {
			s.Abort()
			return nil, fmt.Errorf("release: output folder %s is not writable (or the disk is full): %w", target, err)
		}
		return s, nil
	}
	unlockTarget(tlock)
	return nil, fmt.Errorf("release: could not create a staging folder beside %s: %v", target, lastErr)
}

// probe writes, syncs and removes a file of probeSize bytes.
func probe(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(make([]byte, probeSize))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if rerr := os.Remove(path); err == nil {
		err = rerr
	}
	return err
}

// checkTarget reports whether target holds a release, and fails if it is
// not a folder, holds anything else, holds a release and overwrite is not
// set, or holds a release to replace but is not writable.
func checkTarget(target string, overwrite bool) (exists bool, err error) {
	fi, err := os.Stat(target)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("release: output folder: %w", err)
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("release: output path %s is a file, not a folder", target)
	}
	isRel, foreign, err := classify(target)
	if err != nil {
		return false, fmt.Errorf("release: output folder: %w", err)
	}
	if len(foreign) > 0 {
		return false, fmt.Errorf("release: output folder %s holds files that are not part of a release (%s): a release replaces the whole folder, so give a new or empty folder, or one holding an earlier release", target, strings.Join(foreign, ", "))
	}
	if isRel && !overwrite {
		return true, fmt.Errorf("release: %w: %s; releasing again reads the data again and spends the privacy budget again (the two releases together cost the sum of their budgets); pass --overwrite to replace it, or choose another output folder", ErrExists, target)
	}
	if isRel {
		// Replacing the release swaps the folders and then removes the old
		// one's files from it: a folder whose entries cannot be removed
		// would be left beside the new release under a temporary name, for
		// good. Refuse before anything is read or spent. (Asked with
		// access(2), which writes nothing: a probe file would outlive a
		// run killed in between.)
		if err := writable(target); err != nil {
			return true, fmt.Errorf("release: %w: %s holds a release that --overwrite could not remove afterwards (%v); make the folder writable, or choose another output folder", ErrNotWritable, target, err)
		}
	}
	return isRel, nil
}

// isReleaseFile reports whether a regular file of this name belongs in a
// release folder (or its staging folder): the Parquet file, the reports
// (privacy-report.json and any other privacy-report.* or synthetic.* file,
// such as a rendered report), [CreateFile]'s temporary files of them, and
// the probe.
func isReleaseFile(name string) bool {
	return name == layout.ParquetName || name == layout.ReportName || name == probeName ||
		strings.HasPrefix(name, "privacy-report.") || strings.HasPrefix(name, "synthetic.") ||
		strings.HasPrefix(name, ".synthetic.") || strings.HasPrefix(name, ".privacy-report.") && strings.HasSuffix(name, tempSuffix)
}

// classify lists dir: isRel when it holds the Parquet file or the report,
// foreign the entries that are not release files (at most 5 named).
func classify(dir string) (isRel bool, foreign []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, nil, err
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() && name == layout.TablesDir {
			ok, err := isTablesDir(filepath.Join(dir, name))
			if err != nil {
				return false, nil, err
			}
			if ok {
				continue // a tables release's synthetic tables
			}
		}
		if !e.Type().IsRegular() || !isReleaseFile(name) {
			n++
			if len(foreign) < 5 {
				foreign = append(foreign, name)
			}
			continue
		}
		if name == layout.ParquetName || name == layout.ReportName {
			isRel = true
		}
	}
	if n > len(foreign) {
		foreign = append(foreign, fmt.Sprintf("and %d more", n-len(foreign)))
	}
	return isRel, foreign, nil
}

// isTablesDir reports whether dir holds nothing but Parquet files: the
// tables of a tables release (layout.TablesDir), which a release replaces
// with the rest of the folder.
func isTablesDir(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || filepath.Ext(e.Name()) != ".parquet" {
			return false, nil
		}
	}
	return true, nil
}

// Dir returns the staging folder, where the run writes its files.
func (s *Stage) Dir() string { return s.dir }

// Target returns the folder the release is published as.
func (s *Stage) Target() string { return s.target }

// Publish makes the staging folder the target, atomically (see the package
// doc), and reports whether a previous release was replaced. The files
// in the staging folder must be complete and synced. Without overwrite, a
// release that appeared at the target while this run was going is an
// error wrapping [ErrExists], and the target is left alone. On error the
// staging folder is removed and the target is as it was.
func (s *Stage) Publish(overwrite bool) (replaced bool, err error) {
	if s.done {
		return false, errors.New("release: staging folder already published or aborted")
	}
	syncDir(s.dir)
	// Fault-injection tests stop the process just before the rename and
	// just after it (before the previous release is removed).
	failpoint.Hit(failpoint.BeforePublish)
	for range 10 {
		err := syscall.Rename(s.dir, s.target)
		if err == nil {
			failpoint.Hit(failpoint.AfterPublish)
			s.finish()
			s.unlock()
			return false, nil
		}
		if !errors.Is(err, syscall.EEXIST) && !errors.Is(err, syscall.ENOTEMPTY) {
			s.Abort()
			return false, fmt.Errorf("release: publishing %s: %w", s.target, err)
		}
		// The target is a folder that is not empty.
		if _, err := checkTarget(s.target, overwrite); err != nil {
			s.Abort()
			if errors.Is(err, ErrExists) {
				err = fmt.Errorf("%w (it appeared while this run was going; this run's output was discarded)", err)
			}
			return false, err
		}
		err = exchange(s.dir, s.target)
		if errors.Is(err, errExchangeUnsupported) {
			err = s.moveAside()
		}
		if errors.Is(err, fs.ErrNotExist) {
			continue // the target went away meanwhile: rename again
		}
		if err != nil {
			s.Abort()
			return false, fmt.Errorf("release: publishing %s: %w", s.target, err)
		}
		// s.dir now holds the previous release, unlocked; remove it if it
		// still looks like one (a cleaner may have taken it already).
		failpoint.Hit(failpoint.AfterPublish)
		old := s.dir
		s.finish()
		if _, foreign, err := classify(old); err == nil && len(foreign) == 0 {
			os.RemoveAll(old)
		}
		s.unlock()
		return true, nil
	}
	s.Abort()
	return false, fmt.Errorf("release: publishing %s: the target kept changing", s.target)
}

// moveAside is the fallback of the exchange: target → a temporary name,
// staging → target, temporary name → staging path (the old release ends up
// where the exchange would have put it).
func (s *Stage) moveAside() error {
	parent, base := filepath.Split(s.target)
	aside, err := os.MkdirTemp(parent, tempPrefix(base)+"*"+tempSuffix)
	if err != nil {
		return err
	}
	if err := syscall.Rename(s.target, aside); err != nil {
		os.Remove(aside)
		return err
	}
	if err := syscall.Rename(s.dir, s.target); err != nil {
		syscall.Rename(aside, s.target) // put the old release back
		return err
	}
	return syscall.Rename(aside, s.dir)
}

// finish syncs the parent folder and drops the lock after a publish.
func (s *Stage) finish() {
	s.done = true
	syncDir(filepath.Dir(s.target))
	s.lock.Close()
}

// Abort removes the staging folder and everything in it. It does nothing
// after Publish or a previous Abort, so `defer s.Abort()` is safe.
func (s *Stage) Abort() {
	if s.done {
		return
	}
	s.done = true
	os.RemoveAll(s.dir)
	s.lock.Close()
	s.unlock()
}

// unlock releases the target's lock (once).
func (s *Stage) unlock() {
	unlockTarget(s.tlock)
	s.tlock = nil
}

// cleanStaleStages removes the staging folders of dead runs beside dir:
// folders named as [NewStage] names them for dir's base name, whose lock is
// free (with no locks on this platform: not modified for [StaleAge]), and
// holding release files only.
func cleanStaleStages(dir string) ([]string, error) {
	parent, base := filepath.Split(filepath.Clean(dir))
	if parent == "" {
		parent = "."
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("release: cleaning stale staging folders: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !isTempName(e.Name(), base) {
			continue
		}
		path := filepath.Join(parent, e.Name())
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		ok, err := tryLock(f)
		if err != nil || !ok {
			f.Close()
			continue // a live run's
		}
		if !locksSupported {
			if fi, err := f.Stat(); err != nil || time.Since(fi.ModTime()) < StaleAge {
				f.Close()
				continue
			}
		}
		if _, foreign, err := classify(path); err != nil || len(foreign) > 0 {
			f.Close()
			continue // not ours to remove
		}
		err = os.RemoveAll(path)
		f.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("release: removing stale staging folder: %w", err))
			continue
		}
		removed = append(removed, path)
	}
	return removed, errors.Join(errs...)
}
