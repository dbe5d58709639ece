package cli

import (
	"strings"
	"testing"
)

// TestInspectMethod: inspect says which method auto picks and why, from
// the spec alone.
func TestInspectMethod(t *testing.T) {
	auto, _ := writeTiny(t, tinyOptions{method: "auto"})
	r := run(t, "inspect", "--config", auto)
	if r.code != ExitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "method:") || !strings.Contains(r.stdout, "auto → join-as-one (two relations after folding") {
		t.Errorf("inspect does not say what auto picks:\n%s", r.stdout)
	}
	jao, _ := writeTiny(t, tinyOptions{})
	r = run(t, "inspect", "--config", jao)
	if !strings.Contains(r.stdout, "join-as-one → join-as-one (set by release.method in the spec)") {
		t.Errorf("inspect with an explicit method:\n%s", r.stdout)
	}
	three := run(t, "inspect", "--config", "../../examples/tpch/synth.yaml", "--format", "json")
	if !strings.Contains(three.stdout, "auto → privacy-unit (privacy.unit customer is declared") {
		t.Errorf("inspect json:\n%s", three.stdout)
	}
}
