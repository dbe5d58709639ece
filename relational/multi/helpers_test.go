package multi

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/relational"
	"github.com/synth-dp/synth/spec"
)

// tpch loads testdata/tpch.yaml once per test binary.
var tpchOnce struct {
	sync.Once
	e   *engine.Engine
	s   *spec.Spec
	err error
}

func tpch(t testing.TB) (*engine.Engine, *spec.Spec) {
	t.Helper()
	tpchOnce.Do(func() {
		ctx := context.Background()
		s, err := spec.Load(filepath.Join("testdata", "tpch.yaml"))
		if err != nil {
			tpchOnce.err = err
			return
		}
		e, err := engine.Open(ctx, "")
		if err != nil {
			tpchOnce.err = err
			return
		}
		if err := e.Load(ctx, s); err != nil {
			tpchOnce.err = err
			return
		}
		tpchOnce.e, tpchOnce.s = e, s
	})
	if tpchOnce.err != nil {
		t.Fatal(tpchOnce.err)
	}
	return tpchOnce.e, tpchOnce.s
}

func mustParse(t testing.TB, e *engine.Engine, s *spec.Spec, text string) *relational.Query {
	t.Helper()
	q, err := relational.Parse(context.Background(), e, s, text)
	if err != nil {
		t.Fatal(err)
	}
	return q
}
