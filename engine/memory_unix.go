//go:build unix

package engine

import (
	"errors"
	"syscall"
)

// processGone reports whether no process has the id pid (signal 0 finds
// none). A process of another user, or an id reused since, counts as
// running.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
