package relational

import (
	"slices"

	"github.com/synth-dp/synth/spec"
)

// Reads lists what answering the queries reads from the engine: their
// tables and every column they name (join equalities, selections, GROUP BY
// and the summed expression), each once, in order of first appearance.
// The columns through which a tuple reaches its privacy unit are join
// columns of the query (see [UnitColumns]), so they are listed too. A run
// may load only these ([engine.Project]).
func Reads(queries []*Query) (tables []string, cols []spec.ColumnRef) {
	add := func(r spec.ColumnRef) {
		if !slices.Contains(cols, r) {
			cols = append(cols, r)
		}
	}
	for _, q := range queries {
		for _, t := range q.Tables {
			if !slices.Contains(tables, t) {
				tables = append(tables, t)
			}
		}
		for _, j := range q.Joins {
			add(j.Left)
			add(j.Right)
		}
		for _, t := range q.Tables {
			if p, ok := q.Where[t]; ok {
				predColumns(p, add)
			}
		}
		for _, g := range q.GroupBy {
			add(g)
		}
		if q.Expr != nil {
			q.Expr.cols(add)
		}
	}
	return tables, cols
}

// predColumns calls add with every column p reads: its SQL rendered
// with a column function that records the columns, so that every
// predicate type is covered.
func predColumns(p Pred, add func(spec.ColumnRef)) {
	p.sql(func(r spec.ColumnRef) string { add(r); return "x" })
}
