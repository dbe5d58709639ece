package release

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/spec"
)

// TestProgressPhases: Options.Progress hears every phase of a run, in
// order; the load ends at 1 of 1, PMW counts its rounds up to at most its
// cap, the writer's
// count ends at the rows written, and the uniformized method counts its
// buckets.
func TestProgressPhases(t *testing.T) {
	for _, m := range []spec.Method{spec.JoinAsOne, spec.Uniformized} {
		t.Run(string(m), func(t *testing.T) {
			s := demoSpec(t, 128)
			if m != spec.Auto {
				s.Privacy.Unit = "" // a tuple-level method: the demo's unit off
			}
			s.Release.Method = m
			type call struct {
				phase       Phase
				done, total int64
			}
			var calls []call
			sum, err := Run(context.Background(), Options{Spec: s, OutDir: filepath.Join(t.TempDir(), "out"), Source: dp.NewSeededSource(5),
				Progress: func(p Phase, done, total int64) { calls = append(calls, call{p, done, total}) }})
			if err != nil {
				t.Fatal(err)
			}
			last := map[Phase]call{}
			order := []Phase{}
			for _, c := range calls {
				if len(order) == 0 || order[len(order)-1] != c.phase {
					order = append(order, c.phase)
				}
				last[c.phase] = c
			}
			if l := last[PhaseLoad]; l.done != 1 || l.total != 1 {
				t.Errorf("load ends at %+v", l)
			}
			// The adaptive variant may stop before its cap of rounds.
			if p := last[PhasePMW]; p.done < 1 || p.done > p.total {
				t.Errorf("PMW ends at %+v", p)
			}
			if sum.Rows == 0 {
				t.Fatal("no rows released: the write phase is not tested")
			}
			if w := last[PhaseWrite]; w.done != sum.Rows || w.total != sum.Rows {
				t.Errorf("write ends at %+v, %d rows written", w, sum.Rows)
			}
			if order[0] != PhaseLoad || order[len(order)-1] != PhaseWrite {
				t.Errorf("phases in order %v", order)
			}
			if p, ok := last[PhasePartitions]; (m == spec.Uniformized) != ok || ok && (p.done < 1 || p.total != -1) {
				t.Errorf("method %s: partitions %+v (reported %v)", m, p, ok)
			}
		})
	}
}
