//go:build unix

package lifetime

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive (or shared) flock on f, waiting for it.
// The lock goes with the open file: closing f, or the process dying,
// releases it.
func lockFile(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

func unlockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
