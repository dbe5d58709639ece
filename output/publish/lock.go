package publish

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrBusy is wrapped by the error of [NewStage] when another live run holds
// the target's lock: it is releasing into the same folder. Two runs into
// one folder would both read the data and spend the budget, and only the
// last one's release would remain.
var ErrBusy = errors.New("another release into this output folder is running")

// ErrNotWritable is wrapped by the error of [NewStage] (and [Stage.Publish])
// when the target holds a release to replace but its entries cannot be
// removed: the old release would outlive the swap, beside the new one.
var ErrNotWritable = errors.New("the output folder is not writable")

// lockPath returns the lock file of target: "." + base name + ".lock", in
// the target's parent (beside it, on the same file system).
func lockPath(target string) string {
	parent, base := filepath.Split(target)
	return filepath.Join(parent, "."+base+".lock")
}

// lockTarget takes the target's lock: an exclusive, non-blocking flock(2)
// on its lock file, held from [NewStage] until [Stage.Publish] has removed
// the previous release, or [Stage.Abort]. A lock another live run holds is
// an error wrapping [ErrBusy]. The kernel drops a flock when its process
// ends, however it ends, so a lock file left by a killed run (kill -9) is
// free and taken over: a stale lock never blocks.
//
// Lock files are removed on release. A run that opened the file just
// before its holder removed it locks a file no longer in the folder; it
// notices (the path names another file, or none) and tries again, so two
// runs never both hold the lock. Where flock is not available the lock is
// not taken (nil, no error): concurrent runs are not excluded there.
func lockTarget(target string) (*os.File, error) {
	if !locksSupported {
		return nil, nil
	}
	path := lockPath(target)
	for range 5 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("release: output folder %s is not writable (its lock file): %w", target, err)
		}
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("release: output folder %s: locking %s: %w", target, path, err)
		}
		if !ok {
			f.Close()
			return nil, fmt.Errorf("release: %w: %s is being written by another run (it holds %s); wait for it to finish, or choose another output folder", ErrBusy, target, path)
		}
		fi, serr := f.Stat()
		pi, perr := os.Stat(path)
		if serr == nil && perr == nil && os.SameFile(fi, pi) {
			return f, nil
		}
		f.Close() // removed by the run that held it: take the new one
	}
	return nil, fmt.Errorf("release: output folder %s: its lock file %s kept changing", target, path)
}

// unlockTarget removes the lock file, then drops the lock (in this order,
// see [lockTarget]). A nil f does nothing.
func unlockTarget(f *os.File) {
	if f == nil {
		return
	}
	os.Remove(f.Name())
	f.Close()
}
