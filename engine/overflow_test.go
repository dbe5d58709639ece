package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/spec"
)

// TestCountEdgesSameOnNeighbours: four relations sharing one key value,
// of 2¹⁵, 2¹⁵, 2¹⁵ and n rows, declare no key, so the count plans
// multiply the four group counts. At n = 2¹⁸ the join has 2⁶³ tuples,
// one more than INT64 holds, at n = 2¹⁸ − 1 it fits; at n = 2⁸ and
// 2⁸ + 1 it straddles 2⁵³. On every pair of neighbouring instances (one
// tuple apart) every statistic must succeed on both or fail on both with
// the same text — before the counts saturated, the larger instance failed
// with "Overflow in multiplication of INT64 (35184372088832 * 262144)",
// private counts in the message, and its neighbour succeeded. Counts
// beyond [countCap] read as countCap.
func TestCountEdgesSameOnNeighbours(t *testing.T) { forEachEngine(t, testCountEdges) }

func testCountEdges(t *testing.T, e *Engine) {
	ctx := context.Background()
	dir := t.TempDir()
	const base = 1 << 15
	rows := func(n int) [][]string {
		out := make([][]string, n)
		for i := range out {
			out[i] = []string{"1", "x"}
		}
		return out
	}
	run := func(n int) (map[string]int64, map[string]string) {
		s := &spec.Spec{}
		rels := make([]hypergraph.Relation, 4)
		for i := range 4 {
			name := fmt.Sprintf("r%d", i)
			m := base
			if i == 3 {
				m = n
			}
			src := writeCSV(t, dir, fmt.Sprintf("%s_%d.csv", name, n), []string{"k", "pad"}, rows(m))
			s.Tables = append(s.Tables, spec.Table{Name: name, Source: src, Columns: []spec.Column{{Name: "k", Type: spec.Key}}})
			rels[i] = hypergraph.Relation{Name: name, Attrs: map[string]string{"a": "k"}}
		}
		if err := e.Load(ctx, s); err != nil {
			t.Fatal(err)
		}
		h, err := hypergraph.New(rels)
		if err != nil {
			t.Fatal(err)
		}
		vals, errs := map[string]int64{}, map[string]string{}
		record := func(stat string, v int64, err error) {
			if err != nil {
				errs[stat] = err.Error()
				return
			}
			vals[stat] = v
		}
		v, err := e.JoinSize(ctx, h)
		record("join size", v, err)
		for set := hypergraph.Set(1); set <= h.All(); set++ {
			v, err := e.MaxBoundaryCount(ctx, h, set)
			record(fmt.Sprintf("T_E(%v)", h.Names(set)), v, err)
		}
		return vals, errs
	}
	for _, c := range []struct {
		n    int
		want int64 // the join size of the larger instance
	}{
		{1 << 18, countCap},        // 2⁶³ and 2⁶³ − 2⁴⁵: both beyond the cap
		{1 << 8, 1 << 53},          // 2⁵³ and 2⁵³ − 2⁴⁵: exact
		{1<<17 - 1, 1<<62 - 1<<45}, // just below the cap and the one below
	} {
		big, bigErr := run(c.n)
		small, smallErr := run(c.n - 1)
		for stat, msg := range bigErr {
			if smallErr[stat] != msg {
				t.Errorf("n = %d: %s fails with %q; its neighbour with %q", c.n, stat, msg, smallErr[stat])
			}
		}
		for stat, msg := range smallErr {
			if bigErr[stat] != msg {
				t.Errorf("n = %d − 1: %s fails with %q; its neighbour with %q", c.n, stat, msg, bigErr[stat])
			}
		}
		if big["join size"] != c.want {
			t.Errorf("n = %d: join size %d, want %d", c.n, big["join size"], c.want)
		}
		if want := min(int64(base)*base*base*int64(c.n-1), countCap); small["join size"] != want {
			t.Errorf("n = %d − 1: join size %d, want %d", c.n, small["join size"], want)
		}
	}
}

// TestStatErrorWithholdsMessage: a statistics query that fails says which
// statistic failed and nothing the engine said, and a cancellation stays
// recognisable.
func TestStatErrorWithholdsMessage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	engineErr := errors.New("Overflow in multiplication of INT64 (140737488355328 * 65536)")
	err := statError(ctx, "T_E of [a b]", engineErr)
	if got, want := err.Error(), "engine: T_E of [a b]: the statistics query failed (the engine's message is withheld: it may quote private data)"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if !errors.Is(err, engineErr) || errors.Is(err, context.Canceled) {
		t.Errorf("errors.Is(engine's error) = %v, errors.Is(context.Canceled) = %v; want true, false", errors.Is(err, engineErr), errors.Is(err, context.Canceled))
	}
	cancel()
	err = statError(ctx, "histogram", errors.New("INTERRUPT Error: Interrupted!"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: %v is not context.Canceled", err)
	}
	if statError(ctx, "x", nil) != nil {
		t.Error("statError(nil) is not nil")
	}
}
