package engine

import (
	"context"
	"testing"

	"github.com/synth-dp/synth/spec"
)

// TestLoadDeclaresKeys: Load records the spec's primary keys, so that a
// release (which never calls declareKeys itself) gets the plain join the
// keys allow for the TPC-H example, and a reload without keys forgets them.
func TestLoadDeclaresKeys(t *testing.T) {
	ctx := context.Background()
	s, err := spec.Load("../examples/tpch/synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e, h := loadTest(t, s)
	planOf := func() *plan {
		t.Helper()
		mixed, err := e.mixedAttrs(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		p, _, err := buildPlan(e.d, h, h.All(), nil, nil, mixed, e.keysOf(h))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := planOf(); p.order == nil {
		t.Errorf("after Load with keys %v: variable elimination chosen, want the plain join", e.keysOf(h))
	}
	if err := e.Load(ctx, withoutKeys(s)); err != nil {
		t.Fatal(err)
	}
	if k := e.keysOf(h); len(k) != 0 {
		t.Errorf("after a reload without keys: keys %v, want none", k)
	}
	if p := planOf(); p.order != nil {
		t.Errorf("after a reload without keys: the plain join chosen, want elimination")
	}
}
