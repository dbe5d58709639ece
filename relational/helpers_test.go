package relational

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/spec"
)

// tpch loads relational/testdata/tpch.yaml once per test binary.
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
		// SYNTH_ANSWER_TPCH_DIR points the tables at other TPC-H-shaped
		// files of the same names (e.g. cmd/tpchgen -sf 1), for the
		// accuracy table at scale.
		if dir := os.Getenv("SYNTH_ANSWER_TPCH_DIR"); dir != "" {
			for i := range s.Tables {
				s.Tables[i].Source = filepath.Join(dir, filepath.Base(s.Tables[i].Source))
			}
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
