package cli

import (
	"strings"
	"testing"
)

// TestHelpDocumentsExitCodes: `synth --help` lists the exit codes ExitCode
// maps to, and says what --quiet keeps.
func TestHelpDocumentsExitCodes(t *testing.T) {
	r := mustRun(t, "--help")
	for _, want := range []string{"Exit codes:", "0  success", "1  runtime or data error", "2  usage or spec error", "--quiet\nprints errors only", "weak privacy"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("synth --help lacks %q:\n%s", want, r.stdout)
		}
	}
	if ExitOK != 0 || ExitRuntime != 1 || ExitUsage != 2 {
		t.Error("exit code constants differ from the documented ones")
	}
}
