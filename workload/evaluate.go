package workload

import (
	"context"
	"math"
	"sort"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/spec"
)

// InternalLabel marks every evaluation: it is computed from the private
// data and must not be published.
const InternalLabel = "INTERNAL: computed from the private data; not differentially private; do not publish"

// ErrorStats summarises absolute or relative errors over a set of queries.
type ErrorStats struct {
	Max    float64 `json:"max"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
}

// FamilyEvaluation is the error of one workload family.
type FamilyEvaluation struct {
	Name     string     `json:"name"`
	Queries  int        `json:"queries"`
	Absolute ErrorStats `json:"absolute"`
	Relative ErrorStats `json:"relative"`
}

// Evaluation compares the workload's answers on a synthetic file with the
// true answers. Relative error is |synthetic − true| / max(true, 1).
// Numeric sums are computed on both sides from the binned data (each value
// replaced by its bin's representative), so they measure the mechanism's
// error, not the binning's.
type Evaluation struct {
	Label         string             `json:"label"`
	Synthetic     string             `json:"synthetic"`
	TrueRows      int64              `json:"true_join_rows"`
	SyntheticRows int64              `json:"synthetic_rows"`
	Queries       int                `json:"queries"`
	Absolute      ErrorStats         `json:"absolute"`
	Relative      ErrorStats         `json:"relative"`
	Families      []FamilyEvaluation `json:"families"`
}

// syntheticTable is the engine table the synthetic file is loaded into.
const syntheticTable = "__synthetic"

// Evaluate answers the spec's workload (marginals, ranges and numeric sums;
// all 1- and 2-way marginals when it lists none) on the true join and on the synthetic
// Parquet file and summarises the errors. eng must have the spec's tables
// loaded. The synthetic file is loaded into eng and checked against the
// released columns' domains. It is [Answer] followed by
// [Answers.Evaluation].
func Evaluate(ctx context.Context, s *spec.Spec, eng *engine.Engine, synthetic string) (*Evaluation, error) {
	a, err := Answer(ctx, s, eng, synthetic)
	if err != nil {
		return nil, err
	}
	return a.Evaluation(), nil
}

func total(h []engine.Cell) int64 {
	var n int64
	for _, c := range h {
		n += c.Count
	}
	return n
}

// marginal projects a sparse histogram over the universe (mixed radix, first
// column most significant) onto the columns cols, in the order given.
func marginal(h []engine.Cell, sizes []int, cols []int) []float64 {
	size := 1
	for _, c := range cols {
		size *= sizes[c]
	}
	out := make([]float64, size)
	digits := make([]int64, len(sizes))
	for _, cell := range h {
		x := cell.Index
		for i := len(sizes) - 1; i >= 0; i-- {
			digits[i] = x % int64(sizes[i])
			x /= int64(sizes[i])
		}
		m := int64(0)
		for _, c := range cols {
			m = m*int64(sizes[c]) + digits[c]
		}
		out[m] += float64(cell.Count)
	}
	return out
}

// summarize returns max, median and 90th percentile (nearest rank).
func summarize(v []float64) ErrorStats {
	if len(v) == 0 {
		return ErrorStats{}
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return ErrorStats{Max: s[len(s)-1], Median: rank(0.5), P90: rank(0.9)}
}
