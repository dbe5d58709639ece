package release

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/output/synthfile"
	"github.com/synth-dp/synth/spec"
	"github.com/synth-dp/synth/workload"
)

// MeasureAnswers answers the spec's workload.numeric sums of its
// release.measures columns on the true join and on the synthetic file,
// for `synth evaluate`: one family of kind "sum" per such query (the
// workload's own families skip them, see [workload.Answer]). INTERNAL: it
// reads the private data; its output is not differentially private.
//
//   - True: the sum of the measure over the join's tuples whose grid
//     cell lies in the query's box (the bins whose representative
//     satisfies its conditions, as the file answers it), each value
//     rounded to the measure's resolution b (the value the mechanism
//     sees; b = 1 for an integer domain up to 2²⁰);
//   - Synthetic: what a reader of the file gets, SELECT SUM(measure) FROM
//     the file WHERE the query's conditions, run by an in-memory DuckDB;
//   - Uniform: the file's total sum spread evenly over the grid's cells,
//     times the box's cells (a release that knew only the total).
//
// eng must have the spec's tables loaded; MeasureAnswers folds them
// (engine.Fold) when the spec has measures. It returns nil when the spec
// has none.
func MeasureAnswers(ctx context.Context, s *spec.Spec, eng *engine.Engine, synthetic string) ([]workload.FamilyAnswers, error) {
	if len(s.Release.Measures) == 0 {
		return nil, nil
	}
	p, err := NewPlan(s, 0, 0, 0)
	if err != nil {
		return nil, err
	}
	ledger, err := dp.NewLedger(dp.Budget{Epsilon: s.Privacy.Epsilon, Delta: s.Privacy.Delta})
	if err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	dec, err := synthfile.NewDecoder(p.Names, p.Columns)
	if err != nil {
		return nil, err
	}
	// A scratch ledger: nothing is run, the plan only gives the grids,
	// the boxes and the units.
	mp, err := planMeasures(s, p.Folding, p.Names, dec, 1<<40, ledger)
	if err != nil {
		return nil, err
	}
	if err := eng.Fold(ctx, p.Folding); err != nil {
		return nil, err
	}
	file, err := engine.Open(ctx, "duckdb::memory:")
	if err != nil {
		return nil, err
	}
	defer file.Close()
	outNames, err := measureNames(s, p.Names)
	if err != nil {
		return nil, err
	}
	pos := layout.Positions(s)
	from := " FROM read_parquet('" + strings.ReplaceAll(synthetic, "'", "''") + "')"
	gridCols := spec.FoldColumns(p.Folding, s.Release.Columns)
	var out []workload.FamilyAnswers
	for i, m := range mp.ms {
		pts, err := m.points(ctx, eng, p.Folded, i, gridCols, p.Sizes)
		if err != nil {
			return nil, fmt.Errorf("release: measure %s: %w", m.ref, err)
		}
		cells := make([]float64, m.nCells)
		for _, pt := range pts {
			cells[pt.Cell] += float64(pt.Count) * float64(pt.Units) * m.u.Resolution()
		}
		name := quoteIdent(outNames[i])
		var fileTotal float64
		if err := file.Aggregate(ctx, "SELECT COALESCE(SUM("+name+"), 0)"+from, nil, func(r *sql.Rows) error { return r.Scan(&fileTotal) }); err != nil {
			return nil, fmt.Errorf("release: measure %s: the synthetic file: %w", m.ref, err)
		}
		for qi, k := range m.workload {
			if k == -1 {
				continue
			}
			q := s.Workload.Numeric[qi]
			var truth float64
			inBox := 0
			if k >= 0 {
				where := m.queries[k].Where
				for g := range cells {
					if m.inBox(g, where, p.Sizes) {
						truth += cells[g]
						inBox++
					}
				}
			}
			sqlText := "SELECT COALESCE(SUM(" + name + "), 0)" + from
			var conds, cols []string
			for _, c := range q.Where {
				conds = append(conds, workload.ConditionSQL(quoteIdent(p.Names[pos[c.Column]]), s.Column(c.Column), c))
				cols = append(cols, p.Names[pos[c.Column]])
			}
			if len(conds) > 0 {
				sqlText += " WHERE " + strings.Join(conds, " AND ")
			}
			var got float64
			if err := file.Aggregate(ctx, sqlText, nil, func(r *sql.Rows) error { return r.Scan(&got) }); err != nil {
				return nil, fmt.Errorf("release: measure %s: the synthetic file: %w", m.ref, err)
			}
			fam := fmt.Sprintf("measure sum(%s)", outNames[i])
			if len(cols) > 0 {
				fam += " where " + strings.Join(cols, ",")
			}
			out = append(out, workload.FamilyAnswers{
				Name: fmt.Sprintf("%s [workload.numeric[%d]]", fam, qi), Kind: "sum",
				True: []float64{truth}, Synthetic: []float64{got},
				Uniform: []float64{fileTotal * float64(inBox) / float64(m.nCells)},
			})
		}
	}
	return out, nil
}

// inBox reports whether grid cell g (mixed radix over m.grid) lies in the
// box where (per grid column the accepted bins, nil for all).
func (m *measure) inBox(g int, where [][]int, sizes []int) bool {
	for d := len(m.grid) - 1; d >= 0; d-- {
		n := sizes[m.grid[d]]
		code := g % n
		g /= n
		if d < len(where) && where[d] != nil && !slices.Contains(where[d], code) {
			return false
		}
	}
	return true
}
