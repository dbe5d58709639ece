package uniformize

import (
	"context"
	"fmt"
	"strconv"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/joinasone"
)

// HierData is what a hierarchical release reads from the data: the noisy
// degree queries of [PartitionHierarchical] and the statistics of every
// sub-instance, aggregates only, computed where the data lives.
// [HierEngine] adapts an *engine.Engine.
type HierData interface {
	HierInstance
	// Sub returns sub-instance number k of the partition: a hypergraph
	// with the join's attributes and public flags whose relation j is
	// relation j restricted by the conditions of s that name it (its name
	// may differ), and the statistics reading it.
	Sub(ctx context.Context, k int, s HierSub) (*hypergraph.Hypergraph, joinasone.Stats, error)
	// Close removes whatever the partition left in the data's store.
	Close(ctx context.Context) error
}

// HierEngine returns the [HierData] of the join h (its relations loaded or
// folded in eng): every degree query is one GROUP BY over views of the
// filtered relations, the buckets go back into the engine as a table of
// the values in buckets ≥ 2, and every sub-instance is a set of views
// (engine.HierPartition). Keys are the ids of the values in the engine's
// table of the query, zero-padded so that their order is the values'
// order: no value leaves the engine.
func HierEngine(eng *engine.Engine, h *hypergraph.Hypergraph) HierData {
	return &hierEngine{eng: eng, h: h, split: map[int]int{}, assigned: map[int]bool{}}
}

type hierEngine struct {
	eng      *engine.Engine
	h        *hypergraph.Hypergraph
	p        *engine.HierPartition
	split    map[int]int // query Split -> engine split
	assigned map[int]bool
}

// hierIDKey is the key of the value with engine id id.
func hierIDKey(id int64) HierKey { return HierKey(fmt.Sprintf("%016d", id)) }

func (d *hierEngine) filters(ctx context.Context, conds []HierCond) ([]engine.HierFilter, error) {
	var out []engine.HierFilter
	for _, c := range conds {
		s, ok := d.split[c.Split]
		if !ok {
			return nil, fmt.Errorf("uniformize: condition of split %d, which was never queried", c.Split)
		}
		if !d.assigned[s] {
			ids := make(map[int64]int, len(c.Buckets))
			for k, b := range c.Buckets {
				id, err := strconv.ParseInt(string(k), 10, 64)
				if err != nil {
					return nil, fmt.Errorf("uniformize: bucket key %q is not an engine id: %w", k, err)
				}
				ids[id] = b
			}
			if err := d.p.Assign(ctx, s, ids); err != nil {
				return nil, err
			}
			d.assigned[s] = true
		}
		out = append(out, engine.HierFilter{Rels: c.Atom, Attrs: c.Attrs, Split: s, Bucket: c.Bucket})
	}
	return out, nil
}

func (d *hierEngine) Degrees(ctx context.Context, q HierDegreeQuery) (map[HierKey]int64, error) {
	if d.p == nil {
		p, err := d.eng.NewHierPartition(ctx, d.h)
		if err != nil {
			return nil, err
		}
		d.p = p
	}
	if _, ok := d.split[q.Split]; ok {
		return nil, fmt.Errorf("uniformize: degree query %d asked twice", q.Split)
	}
	fs, err := d.filters(ctx, q.Conds)
	if err != nil {
		return nil, err
	}
	s, degs, err := d.p.Degrees(ctx, q.E, q.Y, q.Z, fs)
	if err != nil {
		return nil, err
	}
	d.split[q.Split] = s
	out := make(map[HierKey]int64, len(degs))
	for k, v := range degs {
		out[hierIDKey(int64(k)+1)] = v
	}
	return out, nil
}

func (d *hierEngine) Sub(ctx context.Context, k int, s HierSub) (*hypergraph.Hypergraph, joinasone.Stats, error) {
	if d.p == nil {
		// No decomposed node: the one sub-instance is the instance.
		return d.h, d.eng, nil
	}
	fs, err := d.filters(ctx, s.Conds)
	if err != nil {
		return nil, nil, err
	}
	h, err := d.p.Sub(ctx, k, fs)
	if err != nil {
		return nil, nil, err
	}
	return h, d.eng, nil
}

func (d *hierEngine) Close(ctx context.Context) error {
	if d.p == nil {
		return nil
	}
	err := d.p.Drop(ctx)
	d.p, d.split, d.assigned = nil, map[int]int{}, map[int]bool{}
	return err
}
