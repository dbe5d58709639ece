package version

import (
	"runtime/debug"
	"testing"
)

func withBuildInfo(t *testing.T, bi *debug.BuildInfo, linked string) {
	t.Helper()
	old, oldV := readBuildInfo, Version
	t.Cleanup(func() { readBuildInfo, Version = old, oldV })
	readBuildInfo = func() (*debug.BuildInfo, bool) { return bi, bi != nil }
	Version = linked
}

func TestString(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-22T20:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	for _, tc := range []struct {
		name   string
		bi     *debug.BuildInfo
		linked string
		want   string
	}{
		{"no build info", nil, "", Unknown},
		{"devel without vcs", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "", Unknown},
		{"module version", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "", "v1.2.3"},
		{"devel with vcs", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs}, "",
			"(devel) (rev 0123456789ab+dirty, 2026-11-22T20:00:00Z)"},
		{"linked with vcs", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs[:2]}, "v9.9.9",
			"v9.9.9 (rev 0123456789ab)"},
		{"pseudo-version", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261122200000-0123456789ab+dirty"}, Settings: vcs}, "",
			"v0.0.0-20261122200000-0123456789ab+dirty (2026-11-22T20:00:00Z)"},
		{"linked without build info", nil, "v9.9.9", "v9.9.9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withBuildInfo(t, tc.bi, tc.linked)
			if got := String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}
