package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSelfJoinRefused: a spec whose two private tables read one file (here
// b's source is a symbolic link to a's) is a spec error for every command
// that reads a spec, naming the file, the line and the key; release writes
// nothing.
func TestSelfJoinRefused(t *testing.T) {
	specPath, dir := writeTiny(t, tinyOptions{bSource: "link.csv", noB: true})
	if err := os.Symlink("a.csv", filepath.Join(dir, "link.csv")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	out := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{
		{"inspect", "--config", specPath},
		{"sensitivity", "--config", specPath},
		{"release", "--config", specPath, "--out", out},
	} {
		r := run(t, args...)
		if r.code != ExitUsage {
			t.Errorf("synth %s: exit %d, want %d\n%s", strings.Join(args, " "), r.code, ExitUsage, r.stderr)
		}
		for _, s := range []string{specPath + ":10: tables[1].source", `"link.csv" is the same file as the source "a.csv"`, "self-joins"} {
			if !strings.Contains(r.stderr, s) {
				t.Errorf("synth %s: stderr does not mention %q:\n%s", args[0], s, r.stderr)
			}
		}
		if r.stdout != "" {
			t.Errorf("synth %s: stdout = %q, want empty", args[0], r.stdout)
		}
	}
	if names, _ := readDirNames(out); len(names) != 0 {
		t.Errorf("refused release wrote %v", names)
	}
}
