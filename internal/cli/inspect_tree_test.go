package cli

import (
	"strings"
	"testing"
)

// TestInspectAttributeTree: inspect prints the attribute tree of a
// hierarchical join, one node a line, and none for a join that is not
// hierarchical.
func TestInspectAttributeTree(t *testing.T) {
	r := mustRun(t, "-q", "inspect", "--config", "../../examples/hier/synth.yaml")
	var tree []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if v, ok := strings.CutPrefix(line, "attribute tree:"); ok {
			tree = append(tree, strings.TrimSpace(v))
		}
	}
	want := []string{"members.store_id  [members, purchases, staff]", "└── members.member_id  [members, purchases]"}
	if strings.Join(tree, "\n") != strings.Join(want, "\n") {
		t.Errorf("attribute tree lines %q, want %q", tree, want)
	}
	// customer ⋈ orders ⋈ lineitem is a chain, not hierarchical: no tree.
	r = mustRun(t, "-q", "inspect", "--config", "../../examples/tpch/synth.yaml")
	hier, printed := false, false
	for _, line := range strings.Split(r.stdout, "\n") {
		if v, ok := strings.CutPrefix(line, "hierarchical:"); ok {
			hier = strings.HasPrefix(strings.TrimSpace(v), "true")
		}
		printed = printed || strings.HasPrefix(line, "attribute tree:")
	}
	if hier != printed {
		t.Errorf("hierarchical %v, attribute tree printed %v:\n%s", hier, printed, r.stdout)
	}
}
