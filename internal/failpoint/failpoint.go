// Package failpoint holds the named points of a run where a
// fault-injection test stops the process, so that the test does not guess
// with timers where a kill lands: [Hit] kills the process with SIGKILL at
// the point named by the environment variable [KillEnv], or pauses it there
// while the test does something, as [PauseEnv] says. Outside such tests
// neither variable is set and Hit costs one environment lookup.
package failpoint

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// KillEnv names the environment variable holding a point name: [Hit] of
// that point kills the process with SIGKILL (nothing deferred runs, no
// file is closed: what a power cut or the OOM killer does).
const KillEnv = "SYNTH_TEST_KILL_AT"

// PauseEnv names the environment variable holding "point=DIR": [Hit] of
// that point creates DIR/paused and waits until DIR/resume exists.
const PauseEnv = "SYNTH_TEST_PAUSE_AT"

// Points of a release, in the order a run reaches them.
const (
	// LedgerCharged: the lifetime ledger holds the run's charge (synced);
	// no data has been read.
	LedgerCharged = "ledger-charged"
	// RowsWritten: every synthetic row went to the Parquet writer of the
	// staging folder, which is not finished.
	RowsWritten = "rows-written"
	// BeforePublish: the staging folder holds the complete release,
	// synced; the target still holds the previous one.
	BeforePublish = "before-publish"
	// AfterPublish: the rename or exchange is done (the target holds the
	// new release); the previous release, if any, is not yet removed.
	AfterPublish = "after-publish"
)

// Hit is a named point of a run (see [KillEnv] and [PauseEnv]).
func Hit(point string) { HitContext(context.Background(), point) }

// HitContext is [Hit] at a point where the run holds ctx: while paused
// there, it creates DIR/cancelled once ctx is done, so that a test can
// wait for the run to have seen its cancellation (a signal is handled on
// another goroutine) before it resumes the run.
func HitContext(ctx context.Context, point string) {
	if os.Getenv(KillEnv) == point {
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Kill()
		}
		select {} // the signal is on its way
	}
	v := os.Getenv(PauseEnv)
	if v == "" {
		return
	}
	name, dir, ok := strings.Cut(v, "=")
	if !ok || name != point {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, "paused"), nil, 0o644); err != nil {
		return
	}
	// Polling for an event, not a duration: the test creates the file.
	done := ctx.Done()
	for {
		if _, err := os.Stat(filepath.Join(dir, "resume")); err == nil {
			return
		}
		select {
		case <-done:
			_ = os.WriteFile(filepath.Join(dir, "cancelled"), nil, 0o644)
			done = nil
		case <-time.After(5 * time.Millisecond):
		}
	}
}
