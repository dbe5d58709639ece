//go:build !unix

package lifetime

import "os"

func lockFile(*os.File, bool) error { return ErrUnsupported }

func unlockFile(*os.File) error { return nil }
