package release

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportGraph: the dependency points one way — nothing below the
// orchestration imports it. Only internal/cli (and the test-only report
// and benchmark packages listed below) may import release; nothing but
// cmd/synth may import internal/cli; nothing imports a package beneath
// release (the output format, which both release and workload use, lives in
// output/, below them).
func TestImportGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "../...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	const mod = "github.com/synth-dp/synth/"
	// internal/tablestest is a measurement harness (issue 37's by-hand
	// baseline releases each table with the release), never linked into
	// the binary.
	mayImportRelease := map[string]bool{mod + "internal/cli": true, mod + "internal/tablestest": true}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, imports := f[0], f[1:]
		for _, imp := range imports {
			if imp == mod+"release" && !mayImportRelease[pkg] {
				t.Errorf("%s imports release: a lower package must not depend on the orchestration", pkg)
			}
			if strings.HasPrefix(imp, mod+"release/") {
				// The synthetic file format (writer, names, publishing)
				// lives in output/, beneath both release and workload.
				t.Errorf("%s imports %s: nothing may live beneath release; the output format is in output/", pkg, imp)
			}
			if imp == mod+"internal/cli" && pkg != mod+"cmd/synth" {
				t.Errorf("%s imports internal/cli", pkg)
			}
		}
	}
}
