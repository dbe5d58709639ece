// Package version holds the software version written into every privacy
// report. Release builds set it with
// -ldflags "-X github.com/synth-dp/synth/internal/version.Version=v1.2.3".
package version

import "runtime/debug"

// Version is the synth version; "dev" unless set at link time.
var Version = "dev"

// String returns Version, with the module version from the build info when
// Version was not set at link time and the binary was built from a module.
func String() string {
	if Version != "dev" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return Version
}
