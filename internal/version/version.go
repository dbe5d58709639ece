// Package version holds the software version written into every privacy
// report. Release builds may set it with
// -ldflags "-X github.com/synth-dp/synth/internal/version.Version=v1.2.3";
// otherwise it comes from the build information the Go toolchain embeds
// ([debug.ReadBuildInfo]): the module version and the VCS revision of the
// checkout the binary was built from.
package version

import (
	"runtime/debug"
	"strings"
)

// Version is the synth version set at link time; empty when not set.
var Version = ""

// Unknown is the version reported by a binary that carries neither a
// link-time version, a module version nor a VCS revision (e.g. built from
// a source tree that is not a git checkout, or with -buildvcs=false).
const Unknown = "unknown (built without version or VCS information)"

// Info is what the build says about the software.
type Info struct {
	// Version is the link-time version, or else the main module's version
	// ("v1.2.3", or "(devel)" for a build from a checkout); empty when
	// there is no build information.
	Version string `json:"version,omitempty"`
	// Revision is the VCS revision (git commit) the binary was built from;
	// empty when the build did not stamp it.
	Revision string `json:"revision,omitempty"`
	// Time is the commit time of Revision (RFC 3339), when stamped.
	Time string `json:"time,omitempty"`
	// Modified is true when the checkout had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// GoVersion is the toolchain that built the binary.
	GoVersion string `json:"go_version,omitempty"`
}

// readBuildInfo is debug.ReadBuildInfo, replaced in tests.
var readBuildInfo = debug.ReadBuildInfo

// Get returns the build's version information.
func Get() Info {
	var in Info
	if bi, ok := readBuildInfo(); ok {
		in.Version = bi.Main.Version
		in.GoVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Revision = s.Value
			case "vcs.time":
				in.Time = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
	}
	if Version != "" {
		in.Version = Version
	}
	return in
}

// String renders the version in one line: the link-time or module version,
// then the VCS revision (first 12 hex digits, "+dirty" when the checkout
// had uncommitted changes) and its commit time, e.g.
//
//	v1.2.3 (rev 0123456789ab, 2026-11-22T20:00:00Z)
//	(devel) (rev 0123456789ab+dirty, 2026-11-22T20:00:00Z)
//	v0.0.0-20261122200000-0123456789ab+dirty (2026-11-22T20:00:00Z)
//
// and [Unknown] when the build carries none of them.
func String() string { return Get().String() }

// String renders in as [String] does.
func (in Info) String() string {
	v := in.Version
	if in.Revision == "" {
		if v == "" || v == "(devel)" {
			return Unknown
		}
		return v
	}
	if v == "" {
		v = "(devel)"
	}
	rev := in.Revision
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if in.Modified {
		rev += "+dirty"
	}
	var parts []string
	if !strings.Contains(v, rev) {
		// A pseudo-version (v0.0.0-20261122204441-0123456789ab+dirty)
		// already names the revision.
		parts = append(parts, "rev "+rev)
	}
	if in.Time != "" {
		parts = append(parts, in.Time)
	}
	if len(parts) == 0 {
		return v
	}
	return v + " (" + strings.Join(parts, ", ") + ")"
}
