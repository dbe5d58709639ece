package release

import (
	"context"
	"fmt"

	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/joinasone"
	"github.com/synth-dp/synth/uniformize"
)

// Phase names a phase of a release run reported to [Options.Progress].
type Phase string

// The stages of a run, in the order they happen.
const (
	// PhaseLoad is loading and checking the tables: 0 of 1 when it starts,
	// 1 of 1 when it ends.
	PhaseLoad Phase = "loading tables"
	// PhasePartitions counts the uniformized method's buckets as their
	// mechanism starts (total −1: the number that run is a DP output known
	// only once the partition is drawn).
	PhasePartitions Phase = "partitions"
	// PhasePMW is PMW's round t of T (per bucket under the uniformized
	// method); T is a cap the adaptive mwem variant may stop short of.
	PhasePMW Phase = "PMW rounds"
	// PhaseMeasures counts the release.measures' PMW rounds: measure i of
	// M at round t of T is i·T + t of M·T (all public).
	PhaseMeasures Phase = "measures"
	// PhaseWrite counts the synthetic rows written.
	PhaseWrite Phase = "writing rows"
)

// ProgressFunc receives a run's progress: done of total units of phase,
// total −1 when it is not known in advance. It is called from the run's
// goroutine and must return quickly (PhaseWrite calls it every 4,096
// rows and at the last). Every number it receives is a public parameter or a DP output (round
// counts, bucket counts, rows written), so showing it leaks nothing.
type ProgressFunc func(phase Phase, done, total int64)

// progress reports to o.Progress when it is set.
func (o *Options) progress(phase Phase, done, total int64) {
	if o.Progress != nil {
		o.Progress(phase, done, total)
	}
}

// partitionProgress wraps the uniformized method's data access to report
// [PhasePartitions] as each bucket's sub-instance is read.
type partitionProgress struct {
	uniformize.TwoTableData
	hooks Hooks
	n     int
}

// Bucket reports the bucket, then reads its sub-instance.
func (p *partitionProgress) Bucket(ctx context.Context, i int) (*hypergraph.Hypergraph, joinasone.Stats, error) {
	p.n++
	if p.hooks.Partition != nil {
		p.hooks.Partition(p.n, -1, fmt.Sprintf("bucket %d", i))
	}
	return p.TwoTableData.Bucket(ctx, i)
}
