package uniformize

import (
	"context"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/joinasone"
)

// TwoTableData is what a two-table partition reads from the data: aggregates only,
// computed where the data lives. [TwoTableEngine] adapts an *engine.Engine; tests
// use a brute-force fake.
type TwoTableData interface {
	// Degrees returns max{deg₁(b), deg₂(b)} for every value b of the shared
	// join attributes attrs present in either relation of h, in an order
	// fixed by the values (never by noise), and remembers the values for
	// Assign.
	Degrees(ctx context.Context, h *hypergraph.Hypergraph, attrs []string) ([]int64, error)
	// Assign stores the bucket of every value: bucket[k] for the k-th
	// degree Degrees returned.
	Assign(ctx context.Context, bucket []int32) error
	// Bucket returns sub-instance i: a two-relation hypergraph with h's
	// attributes and public flags (relation k of it is relation k of h
	// restricted to the values assigned bucket i; its name may differ) and
	// the statistics reading it.
	Bucket(ctx context.Context, i int) (*hypergraph.Hypergraph, joinasone.Stats, error)
	// Close removes whatever the partition left in the data's store.
	Close(ctx context.Context) error
}

// Engine returns the [TwoTableData] of a loaded engine: degrees by one GROUP BY
// per relation, the buckets loaded into a table and each sub-instance a
// pair of views semi-joined with its bucket's values (engine.Buckets).
func TwoTableEngine(eng *engine.Engine) TwoTableData { return &engineData{eng: eng} }

type engineData struct {
	eng *engine.Engine
	b   *engine.Buckets
}

func (d *engineData) Degrees(ctx context.Context, h *hypergraph.Hypergraph, attrs []string) ([]int64, error) {
	if d.b != nil {
		d.b.Drop(ctx)
	}
	b, degs, err := d.eng.NewBuckets(ctx, h, attrs)
	if err != nil {
		return nil, err
	}
	d.b = b
	return degs, nil
}

func (d *engineData) Assign(ctx context.Context, bucket []int32) error {
	return d.b.Assign(ctx, bucket)
}

func (d *engineData) Bucket(ctx context.Context, i int) (*hypergraph.Hypergraph, joinasone.Stats, error) {
	h, err := d.b.Bucket(ctx, i)
	if err != nil {
		return nil, nil, err
	}
	return h, d.eng, nil
}

func (d *engineData) Close(ctx context.Context) error {
	if d.b == nil {
		return nil
	}
	err := d.b.Drop(ctx)
	d.b = nil
	return err
}
