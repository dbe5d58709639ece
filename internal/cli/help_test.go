package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelpGolden compares the --help text of the root and of every command
// with testdata/help-*.golden. Regenerate with
//
//	go test ./internal/cli -run TestHelpGolden -update
func TestHelpGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"root", []string{"--help"}},
		{"version", []string{"version", "--help"}},
		{"inspect", []string{"inspect", "--help"}},
		{"sensitivity", []string{"sensitivity", "--help"}},
		{"release", []string{"release", "--help"}},
		{"evaluate", []string{"evaluate", "--help"}},
		{"demo", []string{"demo", "--help"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustRun(t, tt.args...)
			if r.stderr != "" {
				t.Errorf("stderr = %q, want empty: help goes to stdout", r.stderr)
			}
			golden := filepath.Join("testdata", "help-"+tt.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(r.stdout), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if r.stdout != string(want) {
				t.Errorf("synth %s differs from %s (run with -update if intended)\ngot:\n%s\nwant:\n%s",
					strings.Join(tt.args, " "), golden, r.stdout, want)
			}
		})
	}
}

// TestHelpForms checks that -h, --help and `help CMD` print the same text.
func TestHelpForms(t *testing.T) {
	for _, cmd := range []string{"version", "inspect", "sensitivity", "release", "evaluate", "demo"} {
		t.Run(cmd, func(t *testing.T) {
			long := mustRun(t, cmd, "--help").stdout
			if short := mustRun(t, cmd, "-h").stdout; short != long {
				t.Errorf("synth %s -h differs from --help:\n%s", cmd, short)
			}
			if help := mustRun(t, "help", cmd).stdout; help != long {
				t.Errorf("synth help %s differs from --help:\n%s", cmd, help)
			}
		})
	}
}

// TestNoArgsPrintsUsage checks that synth without arguments prints the
// root help, also when Main gets nil args: Main must not fall back to
// os.Args (cobra does when its args are nil).
func TestNoArgsPrintsUsage(t *testing.T) {
	want := mustRun(t, "--help").stdout
	saved := os.Args
	t.Cleanup(func() { os.Args = saved })
	os.Args = []string{"synth", "frob", "--bogus"}
	for _, args := range [][]string{nil, {}} {
		var stdout, stderr strings.Builder
		code := Main(t.Context(), args, &stdout, &stderr)
		if code != ExitOK || stdout.String() != want {
			t.Errorf("Main(%#v): exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0 and the root help", args, code, stdout.String(), stderr.String())
		}
	}
}
