package workload

import (
	"context"
	"fmt"
	"math"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/output/synthfile"
	"github.com/synth-dp/synth/spec"
)

// FamilyAnswers is one workload family answered on the true join, on a
// synthetic file and on the uniform distribution. It is computed from the
// private data: INTERNAL, never published ([InternalLabel]).
type FamilyAnswers struct {
	// Name is the family's name, as in [Evaluation] and [Effective].
	Name string `json:"name"`
	// Kind is "marginal", "ranges" or "sum".
	Kind string `json:"kind"`
	// Columns are the released columns (positions in release order) of a
	// marginal, or the by-columns followed by the range column of a range
	// family; nil for a sum.
	Columns []int `json:"columns,omitempty"`
	// True, Synthetic and Uniform hold one answer per query, in the same
	// order: a marginal's cells in mixed radix (first column most
	// significant); a range family's intervals [lo, hi] of the range
	// column for every cell of the by-marginal, lo then hi increasing; a
	// sum's one value (in the summed column's units, on the binned data).
	// Uniform is the answer of the uniform distribution over the universe
	// with the synthetic file's row count: the floor a release that knew
	// only its row count would reach.
	True      []float64 `json:"true"`
	Synthetic []float64 `json:"synthetic"`
	Uniform   []float64 `json:"uniform"`
}

// Answers is a workload answered on the true join, a synthetic file and the
// uniform distribution (see [Answer]). INTERNAL: computed from the private
// data, never published.
type Answers struct {
	// Synthetic is the synthetic file's path.
	Synthetic string
	// TrueRows and SyntheticRows are the row counts of the true join and
	// the synthetic file.
	TrueRows, SyntheticRows int64
	// Names and Sizes are the released columns' output names and numbers
	// of bins, in release order.
	Names []string
	Sizes []int
	// Families are the effective workload's families (see [workload]).
	Families []FamilyAnswers
}

// Answer answers the spec's workload (marginals, ranges and numeric sums;
// all 1- and 2-way marginals when it lists none) on the true join, on the
// synthetic Parquet file and on the uniform distribution. eng must have the
// spec's tables loaded. The workload is checked before any data is read;
// the synthetic file is loaded into eng and checked against the released
// columns' domains. [Evaluate] summarises the same answers.
func Answer(ctx context.Context, s *spec.Spec, eng *engine.Engine, synthetic string) (*Answers, error) {
	h, err := s.Hypergraph()
	if err != nil {
		return nil, err
	}
	names := layout.ColumnNames(s)
	cols := s.ReleaseColumns()
	sizes := s.ReleaseSizes()
	// The workload is public: check it before any data is read.
	dec, err := synthfile.NewDecoder(names, cols)
	if err != nil {
		return nil, err
	}
	fams, err := workload(s, dec)
	if err != nil {
		return nil, err
	}
	synCols := make([]spec.Column, len(cols))
	synRefs := make([]spec.ColumnRef, len(cols))
	for i, c := range cols {
		synCols[i] = *c
		synCols[i].Name = names[i]
		synCols[i].OutOfDomain = spec.OutOfDomainError
		synRefs[i] = spec.ColumnRef{Table: syntheticTable, Column: names[i]}
	}
	syn := &spec.Spec{Tables: []spec.Table{{Name: syntheticTable, Source: synthetic, Format: "parquet", Columns: synCols}}}
	if err := eng.Load(ctx, syn); err != nil {
		return nil, fmt.Errorf("release: synthetic file: %w", err)
	}
	hs, err := hypergraph.New([]hypergraph.Relation{{Name: syntheticTable}})
	if err != nil {
		return nil, err
	}
	trueHist, err := eng.Histogram(ctx, h, s.Release.Columns, sizes)
	if err != nil {
		return nil, err
	}
	synHist, err := eng.Histogram(ctx, hs, synRefs, sizes)
	if err != nil {
		return nil, err
	}
	a := &Answers{Synthetic: synthetic, TrueRows: total(trueHist), SyntheticRows: total(synHist), Names: names, Sizes: sizes}
	uniform := func(cols []int) []float64 {
		size := 1
		for _, c := range cols {
			size *= sizes[c]
		}
		out := make([]float64, size)
		for i := range out {
			out[i] = float64(a.SyntheticRows) / float64(size)
		}
		return out
	}
	for _, f := range fams {
		kind := "marginal"
		switch {
		case f.weights != nil:
			kind = "sum"
		case f.rng >= 0:
			kind = "ranges"
		}
		a.Families = append(a.Families, FamilyAnswers{
			Name: f.name, Kind: kind, Columns: f.cols,
			True:      f.answer(func(c []int) []float64 { return marginal(trueHist, sizes, c) }, sizes),
			Synthetic: f.answer(func(c []int) []float64 { return marginal(synHist, sizes, c) }, sizes),
			Uniform:   f.answer(uniform, sizes),
		})
	}
	return a, nil
}

// answer returns the family's query answers on the distribution whose
// marginal over columns c is m(c); see [FamilyAnswers] for the order.
func (f queryFamily) answer(m func(c []int) []float64, sizes []int) []float64 {
	switch {
	case f.weights != nil:
		// A numeric sum: the weighted count times the scale, on the binned
		// data (representative values).
		w := m(f.wcols)
		var t float64
		for l, x := range f.weights {
			t += x * w[l]
		}
		return []float64{t * f.scale}
	case f.rng < 0:
		return m(f.cols)
	default:
		// The range column is the last (fastest) of f.cols: every block of
		// n consecutive cells is one cell of the by-marginal.
		tm := m(f.cols)
		n := sizes[f.rng]
		var out []float64
		for b := 0; b < len(tm); b += n {
			for lo := 0; lo < n; lo++ {
				var t float64
				for hi := lo; hi < n; hi++ {
					t += tm[b+hi]
					out = append(out, t)
				}
			}
		}
		return out
	}
}

// Evaluation summarises the answers' errors: the synthetic file's against
// the true ones (see [Evaluation] for the relative error).
func (a *Answers) Evaluation() *Evaluation {
	ev := &Evaluation{Label: InternalLabel, Synthetic: a.Synthetic, TrueRows: a.TrueRows, SyntheticRows: a.SyntheticRows}
	var allAbs, allRel []float64
	for _, f := range a.Families {
		abs, rel := Errors(f.True, f.Synthetic)
		ev.Families = append(ev.Families, FamilyEvaluation{Name: f.Name, Queries: len(abs), Absolute: summarize(abs), Relative: summarize(rel)})
		allAbs = append(allAbs, abs...)
		allRel = append(allRel, rel...)
	}
	ev.Queries = len(allAbs)
	ev.Absolute, ev.Relative = summarize(allAbs), summarize(allRel)
	return ev
}

// Errors returns the absolute errors |s − t| and the relative errors
// |s − t| / max(t, 1) of the answers s against the true answers t (of the
// same length).
func Errors(t, s []float64) (abs, rel []float64) {
	abs, rel = make([]float64, len(t)), make([]float64, len(t))
	for i := range t {
		abs[i] = math.Abs(s[i] - t[i])
		rel[i] = abs[i] / math.Max(t[i], 1)
	}
	return abs, rel
}
