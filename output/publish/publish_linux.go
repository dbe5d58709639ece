package publish

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameExchange swaps the folders at a and b atomically: renameat2(2) with
// RENAME_EXCHANGE (Linux ≥ 3.15; ext4, xfs, btrfs, tmpfs and most local file
// systems). At every instant each path names one complete folder, the old
// or the new one. errExchangeUnsupported means the file system cannot do it.
func renameExchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return errExchangeUnsupported
	}
	if err != nil {
		return &os.LinkError{Op: "renameat2 exchange", Old: a, New: b, Err: err}
	}
	return nil
}

// tryLock takes an exclusive, non-blocking flock(2) on f. The kernel drops
// it when the process ends, however it ends (kill -9 included), which is
// what tells a live run's staging folder from a killed run's. ok is false
// when another process holds it.
func tryLock(f *os.File) (ok bool, err error) {
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// locksSupported reports whether tryLock tells live runs from dead ones.
const locksSupported = true

// writable reports, as access(2) does, why entries of the folder dir could
// not be created or removed by this process: its permission bits, a
// read-only file system (also for root) or an immutable flag; nil when
// they can. It writes nothing.
func writable(dir string) error {
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return &os.PathError{Op: "access", Path: dir, Err: err}
	}
	return nil
}
