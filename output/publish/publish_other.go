//go:build !linux

package publish

import "os"

// renameExchange is Linux only (renameat2 RENAME_EXCHANGE); elsewhere
// [Stage.Publish] falls back to two renames (see there).
func renameExchange(a, b string) error { return errExchangeUnsupported }

// tryLock is not available here: stale staging folders are told apart by
// age ([StaleAge]) instead.
func tryLock(f *os.File) (bool, error) { return true, nil }

const locksSupported = false

// writable is not checked on this platform: nil. Publish then removes the
// old release as it can.
func writable(dir string) error { return nil }
