package joinasone

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/spec"
)

// tuple maps a relation's column names to small integer values.
type tuple map[string]int

// fakeStats is a brute-force, in-memory implementation of Stats: it
// enumerates joins with nested loops. calls counts every data access, so
// tests can assert that nothing was read before the budget was charged.
type fakeStats struct {
	rels  map[string][]tuple
	calls atomic.Int64
}

var _ Stats = (*fakeStats)(nil)

// join enumerates the join of the relations in e (as a list of per-relation
// tuples) and calls fn for every combination that agrees on the attributes.
func (f *fakeStats) join(h *hypergraph.Hypergraph, e hypergraph.Set, fn func(pick map[int]tuple)) {
	members := e.Members()
	pick := map[int]tuple{}
	var rec func(k int)
	rec = func(k int) {
		if k == len(members) {
			fn(pick)
			return
		}
		i := members[k]
		r := h.Relation(i)
	next:
		for _, t := range f.rels[r.Name] {
			for a, col := range r.Attrs {
				for _, j := range members[:k] {
					if c2, ok := h.Relation(j).Attrs[a]; ok && pick[j][c2] != t[col] {
						continue next
					}
				}
			}
			pick[i] = t
			rec(k + 1)
		}
		delete(pick, i)
	}
	rec(0)
}

func (f *fakeStats) MaxDegree(ctx context.Context, h *hypergraph.Hypergraph, rel int, attrs []string) (int64, error) {
	f.calls.Add(1)
	r := h.Relation(rel)
	deg := map[string]int64{}
	var best int64
	for _, t := range f.rels[r.Name] {
		key := ""
		for _, a := range attrs {
			key += fmt.Sprint(t[r.Attrs[a]], ",")
		}
		deg[key]++
		best = max(best, deg[key])
	}
	return best, nil
}

func (f *fakeStats) Histogram(ctx context.Context, h *hypergraph.Hypergraph, cols []spec.ColumnRef, sizes []int) ([]engine.Cell, error) {
	f.calls.Add(1)
	counts := map[int64]int64{}
	f.join(h, h.All(), func(pick map[int]tuple) {
		var idx int64
		for k, c := range cols {
			idx = idx*int64(sizes[k]) + int64(pick[h.Index(c.Table)][c.Column])
		}
		counts[idx]++
	})
	out := make([]engine.Cell, 0, len(counts))
	for i, c := range counts {
		out = append(out, engine.Cell{Index: i, Count: c})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Index < out[b].Index })
	return out, nil
}

func (f *fakeStats) MaxBoundaryCount(ctx context.Context, h *hypergraph.Hypergraph, e hypergraph.Set) (int64, error) {
	f.calls.Add(1)
	boundary := h.Boundary(e)
	groups := map[string]int64{}
	var best int64
	f.join(h, e, func(pick map[int]tuple) {
		key := ""
		for _, a := range boundary {
			for i, t := range pick {
				if c, ok := h.Relation(i).Attrs[a]; ok {
					key += fmt.Sprint(t[c], ",")
					break
				}
			}
		}
		groups[key]++
		best = max(best, groups[key])
	})
	return best, nil
}
