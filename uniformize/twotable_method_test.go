package uniformize

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/synth-dp/synth/spec"
)

// TestChooseMethod: auto picks from the spec alone — join-as-one, with the
// measured reason for two relations and for a hierarchical join, and the
// structural one elsewhere; an explicit method is kept.
func TestChooseMethod(t *testing.T) {
	load := func(name string) *spec.Spec {
		s, err := spec.Load(filepath.Join("..", "examples", name))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	cases := []struct {
		file   string
		method spec.Method
		want   spec.Method
		reason string
	}{
		{"tpch/orders_lineitem.yaml", spec.Auto, spec.JoinAsOne, "measured worse"},
		{"tpch/orders_lineitem.yaml", spec.JoinAsOne, spec.JoinAsOne, "set by release.method"},
		{"tpch/orders_lineitem.yaml", spec.Uniformized, spec.Uniformized, "set by release.method"},
		{"tpch/synth.yaml", spec.Auto, spec.JoinAsOne, "3 relations after folding"},
		{"hier/synth.yaml", spec.Auto, spec.JoinAsOne, "hierarchical: join-as-one (Alg. 3); the hierarchical uniformized partition"},
		{"hier/synth.yaml", spec.Uniformized, spec.Uniformized, "set by release.method"},
		{"tpch/synth.yaml", spec.Uniformized, spec.Uniformized, "set by release.method"},
		{"adult/synth.yaml", spec.Auto, spec.JoinAsOne, "one relation"},
	}
	for _, c := range cases {
		s := load(c.file)
		s.Release.Method = c.method
		m, why, err := ChooseMethod(s)
		if err != nil {
			t.Fatal(err)
		}
		if m != c.want || !strings.Contains(why, c.reason) {
			t.Errorf("%s with %s: got %s (%s), want %s (%q)", c.file, c.method, m, why, c.want, c.reason)
		}
		t.Logf("%s, %s → %s: %s", c.file, c.method, m, why)
	}
}
