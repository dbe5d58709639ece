package release

import (
	"log/slog"
	"math"
)

// Phase names a phase of a release run reported to [Options.Progress].
type Phase string

// The stages of a run, in the order they happen.
const (
	// PhaseLoad is loading and checking the tables: k of n + 1 as the
	// spec's n tables are loaded, n + 1 of n + 1 once the public lookups
	// are folded.
	PhaseLoad Phase = "loading tables"
	// PhasePartitions counts the uniformized method's buckets or
	// sub-instances as their mechanism starts, of the number that run (a
	// DP output, known once the partition is drawn).
	PhasePartitions Phase = "partitions"
	// PhasePMW is PMW's round t of T (per bucket under the uniformized
	// method). The adaptive mwem variant's T is its plan: the rounds its
	// remaining budget pays at the current cost (at most its cap), which
	// may shrink as it anneals, and t once it stops (pmw.Config.Progress).
	PhasePMW Phase = "PMW rounds"
	// PhaseMeasures counts the release.measures' PMW rounds: measure i of
	// M at round t of T is i·T + t of M·T (all public).
	PhaseMeasures Phase = "measures"
	// PhaseDraw is drawing the synthetic rows' cells from the model: 0 of
	// 1 as it starts, 1 of 1 once every cell's count is known (the rows
	// themselves are drawn as they are written, or here, a block of
	// synthfile.ShuffleBlockRows at a time, when measures need them first).
	PhaseDraw Phase = "drawing rows"
	// PhaseWrite counts the synthetic rows written.
	PhaseWrite Phase = "writing rows"
)

// ProgressFunc receives a run's progress: done of total units of phase,
// total −1 when it is not known in advance. It is called from the run's
// goroutine and must return quickly (PhaseWrite calls it every 4,096
// rows and at the last). Every number it receives is a public parameter or a DP output (round
// counts, bucket counts, rows written), so showing it leaks nothing.
type ProgressFunc func(phase Phase, done, total int64)

// progress reports to o.Progress when it is set, and to o.Logger at the
// debug level: every update but the writer's (every 4,096 rows), whose
// start and end only are logged. The numbers are public or DP (see
// [ProgressFunc]).
func (o *Options) progress(phase Phase, done, total int64) {
	if o.Progress != nil {
		o.Progress(phase, done, total)
	}
	if o.Logger != nil && (phase != PhaseWrite || done == 0 || done == total) {
		o.Logger.Debug("progress", "phase", string(phase), "done", done, "total", total)
	}
}

// countValue is a count or other integral DP value held in a float64 (n̂, Δ̃,
// rows) as a log attribute value: an int64 when it is an integer within
// ±2⁵³, so that logs print 6547108 rather than 6.547108e+06; the float
// otherwise.
func countValue(v float64) slog.Value {
	if v == math.Trunc(v) && math.Abs(v) <= 1<<53 {
		return slog.Int64Value(int64(v))
	}
	return slog.Float64Value(v)
}
