//go:build unix

package engine

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// processGone reports whether no process has the id pid (signal 0 finds
// none). A process of another user, or an id reused since, counts as
// running.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// lockScratch takes an exclusive, non-blocking flock on dir's lock file
// (created when missing) and returns the function releasing it; ok is
// false when another open file (of any process, in any PID namespace on
// this host) holds the lock. The kernel releases the lock when its holder
// dies, so a crashed engine's folder is unlocked.
func lockScratch(dir string) (unlock func(), ok bool, err error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return func() { f.Close() }, true, nil
}
